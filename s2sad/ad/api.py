"""The functional AD API (MindSpore 2.x names).

``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``jacfwd``, ``jacrev`` and
``hessian``, all built on ``GradOperation`` and the forward-mode compiler, so
they share the compiled-code caches.

Higher order works because the function ``grad`` returns is plain Python
with readable source: called inside a function being differentiated, the
frontend inlines it, and the ``GradFunction`` it calls is inlined as its
adjoint program.  The helpers it calls are written for the frontend too:
tuples, indexing with known indices, ``if`` and ``for`` over values known
while compiling, and ``constexpr`` helpers for the index arithmetic.

Arguments are packed as ``(selected, rest, layout)`` before differentiating,
so only the gradients asked for are computed and a Python-constant argument
(which ``get_all`` leaves out) never shifts the positions.
"""
from __future__ import annotations

import inspect
import threading
import types
import weakref
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from .. import driver as G
from .. import tracebacks
from ..compat import signature
from ..errors import S2SADError
from ..backend.runtime import constexpr
from ..nn.cell import Cell
from ..tensor import Weights
from ..ops.composite import (GradOperation, GradFunction, UnfitInput, _PackedFastPath,
                             _fn_key, name_input, refuse_complex, warn_constants)

#: ``grad_position`` of jacfwd, jacrev and hessian: one input's index, or several.
Positions = Union[int, Sequence[int]]
#: ``grad_position`` of grad and value_and_grad: also None (the weights' gradients only).
GradPosition = Optional[Positions]

# ------------------------------------------------------------------ helpers
def _target(fn):
    if isinstance(fn, Cell):
        return type(fn).construct, fn
    if inspect.ismethod(fn) and isinstance(fn.__self__, Cell):
        return fn.__func__, fn.__self__
    return fn, None


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _wrap_out(value, tensor_in):
    from ..tensor import Tensor
    if isinstance(value, tuple):
        return tuple(_wrap_out(v, tensor_in) for v in value)
    if tensor_in and isinstance(value, (np.ndarray, np.generic)):
        return Tensor(np.asarray(value))
    return value


def _raw(x):
    return getattr(x, "_data", x)


def _is_tensor_like(x):
    from ..tensor import Tensor
    return isinstance(x, (Tensor, np.ndarray, np.generic))


def _like(x, arr):
    """``arr`` as the same kind of value as ``x`` (Tensor in, Tensor out)."""
    from ..tensor import Tensor
    return Tensor(np.asarray(arr)) if isinstance(x, Tensor) else np.asarray(arr)


def _check_has_aux(has_aux):
    if not isinstance(has_aux, bool):
        raise TypeError("'has_aux' must be bool, but got %s" % type(has_aux).__name__)


def _check_aux_output(out, api):
    if not isinstance(out, tuple) or len(out) < 2:
        what = ("a tuple of %d item" % len(out)) if isinstance(out, tuple) else \
            "a single %s" % type(out).__name__
        raise ValueError("For '%s', when 'has_aux' is True, 'fn' must return a tuple "
                         "(output, aux, ...) of at least two items, but it returned %s"
                         % (api, what))


def _aux_bare(out):
    """MindSpore's vjp/jvp/jacfwd/jacrev give one aux output bare, several as a tuple."""
    return out[1] if len(out) == 2 else tuple(out[1:])


def _check_scalar(out, api, alternative, what="its output"):
    """Raise unless ``out`` is a single value of one element."""
    if isinstance(out, tuple):
        found = "is a tuple of %d outputs" % len(out)
    elif np.size(_raw(out)) != 1:
        found = "has shape %s" % list(np.shape(_raw(out)))
    else:
        return
    raise ValueError(
        "For '%s', the function must return a scalar, but %s %s; reduce it first (for "
        "example return out.sum()) or use '%s' for the full Jacobian"
        % (api, what, found, alternative))


# ------------------------------------------------ argument packing (traced)
# These run eagerly on real values and are also walked by the frontend when a
# gradient function is inlined, so they use only what it supports.

@constexpr
def _arrangement(positions, n):
    """``(rest_positions, layout)`` for ``n`` arguments; ``layout`` rebuilds them.

    Kept per ``(positions, n)``: every eager call of a gradient function asks.
    """
    known = _arrangements.get((positions, n))
    if known is not None:
        return known
    for p in positions:
        if p >= n:
            raise IndexError("grad_position %d is out of range: the function was called "
                             "with %d input%s" % (p, n, "" if n == 1 else "s"))
    rest = tuple(i for i in range(n) if i not in positions)
    layout = tuple((True, positions.index(i)) if i in positions else (False, rest.index(i))
                   for i in range(n))
    _arrangements[positions, n] = rest, layout
    return rest, layout


