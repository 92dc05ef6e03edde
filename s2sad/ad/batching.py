"""A tangent program pushing all basis vectors at once (``jacfwd``, ``hessian``).

``split_primal`` leaves the part of a forward-mode program that reads the
tangent: straight-line code, linear in the tangent.  Here each of its ops
takes tangents with a leading axis of basis vectors: an op whose rule for
that axis is known (``_RULES``) becomes an ``InBatch`` op calling the batched
form (``runtime/rt_batch.py``); a program with any other op gets no batched
form, and its tangents run one basis vector at a time.  The batched helpers
check the ranks they meet at run time and raise ``rt.Unbatchable`` outside
the cases they know, so the caller falls back to the same loop.
"""
from ..ir.control import InBatch
from ..ir.nodes import Func, Op, Var, leaves
from ..ops.operations import array_ops as A
from ..ops.operations import math_ops as M

#: primitive class -> (helper, whether it takes the flags, the flags it knows)
_RULES = {
    A.BroadcastLike: ("rt.batch_broadcast_like", True, {(1, 0), (0, 1), (1, 1)}),
    A.Unbroadcast: ("rt.batch_unbroadcast", False, {(1, 0)}),
    M.MatMulExt: ("rt.batch_matmul", True, {(1, 0), (0, 1)}),
    M.MatMulGradA: ("rt.batch_matmul_grad_a", True, {(1, 0, 0)}),
    M.MatMulGradB: ("rt.batch_matmul_grad_b", True, {(1, 0, 0), (0, 1, 0)}),
    M.ReduceSum: (lambda p: "rt.batch_sum" + "_keepdims" * p.keep_dims, False, {(1,), (1, 0)}),
}


def _batched_op(op, flags):
    """``op`` on batched arguments, or None when no batched form is known."""
    prim = op.prim
    if prim.elementwise and prim.ufunc is not None and len(op.outs) == 1:
        return Op(InBatch(flags, ufunc=prim.ufunc, of=prim.name), op.args, op.outs, op.loc,
                  op.origin)
    rule = _RULES.get(type(prim))
    if rule is None or flags not in rule[2] or (prim.attrs and isinstance(rule[0], str)):
        return None
    call, with_flags, _ = rule
    call = call if isinstance(call, str) else call(prim)
    return Op(InBatch(flags, call=call, with_flags=with_flags, of=prim.name), op.args,
              op.outs, op.loc, op.origin)


def batch_tangents(tangent, n_saved):
    """``(batched Func, which result leaves are batched)`` of ``split_primal``'s tangent
    part (its first ``n_saved`` parameters are not batched), or None."""
    batched = {p.id for p in tangent.params[n_saved:]}
    ops = []
    for op in tangent.body:
        if any(not isinstance(a, Var) and isinstance(a, tuple) for a in op.args):
            return None
        flags = tuple(int(isinstance(a, Var) and a.id in batched) for a in op.args)
        new = _batched_op(op, flags)
        if new is None:
            return None
        ops.append(new)
        batched.update(o.id for o in op.outs)
    out_flags = tuple(isinstance(v, Var) and v.id in batched for v in leaves(tangent.result))
    return (Func(tangent.name + "_batched", tangent.params, ops, tangent.result, tangent.loc),
            out_flags)
