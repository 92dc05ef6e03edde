"""The default seed of a full sum, seen as ones of the summed value's shape.

``out = sum(m)`` seeded with ones reaches ``m`` as
``broadcast_like(expand_reduced(ones_like(out), m), m)``: ones of m's shape,
built in three helper calls from ``out``, which the forward must compute
only for this.  ``ones_to_shape`` rewrites that chain as ``OnesLike(m)``, so
same-shape simplification can fold ``ones * y`` into ``y`` and dead-code
elimination drops the sum (two full passes in ``sum(f(x) * g(x))``: the
product and its sum).  Where the ones are still read after simplification,
``restore_unfolded`` makes them a read-only view of one stored 1
(``SumSeed``), as cheap as the chain's broadcast view and without the sum.

The seed of a full sum or mean needs only its dtype (``seed_without_reduction``);
a mean's rule then divides it by the count, which ``seed_each_of_mean`` makes
one helper call.
"""
from ..ir.nodes import Var, Const, use_counts, walk_ops


def _all_axes(a):
    return isinstance(a, Const) and (a.value is None or a.value == ())


def ones_to_shape(func):
    """Rewrite seeded full-sum chains as ``OnesLike``, noting them in ``func.unfolded_seeds``."""
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
        rewritten.append(op)
        op.prim, op.args = A.OnesLike(), [m]
    func.unfolded_seeds = rewritten
    return func


def restore_unfolded(func):
    """Make each rewritten seed that survived simplification a ``SumSeed`` view.

    ``OnesLike`` would allocate a whole array of ones where the chain it
    replaced made a view; ``SumSeed`` makes that view directly, in the dtype
    of the sum (which for integers is wider than the summed value's), without
    the sum, which DCE has dropped when nothing else reads it.
    """
    from ..ops.operations import array_ops as A
    for op in func.unfolded_seeds:
        if isinstance(op.prim, A.OnesLike):
            op.prim = A.SumSeed()
    return func


def seed_without_reduction(func):
    """``OnesLike(out)`` for ``out`` a full sum or mean of ``v``, negated or scaled by
    numbers or not (``-np.sum(y * logp) / x.shape[0]``): ``ReductionSeed(v)``.

    The default seed of a scalar loss only needs the loss's dtype, which a
    full ``sum``/``mean`` takes from ``v``: the forward sweep no longer
    computes the reduction (nor what negates or scales it) when nothing else
    reads it.  A division can make the loss of an integer ``v`` a float where
    the seed stays an integer 1; the division's rule, the first the seed
    meets, makes the same float of it.
    """
    from ..ops.operations import array_ops as A
    from ..ops.operations import math_ops as M
    # names the dropped values would have had, for their adjoints' names
    names = {M.Neg: "neg", M.RealDiv: "real_div", M.Mul: "mul", M.ReduceSum: "reduce_sum",
             M.ReduceMean: "reduce_mean"}
    defs = {op.outs[0].id: op for op in func.body if len(op.outs) == 1}
    for op in func.body:    # the seed is made at top level, never inside a region
        if not isinstance(op.prim, A.OnesLike) or not isinstance(op.args[0], Var):
            continue
        chain = [defs.get(op.args[0].id)]
        while chain[-1] is not None:
            inner = _scaled(chain[-1], defs)
            if inner is None:
                break
            chain.append(defs.get(inner.id))
        r = chain[-1]
        if r is None or type(r.prim) not in (M.ReduceSum, M.ReduceMean) or r.prim.keep_dims \
                or not isinstance(r.args[0], Var) \
                or not _all_axes(r.args[1] if len(r.args) > 1 else Const(())):
            continue
        for c in chain:
            if c.outs[0].hint is None:
                c.outs[0].hint = names[type(c.prim)]
        kind = "sum" if type(r.prim) is M.ReduceSum else "mean"
        op.prim, op.args = A.ReductionSeed(kind), [r.args[0]]
    return func


def _scaled(op, defs):
    """The Var ``v`` when ``op`` is ``-v``, ``v / w``, ``v * w`` or ``w * v`` for a number ``w``
    (a Python number constant, or an item of a shape): its seed's dtype is ``v``'s
    but for a division (``seed_without_reduction``); else None."""
    from ..ops.operations import math_ops as M
    args = op.args
    if type(op.prim) is M.Neg:
        return args[0] if isinstance(args[0], Var) else None
    if type(op.prim) is M.RealDiv and len(args) == 2 and _number(args[1], defs):
        return args[0] if isinstance(args[0], Var) else None
    if type(op.prim) is M.Mul and len(args) == 2:
        for v, w in ((args[0], args[1]), (args[1], args[0])):
            if isinstance(v, Var) and _number(w, defs):
                return v
    return None


def _number(w, defs):
    """A Python int or float known while compiling, or an item of an array's shape."""
    from ..ops.operations import array_ops as A
    if isinstance(w, Const):
        return type(w.value) in (int, float)
    item = defs.get(w.id) if isinstance(w, Var) else None
    if item is None or type(item.prim) is not A.GetItem or not isinstance(item.args[1], Const) \
            or type(item.args[1].value) is not int or not isinstance(item.args[0], Var):
        return False
    shape = defs.get(item.args[0].id)
    return shape is not None and type(shape.prim) is A.Shape


def seed_each_of_mean(func):
    """``±ReductionSeed('mean')(v) / ReducedCount(v, all)`` as ``MeanSeed(±1)(v)``.

    A full mean's rule divides the seed by ``v``'s size: four ops (the 0-d
    one, its negations, the count, the quotient) where one helper call
    makes the same number.  When ``v`` is ``sum(u, axis)`` read only by the
    seed, ``MeanSeed`` reads ``u`` and ``axis`` instead, and the forward sweep
    no longer computes the row sums of a loss such as
    ``-mean(sum(logp * onehot, axis=1))``.  Run on dead-code-free IR (the
    counts must be of live readers); drops what it makes dead.
    """
    from ..ops.operations import array_ops as A
    from ..ops.operations import math_ops as M
    from ..ir.passes import dce
    if not any(type(op.prim) is A.ReductionSeed and op.prim.kind == "mean" for op in func.body):
        return func
    counts = use_counts(func)
    defs = {op.outs[0].id: op for op in func.body if len(op.outs) == 1}
    rewrote = False

    def made(a, prim):
        op = defs.get(a.id) if isinstance(a, Var) else None
        return op if op is not None and type(op.prim) is prim else None

    for op in func.body:    # the seed is made at top level, never inside a region
        if type(op.prim) is not M.RealDiv:
            continue
        count = made(op.args[1], A.ReducedCount)
        seed, sign = op.args[0], 1
        while made(seed, M.Neg) is not None and counts.get(seed.id) == 1:
            seed, sign = defs[seed.id].args[0], -sign
        seed = made(seed, A.ReductionSeed)
        if count is None or seed is None or seed.prim.kind != "mean" \
                or not _all_axes(count.args[1]) or count.args[0] is not seed.args[0]:
            continue
        v = seed.args[0]
        op.prim, op.args, rewrote = A.MeanSeed(sign), [v], True
        summed = made(v, M.ReduceSum)
        if summed is not None and not summed.prim.keep_dims and len(summed.args) == 2 \
                and counts.get(v.id) == 2 \
                and counts.get(seed.outs[0].id) == 1 and counts.get(count.outs[0].id) == 1 \
                and isinstance(summed.args[1], Const) and not _all_axes(summed.args[1]):
            op.args = list(summed.args)
    return dce(func) if rewrote else func