_arrangements = {}


def _take(items, indices):
    out = ()
    for i in indices:
        out = (*out, items[i])
    return out


def _merge(sel, rest, layout):
    args = ()
    for from_sel, i in layout:
        if from_sel:
            args = (*args, sel[i])
        else:
            args = (*args, rest[i])
    return args


@constexpr
def _require_aux(n_aux):
    if n_aux < 1:
        raise ValueError("when 'has_aux' is True, 'fn' must return a tuple (output, aux, ...) "
                         "of at least two items, but it returned one")
    return n_aux


def _aux_head(out):
    # unpacking fails while compiling unless ``out`` is a tuple
    head, *aux = out
    _require_aux(len(aux))
    return head


class _AuxOutputs(Cell):
    """``out[1:]`` of a ``has_aux`` function's output.

    Called eagerly it checks the structure with a clear error first; inlined
    in a differentiated program its ``construct`` is used.
    """

    def construct(self, out):
        head, *aux = out
        _require_aux(len(aux))
        return tuple(aux)

    def __init__(self, api):
        super().__init__()
        self.api = api

    def __call__(self, out):
        _check_aux_output(out, self.api)
        return tuple(out[1:])


_aux_outputs = {"grad": _AuxOutputs("grad"), "value_and_grad": _AuxOutputs("value_and_grad")}


def _select(grads, mode, single):
    if mode == "inputs":
        return _one(grads, single)
    if mode == "both":
        return _one(grads[0][0], single), grads[1]
    return grads


def _one(grads, single):
    if single:
        return grads[0]
    return grads


# ------------------------------------------------------ packed differentiands
def _cell_packed(self, sel, rest, layout):
    return self(*_merge(sel, rest, layout))


def _cell_packed_aux(self, sel, rest, layout):
    return _aux_head(self(*_merge(sel, rest, layout)))


def _cell_head(self, *args):
    return _aux_head(self(*args))


_memo = weakref.WeakValueDictionary()
_memo_lock = threading.RLock()


def _memoized(key, make):
    """One object per key while it is in use: ``grad(f)`` twice gives one function.

    Held weakly: once the user drops the gradient function, the entry goes,
    and with it the function (and whatever it captured) the key names.
    Compiled code does not depend on this: the cache files it by code.
    """
    try:
        hash(key)
    except TypeError:
        return make()
    with _memo_lock:
        value = _memo.get(key)
        if value is None:
            value = make()
            try:
                _memo[key] = value
            except TypeError:       # not weakly referable: not kept
                pass
        return value


def _packed(fn, has_aux):
    """What to differentiate: ``fn`` taking ``(selected, rest, layout)``."""
    if isinstance(fn, Cell):
        return types.MethodType(_cell_packed_aux if has_aux else _cell_packed, fn)
    if inspect.ismethod(fn) and isinstance(fn.__self__, Cell):
        method = _memoized(("packed-method", fn.__func__, has_aux),
                           lambda: _make_packed_method(fn.__func__, has_aux))
        return types.MethodType(method, fn.__self__)
    return _memoized(("packed", fn, has_aux), lambda: _make_packed(fn, has_aux))


def _make_packed(fn, has_aux):
    if has_aux:
        def packed_aux(sel, rest, layout):
            return _aux_head(fn(*_merge(sel, rest, layout)))
        return _named_like(packed_aux, fn, 0)

    def packed(sel, rest, layout):
        return fn(*_merge(sel, rest, layout))
    return _named_like(packed, fn, 0)


def _make_packed_method(func, has_aux):
    if has_aux:
        def packed_method_aux(self, sel, rest, layout):
            return _aux_head(func(self, *_merge(sel, rest, layout)))
        return _named_like(packed_method_aux, func, 1)

    def packed_method(self, sel, rest, layout):
        return func(self, *_merge(sel, rest, layout))
    return _named_like(packed_method, func, 1)


