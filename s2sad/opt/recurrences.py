"""A value a loop only scales by a constant, scaled once after it.

The backward sweep of ``while ...: b = b * 2`` is a loop whose body is
``d_b = d_b * 2``: one pass over the whole adjoint per iteration, where the
hand-written gradient multiplies once by ``2 ** n``.  The same holds for
``x = x / 2``, ``y = 0.9 * y`` and forward-mode tangents of such lines.
``scale_recurrences`` takes such a value out of a ``for`` loop (whose
iteration count is known on entry) and computes it after the loop with
``rt.math_scale_repeated``, which takes in the products by numbers that
alone read it there (``then=``); a loop left with nothing to do is then
dropped by DCE.  The result differs from the loop's only by rounding (one
multiplication instead of n); where ``factor ** n`` overflows or vanishes,
or the value is not a floating-point one, the runtime falls back to the loop.
"""
from ..ir.primitive import Primitive
from ..ops.operations import math_ops as M
from ..ir.control import ForRange
from ..ir.nodes import Const, Op, Var, use_counts


class ScaleRepeated(Primitive):
    """``x`` times ``factor`` once per iteration of ``range(start, stop, step)``, then times ``then``."""
    output_shape_of = 0

    def emit(self, x, factor, start, stop, step, then):
        bounds = stop if start == "0" and step == "1" else "%s, %s, %s" % (start, stop, step)
        then = "" if then == "1" else ", then=%s" % then
        return "rt.math_scale_repeated(%s, %s, %s%s)" % (x, factor, bounds, then)


def scale_recurrences(func):
    """Take each loop-carried value that a ``for`` body only scales by constants out of its loop."""
    counts = use_counts(func)
    _block(func, func.body, counts)
    return func


def _block(func, ops, counts):
    for op in list(ops):
        for r in op.regions:
            _block(func, r.ops, counts)
        if isinstance(op.prim, ForRange):
            _rewrite_loop(func, ops, op, counts)


def _rewrite_loop(func, block, loop, counts):
    body = loop.regions[0]
    made = {o.id: op for op in body.ops for o in op.outs}
    for k in range(len(body.result) - 1, -1, -1):
        param, result = body.params[1 + k], body.result[k]
        found = _chain(param, result, made, counts)
        if found is None:
            continue
        chain, factor = found
        for op in chain:
            body.ops.remove(op)
        init, out = loop.args[3 + k], loop.outs[k]
        del loop.args[3 + k], body.params[1 + k], loop.outs[k]
        body.result = body.result[:k] + body.result[k + 1:]
        at = block.index(loop) + 1
        scale = Op(ScaleRepeated(), [init, Const(factor)] + loop.args[:3] + [Const(1)], [out],
                   chain[-1].loc, chain[-1].origin, frame=loop.frame)
        block.insert(at, scale)
        start = func.backward_start
        if block is func.body and start is not None and at <= start:
            func.backward_start = start + 1
        _absorb_products(func, block, scale, counts)


def _absorb_products(func, block, scale, counts):
    """Fold the products by numbers that alone read the scaled value into its last factor.

    ``rt.math_scale_repeated(d_b_1, 2, n_iter) * 2`` is two passes over the
    array where ``then=2`` makes one.
    """
    then = 1
    while counts.get(scale.outs[0].id) == 1:
        out = scale.outs[0]
        k = next((k for k, op in enumerate(block) if any(a is out for a in op.args)), None)
        found = _scaling(block[k]) if k is not None else None
        if found is None or found[0] is not out:
            break
        then = _times(then, found)
        scale.outs = list(block[k].outs)
        del block[k]
        start = func.backward_start
        if block is func.body and start is not None and k < start:
            func.backward_start = start - 1
    scale.args[-1] = Const(then)


def _chain(param, result, made, counts):
    """The ops scaling ``param`` into ``result`` (each read once) and their product, or None."""
    chain, factor, cur = [], 1, result
    while cur is not param:
        op = made.get(cur.id) if isinstance(cur, Var) else None
        found = _scaling(op) if op is not None and counts.get(cur.id) == 1 else None
        if found is None:
            return None
        factor = _times(factor, found)
        chain.append(op)
        cur = found[0]
    if not chain or counts.get(param.id) != 1:
        return None
    return chain[::-1], factor


def _scaling(op):
    """``(v, c, divides)`` when ``op`` is ``v * c``, ``c * v`` or ``v / c`` for a number ``c != 0``."""
    p = type(op.prim)
    if len(op.args) != 2 or op.regions or p not in (M.Mul, M.RealDiv):
        return None
    x, y = op.args
    if p is M.Mul and _number(x):
        x, y = y, x
    if not isinstance(x, Var) or not _number(y) or y.value == 0:
        return None
    return x, y.value, p is M.RealDiv


def _times(factor, scaling):
    _, c, divides = scaling
    return factor / c if divides else factor * c


def _number(a):
    return isinstance(a, Const) and type(a.value) in (int, float)
