"""IR-to-IR simplifications that never change a result."""
from .nodes import Var, leaves


def dce(func):
    """Drop ops none of whose outputs reach the result (stateful ops stay)."""
    live = {v.id for v in leaves(func.result) if isinstance(v, Var)}
    keep = [False] * len(func.body)
    for i in range(len(func.body) - 1, -1, -1):
        op = func.body[i]
        if op.prim.stateful or any(o.id in live for o in op.outs):
            keep[i] = True
            live.update(v.id for v in op.arg_vars())
    start = getattr(func, "backward_start", None)
    if start is not None:
        func.backward_start = sum(keep[:start])
    func.body = [op for op, k in zip(func.body, keep) if k]
    return func