def _named_like(packed, fn, skip):
    """Name a packed function's inputs in generated code after ``fn``'s parameters.

    ``fn=None``: the Cell's ``construct`` (read from the Cell being compiled);
    ``skip``: how many leading parameters (``self``) are not inputs.
    """
    def user_fn(root):
        return fn if fn is not None else type(root).construct

    def hints(root, args, default):
        try:
            params = list(signature(user_fn(root)).parameters.values())[skip:]
        except (TypeError, ValueError):
            return default
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        sel, rest, layout = args
        if not isinstance(layout, tuple) or len(layout) != len(sel) + len(rest):
            return default
        picked = {True: [None] * len(sel), False: [None] * len(rest)}
        for i, (from_sel, j) in enumerate(layout):
            picked[from_sel][j] = names[i] if i < len(names) else "arg%d" % i
        return [tuple(picked[True]), tuple(picked[False])] + list(default[2:])

    def named_after(root):
        """The function the generated code, its header and locations are named after."""
        target = user_fn(root)
        return target if inspect.isfunction(target) else packed

    packed.__s2sad_arg_hints__ = hints
    packed.__s2sad_named_after__ = named_after
    return packed


_named_like(_cell_packed, None, 1)
_named_like(_cell_packed_aux, None, 1)


def _head(fn):
    """``fn`` reduced to its first output (for ``has_aux``)."""
    if isinstance(fn, Cell):
        return types.MethodType(_cell_head, fn)

    def make():
        def head(*args):
            return _aux_head(fn(*args))
        return head
    return _memoized(("head", fn), make)


# --------------------------------------------------------------- positions
def _normalize_positions(grad_position, api="grad"):
    """``(positions, single)``; ``None`` gives ``((), False)``."""
    if grad_position is None:
        return (), False
    if isinstance(grad_position, bool) or not isinstance(grad_position, (int, tuple, list)):
        raise TypeError("For '%s', 'grad_position' must be an int, a tuple of ints or None, "
                        "but got %s" % (api, type(grad_position).__name__))
    single = isinstance(grad_position, int)
    positions = (grad_position,) if single else tuple(grad_position)
    if not positions:
        raise ValueError("For '%s', 'grad_position' must not be an empty tuple" % api)
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, int):
            raise TypeError("For '%s', every item of 'grad_position' must be an int, but got "
                            "%s" % (api, type(p).__name__))
        if p < 0:
            raise ValueError("For '%s', 'grad_position' must be >= 0, but got %d" % (api, p))
    if len(set(positions)) != len(positions):
        raise ValueError("For '%s', 'grad_position' has duplicate positions: %s"
                         % (api, positions))
    return positions, single


def _weights_key(weights):
    from ..tensor import Parameter
    if weights is None:
        return None
    if isinstance(weights, Parameter):
        return ("single", id(weights))
    if isinstance(weights, (tuple, list)):
        return ("seq",) + tuple(id(w) for w in weights)
    return ("other", id(weights))


class _SelectedGrad(GradFunction):
    """A GradFunction on a packed function; eagerly checks the selected inputs first.

    The frontend inlines it like any GradFunction; the check names the
    position of an input that cannot get a gradient (staged calls ask
    ``check_position`` the same question while compiling).
    """

    @staticmethod
    def check_position(p, value):
        """A selected position called with a constant ``value`` raises (as eagerly)."""
        _constant_position(p, value)

    def __init__(self, packed, weights, grad_op, positions, user_names=None, single=False):
        GradFunction.__init__(self, packed, weights, grad_op)
        self.positions = positions
        self.single = single
        self.user_names = user_names
        self._layout_specs = {}
        self._fast_packed = None

    def __call__(self, sel, *rest):
        try:
            fast = self._fast_packed
            if fast is not None and fast.matches(self, sel, rest):
                return fast.run(self, sel, rest[0])
            return self._call_selected(sel, rest)
        except UnfitInput as err:
            sens = rest[-1] if self.grad_op.sens_param and rest else None
            raise name_input(err, sel, self.param_names(), self.positions, sens) from None
        except S2SADError as err:
            raise tracebacks.for_user(err)

    def param_names(self):
        return self.user_names

    def _call_selected(self, sel, rest):
        sel_specs = tuple(map(G.arg_spec, sel))
        constant = [not G.has_runtime_leaves(spec) for spec in sel_specs]
        if all(constant) and self.weights is None and self.positions:
            # no gradient asked for is of a runtime value: MindSpore's ()
            warn_constants(self, sel_specs, self.positions, self.user_names)
            return ((),) if self.single else ()     # ``_select`` unwraps a single one
        for p, a, c in zip(self.positions, sel, constant):
            if c:
                _constant_position(p, a)
        if self.grad_op.sens_param or len(rest) != 2:
            return self._general((sel,) + rest)
        others, layout = rest
        # the layout is (bool, int) pairs from _arrangement: its spec depends on its value only
        layout_spec = self._layout_specs.get(layout)
        if layout_spec is None:
            layout_spec = self._layout_specs[layout] = G.arg_spec(layout)
        specs = (("tuple",) + sel_specs, G.arg_spec(others), layout_spec)
        result = self._call((sel, others, layout), None, specs)
        self._fast_packed = _PackedFastPath.make(self, sel, others)
        return result


