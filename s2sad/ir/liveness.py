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
from .nodes import Var, Const, leaves


def top_level_reads(func):
    """For each op of ``func.body``, the Vars it reads from outside itself.

    A control-flow op reads its arguments and the free values of its
    regions (values defined inside a region, and its parameters, are not
    reads of the enclosing code).
    """
    return [op.used_vars() for op in func.body]


def small_values(func):
    """Ids of top-level values known to be scalars: not worth a ``del`` line.

    Full reductions (no axis, no kept dims), shape queries, element counts,
    loop counters, and elementwise ops, ``OnesLike`` or ``ExpandReduced`` of
    such values.
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
        elif isinstance(p, (A.Shape, A.Size)) or type(p).__name__ == "ReducedCount":
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
