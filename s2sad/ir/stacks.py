"""Stack slots nobody pops for: dropped from the push and the pop.

A loop's forward sweep pushes, per iteration, the values its backward body
was planned to read.  Simplification after that plan (activity of the
gradients actually returned, same-shape simplification, DCE) can leave a
popped value unread -- ``xs[t]``'s shape in ``tanh(W @ h + xs[t])`` when only
``W`` is differentiated.  Each such slot still costs a value built and
kept alive per iteration (an ``rt.ShapeOf`` here); ``prune_stack_slots``
removes it from both ends, and DCE then drops what computed it.
"""
from .nodes import Const, Op, Var, Region, leaves, substitute, walk_ops


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


#: ufuncs whose result is correctly rounded (IEEE): recomputed from the same
#: operands, alone or over stacked rows, they give the same bits
_EXACT = frozenset(("add", "subtract", "multiply", "true_divide", "negative", "square"))
_NUMBER = (bool, int, float)


def recompute_popped(func):
    """Push fewer values: those one exact op makes from other pushed values.

    A sigmoid ``o = 1 / (1 + e)`` with ``e = exp(-z)`` pushed ``e``, ``1 + e``
    and ``o`` for its adjoint: three arrays per iteration kept until the
    backward loop pops them, where a hand-written gradient keeps one.  A
    pushed value that one correctly rounded elementwise op (``+ - * /``,
    negation, square) computes from numbers and other pushed values is
    dropped from the push and computed again after the pop, from the popped
    operands: the same bits, one cheap op in the backward (which
    ``batch_popped`` then runs over many iterations' rows at once), and the
    stack holds only what cannot be recomputed.
    """
    pushes, pops = {}, {}
    _scan(func.body, func.result, pushes, pops)
    regions = {id(r.ops): r for op in walk_ops(func.body) for r in op.regions}
    order = None
    for sid, found in pops.items():
        if len(found) != 1 or len(pushes.get(sid, ())) != 1:
            continue
        push, push_block = pushes[sid][0]
        pop, block = found[0][:2]
        if push_block is block or len(push.args) - 1 != len(pop.outs) \
                or id(block) not in regions:
            continue
        again, subst = _recomputed(push, push_block, pop)
        if not again:
            continue
        if order is None:
            order = []
            _program_order(func.body, order)
        if _read_outside(order, pop, regions[id(block)], subst):
            continue
        keep = [k for k, o in enumerate(pop.outs) if o.id not in subst]
        pop.outs = [pop.outs[k] for k in keep]
        push.args = [push.args[0]] + [push.args[1 + k] for k in keep]
        at = block.index(pop) + 1
        for op in walk_ops(block[at:]):
            op.args = [substitute(a, subst) for a in op.args]
            for r in op.regions:
                r.result = substitute(r.result, subst)
        region = regions[id(block)]
        region.result = substitute(region.result, subst)
        block[at:at] = again
    return func


def _recomputed(push, push_block, pop):
    """The ops that recompute pushed values after ``pop``, and popped id -> new value.

    At least one slot stays pushed (a stack of nothing is not a stack).
    """
    slot_of, again, subst = {}, [], {}
    for k, v in enumerate(push.args[1:]):
        if isinstance(v, Var):
            slot_of.setdefault(v.id, k)
    for op in push_block:             # program order: operands before their uses
        out = op.outs[0] if len(op.outs) == 1 else None
        if out is None or out.id not in slot_of or op.regions \
                or getattr(op.prim, "ufunc", None) not in _EXACT \
                or len(subst) + 1 >= len(pop.outs):
            continue
        if all(_available(a, slot_of) for a in op.args):
            popped = pop.outs[slot_of[out.id]]
            args = [substitute(pop.outs[slot_of[a.id]], subst) if isinstance(a, Var) else a
                    for a in op.args]
            subst[popped.id] = Var(popped.hint)
            again.append(Op(op.prim, args, [subst[popped.id]], op.loc, op.origin))
    return again, subst


def _read_outside(order, pop, region, subst):
    """Whether a popped value is read after ``pop`` outside the loop body that pops it."""
    at = next(i for i, x in enumerate(order) if x is pop)
    end = next(i for i in range(at, len(order)) if order[i] is region)
    for x in order[end + 1:]:
        used = (leaves(x.result) if isinstance(x, Region) else x.arg_vars())
        if any(isinstance(v, Var) and v.id in subst for v in used):
            return True
    return False


def _available(a, slot_of):
    """An operand the backward has after the pop: a number or a value popped there."""
    if isinstance(a, Const):
        return type(a.value) in _NUMBER
    return isinstance(a, Var) and a.id in slot_of
