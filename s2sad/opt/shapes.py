"""Shape facts and the passes that use them: ``same_shape``, ``read_broadcasts_unexpanded``.

``shape_classes`` proves values have the same shape from what each primitive
declares (elementwise, ``output_shape_of``, a keep-dims reduction) and from the
adjoint/value pairs reverse mode records; ``maybe_integral`` says which values
may be integer or boolean arrays.  The polynomial pass (``poly.py``) reads both.
"""
from ..ir.nodes import Var, Const, leaves, substitute, walk_ops


def same_shape(func):
    """Drop shape adjustments between values proven to have the same shape.

    With the classes of ``shape_classes``, ``Unbroadcast(d, x)`` and
    ``BroadcastLike(d, x)`` with ``d`` in x's class are ``d`` itself, and
    ``OnesLike(z) * y`` with y in z's class is ``y`` (the default sens of
    ones, multiplied in by every rule, disappears).  Shapes of loop-carried
    values and branch results are never assumed, so this only removes work
    that is provably a no-op.
    """
    from ..ops.operations import array_ops as A
    from ..ops.operations import math_ops as M
    find = shape_classes(func)
    ones = {op.outs[0].id for op in walk_ops(func.body) if isinstance(op.prim, A.OnesLike)}
    # ones * mask is a float array, and mask + mask would be ``or``
    integral = maybe_integral(func)
    subst = {}

    def same(a, b):
        return isinstance(a, Var) and isinstance(b, Var) and find(a) == find(b)

    def replacement(op):
        """The value ``op`` computes again, or None."""
        p, a = op.prim, op.args
        if isinstance(p, (A.Unbroadcast, A.BroadcastLike)) and same(a[0], a[1]):
            return a[0]
        if isinstance(p, M.Mul) and len(a) == 2:
            for one, other in ((a[0], a[1]), (a[1], a[0])):
                if isinstance(one, Var) and one.id in ones and same(one, other) \
                        and other.id not in integral:
                    return other
        return None

    _replace_block(func.body, subst, replacement)
    func.result = substitute(func.result, subst)
    return func


def _replace_block(ops, subst, replacement):
    """Drop nothing, but make every reader of a replaced single-output op read its replacement.

    A pop rebinds the very Vars that were pushed, so it rebinds the
    replacement too: otherwise a backward loop would read the replacement's
    value from the last forward iteration instead of its own.
    """
    from ..ir.control import StackPop
    for op in ops:
        if subst:       # nothing replaced yet: nothing to follow
            op.args = [substitute(a, subst) for a in op.args]
            if isinstance(op.prim, StackPop):
                op.outs = [substitute(o, subst) for o in op.outs]
        for r in op.regions:
            _replace_block(r.ops, subst, replacement)
            r.result = tuple(substitute(v, subst) for v in r.result)
        if len(op.outs) == 1 and not op.regions:
            value = replacement(op)
            if value is not None:
                subst[op.outs[0].id] = value


def read_broadcasts_unexpanded(func):
    """Read ``d`` for ``BroadcastLike(d, m)`` in elementwise ops that broadcast it anyway.

    An elementwise op with another operand in m's shape class broadcasts
    ``d`` to m's shape itself, to the same values; the view (``np.broadcast_to``
    costs microseconds on small arrays) goes when nothing else reads it.
    Then expansions read the smaller value (``_expand_before_broadcast``).  Run
    on the final gradient only: differentiated again, the smaller operand would
    bring a sum back.  Only readers in the broadcast's own block: a backward
    loop reads the forward loop's values through stack slots, which ``d`` has
    none of.
    """
    find = shape_classes(func)
    _read_unexpanded(func.body, find)
    _expand_before_broadcast(func, find)
    return func


def _read_unexpanded(ops, find):
    from ..ops.operations import array_ops as A
    source = {}
    for op in ops:
        for r in op.regions:
            _read_unexpanded(r.ops, find)
        if isinstance(op.prim, A.BroadcastLike) and isinstance(op.args[1], Var):
            source[op.outs[0].id] = op.args
            continue
        args = op.args
        if not op.prim.elementwise or op.regions or \
                not all(isinstance(a, Var) or is_number(a) for a in args):
            continue
        for k, a in enumerate(args):
            hit = source.get(a.id) if isinstance(a, Var) else None
            if hit is not None and any(isinstance(b, Var) and j != k and
                                       find(b) == find(hit[1]) for j, b in enumerate(args)):
                op.args = args = args[:k] + [hit[0]] + args[k + 1:]


