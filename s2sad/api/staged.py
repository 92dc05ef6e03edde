"""``jacfwd``, ``jacrev``, ``hessian`` and ``vmap`` met inside compiled code.

Inside a program being compiled, array sizes are run-time values, so a
Jacobian cannot be unrolled into one ``vjp`` per output element while
compiling.  The stage hooks here inline instead the loops below: ordinary
Python that the frontend compiles like the user's own code, a ``for`` over
``range(size)`` pulling one basis cotangent (``jacrev``) or pushing one
basis tangent (``jacfwd``) per iteration through the staged gradient or
``jvp`` of the function, each row written into an array made before the
loop.  Those loops are then differentiated like any other loop, in both
modes and to any order.  ``hessian`` is ``jacfwd`` of ``grad`` with a
run-time check that the output has one element; ``vmap`` is a loop over the
slices.  What these cannot do (several outputs, ``has_aux``, pytrees, a
function made inside the compiled code for ``hessian``) is a ``CompileError`` at
the call.
"""
import numpy as np

from ..driver.nested import stage_closure_gradient
from ..errors import CompileError
from ..frontend.values import const_value, is_const
from ..ir import Var, Const
from ..ir.nodes import leaves, map_structure
from .gradoperation import GradOperation
from .vjp_jvp import jvp

_OUTSIDE = "call it outside the compiled function (eagerly, it takes any pytree)"


# ------------------------------------------------- compiled by the frontend
def _jacrev_rows(gf, args, y, x, k):
    """``d y / d x`` by reverse mode: ``x`` is the ``k``-th input ``gf`` (a
    ``GradOperation(get_all=True, sens_param=True)``) returns a cotangent for;
    one basis cotangent per element of ``y``, one row each."""
    flat_y = np.zeros_like(y).reshape(-1)
    # zeros of x's dtype, as the gradient rows (no dtype attribute here): bool * x is x's
    jac = np.zeros_like(np.outer(flat_y == 0, np.zeros_like(x).reshape(-1)))
    for j in range(y.size):
        e = np.zeros_like(flat_y)
        e[j] = 1
        row = gf(*args, e.reshape(y.shape))[k]
        jac[j] = (row + np.zeros_like(x)).reshape(-1)     # a constant zero made an array
    return jac.reshape(y.shape + x.shape)


def _jacfwd_columns(fn, args, y, p):
    """``d y / d args[p]`` by forward mode: one basis tangent per input element."""
    x = args[p]
    flat_x = np.zeros_like(x).reshape(-1)
    jac = np.zeros_like(np.outer(np.zeros_like(y).reshape(-1), flat_x))

    def at(xp):
        return fn(*args[:p], xp, *args[p + 1:])
    for j in range(x.size):
        e = np.zeros_like(flat_x)
        e[j] = 1
        t = jvp(at, (x,), (e.reshape(x.shape),))[1]
        jac[:, j] = (t + np.zeros_like(y)).reshape(-1)
    return jac.reshape(y.shape + x.shape)


def _check_scalar(y):
    assert y.size == 1, ("For 'hessian', the function must return a scalar (one element); "
                         "reduce it first (for example return out.sum()) or use 'jacrev'")


def _hessian_block(h, xi, xj):
    return h.reshape(xi.shape + xj.shape)


def _slice(a, ax, i):
    return a if ax is None else np.take(a, i, axis=ax)


def _vmap_loop(fn, args, axes, out_axis, lead):
    """``fn`` on each slice along ``axes`` (``lead``: a mapped input), stacked on
    ``out_axis``; the output array is made from the first slice's result."""
    n = args[lead].shape[axes[lead]]
    for a, ax in zip(args, axes):
        if ax is not None:
            assert a.shape[ax] == n, "For 'vmap', the mapped axes must have one size"
    first = fn(*[_slice(a, ax, 0) for a, ax in zip(args, axes)])
    if out_axis is None:
        return first
    lead_items = np.moveaxis(np.zeros_like(args[lead]), axes[lead], 0).reshape(n, -1)[:, 0]
    out = np.zeros_like(np.outer(lead_items, first.reshape(-1))).reshape((n,) + first.shape)
    for i in range(n):
        out[i] = fn(*[_slice(a, ax, i) for a, ax in zip(args, axes)])
    return np.moveaxis(out, 0, out_axis)


# ------------------------------------------------------------ stage hooks
def _runtime_args(builder, args, kwargs, what, loc):
    if kwargs:
        raise CompileError("%s takes positional arguments only inside compiled code" % what, loc)
    return [map_structure(builder.runtime_leaf, a) for a in args]


def _selected(args, p, api, loc):
    """The input at ``p``: one runtime array, as the eager call requires."""
    if p >= len(args):
        raise CompileError("grad_position %d is out of range: the function was called with "
                           "%d input%s" % (p, len(args), "" if len(args) == 1 else "s"), loc)
    x = args[p]
    if not isinstance(x, Var):
        raise CompileError("For '%s', the input at grad_position %d must be a Tensor or an "
                           "array inside compiled code; %s" % (api, p, _OUTSIDE), loc)
    return x


