"""Generic IR-to-IR simplifications that never change a result: ``dce`` and ``cse``.

They read only what every primitive declares (``stateful``, ``key()``, its code
template), so they sit with the IR; the passes that know particular primitives
are in ``s2sad/opt/``.
"""
from .control import Copy, If, StackPop
from .nodes import Var, leaves, substitute


def dce(func):
    """Drop ops none of whose outputs reach the result (stateful ops stay).

    An ``If``'s unused outputs are dropped with their branch results; a loop
    keeps all its carried values (each may feed the next iteration).
    """
    live = {v.id for v in leaves(func.result) if isinstance(v, Var)}
    start = func.backward_start
    keep = _block(func.body, live)
    if start is not None:
        func.backward_start = sum(keep[:start])
    func.body = [op for op, k in zip(func.body, keep) if k]
    return func


def _block(ops, live):
    """Mark which of ``ops`` to keep (updating ``live``); prunes regions in place."""
    keep = [False] * len(ops)
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        if not op.regions:
            if op.prim.stateful or any(o.id in live for o in op.outs):
                keep[i] = True
                live.update(v.id for v in op.arg_vars())
            continue
        outs_live = any(o.id in live for o in op.outs)
        if isinstance(op.prim, If):
            wanted = [j for j, o in enumerate(op.outs) if o.id in live]
            op.outs = [op.outs[j] for j in wanted]
            for r in op.regions:
                r.result = tuple(r.result[j] for j in wanted)
        inner_live = set(live)
        for r in op.regions:
            inner_live.update(v.id for v in leaves(r.result) if isinstance(v, Var))
        stateful = read_later = False
        for r in op.regions:
            k = _block(r.ops, inner_live)
            r.ops = [o for o, kk in zip(r.ops, k) if kk]
            stateful = stateful or any(o.prim.stateful for o in r.ops)
            # a value a branch defines may be read after the op (by the backward
            # branch taken on the same condition)
            read_later = read_later or any(o.id in live for o2 in r.ops for o in o2.outs)
        if outs_live or stateful or read_later:
            keep[i] = True
            live.update(inner_live)
            live.update(v.id for v in op.arg_vars())
    return keep


def cse(func):
    """Common-subexpression elimination and copy propagation.

    Two stateless ops with equal primitives (same attributes) and the same
    arguments compute the same value: the second is dropped and its uses read
    the first.  Ops that pass an input through unchanged (``Copy``, ``Depend``,
    a keep-dims ``ExpandReduced``) are dropped too.  A value computed inside a
    region is reused only inside it (a branch's values do not exist on the
    other path); values from enclosing code are reused inside regions.
    ``stop_gradient`` is kept: a gradient inlined into a program differentiated
    again must still block the next derivative (``drop_stop_gradients``).
    """
    return _substituted(func, _cse_block, {})


def drop_stop_gradients(func):
    """``stop_gradient(x)`` read as ``x``: the program is differentiated no further."""
    return _substituted(func, _cse_block, None)


def _substituted(func, block, *extra):
    """``func`` through ``block(ops, *extra, subst)``, the result and the backward
    start following the ops it drops."""
    subst = {}
    start = func.backward_start
    position = {id(op): i for i, op in enumerate(func.body)}
    func.body = block(func.body, *extra, subst)
    func.result = substitute(func.result, subst)
    if start is not None:
        func.backward_start = next((k for k, op in enumerate(func.body)
                                    if position[id(op)] >= start), len(func.body))
    return func


def _cse_block(ops, table, subst):
    """The ops of ``ops`` kept; ``table`` maps op keys to outputs, ``subst`` records
    drops; a ``table`` of None: only the ``stop_gradient`` ops are dropped."""
    kept = []
    for op in ops:
        if subst:       # none yet: nothing to follow (the first ops, or a pass with no drop)
            op.args = [substitute(a, subst) for a in op.args]
            if isinstance(op.prim, StackPop):
                # a pop rebinds the values pushed; a pushed value merged into
                # another is rebound under the name that is still read
                op.outs = [substitute(o, subst) for o in op.outs]
        for r in op.regions:
            r.ops = _cse_block(r.ops, None if table is None else dict(table), subst)
            r.result = tuple(substitute(x, subst) for x in r.result)
        same = _identity_input(op, stops=table is None)
        if same is not None and isinstance(op.args[same], Var):
            subst[op.outs[0].id] = op.args[same]
            continue
        if table is None or op.regions or op.prim.stateful or not op.outs:
            kept.append(op)
            continue
        k = _op_key(op)
        if k is not None and k in table:
            for o, prev in zip(op.outs, table[k]):
                subst[o.id] = prev
            continue
        if k is not None:
            table[k] = op.outs
        kept.append(op)
    return kept


def _op_key(op):
    """What two ops computing the same value share, or None (unhashable attributes).

    The inputs of a commutative op are put in one order (by hash: two keys of
    equal hash may stay apart, a missed merge, never a wrong one).
    """
    try:
        args = tuple(_arg_key(a) for a in op.args)
        if len(args) == 2 and _commutes(op):
            args = tuple(sorted(args, key=hash))
        k = (op.prim.key(), args)
        hash(k)
        return k
    except TypeError:
        return None


def _commutes(op):
    """Whether ``op``'s two inputs may be swapped (``Primitive.commutative``)."""
    kind = op.prim.commutative
    if kind == "numbers":
        return any(not isinstance(a, (Var, tuple)) and type(a.value) in (int, float, bool)
                   for a in op.args)
    return kind is True


def _identity_input(op, stops=False):
    """The input an op passes through unchanged (``Copy``, ``Depend``, a
    keep-dims ``ExpandReduced``...), read off its code template, or ``None``.
    Such an op that is not differentiable (``stop_gradient``) blocks a later
    derivative: only the ``stops`` are read through, and only with ``stops``."""
    if isinstance(op.prim, Copy):
        return None if stops else 0
    if op.regions or op.prim.stateful or len(op.outs) != 1 or not op.args:
        return None
    prim = op.prim
    if stops == prim.differentiable:
        return None
    # one of s2sad's primitives that is its class alone (no attributes, nothing else
    # set on it, its class's name) emits what its class does: asked once per class
    # and input count.  A user's primitive may keep state anywhere (``__slots__``,
    # the name given to ``PrimitiveWithInfer``): asked each time.
    plain = not prim.attrs and type(prim).__module__.startswith("s2sad.") \
        and getattr(prim, "__dict__", None) is not None \
        and prim.__dict__.keys() == _PLAIN_FIELDS and prim.name == type(prim).__name__
    if plain:
        known = _IDENTITY.get((type(prim), len(op.args)), _UNKNOWN)
        if known is not _UNKNOWN:
            return known
    names = ["_in%d_" % i for i in range(len(op.args))]
    try:
        text = prim.emit(*names)
    except Exception:
        text = None
    found = names.index(text) if text in names else None
    if plain:
        _IDENTITY[type(prim), len(op.args)] = found
    return found


# (primitive class, input count) -> ``_identity_input``'s answer, for plain primitives
_IDENTITY = {}
_UNKNOWN = object()
_PLAIN_FIELDS = {"name", "attrs", "_eager"}


def _arg_key(a):
    if isinstance(a, tuple):
        return ("t",) + tuple(_arg_key(x) for x in a)
    if isinstance(a, Var):
        return ("v", a.id)
    v = a.value
    if isinstance(v, list):
        return ("l", tuple(_arg_key(type(a)(x)) for x in v))
    return ("c", type(v).__name__, v)
