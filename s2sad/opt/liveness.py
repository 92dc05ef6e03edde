"""Where values die: the last read of each name in a function's top-level body.

Generated code is one Python function, so without help every forward value
and adjoint stays alive until ``return``.  Codegen asks this module which
names are read for the last time by each top-level statement and writes
``del a, b`` after it, so large temporaries are freed as soon as they are
dead.  Liveness is by Python name, not by SSA value, because codegen gives
several values one name (a loop's carried slot, values a backward loop pops
back into their forward names): a name is released only after the last
statement that reads any value bearing it.
"""
from ..ir.nodes import Var, Const, leaves


def top_level_reads(func):
    """For each op of ``func.body``, the Vars it reads from outside itself.

    A control-flow op reads its arguments and the free values of its
    regions (values defined inside a region, and its parameters, are not
    reads of the enclosing code).
    """
    return [op.used_vars() for op in func.body]


def read_after(func):
    """For each top-level loop, the Vars read after it (the result's among them).

    ``None`` for other statements: only a top-level loop's body releases its
    values (``body_releases``); a nested loop's are rebound by the next
    iteration around it.  Vars, not names: codegen names a value when it
    writes its statement, so it asks for the names once the loop is written.
    """
    later = {v.id: v for v in leaves(func.result) if isinstance(v, Var)}
    # a loop body may rebind a top-level Var (a loop-invariant value pushed in the
    # forward loop is popped back into itself): the top level releases it, not the body
    top = [o for op in func.body for o in op.outs]
    out = []
    for op, vs in zip(reversed(func.body), reversed(top_level_reads(func))):
        loop = type(op.prim).__name__ in ("ForRange", "While")
        out.append(list(later.values()) + top if loop else None)
        later.update((v.id, v) for v in vs)
    out.reverse()
    return out


def body_releases(ops, name_of, kept):
    """Names a top-level loop's body should ``del`` at the end of each iteration.

    Left bound, the last iteration's temporaries would live until
    ``return``: through the whole backward sweep, beside the full stack.
    Only names made by a plain op of the body (bound on every iteration,
    so ``del`` cannot fail) and not ``kept`` (read after the loop, carried,
    released already); not small values (shapes, counts).
    """
    names = []
    for op in ops:
        if op.regions or op.prim.small_result:
            continue
        for o in op.outs:
            name = name_of(o)
            if name is not None and name not in kept and name not in names:
                names.append(name)
    return names


def small_values(func):
    """Ids of top-level values known to be scalars: not worth a ``del`` line.

    Full reductions (no axis, no kept dims) and their seeds, shape queries,
    element counts, loop counters, and elementwise ops, ``OnesLike`` or
    ``ExpandReduced`` of such values.
    """
    from ..ops.operations import array_ops as A
    from ..ops.operations import math_ops as M
    small = set()

    def is_small(a):
        if isinstance(a, Var):
            return a.id in small
        return isinstance(a, Const) and type(a.value) in (bool, int, float)

    for op in func.body:
        p, args = op.prim, op.args
        if op.regions:
            if type(p).__name__ in ("While", "ForRange"):
                inits = args if type(p).__name__ == "While" else args[3:]
                small.update(o.id for o, a in zip(op.outs, inits)
                             if isinstance(a, Const) and type(a.value) is int)
            continue
        if isinstance(p, M._Reduce):
            axis = args[1] if len(args) > 1 else Const(())
            yes = not p.keep_dims and isinstance(axis, Const) and axis.value in ((), None)
        elif p.small_result:
            yes = True
        elif isinstance(p, A.ExpandReduced):
            yes = is_small(args[0])         # a scalar reshaped to (1, 1, ...)
        elif isinstance(p, (A.OnesLike, A.ZerosLike)) or p.elementwise:
            vs = [a for a in args if isinstance(a, Var)]
            yes = bool(vs) and all(is_small(a) for a in vs)
        else:
            yes = False
        if yes:
            small.update(o.id for o in op.outs)
    return small


def releases(func, name_of, keep=()):
    """``{i: [name, ...]}``: names to delete after top-level statement ``i``.

    ``name_of(var)`` gives a Var's Python name (``None`` if it has none);
    names in ``keep`` (parameters, the result) are never released, nor is
    anything after the last statement (``return`` follows), nor names that
    only ever hold scalars (``small_values``).
    """
    reads = top_level_reads(func)
    small = small_values(func)
    # only names bound on every path: by a plain statement, or a loop's slots
    # (assigned before the loop); a branch may leave a name unbound
    bound = set()
    for op in func.body:
        if not op.regions or type(op.prim).__name__ in ("While", "ForRange"):
            bound.update(name_of(o) for o in op.outs)
    last = {}
    large = set()
    for i, vs in enumerate(reads):
        for v in vs:
            name = name_of(v)
            if name is not None:
                last[name] = i
                if v.id not in small:
                    large.add(name)
    keep = set(keep)
    for v in leaves(func.result):
        if isinstance(v, Var):
            keep.add(name_of(v))
    out = {}
    final = len(func.body) - 1
    for name, i in last.items():
        if i < final and name not in keep and name in large and name in bound:
            out.setdefault(i, []).append(name)
    return out


