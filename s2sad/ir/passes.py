"""IR-to-IR simplifications that never change a result."""
from .nodes import Var, leaves


def dce(func):
    """Drop ops none of whose outputs reach the result (stateful ops stay).

    An ``If``'s unused outputs are dropped with their branch results; a loop
    keeps all its carried values (each may feed the next iteration).
    """
    live = {v.id for v in leaves(func.result) if isinstance(v, Var)}
    start = getattr(func, "backward_start", None)
    keep = _block(func.body, live)
    if start is not None:
        func.backward_start = sum(keep[:start])
    func.body = [op for op, k in zip(func.body, keep) if k]
    return func


def _block(ops, live):
    """Mark which of ``ops`` to keep (updating ``live``); prunes regions in place."""
    from .control import If
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
        stateful = False
        for r in op.regions:
            k = _block(r.ops, inner_live)
            r.ops = [o for o, kk in zip(r.ops, k) if kk]
            stateful = stateful or any(o.prim.stateful for o in r.ops)
        if outs_live or stateful:
            keep[i] = True
            live.update(inner_live)
            live.update(v.id for v in op.arg_vars())
    return keep