def _user_param_names(fn):
    """The positional parameter names of the user's ``fn`` (a function, Cell or method)."""
    py_fn, root = _target(fn)
    try:
        params = list(signature(py_fn).parameters.values())
    except (TypeError, ValueError):
        return None
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[1:] if root is not None else names


def _constant_position(p, a):
    raise TypeError(
        "grad_position %d refers to a %s, which s2sad treats as a constant (no "
        "gradient), while other positions asked for are not; leaving it out would shift "
        "the positions of the gradients. Pass a Tensor or an array, or wrap a Python "
        "number in s2sad.mutable(...)" % (p, type(a).__name__))


def _selected_grad_function(fn, has_aux, weights, positions, mode, sens_param=False,
                            single=False):
    op = GradOperation(get_all=(mode == "both"), get_by_list=(mode != "inputs"),
                       sens_param=sens_param)
    return _SelectedGrad(_packed(fn, has_aux), weights if mode != "inputs" else None, op,
                         positions, _user_param_names(fn), single)


def _mode(positions, weights):
    if weights is None:
        return "inputs"
    return "both" if positions else "weights"


# -------------------------------------------------------------------- grad
# constexpr: used inside a differentiated function, ``grad(f)`` is evaluated while
# compiling and the function it returns is inlined, instead of this factory.
@constexpr
def grad(fn: Callable[..., Any], grad_position: GradPosition = 0, weights: Weights = None,
         has_aux: bool = False) -> Callable[..., Any]:
    """The gradient function of ``fn`` (MindSpore 2.x ``mindspore.grad``).

    - ``grad_position``: an int gives that input's gradient bare, a tuple a
      tuple of gradients, ``None`` none (then ``weights`` is required);
    - ``weights`` (a Parameter, list or ParameterTuple): their gradients too,
      as ``(input_grads, weight_grads)``, or alone when ``grad_position`` is None;
    - ``has_aux``: ``fn`` returns ``(out, *aux)``; only ``out`` is
      differentiated and the result is ``(gradients, aux)`` with ``aux`` the
      tuple ``out[1:]`` (as MindSpore).  The aux outputs come from one more
      forward run of ``fn``.

    Non-scalar outputs get a sens of ones, as ``GradOperation``.  The returned
    function can itself be differentiated, to any order:
    ``grad(grad(f))(x)`` is the second derivative.
    """
    _check_has_aux(has_aux)
    if grad_position is None and weights is None:
        raise ValueError("For 'grad', 'grad_position' and 'weights' cannot both be None")
    positions, single = _normalize_positions(grad_position)
    chain = getattr(fn, "__s2sad_first_grad_of__", None)
    if chain is not None and positions == (0,) and single and weights is None and not has_aux:
        base, order = chain
        return _memoized(("grad-chain", base, order + 1),
                         lambda: _grad_chain(base, order + 1))
    key = ("grad", fn, positions, single, _weights_key(weights), has_aux)
    return _memoized(key, lambda: _make_grad(fn, positions, single, weights, has_aux, False))


def _grad_chain(base, order):
    """``grad`` applied ``order`` times to ``base``, first input each time, as one chain.

    The same derivative as the nested functions (each level differentiates
    the sum of the one below with respect to the first input), written as
    ``GradOperation()`` applied ``order`` times: such a chain compiles in
    Taylor mode (``ad/taylor.py``) when it can, instead of ``order`` nested
    reverse sweeps.
    """
    gf = base
    for _ in range(order):
        gf = GradOperation()(gf)

    def grad_fn(*args):
        # a constant first input with runtime ones after it (all constants: () and a warning)
        if args and not G.has_runtime_leaves(G.arg_spec(args[0])) \
                and G.has_runtime_leaves(G.arg_spec(args)):
            _constant_position(0, args[0])
        return gf(*args)
    grad_fn.__s2sad_first_grad_of__ = (base, order)
    return _inspectable_chain(grad_fn, gf)


def _inspectable_chain(wrapper, gf):
    def compiled(*args):
        return gf.compiled(*args) if args else gf.last
    wrapper.__s2sad_compiled__ = compiled
    return wrapper


