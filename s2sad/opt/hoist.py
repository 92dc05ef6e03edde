"""Loop-invariant elementwise ops computed once, before their loop.

``for t in range(n): acc = acc + np.sin(x) * w[t]`` computes ``sin(x)`` on
every iteration; reverse mode then pushes each iteration's copy for the
backward sweep (n arrays kept alive) and recomputes ``cos(x)`` on every
backward iteration.  ``hoist_invariants`` moves an op out of a loop body
when every value it reads is defined outside the loop: run on the traced
program before differentiation, ``sin(x)`` is computed once and not pushed
at all; run on the gradient, ``cos(x)`` leaves the backward loop.

Only elementwise ops reading one value (and numbers) move, and the
``slice(a, b)`` objects of an index with bounds computed before the loop
(``z[:, H:2 * H]``: no longer made and pushed every iteration): they cannot fail
on shapes, so a loop that runs zero times still raises nothing it would
not have (it may warn, as ``log`` of a negative number does).  Ops inside an
``if`` of the body stay where they are: that branch may never run.
"""
from ..ops.operations import math_ops as M
from ..ir.control import ForRange, MakeSlice, While
from ..ir.nodes import Var, defined_ids

# elementwise ops that can raise on valid shapes (integer ** negative integer,
# bitwise ops on floats)
_MAY_RAISE = (M.Pow, M.BitwiseAnd, M.BitwiseOr, M.BitwiseXor, M.Invert)


def hoist_invariants(func):
    """Move invariant elementwise ops of every loop body before the loop; returns ``func``."""
    start = func.backward_start
    func.body, moved = _block(func.body)
    if start is not None:
        # a forward loop's hoisted ops join the forward sweep
        func.backward_start = start + sum(n for k, n in moved if k < start)
    return func


def _block(ops):
    """``ops`` with hoisted ops in front of their loops; ``(loop's old index, count)`` of each."""
    out, moved = [], []
    for k, op in enumerate(ops):
        for r in op.regions:
            r.ops = _block(r.ops)[0]
        if isinstance(op.prim, (ForRange, While)):
            hoisted = _hoist(op)
            if hoisted:
                moved.append((k, len(hoisted)))
                out.extend(hoisted)
        out.append(op)
    return out, moved


def _hoist(loop):
    body = loop.regions[-1]
    inside = defined_ids([loop])      # its own outputs too: no body op reads them
    hoisted, kept = [], []
    for op in body.ops:
        if _movable(op) and not any(v.id in inside for v in op.arg_vars()):
            inside.difference_update(o.id for o in op.outs)
            hoisted.append(op)
        else:
            kept.append(op)
    body.ops = kept
    return hoisted


def _movable(op):
    p = op.prim
    if type(p) is MakeSlice:
        return True     # ``slice(a, b, c)`` of any values: nothing to raise, nothing to compute
    if p.stateful or not p.elementwise or isinstance(p, _MAY_RAISE) \
            or len(op.outs) != 1:
        return False
    return len({v.id for v in op.args if isinstance(v, Var)}) == 1
