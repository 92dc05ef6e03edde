"""Gradient functions called inside differentiated code (higher order, by nesting).

When the frontend meets a call of a ``GradFunction`` while building a
program, it asks the function to stage itself (``__s2sad_stage__``), which
lands here: the callee is traced with the same builder, differentiated by
reverse mode and simplified, and its forward-and-backward ops are spliced
into the program being built.  This sits above the frontend and AD, so the
frontend never imports AD or the user API.
"""
import inspect

import numpy as np

from ..errors import CompileError
from ..ir.nodes import Var, Const, Func, Op, leaves, map_structure, walk_ops
from ..ir.primitive import complex_mode
from ..ir import control as C
from ..ops.operations import runtime_ops as R
from .. import runtime as rt
from ..frontend import resolve
from ..frontend.calls import _step
from ..frontend.values import ListVal, is_const, const_value
from ..frontend.trees import check_result
from ..opt import pipeline
from ..ad.reverse import reverse
from ..ad.forward import forward
from .specs import check_aux_structure


class ComplexValues(CompileError):
    """A program of real inputs makes complex values (``np.fft``): the compile that
    catches it (``compile._complex_aware``) starts again in complex mode, where the
    rules that see them (``np.abs``'s...) are the complex ones."""


def check_real_mode(body):
    """Raise ``ComplexValues`` before a derivative of ``body`` is taken in real mode when
    it makes complex values (a forward alone needs no rule: not checked)."""
    if not complex_mode() and any(op.prim.complex_result for op in walk_ops(body)):
        raise ComplexValues("this program makes complex values of real inputs")


