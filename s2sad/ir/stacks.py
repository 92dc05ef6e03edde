"""Stack slots nobody pops for: dropped from the push and the pop.

A loop's forward sweep pushes, per iteration, the values its backward body
was planned to read.  Simplification after that plan (activity of the
gradients actually returned, same-shape simplification, DCE) can leave a
popped value unread -- ``xs[t]``'s shape in ``tanh(W @ h + xs[t])`` when only
``W`` is differentiated.  Each such slot still costs a value built and
kept alive per iteration (an ``rt.ShapeOf`` here); ``prune_stack_slots``
removes it from both ends, and DCE then drops what computed it.
"""
from .nodes import Var, Region, leaves


def prune_stack_slots(func):
    """Remove slots whose popped value is not read where it is popped."""
    from .control import NewStack, StackPush
    pushes, pops = {}, {}
    _scan(func.body, func.result, pushes, pops)
    if not pops:
        return func
    # a popped value is the pushed one rebound; before a whole stack goes, no
    # op after the pop (in program order) but a push may read it
    order = []
    _program_order(func.body, order)
    position = {id(x): i for i, x in enumerate(order)}

    def read_after(pop, ids):
        for x in order[position[id(pop)] + 1:]:
            if isinstance(x, Region):
                if any(isinstance(v, Var) and v.id in ids for v in leaves(x.result)):
                    return True
            elif not isinstance(x.prim, StackPush) and any(v.id in ids for v in x.arg_vars()):
                return True
        return any(isinstance(v, Var) and v.id in ids for v in leaves(func.result))
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
        if len(keep) == len(pop.outs):
            continue
        if not keep:
            if read_after(pop, {o.id for o in pop.outs}):
                continue
            # nothing popped is read: the stack goes, push, pop and all
            push_block.remove(push)
            block.remove(pop)
            func.body = [op for op in func.body
                         if not (isinstance(op.prim, NewStack) and op.outs[0].id == sid)]
            continue
        pop.outs = [pop.outs[k] for k in keep]
        push.args = [push.args[0]] + [push.args[1 + k] for k in keep]
    return func


def _scan(ops, result, pushes, pops):
    """Record each push as ``(op, its block)``, each pop with its block's result too."""
    from .control import StackPush, StackPop
    for op in ops:
        if isinstance(op.prim, StackPush):
            pushes.setdefault(op.args[0].id, []).append((op, ops))
        elif isinstance(op.prim, StackPop):
            pops.setdefault(op.args[0].id, []).append((op, ops, result))
        for r in op.regions:
            _scan(r.ops, r.result, pushes, pops)


def _program_order(ops, order):
    """Append ops in program order, each region after its ops (its result is read there)."""
    for op in ops:
        order.append(op)
        for r in op.regions:
            _program_order(r.ops, order)
            order.append(r)