def _one_output(builder, y, api, loc):
    y = builder.runtime_leaf(y)
    if not isinstance(y, Var):
        raise CompileError("inside compiled code, %s needs a function returning one Tensor or "
                           "array; return each output from a function of its own, or %s"
                           % (api, _OUTSIDE), loc)
    return y


def _gradient_target(fn):
    """What ``GradOperation`` differentiates for ``fn``: a function whose call the
    frontend stages through ``fn``'s own hook when it has one (a Jacobian
    function, a ``vmap``-ed one), since the gradient inlines the source."""
    if getattr(fn, "__s2sad_stage__", None) is None:
        return fn

    def through(*args):
        return fn(*args)
    return through


def stage_jacobian(builder, mode, fn, positions, single, has_aux, args, kwargs, loc):
    """``jacfwd``/``jacrev`` (``mode``) of ``fn`` called on ``args`` in compiled code;
    ``fn`` is abstract: a ``Const`` function or Cell, or (``jacfwd``) a closure."""
    api = "jacfwd" if mode == "fwd" else "jacrev"
    if has_aux:
        raise CompileError("%s(..., has_aux=True) inside compiled code is not supported; "
                           "return the auxiliary values from the function instead, or %s"
                           % (api, _OUTSIDE), loc)
    args = _runtime_args(builder, args, kwargs, "the function %s(...) returns" % api, loc)
    xs = [_selected(args, p, api, loc) for p in positions]
    y = _one_output(builder, builder.call(fn, list(args), {}, loc), api, loc)
    jacs = []
    if mode == "fwd":
        for p in positions:
            jacs.append(builder.call(Const(_jacfwd_columns),
                                     [fn, tuple(args), y, Const(p)], {}, loc))
    else:
        runtime = [i for i, a in enumerate(args) if any(isinstance(v, Var) for v in leaves(a))]
        if is_const(fn):
            gf = GradOperation(get_all=True, sens_param=True)(_gradient_target(const_value(fn)))
        else:
            gf = _ClosureCotangents(fn, runtime)
        _REVERSE_ROWS[0] += 1
        try:
            _refuse_forward_over_nested_jacrev(loc)
            for p, x in zip(positions, xs):
                jacs.append(builder.call(Const(_jacrev_rows), [Const(gf), tuple(args), y, x,
                                                               Const(runtime.index(p))], {}, loc))
        finally:
            _REVERSE_ROWS[0] -= 1
    return jacs[0] if single else tuple(jacs)


#: how many ``jacrev`` row loops are being staged inside one another now
_REVERSE_ROWS = [0]


def _refuse_forward_over_nested_jacrev(loc):
    """Forward mode (``jvp``, ``jacfwd``, ``hessian``, ``check_grads``' fwd checks) of
    a program holding ``jacrev`` inside ``jacrev`` gives wrong values today (found by
    comparing with reverse mode and finite differences): refuse it rather than
    return them.  Reverse mode of the same program is right."""
    from ..driver.compile import FORWARD_TRACING
    if FORWARD_TRACING[0] and _REVERSE_ROWS[0] > 1:
        raise CompileError(
            "forward mode (jvp, jacfwd, hessian) of a program that calls jacrev of a "
            "function that itself calls jacrev is not supported: s2sad's forward "
            "derivative of it is not right yet. Use reverse mode (grad of grad, "
            "jacrev) for this derivative, or jacfwd for one of the two Jacobians", loc)


def stage_hessian(builder, fn, grad_fn_at, positions, single, args, kwargs, loc):
    """``hessian`` in compiled code: ``jacfwd`` of ``grad_fn_at(i)``, the gradient
    in input ``i``, per selected position; the output is checked to be one
    element when the code runs."""
    args = _runtime_args(builder, args, kwargs, "the function hessian(...) returns", loc)
    xs = [_selected(args, p, "hessian", loc) for p in positions]
    y = _one_output(builder, builder.call(fn, list(args), {}, loc), "hessian", loc)
    builder.call(Const(_check_scalar), [y], {}, loc)
    rows = []
    for i, xi in zip(positions, xs):
        h = stage_jacobian(builder, "fwd", Const(grad_fn_at(i)), positions, False, False, args,
                           {}, loc)
        rows.append(tuple(builder.call(Const(_hessian_block), [hij, xi, xj], {}, loc)
                          for hij, xj in zip(h, xs)))
    return rows[0][0] if single else tuple(rows)


