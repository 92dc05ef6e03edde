"""Helpers of a batched tangent program: tangents with a leading axis of basis vectors.

``jacfwd`` and ``hessian`` push every basis vector of an input at once: each
tangent value carries a leading axis of size ``n`` (its per-example shape
after it), every other value is as in the one-tangent program.  Each helper
computes, for all ``n`` examples at once, what the one-tangent op computes
for each, or raises ``Unbatchable`` when the ranks at hand are not ones it
knows (the caller then runs the tangent program once per basis vector).
"""
import numpy as np

from .rt_math import _shape

__all__ = ["Unbatchable", "batch_aligned", "batch_broadcast_like", "batch_unbroadcast",
           "batch_matmul", "batch_matmul_grad_a", "batch_matmul_grad_b", "batch_sum",
           "batch_sum_keepdims"]


class Unbatchable(Exception):
    """The batched program cannot run on these ranks; run it per basis vector."""


def _lift(a, rank):
    """Batched ``a`` with ones inserted after the batch axis up to per-example ``rank``."""
    have = a.ndim - 1
    if have == rank:
        return a
    if have > rank:
        raise Unbatchable("per-example rank %d above %d" % (have, rank))
    return a.reshape(a.shape[:1] + (1,) * (rank - have) + a.shape[1:])


def _rank(v, batched):
    return len(_shape(v)) - 1 if batched else len(_shape(v))


def batch_aligned(flags, *args):
    """``args`` of an elementwise op, the batched ones at the op's per-example rank,
    so that NumPy's broadcasting (trailing axes first) keeps the batch axis apart."""
    rank = max(_rank(a, f) for a, f in zip(args, flags))
    return tuple(_lift(a, rank) if f else a for a, f in zip(args, flags))


def batch_broadcast_like(a, x, flags):
    """``broadcast_like(a, x)`` per example."""
    a_batched, x_batched = flags
    shape = tuple(_shape(x))
    if x_batched:
        if not a_batched and len(_shape(a)) > len(shape) - 1:
            raise Unbatchable("broadcast to a lower rank")
        return np.broadcast_to(_lift(a, len(shape) - 1) if a_batched else a, shape)
    return np.broadcast_to(_lift(a, len(shape)), a.shape[:1] + shape)


def batch_unbroadcast(dx, x):
    """``unbroadcast(dx, x)`` per example (``dx`` batched, ``x`` not)."""
    shape = tuple(_shape(x))
    lead = dx.ndim - 1 - len(shape)
    if lead < 0:
        raise Unbatchable("unbroadcast to a higher rank")
    axes = tuple(range(1, 1 + lead)) + tuple(
        1 + lead + i for i, n in enumerate(shape) if n == 1 and dx.shape[1 + lead + i] != 1)
    out = np.sum(dx, axis=axes, keepdims=True) if axes else dx
    return out.reshape(dx.shape[:1] + shape)


def batch_matmul(a, b, flags):
    """``a @ b`` per example, one operand batched and the other of rank 1 or 2."""
    if flags == (1, 0) and b.ndim <= 2 and a.ndim >= 2:
        return a @ b
    if flags == (0, 1) and a.ndim <= 2 and b.ndim >= 2:
        if b.ndim == 2:     # a vector per example: a @ b_i is a row of b @ a.T
            return b @ a.T if a.ndim == 2 else b @ a
        return a @ b
    raise Unbatchable("matmul of these ranks")


def _checked(out, n, shape):
    if out.shape != (n,) + tuple(shape):
        raise Unbatchable("unexpected shape %s" % (out.shape,))
    return out


def batch_matmul_grad_a(d, x, y, flags):
    """``math_matmul_grad_a(d, x, y)`` per example, ``d`` batched, ``x``, ``y`` of rank 2."""
    xs, ys = tuple(_shape(x)), tuple(_shape(y))
    if flags != (1, 0, 0) or len(xs) != 2 or len(ys) != 2 or d.ndim != 3:
        raise Unbatchable("matmul gradient of these ranks")
    return _checked(d @ y.T, d.shape[0], xs)


def batch_matmul_grad_b(d, x, y, flags):
    """``math_matmul_grad_b(d, x, y)`` per example: ``d`` or ``x`` batched, ``x`` a matrix."""
    ys = tuple(_shape(y))
    if flags == (1, 0, 0) and x.ndim == 2 and d.ndim == len(ys) + 1 and len(ys) in (1, 2):
        out = d @ x if d.ndim == 2 else np.swapaxes(x, -1, -2) @ d
        return _checked(out, d.shape[0], ys)
    if flags == (0, 1, 0) and x.ndim == 3 and d.ndim == len(ys) and len(ys) in (1, 2):
        return _checked(np.swapaxes(x, -1, -2) @ d, x.shape[0], ys)
    raise Unbatchable("matmul gradient of these ranks")


def _example_axes(x, axis):
    """A reduction's ``axis`` of one example as axes of the batched ``x``."""
    if axis is None or axis == ():
        return tuple(range(1, x.ndim))
    axes = tuple(int(a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    rank = x.ndim - 1
    if any(not -rank <= a < rank for a in axes):
        raise Unbatchable("axis out of range")
    return tuple(a if a < 0 else a + 1 for a in axes)


def batch_sum(x, axis=()):
    """``np.sum(x, axis)`` per example."""
    return np.sum(x, axis=_example_axes(x, axis))


def batch_sum_keepdims(x, axis=()):
    """``np.sum(x, axis, keepdims=True)`` per example."""
    return np.sum(x, axis=_example_axes(x, axis), keepdims=True)