def stage_gradient(b, gf, args, kwargs, loc, gf_path=None):
    """Inline the adjoint program of ``gf`` applied to ``args`` (higher order).

    The callee is traced into its own op list with fresh parameters (bound
    to the arguments by ``Copy``), differentiated by reverse mode, and the
    resulting forward-and-backward ops are spliced into the builder ``b``,
    where the outer derivative sees primitives only.  ``gf_path`` is where ``gf`` was
    read from: what its function captured is guarded through it.
    """
    if kwargs:
        raise CompileError("gradient functions take positional arguments only", loc)
    args = list(args)
    sens = None
    if gf.grad_op.sens_param:
        if not args:
            raise CompileError("this gradient function expects a sens argument", loc)
        sens = args.pop()
    names = [n for n, p in inspect.signature(gf.fn).parameters.items()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = names[1 if gf.root is not None else 0:]
    inner = []
    for i, a in enumerate(map(_as_tuples, args)):
        hint = names[i] if i < len(names) else None

        def copy(v, hint=hint):
            v = b.runtime_leaf(v)
            if not isinstance(v, Var):
                return v
            c = b.emit(C.Copy(), [v], loc)
            c.hint = hint if hint is not None else v.hint    # through *args: the caller's name
            return c
        inner.append(map_structure(copy, a))
    path = resolve.path_in(b.root, gf.root) if gf.root is not None else None
    if gf_path is not None and gf.root is None:
        # a gradient function guarded by its key (``GradFunction.__s2sad_guard_key__``),
        # not by identity: the function it differentiates is guarded here
        b.guards.record(gf_path + ("fn",), gf.fn)
    saved = b.ops
    b.ops = []
    try:
        self_value = Const(gf.root, path) if gf.root is not None else None
        if gf.root is not None and getattr(type(gf.root), "bprop", None) is not None:
            # as at first order: the Cell's own bprop replaces differentiating construct
            result = b.call_custom_bprop(gf.root, path, inner, {}, loc)
        else:
            result = b.call_function(gf.fn, inner, loc=loc, self_value=self_value,
                                        outline=False, path=_step(gf_path, "fn"))
        body = b.ops
    finally:
        b.ops = saved
    check_result(result, loc)
    _check_scalar_output(gf, result, body, loc)
    which = gf._which_inputs()
    groups = [[v for v in leaves(a) if isinstance(v, Var)] for a in inner]
    _check_selected(b, gf, inner, loc)
    if which == "all":
        wrt_in = [v for g in groups for v in g]
    elif which == "first":
        if groups and not groups[0] and any(groups):     # as the eager call refuses
            kind = type(const_value(inner[0])).__name__ if is_const(inner[0]) else "constant"
            raise CompileError(gf.constant_first_message(kind), b.loc_override or loc)
        wrt_in = groups[0] if groups else []
    else:
        wrt_in = []
    weights = [b.inputs.var_for(w, resolve.path_in(b.root, w)) for w in gf._weights]
    check_real_mode(body)
    fwd = Func("inner", [], body, result, loc)
    if gf.head_only:
        check_aux_structure(result)
    grad = pipeline.run(pipeline.SIMPLIFY, reverse(fwd, wrt_in + weights, sens=sens,
                                                   return_value=gf.with_value,
                                                   head_only=gf.head_only))
    b.ops.extend(grad.body)
    shaped = _shaped(gf, inner, groups, wrt_in, which, list(grad.result[1] if gf.with_value
                                                             else grad.result))
    return (grad.result[0], shaped) if gf.with_value else shaped


def stage_closure_gradient(b, fn, args, positions, loc, sens=None, return_value=False,
                           head_only=False):
    """Inline the adjoint program of ``fn``, a function made in the compiled code (a
    lambda, a nested def), applied to ``args``, with respect to ``args[p]`` for each
    of ``positions``; ``(value or None, [gradient per position])``.

    What ``fn`` captured of the enclosing program (its runtime values) are free
    variables of the traced body: constants for this derivative, while the
    spliced forward-and-backward ops keep using them, so an outer derivative
    differentiates through the inner gradient (MAML-style inner steps).
    """
    inner, wrt = _closure_inputs(b, args, positions, loc)
    with b.region():
        result = b.call(fn, inner, {}, loc)
        body = b.ops
    check_result(result, loc)
    if head_only:
        try:
            check_aux_structure(result)
        except ValueError as e:
            raise CompileError(str(e), loc)
    check_real_mode(body)
    grad = pipeline.run(pipeline.SIMPLIFY, reverse(Func("inner", [], body, result, loc), wrt,
                                                   sens=sens, return_value=return_value,
                                                   head_only=head_only))
    b.ops.extend(grad.body)
    value, grads = grad.result if return_value else (None, grad.result)
    it = iter(grads)
    return value, [map_structure(lambda v: next(it), inner[p]) for p in positions]


def _closure_inputs(b, args, positions, loc):
    """Fresh Vars for ``args`` (the traced closure's inputs) and the leaves of the
    selected ones, each checked to be a runtime value, as the derivative needs."""
    for p in positions:
        if p >= len(args):
            raise CompileError("grad_position %d is out of range: the function was called "
                               "with %d input%s" % (p, len(args), "" if len(args) == 1
                                                   else "s"), loc)
    args = [_as_tuples(a) for a in args]
    args = [map_structure(_float_input, a) if i in positions else a
            for i, a in enumerate(args)]
    inner = [map_structure(lambda v: _copy(b, v, loc), a) for a in args]
    wrt = []
    for p in positions:
        if not all(isinstance(v, (Var, Const)) for v in leaves(inner[p])):
            raise CompileError("the input at position %d of this gradient of a function made "
                               "in the compiled code holds a dict or another pytree: inside "
                               "compiled code it takes arrays, or tuples or lists of them; "
                               "call it outside for pytrees" % p, loc)
        if not all(isinstance(v, Var) for v in leaves(inner[p])):
            raise CompileError("the input at position %d of this gradient of a function made "
                               "in the compiled code is a constant (a Python number, or holds "
                               "one), which gets no gradient; pass an array instead "
                               "(np.asarray(...))" % p, loc)
        wrt.extend(leaves(inner[p]))
    return inner, wrt


def _float_input(v):
    """A Python float at a selected input, as the float64 scalar it is differentiated at
    (as JAX and autograd do): compiled code folds NumPy arithmetic of constants into
    Python numbers (``np.add(2.0, 0.0)``), so the eager call's rule (Python numbers
    are constants) cannot be followed reliably here."""
    if is_const(v) and type(const_value(v)) is float:
        return Const(np.float64(const_value(v)))
    return v


def _copy(b, v, loc):
    """A fresh Var for the runtime leaf ``v``: what the traced body is differentiated in."""
    v = b.runtime_leaf(v)
    if not isinstance(v, Var):
        return v
    c = b.emit(C.Copy(), [v], loc)
    c.hint = v.hint
    return c


def _shaped(gf, inner, groups, wrt_in, which, grads):
    """The staged gradients as the eager call of ``gf`` returns them."""
    it = iter(grads[:len(wrt_in)])
    per_arg = []
    for a, g in zip(inner, groups):
        if which == "none" or not g or (which == "first" and per_arg):
            continue
        per_arg.append(map_structure(lambda v: next(it) if isinstance(v, Var) else v, a))
    wg = tuple(grads[len(wrt_in):])
    op = gf.grad_op
    if op.get_by_list:
        wres = wg[0] if gf._weights_kind == "single" else wg
        return (tuple(per_arg), wres) if op.get_all else wres
    if op.get_all:
        return tuple(per_arg)
    return per_arg[0] if per_arg else ()


def _check_scalar_output(gf, result, body, loc):
    """For a gradient whose function must return a scalar (``hessian``'s): a tuple
    is refused now, a known value checked now, a runtime one where it is computed."""
    api = getattr(gf, "scalar_output", None)
    if api is None:
        return
    if isinstance(result, tuple) or is_const(result):
        value = result if isinstance(result, tuple) else const_value(result)
        rt.check_scalar_output(value, api, "jacrev")
    elif isinstance(result, Var):
        body.append(Op(R.CheckScalarOutput(api, "jacrev"), [result], [], loc))


def _as_tuples(value):
    """A list built while compiling, as the tuple of its items (nested ones too): its
    arrays are inputs of the staged gradient as a tuple's are, and their gradients
    come back as a tuple, as the eager call gives them."""
    if isinstance(value, ListVal):
        value = tuple(value.items)
    if isinstance(value, tuple):
        return tuple(_as_tuples(v) for v in value)
    return value


def _check_selected(b, gf, inner, loc):
    """``s2sad.grad``'s selected positions must be runtime values, as in eager calls."""
    positions = getattr(gf, "positions", None)
    if positions is None or not inner:
        return
    for p, a in zip(positions, inner[0]):
        if not any(isinstance(v, Var) for v in leaves(a)):
            try:
                gf.check_position(p, const_value(a) if is_const(a) else a)
            except TypeError as e:
                # through s2sad.grad's wrapper: the user's call, not the wrapper's line
                raise CompileError(str(e), b.loc_override or loc)


def stage_jvp(b, fn, inputs, tangents, loc):
    """Inline ``jvp(fn, inputs, tangents)`` met inside differentiated code (``fn``
    abstract: a known function or Cell, or a closure made in that code).

    ``fn`` is traced into its own op list on copies of ``inputs``, extended by
    forward mode with tangents for those copies, and the tangent parameters
    are bound to ``tangents``; the spliced ops are primitives like any
    others, so the outer derivative (reverse or forward) goes through them.
    Returns ``(out, t_out)`` as the eager call does.
    """
    if len(inputs) != len(tangents):
        raise CompileError("jvp got %d inputs but %d tangents" % (len(inputs), len(tangents)),
                           loc)
    wrt, given = [], []
    inner = [map_structure(lambda v: _copy(b, v, loc), a) for a in inputs]
    for a, t in zip(inner, tangents):
        xs, ts = leaves(a), leaves(t)
        if len(xs) != len(ts):
            raise CompileError("jvp's tangents must have the structure of its inputs", loc)
        for x, tx in zip(xs, ts):
            if isinstance(x, Var):
                wrt.append(x)
                given.append(tx)
    with b.region():
        result = b.call(fn, inner, {}, loc)
        body = b.ops
    check_real_mode(body)
    ir = forward(Func("inner", [], body, result, loc), wrt)
    for param, t in zip(ir.params, given):     # the tangent parameters take the given values
        b.ops.append(Op(C.Copy(), [b.runtime_leaf(t)], [param], loc, b.origin))
    b.ops.extend(ir.body)
    return ir.result