@constexpr
def value_and_grad(fn: Callable[..., Any], grad_position: GradPosition = 0,
                   weights: Weights = None, has_aux: bool = False) -> Callable[..., Any]:
    """Like ``grad`` but returns ``(value, gradients)``; ``value`` is ``fn``'s full output.

    With ``has_aux`` only the first output is differentiated.  The value
    comes from a forward run of ``fn`` besides the gradient's own, so an
    ``fn`` drawing random numbers sees different draws in each.
    """
    _check_has_aux(has_aux)
    if grad_position is None and weights is None:
        raise ValueError("For 'value_and_grad', 'grad_position' and 'weights' cannot both "
                         "be None")
    positions, single = _normalize_positions(grad_position, "value_and_grad")
    key = ("value_and_grad", fn, positions, single, _weights_key(weights), has_aux)
    return _memoized(key, lambda: _make_grad(fn, positions, single, weights, has_aux, True))


def _make_grad(fn, positions, single, weights, has_aux, with_value):
    if not callable(fn):
        raise TypeError("'fn' must be a function or a Cell, but got %s" % type(fn).__name__)
    mode = _mode(positions, weights)
    gf = _selected_grad_function(fn, has_aux, weights, positions, mode, single=single)
    aux_outputs = _aux_outputs["value_and_grad" if with_value else "grad"]

    if with_value:
        def value_and_grad_fn(*args):
            value = fn(*args)
            if has_aux:
                aux_outputs(value)
            rest, layout = _arrangement(positions, len(args))
            grads = gf(_take(args, positions), _take(args, rest), layout)
            return value, _select(grads, mode, single)
        return _inspectable(value_and_grad_fn, gf, positions)

    if has_aux:
        def grad_aux_fn(*args):
            aux = aux_outputs(fn(*args))
            rest, layout = _arrangement(positions, len(args))
            grads = gf(_take(args, positions), _take(args, rest), layout)
            return _select(grads, mode, single), aux
        return _inspectable(grad_aux_fn, gf, positions)

    def grad_fn(*args):
        rest, layout = _arrangement(positions, len(args))
        grads = gf(_take(args, positions), _take(args, rest), layout)
        return _select(grads, mode, single)
    if positions == (0,) and single and weights is None and not has_aux \
            and inspect.isfunction(fn):
        grad_fn.__s2sad_first_grad_of__ = (fn, 1)       # grad(grad_fn) continues the chain
    return _inspectable(grad_fn, gf, positions)


def _inspectable(wrapper, gf, positions):
    """Let ``s2sad.get_source``/``get_ir`` read what ``wrapper``'s calls run."""
    def compiled(*args):
        if not args:
            return gf.last
        rest, layout = _arrangement(positions, len(args))
        return gf.compiled(_take(args, positions), _take(args, rest), layout)
    wrapper.__s2sad_compiled__ = compiled
    return wrapper


# --------------------------------------------------------------------- vjp
def vjp(fn: Callable[..., Any], *inputs: Any, has_aux: bool = False) -> Tuple[Any, ...]:
    """Reverse mode: ``(out, vjp_fn)``, or ``(out, vjp_fn, aux)`` with ``has_aux``.

    ``vjp_fn(v)`` returns a tuple with the cotangent of every input (of every
    Tensor input: Python constants get none, as in ``GradOperation``'s
    ``get_all``); ``v`` mirrors ``out``.  With ``has_aux``, ``out`` is the
    first output and ``aux`` the rest (bare when there is one, as MindSpore).
    """
    _check_has_aux(has_aux)
    if not callable(fn):
        raise TypeError("For 'vjp', 'fn' must be a function or a Cell, but got %s"
                        % type(fn).__name__)
    out = fn(*inputs)
    if has_aux:
        _check_aux_output(out, "vjp")
    gf = GradOperation(get_all=True, sens_param=True)(_head(fn) if has_aux else fn)

    def vjp_fn(*v):
        if not v:
            raise TypeError("vjp_fn takes the cotangent 'v', mirroring the output of 'fn'")
        return gf(*inputs, v[0] if len(v) == 1 else tuple(v))

    if has_aux:
        return out[0], vjp_fn, _aux_bare(out)
    return out, vjp_fn


# --------------------------------------------------------------------- jvp
_jvp_cache = G.register_cache(G.GradCache("forward-mode derivative"))


