"""Derivatives of runtime recursions (see ``frontend/recursion.py``).

Reverse mode differentiates the recursive function's body once, as a
program of its own, and cuts the result at its backward sweep: the forward
part (``fwd``) returns the function's value and the values the backward part
reads (the residual, which holds the residuals of the calls it made in
turn), the backward part (``bwd``) takes the residual and the adjoints of
the outputs and returns one gradient per argument.  A call in the program
becomes a call of ``fwd`` in the forward sweep and of ``bwd`` in the
backward sweep, so memory and time grow with the depth a run reaches, as
with a loop.  Forward mode makes one ``jvp`` function the same way.
"""
from ..errors import CompileError
from ..ir.nodes import Var, Op, Func, AdjointOf, leaves, map_structure, defined_ids
from ..ir.control import RecursiveCall
from ..ir.passes import dce
from ..ops.operations import array_ops as A
from ..frontend.recursion import free_vars


def _check_first_order(op):
    if op.prim.mode != "call":
        raise CompileError(
            "differentiating the derivative of '%s', whose recursion depth is decided at "
            "run time, is not supported" % op.prim.group.name, op.loc,
            hint="take one derivative of it, or write the recursion as a while loop, "
                 "which any order differentiates")


def backprop_call(R, op, adj, reverse):
    """Reverse mode's adjoint of a call: ``fwd`` in place of the call, then ``bwd``."""
    _check_first_order(op)
    douts = [adj.total(o, op.loc) for o in op.outs]
    if all(d is None for d in douts):
        return
    group = op.prim.group
    _split(group, reverse)
    b = R.b
    douts = [d if d is not None else b.emit(A.ZerosLike(), [o], op.loc)
             for d, o in zip(douts, op.outs)]
    residual = Var("residual")
    op.prim = RecursiveCall(group, "fwd")      # ``op`` is reverse mode's own copy
    op.outs = op.outs + [residual]
    grads = [Var(AdjointOf(a)) for a in op.args]
    b.ops.append(Op(RecursiveCall(group, "bwd"), [residual] + douts, grads, op.loc,
                    frame=op.frame and (op.frame[0], "bwd")))
    for a, g in zip(op.args, grads):
        if a.id in R.active:
            adj.add(a, g)


def _split(group, reverse):
    """Give ``group`` its ``fwd`` and ``bwd`` functions (once; the body calls itself)."""
    if group.bwd is not None or getattr(group, "splitting", False):
        return
    group.splitting = True
    func = group.func
    sens = map_structure(lambda v: Var(AdjointOf(v)) if isinstance(v, Var) else Var(),
                         func.result)
    grad = reverse(func, list(func.params), sens=sens, return_value=True)
    if len(grad.params) != len(func.params) + len(leaves(sens)):
        raise CompileError("a Cell with a custom bprop that reads runtime inputs of its own "
                           "cannot be called by '%s', whose recursion depth is decided at "
                           "run time" % group.name, group.loc)
    grad = dce(grad)
    start = grad.backward_start
    fwd_ops, bwd_ops = grad.body[:start], grad.body[start:]
    value, grads = grad.result
    sens_ids = {s.id for s in leaves(sens)}
    residual = [v for v in free_vars(bwd_ops, grads, sens_ids)]
    inner = set()
    for op in fwd_ops:
        for r in op.regions:
            inner.update(p.id for p in r.params)
            defined_ids(r.ops, inner)
    group.maybe_undefined = [v for v in residual if v.id in inner]
    group.fwd = Func(group.name, list(func.params), fwd_ops, (value, tuple(residual)), func.loc)
    group.bwd = Func(group.name, residual + list(leaves(sens)), bwd_ops, tuple(grads), func.loc)


def jvp_call(F, op, tan, forward):
    """Forward mode's tangent of a call: one call of ``jvp``, values and tangents."""
    _check_first_order(op)
    arg_t = [tan.get(a.id) for a in op.args]
    if all(t is None for t in arg_t):
        F.b.ops.append(op)
        return
    group = op.prim.group
    if group.jvp is None and not getattr(group, "tangents", False):
        group.tangents = True
        group.jvp = forward(group.func, list(group.func.params))
    ts = [t if t is not None else F.zeros_for(a, op.loc) for a, t in zip(op.args, arg_t)]
    t_outs = [Var(AdjointOf(o, "t_")) for o in op.outs]
    F.b.ops.append(Op(RecursiveCall(group, "jvp"), list(op.args) + ts, list(op.outs) + t_outs,
                      op.loc, op.origin, (), op.frame))
    for o, t in zip(op.outs, t_outs):
        tan[o.id] = t
