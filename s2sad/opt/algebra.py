"""Negations folded into the additions that consume them.

Rules write ``-dout`` freely (``Neg``, ``Sub``, ``Cos``...), so adjoints are
full of ``n = -a; s = b + n``: a pass over the data that ``s = b - a`` does
without.  ``fold_negations`` rewrites, for a negation read exactly once in
the same block:

- ``b + (-a)`` and ``(-a) + b`` into ``b - a``; ``b - (-a)`` into ``b + a``;
  ``-(-a)`` into ``a``;
- ``(-a) * b``, ``b * (-a)``, ``(-a) / b``, ``b / (-a)``, and a sum or
  broadcast of ``-a`` (``Unbroadcast``, ``BroadcastLike``, ``ExpandReduced``)
  into the negation of the same op on ``a``, so the
  sign moves on towards an addition that can absorb it (costing nothing when
  none does; a sum to a smaller shape negates fewer elements).

Each rewrite is exact in IEEE arithmetic (negation only flips a sign bit, and
rounding to nearest is symmetric, so a sum of negated terms is the negated
sum) and keeps NumPy's broadcasting and dtype: results are bit for bit the same.
"""
from ..ir.nodes import Var, Op, substitute, use_counts


def fold_negations(func):
    """Rewrite single-use negations as described above; returns ``func``."""
    counts = use_counts(func)
    start = func.backward_start
    renamed = {}
    func.body, origin = _block(func.body, counts, renamed)
    if renamed:
        func.result = substitute(func.result, renamed)
    if start is not None:
        func.backward_start = next((j for j, k in enumerate(origin) if k >= start),
                                   len(func.body))
    return func


def _block(ops, counts, renamed):
    """The rewritten ops, and for each the index of the op it came from.

    A negation of a negation is dropped, its readers (here and after this
    block) reading the first one's operand: ``renamed`` maps one to the other.
    """
    from ..ops.operations import math_ops as M
    from ..ir.control import StackPop
    absorbed, cancels = _absorbed(ops, counts)
    negs = {}           # id of a single-use negation's output -> its op
    dropped = set()     # ids of negations folded into their reader
    out, origin = [], []

    def fold(a):
        """What ``a`` negates, if it is a foldable negation (then dropped)."""
        neg = negs.pop(a.id)
        dropped.add(id(neg))
        return neg.args[0]

    for k, op in enumerate(ops):
        if renamed:
            op.args = [substitute(a, renamed) for a in op.args]
            if isinstance(op.prim, StackPop):
                # a pop rebinds the values pushed, under the names they are read by
                op.outs = [substitute(o, renamed) for o in op.outs]
        for r in op.regions:
            r.ops = _block(r.ops, counts, renamed)[0]
            if renamed:
                r.result = substitute(r.result, renamed)
        p = type(op.prim)
        if not op.regions and len(op.args) == 2 and p in (M.Add, M.Sub):
            x, y = op.args
            nx = isinstance(x, Var) and x.id in negs
            ny = isinstance(y, Var) and y.id in negs
            if p is M.Add and ny:
                op.prim, op.args = M.Sub(), [x, fold(y)]
            elif p is M.Add and nx:
                op.prim, op.args = M.Sub(), [y, fold(x)]
            elif p is M.Sub and ny:
                op.prim, op.args = M.Add(), [x, fold(y)]
        elif id(op) in cancels:
            same = fold(op.args[0])
            if same.hint is None:
                same.hint = op.outs[0].hint     # an adjoint keeps its name
            renamed[op.outs[0].id] = same
            continue
        elif id(op) in absorbed and p is not M.Neg:
            j = next(j for j in _signed_args(op) if op.args[j].id in negs)
            args = list(op.args)
            args[j] = fold(args[j])
            unsigned = Var()
            out.append(Op(op.prim, args, [unsigned], op.loc, op.origin, frame=op.frame))
            origin.append(k)
            op.prim, op.args = M.Neg(), [unsigned]
        if type(op.prim) is M.Neg and id(op) in absorbed:
            negs[op.outs[0].id] = op
        out.append(op)
        origin.append(k)
    kept = [(op, k) for op, k in zip(out, origin) if id(op) not in dropped]
    return [op for op, _ in kept], [k for _, k in kept]


def _signed_args(op):
    """Positions of ``op``'s arguments whose sign its result carries, for the ops that have one."""
    from ..ops.operations import array_ops as A
    from ..ops.operations import math_ops as M
    p = type(op.prim)
    if op.regions or len(op.outs) != 1:
        return ()
    if p in (M.Mul, M.RealDiv) and len(op.args) == 2:
        return [j for j, a in enumerate(op.args) if isinstance(a, Var)]
    if p in (A.Unbroadcast, A.BroadcastLike, A.ExpandReduced) and isinstance(op.args[0], Var):
        return (0,)
    return ()


def _absorbed(ops, counts):
    """Ids of the negations and sign-carrying ops whose sign an addition will absorb.

    A chain is a single-use negation, then single-use ops reading it that
    carry its sign (``_signed_args``); it is worth rewriting only when an
    addition (either side) or a subtraction (right side) reads its end:
    otherwise moving the sign would only rename values.
    """
    from ..ops.operations import math_ops as M
    chains, absorbed, cancels = {}, set(), set()

    def single(op):
        return len(op.outs) == 1 and counts.get(op.outs[0].id) == 1

    for op in ops:
        if op.regions:
            continue
        p = type(op.prim)
        if p is M.Neg and isinstance(op.args[0], Var) and op.args[0].id in chains:
            # a negation of a chain's end: the two signs cancel
            absorbed.update(id(o) for o in chains.pop(op.args[0].id))
            cancels.add(id(op))
            continue
        if p is M.Neg and single(op) and isinstance(op.args[0], Var):
            chains[op.outs[0].id] = [op]
            continue
        hits = [j for j in _signed_args(op) if op.args[j].id in chains]
        if hits:
            # the sign of one argument moves on (another stays where it is)
            chain = chains.pop(op.args[hits[0]].id)
            if single(op):
                chains[op.outs[0].id] = chain + [op]
            continue
        if len(op.args) != 2 or p not in (M.Add, M.Sub):
            continue
        x, y = op.args
        hit_x = isinstance(x, Var) and x.id in chains
        hit_y = isinstance(y, Var) and y.id in chains
        if (p is M.Add and (hit_x or hit_y)) or (p is M.Sub and hit_y):
            absorbed.update(id(o) for o in chains.pop(y.id if hit_y else x.id))
    return absorbed, cancels