def _expand_before_broadcast(func, find):
    """Expand the smaller value, not its broadcast, where the expansion is broadcast again.

    The adjoint of a sum of sums (a mean of row sums, as a loss seeds) is
    ``BroadcastLike(ExpandReduced(BroadcastLike(e, m), x, axis), x)``.  When
    ``e`` has m's rank (an ``ExpandReduced`` onto ``m`` made it) and every
    reader broadcasts the expansion to x's shape anyway (a ``BroadcastLike``
    to ``x``, or an elementwise op with an operand of x's shape class),
    expanding ``e`` puts the ones in the same places and the readers make
    the same arrays, so the middle view goes.  And an expansion of a fully
    reduced value's expansion (all ones) is that value's expansion onto ``x``.
    """
    from ..ops.operations import array_ops as A
    made, readers = {}, {}
    for op in walk_ops(func.body):
        for o in op.outs:
            made[o.id] = op
        for v in op.arg_vars():
            readers.setdefault(v.id, []).append(op)
    returned = {v.id for v in leaves(func.result) if isinstance(v, Var)}

    def same(a, b):
        return isinstance(a, Var) and isinstance(b, Var) and a.id == b.id

    def broadcasts(r, out, x):
        if isinstance(r.prim, A.BroadcastLike):
            return same(r.args[0], out) and same(r.args[1], x)
        return r.prim.elementwise and not r.regions and any(
            isinstance(b, Var) and b.id != out.id and find(b) == find(x) for b in r.args)

    def expansion(v):
        """The op expanding ``v`` (``keep_dims=False``), if an ``ExpandReduced`` made it."""
        op = made.get(v.id) if isinstance(v, Var) else None
        ok = op is not None and isinstance(op.prim, A.ExpandReduced) and not op.prim.keep_dims
        return op if ok else None

    for op in walk_ops(func.body):
        if len(op.outs) != 1 or expansion(op.outs[0]) is not op:
            continue
        src, x, _ = op.args
        out = op.outs[0]
        if not isinstance(x, Var) or out.id in returned or \
                not all(broadcasts(r, out, x) for r in readers.get(out.id, ())):
            continue
        middle = made.get(src.id) if isinstance(src, Var) else None
        if middle is not None and isinstance(middle.prim, A.BroadcastLike):
            inner = expansion(middle.args[0])
            if inner is not None and same(inner.args[1], middle.args[1]):
                op.args = [middle.args[0], x, op.args[2]]
        inner = expansion(op.args[0])
        axis = inner.args[2] if inner is not None else None
        if isinstance(axis, Const) and axis.value in ((), None):     # every axis
            op.args = [inner.args[0], x, Const(())]


def shape_classes(func):
    """``find(var)``: a key equal for Vars proven to have the same shape.

    Elementwise ops (with Python-number or same-shaped operands, or operands
    known to broadcast to that shape, like ``max(z, keepdims=True)`` to
    ``z``'s) and ops that output an input's shape (``ZerosLike``,
    ``Unbroadcast``...) put their output in that input's class;
    ``func.shape_pairs``, when reverse mode made ``func``, adds that an
    adjoint has its value's shape; ``func.known_shapes``, in a program
    specialised to its input shapes, that values of one known shape have it.
    """
    from ..ops.operations.math_ops import _Reduce
    parent = {}
    into = {}       # class root -> a value that class's shape broadcasts to

    def root(i):
        while parent.get(i, i) != i:
            parent[i] = parent.get(parent[i], parent[i])
            i = parent[i]
        return i

    def union(a, b):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[ra] = rb
            if ra in into:
                into.setdefault(rb, into.pop(ra))

    def target(v):
        t = into.get(root(v.id))
        return None if t is None else root(t)

    for d, v in func.shape_pairs:
        if isinstance(d, Var) and isinstance(v, Var):
            union(d.id, v.id)
    if func.known_shapes:       # a program specialised to its input shapes
        first = {}
        for i, shape in func.known_shapes.items():
            union(i, first.setdefault(shape, i))
    for op in walk_ops(func.body):
        if len(op.outs) != 1 or op.regions:
            continue
        out = op.outs[0]
        k = op.prim.output_shape_of
        if k is not None and k < len(op.args) and isinstance(op.args[k], Var):
            union(out.id, op.args[k].id)
        elif isinstance(op.prim, _Reduce) and op.prim.keep_dims and isinstance(op.args[0], Var):
            into[root(out.id)] = op.args[0].id      # keepdims: broadcasts back to its input
        elif op.prim.elementwise:
            vs = [a for a in op.args if isinstance(a, Var)]
            if not vs or not all(isinstance(a, Var) or is_number(a) for a in op.args):
                continue
            if len({root(v.id) for v in vs}) == 1:
                union(out.id, vs[0].id)
                continue
            full = {root(v.id) for v in vs if target(v) is None}
            small = {target(v) for v in vs if target(v) is not None}
            if len(full) == 1 and small <= full:
                # ``z - max(z, keepdims)``: the smaller operands broadcast to z's shape
                union(out.id, next(v for v in vs if target(v) is None).id)
            elif not full and len(small) == 1:
                into[root(out.id)] = small.pop()
    return lambda v: root(v.id)


def maybe_integral(func):
    """Ids of values that may be boolean or integer arrays.

    The outputs of ops with no gradient (comparisons, logical ops...) but
    ``ones_like`` and ``zeros_like`` of other values, and of any op all of whose
    Var operands are such values (``mask_a * mask_b``).
    """
    from ..ops.operations import array_ops as A
    out = set()
    for op in walk_ops(func.body):
        vs = [a for a in op.args if isinstance(a, Var)]
        if isinstance(op.prim, (A.OnesLike, A.ZerosLike)):     # the dtype of their input
            integral = bool(vs) and vs[0].id in out
        else:
            integral = not op.prim.differentiable or (vs and all(v.id in out for v in vs))
        if integral:
            out.update(o.id for o in op.outs)
    return out


def is_number(a):
    """A Python number constant (broadcasts to any shape, keeps an array's dtype)."""
    return isinstance(a, Const) and type(a.value) in (int, float, bool)
