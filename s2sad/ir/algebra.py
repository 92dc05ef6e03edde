"""Negations folded into the additions that consume them.

Rules write ``-dout`` freely (``Neg``, ``Sub``, ``Cos``...), so adjoints are
full of ``n = -a; s = b + n``: a pass over the data that ``s = b - a`` does
without.  ``fold_negations`` rewrites, for a negation read exactly once in
the same block:

- ``b + (-a)`` and ``(-a) + b`` into ``b - a``; ``b - (-a)`` into ``b + a``;
- ``(-a) * b`` and ``b * (-a)`` into ``-(a * b)``, so the sign moves on
  towards an addition that can absorb it (costing nothing when none does).

Each rewrite is exact in IEEE arithmetic (negation only flips a sign bit) and
keeps NumPy's broadcasting and dtype, so results are bit for bit the same.
"""
from .nodes import Var, Op, use_counts


def fold_negations(func):
    """Rewrite single-use negations as described above; returns ``func``."""
    counts = use_counts(func)
    start = getattr(func, "backward_start", None)
    func.body, origin = _block(func.body, counts)
    if start is not None:
        func.backward_start = next((j for j, k in enumerate(origin) if k >= start),
                                   len(func.body))
    return func


def _block(ops, counts):
    """The rewritten ops, and for each the index of the op it came from."""
    from ..ops.operations import math_ops as M
    absorbed = _absorbed(ops, counts)
    negs = {}           # id of a single-use negation's output -> its op
    dropped = set()     # ids of negations folded into their reader
    out, origin = [], []

    def fold(a):
        """What ``a`` negates, if it is a foldable negation (then dropped)."""
        neg = negs.pop(a.id)
        dropped.add(id(neg))
        return neg.args[0]

    for k, op in enumerate(ops):
        for r in op.regions:
            r.ops = _block(r.ops, counts)[0]
        p = type(op.prim)
        if not op.regions and len(op.args) == 2 and p in (M.Add, M.Sub, M.Mul):
            x, y = op.args
            nx = isinstance(x, Var) and x.id in negs
            ny = isinstance(y, Var) and y.id in negs
            if p is M.Add and ny:
                op.prim, op.args = M.Sub(), [x, fold(y)]
            elif p is M.Add and nx:
                op.prim, op.args = M.Sub(), [y, fold(x)]
            elif p is M.Sub and ny:
                op.prim, op.args = M.Add(), [x, fold(y)]
            elif p is M.Mul and (nx or ny) and id(op) in absorbed:
                args = [fold(x), y] if nx else [x, fold(y)]
                product = Var()
                out.append(Op(M.Mul(), args, [product], op.loc, op.origin))
                origin.append(k)
                op.prim, op.args = M.Neg(), [product]
        if type(op.prim) is M.Neg and id(op) in absorbed:
            negs[op.outs[0].id] = op
        out.append(op)
        origin.append(k)
    kept = [(op, k) for op, k in zip(out, origin) if id(op) not in dropped]
    return [op for op, _ in kept], [k for _, k in kept]


def _absorbed(ops, counts):
    """Ids of the negations and products whose sign an addition will absorb.

    A chain is a single-use negation, then single-use products reading it;
    it is worth rewriting only when an addition (either side) or a
    subtraction (right side) reads its end: otherwise moving the sign would
    only rename values.
    """
    from ..ops.operations import math_ops as M
    chains, absorbed = {}, set()

    def single(op):
        return len(op.outs) == 1 and counts.get(op.outs[0].id) == 1

    for op in ops:
        if op.regions:
            continue
        p = type(op.prim)
        if p is M.Neg and single(op) and isinstance(op.args[0], Var):
            chains[op.outs[0].id] = [op]
            continue
        if len(op.args) != 2 or p not in (M.Mul, M.Add, M.Sub):
            continue
        x, y = op.args
        hit_x = isinstance(x, Var) and x.id in chains
        hit_y = isinstance(y, Var) and y.id in chains
        if p is M.Mul and (hit_x or hit_y):
            chain = chains.pop(x.id if hit_x else y.id)
            if single(op):
                chains[op.outs[0].id] = chain + [op]
        elif (p is M.Add and (hit_x or hit_y)) or (p is M.Sub and hit_y):
            absorbed.update(id(o) for o in chains.pop(y.id if hit_y else x.id))
    return absorbed
