"""Outlining: each inlined call of a user function becomes a function of its own.

The frontend inlines every call (so values known while compiling specialise
the callee, and free variables are ordinary SSA values), and reverse mode
differentiates one flat program.  For reading, the generated code gives each
call back its own functions: the ops a call emitted are tagged with its frame
(``Op.frame``), those of its adjoint with the same frame on the backward
side; this pass replaces each run of consecutive ops of one call and side by
a ``CallGenerated`` op whose ``Func`` takes the values the run reads from
outside and returns the values read after it, the residuals its backward
function needs included.  The pass runs again inside each new function for
the calls that callee makes.

A run stays inline when Python's scoping could not express it as a call: when
a branch inside it defines a value that is read after it, or when it reads a
value that an earlier branch defined (the backward branch of a forward
``if``).  Outlining never changes what is computed, only where it is written.
"""
from ..ir.nodes import Var, Func, Op, Region, defined_ids, leaves
from ..ir.control import CallGenerated


def outline(func):
    """A copy of ``func`` whose calls are ``CallGenerated`` ops (``func`` is unchanged)."""
    maybe_undefined = _inner_defs(func.body)
    body = _outline_body(func.body, None, _free(leaves(func.result)),
                         {p.id for p in func.params}, maybe_undefined, func.loc)
    out = Func(func.name, func.params, body, func.result, func.loc)
    backward = func.backward_start
    if backward is not None and backward < len(func.body):
        marker = func.body[backward]
        out.backward_start = next(
            (i for i, op in enumerate(out.body)
             if op is marker or (isinstance(op.prim, CallGenerated) and
                                 op.prim.first is marker)),
            backward)
    return out


def _free(values):
    return [v for v in values if isinstance(v, Var)]


def _child(op, context):
    """``(frame, side)`` of the call made from ``context`` that ``op`` belongs to, or None."""
    if op.frame is None:
        return None
    frame, side = op.frame
    while frame is not None and frame.parent is not context:
        frame = frame.parent
    return None if frame is None else (frame, side)


def _runs(ops, context):
    """Split ``ops`` into ``(key, [ops])`` runs of consecutive ops of one call and side."""
    runs = []
    for op in ops:
        key = _child(op, context)
        if runs and key is not None and runs[-1][0] is not None and \
                runs[-1][0][0] is key[0] and runs[-1][0][1] == key[1]:
            runs[-1][1].append(op)
        else:
            runs.append((key, [op]))
    return runs


def _outline_body(ops, context, read_after, visible, maybe_undefined, loc):
    """``ops`` with the runs of calls made from ``context`` outlined, regions included.

    ``read_after``: the values read after ``ops`` finish; ``visible``: ids
    certainly defined where ``ops`` run (a value only some branch defines is
    in ``maybe_undefined`` and is never passed to a call: the call would read
    it eagerly, where the inline code read it only on that branch's path).
    """
    visible = visible | {o.id for op in ops for o in op.outs}
    runs = _runs(ops, context)
    out = []
    for k, (key, run) in enumerate(runs):
        later = [op for _, r in runs[k + 1:] for op in r]
        call = None if key is None else \
            _try_outline(key, run, later, read_after, visible, maybe_undefined, loc)
        if call is not None:
            out.append(call)
            continue
        for j, op in enumerate(run):
            if op.regions:
                after = _free_uses(run[j + 1:] + later, extra=read_after)
                op = Op(op.prim, op.args, op.outs, op.loc, op.origin, [
                    Region(r.params, _outline_body(
                        r.ops, context, _free(leaves(r.result)) + after,
                        visible | {p.id for p in r.params}, maybe_undefined, loc), r.result)
                    for r in op.regions], op.frame)
            out.append(op)
    return out


