"""Runtime helpers (``linalg_<name>`` in ``rt``, as generated code calls them) for linear-algebra primitives.

What depends on a runtime shape (whether ``b`` is a vector right-hand side,
the size of a triangle mask) is decided here, since compiled code is
shape-polymorphic.
"""
import math

import numpy as np

from .rt_math import _shape

#: NumPy 2 reads a 1-D ``b`` of ``solve`` as a vector; NumPy 1 any ``b`` with
#: one axis fewer than ``a``
_NUMPY_1 = int(np.__version__.split(".")[0]) < 2


def _vector_rhs(a, b):
    """Whether ``np.linalg.solve(a, b)`` reads ``b`` as (a stack of) vectors."""
    nb = len(_shape(b))
    return nb == 1 or (_NUMPY_1 and nb == len(_shape(a)) - 1)


def linalg_column(y, a, b):
    """``y`` with a trailing size-1 axis when ``b`` is a vector right-hand side for ``a``."""
    return y[..., None] if _vector_rhs(a, b) else y


def linalg_uncolumn(y, a, b):
    """``y`` without its trailing size-1 axis when ``b`` is a vector right-hand side."""
    return y[..., 0] if _vector_rhs(a, b) else y


def _triangle(shape, upper, diagonal, dtype):
    n, m = shape[-2:]
    mask = np.tri(n, m, -1, dtype=dtype)
    if upper:
        mask = np.tri(m, n, -1, dtype=dtype).T
    if diagonal:
        mask += diagonal * np.eye(n, m, dtype=dtype)
    return mask


def linalg_triangle(x, upper, diagonal):
    """The strict lower (``upper``: upper) triangle of each matrix plus ``diagonal`` times
    its diagonal, zeros elsewhere."""
    x = np.asarray(x)
    return x * _triangle(x.shape, upper, diagonal, x.dtype)


def linalg_gap_quotient(x, gap, offdiagonal):
    """``x / gap`` (broadcasting); 0 where ``x`` is exactly 0 and, when ``offdiagonal``, on
    each matrix's diagonal (a zero ``gap`` under a non-zero ``x`` gives +-inf)."""
    x = np.asarray(x)
    gap = np.asarray(gap)
    shape = np.broadcast_shapes(x.shape, gap.shape)
    keep = x != 0
    if offdiagonal:
        keep = keep & ~np.eye(shape[-2], shape[-1], dtype=bool)
    out = np.zeros(shape, np.result_type(x, gap))
    with np.errstate(divide="ignore"):
        np.divide(x, gap, out=out, where=keep)
    return out


def linalg_keep_leading(x, like, axis, check):
    """The first ``like.shape[axis]`` entries of ``x`` along ``axis`` (``check``: the
    dropped ones must be 0)."""
    x = np.asarray(x)
    k = _shape(like)[axis]
    index = (Ellipsis, slice(None, k)) if axis == -1 else (Ellipsis, slice(None, k), slice(None))
    if check:
        rest = (Ellipsis, slice(k, None)) if axis == -1 else (Ellipsis, slice(k, None), slice(None))
        if np.any(x[rest] != 0):
            raise ValueError(
                "svd: a gradient flows through the extra columns of u (or rows of vh) that "
                "full_matrices=True adds; they are any orthonormal basis of a complement, so "
                "it is not defined: use full_matrices=False, or only u[..., :k] and vh[..., :k, :] "
                "with k = min(m, n)")
    return x[index]


def linalg_pad_leading(x, like, axis, fill):
    """``x`` padded at the end of ``axis`` to the size of ``like`` with ``fill``."""
    x = np.asarray(x)
    shape = list(x.shape)
    shape[axis] = _shape(like)[axis]
    out = np.full(shape, fill, dtype=x.dtype)
    k = x.shape[axis]
    index = (Ellipsis, slice(None, k)) if axis == -1 else (Ellipsis, slice(None, k), slice(None))
    out[index] = x
    return out


def linalg_qr_check(r):
    """``r``, which must be square: QR of a wide matrix has no rule."""
    shape = _shape(r)
    if shape[-2] != shape[-1]:
        raise ValueError("qr: no derivative for a wide matrix (r has shape %s: more columns "
                         "than rows); differentiate the QR of its transpose, or of a square "
                         "or tall matrix" % (tuple(shape),))
    return r


def linalg_eye_like(x):
    """Identity matrices shaped like ``x`` (a stack of square matrices)."""
    x = np.asarray(x)
    return np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape).copy()


def linalg_tensor_shape(a, b, kind, ind):
    """The shapes ``tensorinv`` (``ind``) and ``tensorsolve`` (``b``'s rank) reshape with."""
    shape = tuple(_shape(a))
    if kind == "inv_in":
        return (math.prod(shape[:ind]), -1)
    if kind == "inv_out":
        return shape[ind:] + shape[:ind]
    rest = shape[len(_shape(b)):]
    if kind == "solve_in":
        return (-1, math.prod(rest))
    return rest