def stage_vmap(builder, fn, axes_of, out_axes, args, kwargs, loc):
    """A ``vmap``-ed function called in compiled code: a run-time loop over the
    slices (``axes_of(n)``: one axis or None per input, as the eager call)."""
    args = _runtime_args(builder, args, kwargs, "a function made by vmap", loc)
    try:
        axes = axes_of(len(args))
    except (TypeError, ValueError) as e:
        raise CompileError(str(e), loc)
    mapped = [i for i, ax in enumerate(axes) if ax is not None]
    if not mapped:
        raise CompileError("For 'vmap', at least one input must be mapped: 'in_axes' is all "
                           "None", loc)
    for i in mapped:
        _selected(args, i, "vmap", loc)
    if out_axes is not None and (isinstance(out_axes, bool) or not isinstance(out_axes, int)):
        raise CompileError("inside compiled code, vmap needs one int or None as 'out_axes' "
                           "(a function returning one array); %s" % _OUTSIDE, loc)
    return builder.call(Const(_vmap_loop), [fn, tuple(args), Const(tuple(axes)),
                                            Const(out_axes), Const(mapped[0])], {}, loc)


class _ClosureCotangents:
    """What ``_jacrev_rows`` calls, for a function made in the compiled code, as it
    calls ``GradOperation(get_all=True, sens_param=True)(fn)`` for a known one:
    ``(*args, sens)`` gives the cotangents of the inputs at ``runtime``, staged
    where the loop calls it."""

    def __init__(self, fn, runtime):
        self.fn, self.runtime = fn, runtime

    def __s2sad_stage__(self, builder, args, kwargs, loc, path):
        return tuple(stage_closure_gradient(builder, self.fn, list(args[:-1]), self.runtime,
                                            loc, sens=args[-1])[1])


class _MadeInside:
    """What a transform returns, in compiled code, for a function made there (a
    lambda, a closure): known only abstractly, so staged where it is called."""

    def __init__(self, stage):
        self.stage = stage

    def __s2sad_stage__(self, builder, args, kwargs, loc, path):
        return self.stage(builder, args, kwargs, loc)

    def __call__(self, *args, **kwargs):
        raise TypeError("this function was made inside compiled code: call it there")


def made_inside(args):
    """Whether the first of ``args`` is a function made in the compiled code (a
    lambda, a closure: neither known while compiling nor a runtime value)."""
    return bool(args) and not is_const(args[0]) and not isinstance(args[0], (Var, tuple))


def _of_closure(of_closure, args, kwargs, loc):
    """``of_closure``'s stage function for the abstract ``args[0]``, the rest known."""
    try:
        made = of_closure(args[0], *[const_value(a) for a in args[1:]],
                          **{k: const_value(v) for k, v in kwargs.items()})
    except (TypeError, ValueError, RuntimeError) as e:
        raise CompileError(str(e), loc)
    return Const(_MadeInside(made))


def closure_aware(api, of_closure):
    """A stage hook for a ``constexpr`` factory (``s2sad.grad``) called in compiled
    code: of a function made there, ``of_closure`` stages what it makes where that
    is called; anything else is evaluated while compiling, as before."""
    def stage(builder, args, kwargs, loc, path):
        if not made_inside(args):
            return builder.call_constexpr(Const(api, path), args, kwargs, loc)
        if not all(is_const(a) for a in list(args[1:]) + list(kwargs.values())):
            raise CompileError("inside compiled code, s2sad.%s of a function made there (a "
                               "lambda, a closure) takes only arguments known while compiling "
                               "(ints for the positions; no weights); or %s"
                               % (api.__name__, _OUTSIDE), loc)
        return _of_closure(of_closure, args, kwargs, loc)
    return stage


def evaluated_inside(api, of_closure=None):
    """A stage hook for a transform factory (``s2sad.jacrev``...) called in compiled
    code: with arguments known while compiling it runs now, and what it returns
    (a function with a stage hook of its own) is staged where it is called.
    ``of_closure(fn, *rest, **kwargs)``, given, stages the transform of a
    function made in the compiled code (``fn`` abstract, the rest known)."""
    def stage(builder, args, kwargs, loc, path):
        rest = list(args[1:]) + list(kwargs.values())
        if of_closure is not None and made_inside(args) and all(is_const(a) for a in rest):
            return _of_closure(of_closure, args, kwargs, loc)
        if not all(is_const(a) for a in list(args) + list(kwargs.values())):
            raise CompileError("inside compiled code, s2sad.%s needs arguments known while "
                               "compiling: a function or Cell defined outside the compiled "
                               "code (not a lambda or closure made in it%s), and ints for the "
                               "positions; or %s"
                               % (api.__name__, "" if of_closure else ": s2sad.jacfwd, "
                                  "s2sad.jacrev and s2sad.vmap take those", _OUTSIDE), loc)
        fn = const_value(args[0]) if args else None
        if fn is not None and not callable(fn):
            raise CompileError("For '%s', 'fn' must be a function or a Cell, but got %s"
                               % (api.__name__, type(fn).__name__), loc)
        # what it makes is specialised on what ``fn`` captured: guard ``fn`` whole
        builder.read_whole(Const(api), args, kwargs)
        return builder.evaluate(api, args, kwargs, loc)
    return stage