def _jvp_compiled(fn, inputs, v=None):
    """The compiled forward-mode entry for ``fn`` at these argument structures."""
    py_fn, root = _target(fn)
    specs = tuple(G.arg_spec(a) for a in inputs)
    if v is not None and (len(v) != len(inputs) or tuple(G.arg_spec(t) for t in v) != specs):
        raise ValueError("For 'jvp', 'v' must have the same structure as 'inputs', but got "
                         "%d inputs and %d tangents" % (len(inputs), len(v)))
    key = (_fn_key(py_fn), type(root) if root is not None else None, specs)
    entry = _jvp_cache.get(key, root, py_fn)
    if entry is None:
        with _jvp_cache.lock():
            entry = _jvp_cache.get(key, root, py_fn)
            if entry is None:
                entry = G.compile_jvp(py_fn, root, inputs, specs)
                _jvp_cache.put(key, entry, specs, family=(id(py_fn), key[1]), fn=py_fn,
                               root=root)
    return entry, root, specs


def _jvp_raw(fn, inputs, v):
    _refuse_complex_inputs(fn, inputs, "jvp")
    _refuse_complex_inputs(fn, v, "jvp", "the tangent")
    entry, root, specs = _jvp_compiled(fn, inputs, v)
    tangents = []
    for i, (a, t, s) in enumerate(zip(inputs, v, specs)):
        flat_t = G.flatten_runtime([t], [s])
        for x, dx in zip(G.flatten_runtime([a], [s]), flat_t):
            if np.shape(dx) != np.shape(x):
                raise ValueError("For 'jvp', each tangent in 'v' must have the shape of its "
                                 "input, but the tangent at position %d has shape %s and the "
                                 "input has shape %s" % (i, list(np.shape(dx)),
                                                         list(np.shape(x))))
        tangents.extend(flat_t)
    flat = G.flatten_runtime(inputs, specs)
    return entry.fn(*flat, *entry.inputs.read(root, _target(fn)[0]), *tangents)


def _refuse_complex_inputs(fn, values, api, what=None):
    """A TypeError naming the argument when one of ``values`` holds a complex leaf."""
    try:
        refuse_complex(values)
    except UnfitInput as err:
        named = name_input(err, values, None if what else _user_param_names(fn),
                           noun=what or "the input")
        raise TypeError("For '%s', %s" % (api, named)) from None


def jvp(fn: Callable[..., Any], inputs: Any, v: Any, has_aux: bool = False) -> Tuple[Any, ...]:
    """Forward mode: ``(fn(*inputs), J @ v)``, or ``(out, J @ v, aux)`` with ``has_aux``.

    ``inputs`` and ``v`` are a Tensor/array or tuples of them with the same
    structure.  Computed by the forward-mode transformation, at about the
    cost of one more forward pass.  With ``has_aux`` only the first output's
    tangent is returned and ``aux`` is the rest (bare when there is one, as
    MindSpore).
    """
    from ..tensor import Tensor
    _check_has_aux(has_aux)
    inputs = _as_tuple(inputs)
    v = _as_tuple(v)
    try:
        out, t_out = _jvp_raw(fn, inputs, v)
    except S2SADError as err:
        raise tracebacks.for_user(err)
    t_out = _materialize_zeros(out, t_out)
    tensor_in = any(isinstance(a, Tensor) for a in inputs)
    out, t_out = _wrap_out(out, tensor_in), _wrap_out(t_out, tensor_in)
    if has_aux:
        _check_aux_output(out, "jvp")
        return out[0], t_out[0], _aux_bare(out)
    return out, t_out


def _materialize_zeros(out, t_out):
    """A constant zero tangent (an output not depending on the inputs) as zeros of its shape."""
    if isinstance(out, tuple) and isinstance(t_out, tuple):
        return tuple(_materialize_zeros(o, t) for o, t in zip(out, t_out))
    if isinstance(out, (np.ndarray, np.generic)) and not isinstance(
            t_out, (np.ndarray, np.generic)) and np.ndim(t_out) == 0 and t_out == 0:
        return np.zeros_like(out)
    return t_out


def _vjp_dot(fn):
    """``(u, inputs, v) -> <vjp(u), v>``: linear in ``u``, so its gradient in ``u`` is ``J v``."""
    def make():
        vjp_all = GradOperation(get_all=True, sens_param=True)(fn)

        def vjp_dot(u, inputs, v):
            cotangents = vjp_all(*inputs, u)
            total = 0.0
            for c, t in zip(cotangents, v):
                total = total + (c * t).sum()
            return total
        return vjp_dot
    return _memoized(("vjp_dot", fn), make)


