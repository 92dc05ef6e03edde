"""Runtime helpers (``rt.<name>``) for the rearranging primitives.

A NumPy function that only moves, repeats or drops its input's elements
(``np.roll``, ``np.pad(mode="edge")``, ``sliding_window_view``, ...) has a
linear adjoint that needs no formula of its own: applied to the array of
element numbers, the function tells where each output element came from,
and the adjoint adds every output's cotangent back onto that element.
"""
import numpy as np

__all__ = ["arrange_adjoint", "arrange_sort_index", "arrange_take_along_grad"]


def _shape(x):
    """x's shape; x may be a ``ShapeOf`` (only the shape is kept for these helpers)."""
    shape = getattr(x, "shape", None)
    return np.shape(x) if shape is None else tuple(shape)


def _flat_pieces(out):
    """The raveled pieces of a function's result (a list for the splitting ones)."""
    if isinstance(out, (list, tuple)):
        return [np.ravel(o) for o in out]
    return [np.ravel(out)]


def _zero_dtype(x):
    """The dtype of a gradient of ``x`` when no cotangent reaches it: x's own
    inexact dtype, float64 otherwise (x may be a ``ShapeOf``, with no dtype)."""
    dtype = getattr(x, "dtype", None)
    return dtype if dtype is not None and np.issubdtype(dtype, np.inexact) else np.float64


def arrange_adjoint(dout, x, fn, kwargs):
    """The adjoint of ``fn(x, **kwargs)``: ``dout`` summed onto x's elements.

    ``dout`` is one cotangent, or a tuple of them when ``fn`` splits x; a None
    in that tuple is a piece known to get no cotangent (a symbolic zero, as
    forward mode over the adjoint passes for pieces with no tangent).
    """
    shape = _shape(x)
    size = int(np.prod(shape))
    sources = _flat_pieces(fn(np.arange(size).reshape(shape), **kwargs))
    douts = dout if isinstance(dout, (list, tuple)) else (dout,)
    index = np.concatenate(sources) if sources else np.zeros(0, np.intp)
    known = [d for d in douts if d is not None]
    zero = np.zeros((), np.result_type(*known) if known else _zero_dtype(x))
    weights = np.concatenate([np.broadcast_to(zero if d is None else d, s.shape)
                              if d is None or np.ndim(d) == 0
                              else np.ravel(d) for d, s in zip(douts, sources)])
    dtype = np.result_type(weights.dtype, np.float16) if weights.dtype.kind != "c" else \
        weights.dtype
    if weights.dtype.kind == "c":
        grad = np.zeros(size, dtype)
        np.add.at(grad, index, weights)
    else:
        grad = np.bincount(index, weights=weights, minlength=size).astype(dtype, copy=False)
    return grad.reshape(shape)


def arrange_sort_index(x, axis, kth=None):
    """The permutation that sorts ``x`` along ``axis`` (stable: ties keep their order),
    or NumPy's ``argpartition`` one around ``kth``."""
    if kth is None:
        return np.argsort(x, axis=axis, kind="stable")
    return np.argpartition(x, kth, axis=axis)


def _along_axis_index(shape, indices, axis):
    """The fancy index ``np.take_along_axis(a, indices, axis)`` reads ``a`` with."""
    ndim = len(shape)
    index = []
    for d in range(ndim):
        if d == axis:
            index.append(indices)
        else:
            fit = [1] * ndim
            fit[d] = shape[d]
            index.append(np.arange(shape[d]).reshape(fit))
    return tuple(index)


def arrange_take_along_grad(dout, x, indices, axis):
    """Zeros like ``x`` with ``dout`` added where ``take_along_axis`` read it."""
    shape = _shape(x)
    grad = np.zeros(shape, np.result_type(np.asarray(dout).dtype, np.float16))
    ax = axis % len(shape)
    index = _along_axis_index(shape, np.asarray(indices), ax)
    np.add.at(grad, index, np.broadcast_to(dout, np.broadcast_shapes(
        *[np.shape(i) for i in index])))
    return grad
