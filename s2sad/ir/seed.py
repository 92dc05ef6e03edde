"""The default seed of a full sum, seen as ones of the summed value's shape.

``out = sum(m)`` seeded with ones reaches ``m`` as
``broadcast_like(expand_reduced(ones_like(out), m), m)``: ones of m's shape,
built in three helper calls from ``out``, which the forward must compute
only for this.  ``ones_to_shape`` rewrites that chain as ``OnesLike(m)``, so
same-shape simplification can fold ``ones * y`` into ``y`` and dead-code
elimination drops the sum (two full passes in ``sum(f(x) * g(x))``: the
product and its sum).  Where the ones are still read after simplification,
``restore_unfolded`` puts the original chain back: its broadcast is a view,
while ``OnesLike`` would allocate a whole array.
"""
from .nodes import Var, Const, walk_ops


def _all_axes(a):
    return isinstance(a, Const) and (a.value is None or a.value == ())


def ones_to_shape(func):
    """Rewrite seeded full-sum chains as ``OnesLike``; returns what to restore."""
    from ..ops.operations import array_ops as A
    from ..ops.operations import math_ops as M
    defs = {}
    for op in walk_ops(func.body):
        for o in op.outs:
            defs[o.id] = op
    rewritten = []
    for op in func.body:    # the seed is made at top level, never inside a region
        p, args = op.prim, op.args
        if not (isinstance(p, A.BroadcastLike) and isinstance(args[0], Var)
                and isinstance(args[1], Var)):
            continue
        m = args[1]
        e = defs.get(args[0].id)
        if e is None or not isinstance(e.prim, A.ExpandReduced) or e.prim.keep_dims \
                or e.args[1] is not m or not _all_axes(e.args[2]) \
                or not isinstance(e.args[0], Var):
            continue
        o = defs.get(e.args[0].id)
        if o is None or not isinstance(o.prim, A.OnesLike) or not isinstance(o.args[0], Var):
            continue
        r = defs.get(o.args[0].id)
        if r is None or type(r.prim) is not M.ReduceSum or r.prim.keep_dims \
                or r.args[0] is not m or not _all_axes(r.args[1] if len(r.args) > 1
                                                        else Const(())):
            continue
        rewritten.append((op, op.prim, list(op.args), (r, o, e)))
        op.prim, op.args = A.OnesLike(), [m]
    return rewritten


def restore_unfolded(func, rewritten):
    """Rebuild the broadcast chain of each rewritten seed that survived DCE.

    Runs after CSE and DCE, which may have dropped or merged the chain's
    ops, so the chain is made afresh (as it was, reading ``m``) before the
    ``OnesLike``, which becomes the ``BroadcastLike`` again.
    """
    from ..ops.operations import array_ops as A
    from .nodes import Op
    if not rewritten:
        return func
    defined = {v.id for op in walk_ops(func.body) for v in op.outs}
    by_op = {id(r[0]): r for r in rewritten}
    body, origin = [], []
    for k, op in enumerate(func.body):
        hit = by_op.get(id(op))
        if hit is not None and isinstance(op.prim, A.OnesLike):
            m = op.args[0]
            # the original ops when DCE removed them (their names and lines), else copies
            chain = []
            for old in hit[3]:
                out = old.outs[0]
                if out.id in defined:
                    out = Var(out.hint)
                chain.append(Op(old.prim, old.args, [out], old.loc, old.origin))
            r, o, e = chain
            r.args = [m] + r.args[1:]
            o.args = [r.outs[0]]
            e.args = [o.outs[0], m] + e.args[2:]
            body.extend(chain)
            # the sum stays in the forward sweep when the seed opens the backward one
            start = getattr(func, "backward_start", None)
            origin.extend((k - 1 if k == start else k, k, k))
            op.prim, op.args = hit[1], [e.outs[0], m]
        body.append(op)
        origin.append(k)
    start = getattr(func, "backward_start", None)
    if start is not None:
        # inserted ops go with the op they were made for (the backward sweep)
        func.backward_start = next((j for j, k in enumerate(origin) if k >= start), len(body))
    func.body = body
    return func
