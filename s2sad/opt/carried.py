"""Loop-carried values nothing reads after their loop, dropped (``drop_dead_carried``).

``dce`` keeps every value a loop carries: each may feed the next iteration.
A carried value read neither after the loop nor by anything else the loop
does is dead all the same.  ``nn.LSTM`` fills its per-step output,
``out[i] = h``, in a loop, and a loss that reads only the final state never
reads ``out``: the functional item assignment copied the whole output array
every step.  The pass finds the carried values that are needed (read after
the loop, or read in the body by a stateful op, by a value read after the
loop, or by the update of a needed carried value), to a fixed point, and
drops the others from the loop; ``dce`` then drops the ops that computed them.
"""
from ..ir.control import ForRange
from ..ir.nodes import Var, leaves, use_counts, walk_ops


def drop_dead_carried(func):
    """Drop the carried values of every ``for`` loop that nothing needs; returns ``func``."""
    counts = use_counts(func)
    for loop in [op for op in walk_ops(func.body) if isinstance(op.prim, ForRange)]:
        _drop(loop, counts)
    return func


def _drop(loop, counts):
    body = loop.regions[0]
    outside = _read_outside(body, counts)
    carried = list(zip(body.params[1:], body.result, loop.outs))
    needed = {k for k, (_, _, out) in enumerate(carried) if out.id in outside}
    while True:
        read = _read_by_needed(body, outside, [carried[k][1] for k in sorted(needed)])
        more = {k for k, (param, _, _) in enumerate(carried) if param.id in read} - needed
        if not more:
            break
        needed |= more
    if len(needed) == len(carried):
        return
    keep = sorted(needed)
    loop.args = loop.args[:3] + [loop.args[3 + k] for k in keep]
    loop.outs = [loop.outs[k] for k in keep]
    body.params = [body.params[0]] + [body.params[1 + k] for k in keep]
    body.result = tuple(body.result[k] for k in keep)


def _read_outside(body, counts):
    """Ids of the values read somewhere that is not ``body`` (``counts``: reads in all)."""
    inside = {}
    for v in [v for op in walk_ops(body.ops) for v in _reads(op)] + leaves(body.result):
        if isinstance(v, Var):
            inside[v.id] = inside.get(v.id, 0) + 1
    return {i for i, n in counts.items() if n > inside.get(i, 0)}


def _reads(op):
    """The Vars ``op`` reads itself, and its regions' results (not its regions' ops')."""
    return op.arg_vars() + [v for r in op.regions for v in leaves(r.result)]


def _read_by_needed(body, outside, results):
    """Ids read by the body ops that compute ``results``, or that are stateful, or whose
    values are read outside the body (a backward loop's pops read none: pushes are
    stateful)."""
    read = {v.id for v in results if isinstance(v, Var)}
    for op in reversed(body.ops):
        if any(o.id in read or o.id in outside for o in op.outs) \
                or any(o.prim.stateful for o in walk_ops([op])):
            read.update(v.id for v in op.used_vars())
    return read