def _try_outline(key, run, later, read_after, visible, maybe_undefined, loc):
    frame, side = key
    top = {o.id for op in run for o in op.outs}
    inside = _inner_defs(run)
    params = _free_uses(run)
    if any(v.id in maybe_undefined and v.id not in visible for v in params):
        return None         # reads what some branch defined, only on that branch's path
    after = _free_uses(later, extra=read_after)
    results = []
    for v in after:
        if v.id in top:
            results.append(v)
        elif v.id in inside:
            return None     # a branch inside defines a value read after the run
    if not results:
        return None
    # latest defined first (the call's value usually comes last, its residuals
    # before it): two calls of one callee then return the same tuple whatever
    # their callers read first
    defined_at = {o.id: i for i, o in enumerate(o for op in run for o in op.outs)}
    results.sort(key=lambda v: -defined_at[v.id])
    # comments in it name lines relative to the differentiated function's file
    func = Func("%s_%s" % (frame.name, side), list(params), [],
                results[0] if len(results) == 1 else tuple(results), loc)
    func.body = _outline_body(run, frame, results, {p.id for p in params},
                              maybe_undefined, loc)
    prim = CallGenerated(func, frame, side)
    prim.first = run[0]
    return Op(prim, list(params), list(results), frame.loc or run[0].loc)


def signature(func):
    """A key equal for two Funcs that compute the same thing up to the names of values.

    Calls of one callee with the same specialisation outline to such Funcs; the
    generated code writes the function once and calls it from both places.
    """
    ids = {}
    params = tuple(_ref(p, ids) for p in func.params)
    body = _signature_block(func.body, ids)
    return params, body, _ref(func.result if isinstance(func.result, tuple) else (func.result,),
                              ids)


def _ref(v, ids):
    """``v`` in a signature: a Var by its order of first appearance, a constant by value."""
    if isinstance(v, tuple):
        return tuple(_ref(x, ids) for x in v)
    if isinstance(v, Var):
        return ids.setdefault(v.id, len(ids))
    value = v.value
    if isinstance(value, (bool, int, float, str, type(None))):
        return ("c", type(value).__name__, repr(value))
    return ("k", id(value))


def _prim_key(prim):
    if isinstance(prim, CallGenerated):
        return ("call", signature(prim.func))
    try:
        key = prim.key()
        hash(key)
        return key
    except TypeError:
        return ("prim", id(prim))


def _signature_block(ops, ids):
    out = []
    for op in ops:
        regions = []
        for r in op.regions:
            params = tuple(_ref(p, ids) for p in r.params)
            regions.append((params, _signature_block(r.ops, ids), _ref(tuple(r.result), ids)))
        loc = (op.loc.filename, op.loc.lineno) if op.loc is not None else None
        out.append((_prim_key(op.prim), _ref(tuple(op.args), ids),
                    tuple(_ref(o, ids) for o in op.outs), tuple(regions), loc))
    return tuple(out)


def _inner_defs(ops):
    """Ids defined inside the regions of ``ops`` (not by the ops themselves)."""
    out = set()
    for op in ops:
        for r in op.regions:
            out.update(p.id for p in r.params)
            defined_ids(r.ops, out)
    return out


def _free_uses(ops, extra=()):
    """Vars ``ops`` read before defining them (scoped by region), then ``extra``, in order.

    A ``StackPop`` defines again the values a push took: a read after it reads
    the popped value, not the one from before.
    """
    seen, order = set(), []

    def use(v, defined):
        if isinstance(v, Var) and v.id not in defined and v.id not in seen:
            seen.add(v.id)
            order.append(v)

    defined = set()
    _uses_block(ops, defined, use)
    for v in extra:
        use(v, defined)
    return order


def _uses_block(ops, defined, use):
    """Call ``use(v, ids defined there)`` for each read in ``ops``, in order."""
    for op in ops:
        for v in op.arg_vars():
            use(v, defined)
        for r in op.regions:
            local = set(defined)
            local.update(p.id for p in r.params)
            _uses_block(r.ops, local, use)
            for v in leaves(r.result):
                use(v, local)
        defined.update(o.id for o in op.outs)


__all__ = ["outline"]