def jvp_by_double_vjp(fn, inputs, v):
    """``(fn(*inputs), J @ v)`` by reverse mode twice (the double-vjp construction).

    ``u -> <vjp(u), v>`` is linear in the cotangent ``u`` with gradient
    ``J v``, so differentiating it in reverse mode gives the forward-mode
    derivative without a forward-mode transformation.  ``inputs`` and ``v``
    are Tensors/arrays or flat tuples of them.
    """
    from ..tensor import Tensor
    inputs = _as_tuple(inputs)
    v = _as_tuple(v)
    if len(v) != len(inputs):
        raise ValueError("For 'jvp_by_double_vjp', 'v' must have one tangent per input, but "
                         "got %d inputs and %d tangents" % (len(inputs), len(v)))
    for a in inputs:
        if not _is_tensor_like(a):
            raise TypeError("For 'jvp_by_double_vjp', every input must be a Tensor or an "
                            "array, but got %s" % type(a).__name__)
    out = fn(*inputs)

    def zeros(o):
        if isinstance(o, tuple):
            return tuple(zeros(x) for x in o)
        return _like(o, np.zeros_like(np.asarray(_raw(o))))
    u = zeros(out)
    t_out = GradOperation()(_vjp_dot(fn))(u, inputs, v)
    tensor_in = any(isinstance(a, Tensor) for a in inputs)
    return out, _wrap_out(t_out, tensor_in)


# --------------------------------------------------------------- jacobians
def _leaves(x):
    if isinstance(x, (tuple, list)):
        out = []
        for e in x:
            out.extend(_leaves(e))
        return out
    return [x]


def _raw_structure(x):
    return tuple(_raw_structure(e) for e in x) if isinstance(x, tuple) else _raw(x)


def _rebuild(structure, it):
    if isinstance(structure, (tuple, list)):
        return tuple(_rebuild(s, it) for s in structure)
    return next(it)


def _check_jac_args(args, positions, api):
    n = len(args)
    for p in positions:
        if p >= n:
            raise IndexError("grad_position %d is out of range: the function was called "
                             "with %d input%s" % (p, n, "" if n == 1 else "s"))
        if not _is_tensor_like(args[p]):
            raise TypeError("For '%s', the input at grad_position %d must be a Tensor or an "
                            "array, but got %s" % (api, p, type(args[p]).__name__))


def _shape_jacobian(per_out, out_structure, single):
    """Nest as ``output structure`` of ``position structure`` (JAX/MindSpore order)."""
    rows = [per_p[0] if single else tuple(per_p) for per_p in per_out]
    return _rebuild(out_structure, iter(rows))


def jacfwd(fn: Callable[..., Any], grad_position: Positions = 0,
           has_aux: bool = False) -> Callable[..., Any]:
    """The Jacobian function of ``fn`` by forward mode, one ``jvp`` per input element.

    Each Jacobian has shape ``out.shape + input.shape``; for several outputs
    or positions the result nests as outputs, then positions.  With
    ``has_aux`` only the first output is differentiated and the result is
    ``(jacobian, aux)``.  Cheaper than ``jacrev`` when inputs are smaller
    than outputs.
    """
    _check_has_aux(has_aux)
    positions, single = _normalize_positions(grad_position, "jacfwd")

    def jacfwd_fn(*args):
        from ..tensor import Tensor
        _check_jac_args(args, positions, "jacfwd")
        _refuse_complex_inputs(fn, args, "jacfwd")
        try:
            entry, root, specs = _jvp_compiled(fn, args)
        except S2SADError as err:
            raise tracebacks.for_user(err)
        flat = G.flatten_runtime(args, specs)
        extra = entry.inputs.read(root, _target(fn)[0])
        # which flat leaf each selected argument is
        leaf_of, k = {}, 0
        for i, (a, s) in enumerate(zip(args, specs)):
            if i in positions:
                leaf_of[i] = k
            k += len(G.flatten_runtime([a], [s]))
        zeros = [np.zeros_like(np.asarray(x)) for x in flat]
        out = None
        columns = {p: [] for p in positions}
        for p in positions:
            x = np.asarray(flat[leaf_of[p]])
            for j in range(x.size):
                e = np.zeros(x.size, dtype=x.dtype)
                e[j] = 1
                tangents = list(zeros)
                tangents[leaf_of[p]] = e.reshape(x.shape)
                out, t_out = entry.fn(*flat, *extra, *tangents)
                if has_aux:
                    _check_aux_output(out, "jacfwd")
                    t_out = t_out[0]
                columns[p].append([np.asarray(t) for t in _leaves(t_out)])
        if out is None:   # no input elements: no jvp ran
            out = _raw_structure(fn(*args))
        if has_aux:
            _check_aux_output(out, "jacfwd")
        head = out[0] if has_aux else out
        out_leaves = [np.asarray(o) for o in _leaves(head)]
        tensor_in = any(isinstance(a, Tensor) for a in args)
        per_out = []
        for li, o in enumerate(out_leaves):
            per_p = []
            for p in positions:
                shape_in = np.shape(np.asarray(flat[leaf_of[p]]))
                cols = [c[li] for c in columns[p]]
                if cols:
                    jac = np.stack([np.broadcast_to(c, o.shape) for c in cols], axis=-1)
                else:
                    jac = np.zeros(o.shape + (0,), dtype=o.dtype)
                per_p.append(_wrap_out(jac.reshape(o.shape + shape_in), tensor_in))
            per_out.append(per_p)
        jac = _shape_jacobian(per_out, head, single)
        if has_aux:
            return jac, _wrap_out(_aux_bare(out), tensor_in)
        return jac
    return jacfwd_fn