# ------------------------------------------------------------------ schedule
def peak_in_place(func, name_of, dead, in_place):
    """The statements that should write their result into an operand dying there.

    ``dead`` is ``releases``'s answer.  Large values are counted as one each
    (by name, from their top-level definition to their release); writing in
    place saves one at an op that ``in_place(op)`` allows and that releases
    an operand.  Only the ops where the count would otherwise exceed the
    lowest peak reachable are chosen: elsewhere the plain expression is as
    good and easier to read.
    """
    small = small_values(func)
    live, counts = set(), []
    for i, op in enumerate(func.body):
        gone = set(dead.get(i, ()))
        new = {name_of(o) for o in op.outs if o.id not in small} - live - {None}
        can = in_place(op) and any(name_of(v) in gone for v in op.arg_vars())
        counts.append((len(live) + len(new), can))
        live |= new
        live -= gone
    lowest = max((n - can for n, can in counts), default=0)
    return [i for i, (n, can) in enumerate(counts) if can and n > lowest]


def schedule(func, in_place=lambda op: False):
    """Reorder runs of top-level elementwise ops so fewer large values are alive at once.

    The backward sweep is written in the order AD made it, which can keep
    several large temporaries alive that another order of the same ops
    would already have consumed.  Within each run of pure elementwise ops
    (never across a control-flow op, a call or anything else, nor across
    the start of the backward sweep), ops are picked greedily: the ready op
    that frees the most large values per value it makes, ties in the
    original order.  The new order is kept only when it lowers the modelled
    peak of the run (every large value counted as one; ``in_place(op)``:
    the op may write its result into an operand it reads for the last
    time).  Results are unchanged: the same ops compute the same values.
    """
    body = func.body
    small = small_values(func)
    reads = top_level_reads(func)
    cuts = {0, len(body)}
    start = func.backward_start
    if start is not None:
        cuts.add(min(max(start, 0), len(body)))
    for i, op in enumerate(body):
        if not _movable(op):
            cuts.update((i, i + 1))
    # values read after index i (or kept to the end): last[vid] >= i
    last = {}
    for i, vs in enumerate(reads):
        for v in vs:
            last[v.id] = i
    end = len(body)
    for v in func.params + [v for v in leaves(func.result) if isinstance(v, Var)]:
        last[v.id] = end
    bounds = sorted(cuts)
    # long runs are taken in windows: the greedy pick is quadratic in its run
    windows = [(k, min(k + _WINDOW, hi)) for lo, hi in zip(bounds, bounds[1:])
               for k in range(lo, hi, _WINDOW)]
    for lo, hi in windows:
        if hi - lo > 2:
            later = _ReadFrom(last, hi)
            order = _greedy(body, reads, lo, hi, small, later, in_place)
            if order is not None:
                body[lo:hi] = [body[k] for k in order]
    return func


_WINDOW = 32


class _ReadFrom:
    """The values read at or after index ``start`` (``vid in``), without listing them."""

    __slots__ = ("last", "start")

    def __init__(self, last, start):
        self.last, self.start = last, start

    def __contains__(self, vid):
        return self.last.get(vid, -1) >= self.start


def _movable(op):
    return not op.regions and not op.prim.stateful and op.prim.elementwise \
        and len(op.outs) == 1


def _greedy(body, reads, lo, hi, small, later, in_place):
    """The better order of ``body[lo:hi]`` (indices), or ``None`` to keep it."""
    idx = range(lo, hi)
    made = {body[k].outs[0].id: k for k in idx}
    read = {k: {v.id for v in reads[k]} for k in idx}
    # the large values each op may be the last to read
    mortal = {k: [vid for vid in read[k] if vid not in small and vid not in later]
              for k in idx}
    grow = {k: 0 if body[k].outs[0].id in small else 1 for k in idx}
    waiting = {k: sum(1 for vid in read[k] if vid in made) for k in idx}
    users, left = {}, {}
    for k in idx:
        for vid in read[k]:
            left[vid] = left.get(vid, 0) + 1
            if vid in made:
                users.setdefault(vid, []).append(k)
    readers = dict(left)
    ready = [k for k in idx if not waiting[k]]
    order = []
    while ready:
        best = min(ready, key=lambda k: (grow[k] - sum(1 for vid in mortal[k]
                                                       if left[vid] == 1), k))
        ready.remove(best)
        order.append(best)
        for vid in read[best]:
            left[vid] -= 1
        for k in users.get(body[best].outs[0].id, ()):
            waiting[k] -= 1
            if not waiting[k]:
                ready.append(k)
    if order == list(idx):
        return None
    model = (body, reads, small, later, in_place)
    return order if _peak(list(idx), readers, *model) > _peak(order, readers, *model) \
        else None


def _peak(order, readers, body, reads, small, later, in_place):
    """Most large values alive at once while ``order`` runs (those it reads or makes)."""
    left = dict(readers)
    outs = {body[k].outs[0].id for k in order}
    live = {v.id for k in order for v in reads[k] if v.id not in small and v.id not in outs}
    peak = len(live)
    for k in order:
        freed = {vid for vid in {v.id for v in reads[k]}
                 if left[vid] == 1 and vid not in small and vid not in later}
        out = body[k].outs[0].id
        grow = 0 if out in small or (freed and in_place(body[k])) else 1
        peak = max(peak, len(live) + grow)
        for vid in {v.id for v in reads[k]}:
            left[vid] -= 1
        live -= freed
        if out not in small:
            live.add(out)
    return peak
