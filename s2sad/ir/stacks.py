"""Stack slots nobody pops for: dropped from the push and the pop.

A loop's forward sweep pushes, per iteration, the values its backward body
was planned to read.  Simplification after that plan (activity of the
gradients actually returned, same-shape simplification, DCE) can leave a
popped value unread -- ``xs[t]``'s shape in ``tanh(W @ h + xs[t])`` when only
``W`` is differentiated.  Each such slot still costs a value built and
kept alive per iteration (an ``rt.ShapeOf`` here); ``prune_stack_slots``
removes it from both ends, and DCE then drops what computed it.
"""
from .nodes import Var, leaves


def prune_stack_slots(func):
    """Remove slots whose popped value is not read where it is popped."""
    from .control import StackPush, StackPop
    pushes, pops = {}, {}

    def scan(ops, result):
        for op in ops:
            if isinstance(op.prim, StackPush):
                pushes.setdefault(op.args[0].id, []).append((op, ops))
            elif isinstance(op.prim, StackPop):
                pops.setdefault(op.args[0].id, []).append((op, ops, result))
            for r in op.regions:
                scan(r.ops, r.result)

    scan(func.body, func.result)
    for sid, found in pops.items():
        if len(found) != 1 or len(pushes.get(sid, ())) != 1:
            continue
        pop, block, result = found[0]
        push, push_block = pushes[sid][0]
        if push_block is block or len(push.args) - 1 != len(pop.outs):
            continue
        read = {v.id for v in leaves(result) if isinstance(v, Var)}
        for op in block:
            if op is not pop:
                read.update(v.id for v in op.used_vars())
        keep = [k for k, o in enumerate(pop.outs) if o.id in read]
        if not keep or len(keep) == len(pop.outs):
            continue
        pop.outs = [pop.outs[k] for k in keep]
        push.args = [push.args[0]] + [push.args[1 + k] for k in keep]
    return func