def jacrev(fn: Callable[..., Any], grad_position: Positions = 0,
           has_aux: bool = False) -> Callable[..., Any]:
    """The Jacobian function of ``fn`` by reverse mode, one ``vjp`` per output element.

    Each Jacobian has shape ``out.shape + input.shape``; for several outputs
    or positions the result nests as outputs, then positions.  With
    ``has_aux`` only the first output is differentiated and the result is
    ``(jacobian, aux)``.  Cheaper than ``jacfwd`` when outputs are smaller
    than inputs (one row per output element).
    """
    _check_has_aux(has_aux)
    positions, single = _normalize_positions(grad_position, "jacrev")
    gf = _selected_grad_function(fn, has_aux, None, positions, "inputs", sens_param=True)

    def jacrev_fn(*args):
        from ..tensor import Tensor
        _check_jac_args(args, positions, "jacrev")
        out = fn(*args)
        if has_aux:
            _check_aux_output(out, "jacrev")
        head = out[0] if has_aux else out
        out_leaves = _leaves(head)
        rest, layout = _arrangement(positions, len(args))
        sel, rest_args = _take(args, positions), _take(args, rest)
        zero_leaves = [_like(o, np.zeros_like(np.asarray(_raw(o)))) for o in out_leaves]
        tensor_in = any(isinstance(a, Tensor) for a in args)
        per_out = []
        for li, o in enumerate(out_leaves):
            o_arr = np.asarray(_raw(o))
            rows = []
            for j in range(o_arr.size):
                e = np.zeros(o_arr.size, dtype=o_arr.dtype)
                e[j] = 1
                leaves = list(zero_leaves)
                leaves[li] = _like(o, e.reshape(o_arr.shape))
                sens = _rebuild(head, iter(leaves))
                g = gf(sel, rest_args, layout, sens)
                rows.append([np.asarray(_raw(x)) for x in g])
            per_p = []
            for k, p in enumerate(positions):
                shape_in = np.shape(_raw(args[p]))
                if rows:
                    jac = np.stack([r[k] for r in rows], axis=0)
                else:
                    jac = np.zeros((0,) + shape_in, dtype=o_arr.dtype)
                per_p.append(_wrap_out(jac.reshape(o_arr.shape + shape_in), tensor_in))
            per_out.append(per_p)
        jac = _shape_jacobian(per_out, head, single)
        if has_aux:
            return jac, _aux_bare(out)
        return jac
    return jacrev_fn


def hessian(fn: Callable[..., Any], grad_position: Positions = 0) -> Callable[..., Any]:
    """The Hessian function of a scalar-valued ``fn``: forward mode over reverse mode.

    ``jacfwd(grad(fn))``: one forward-mode pass over the compiled gradient per
    input element.  Shape ``input.shape + input.shape`` (nested
    ``H[i][j]`` for a tuple of positions).  A non-scalar output is an error:
    reduce it (``.sum()``) or use ``jacrev``/``jacfwd``.
    """
    positions, single = _normalize_positions(grad_position, "hessian")
    inner = grad(fn, grad_position)
    outer = jacfwd(inner, grad_position)

    def hessian_fn(*args):
        _check_jac_args(args, positions, "hessian")
        _check_scalar(fn(*args), "hessian", "jacrev")
        return outer(*args)
    return hessian_fn
