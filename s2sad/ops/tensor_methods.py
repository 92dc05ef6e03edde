"""Tensor (and ndarray) attributes and methods inside differentiated code.

``x.sum()`` or ``x.T`` on a runtime value is rewritten to these functions,
which the frontend inlines.  Keyword names accept both MindSpore's
(``keep_dims``) and NumPy's (``keepdims``) spelling, because a runtime value
may be either a Tensor or an ndarray.
"""
from . import functional as F
from .operations import math_ops as M
from .operations import array_ops as A

_transpose_t = A.TransposeT()


def _sum(x, axis=None, keepdims=False, keep_dims=False):
    return M.ReduceSum(keepdims or keep_dims)(x, () if axis is None else axis)


def _mean(x, axis=None, keepdims=False, keep_dims=False):
    return M.ReduceMean(keepdims or keep_dims)(x, () if axis is None else axis)


def _reshape(x, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return F.reshape(x, tuple(shape))


def _transpose(x, *axes):
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = axes[0]
    if not axes:
        return _transpose_t(x)
    return F.transpose(x, tuple(axes))


def _exp(x):
    return F.exp(x)


def _log(x):
    return F.log(x)


def _sqrt(x):
    return F.sqrt(x)


def _square(x):
    return F.square(x)


def _shape(x):
    return F.shape(x)


def _T(x):
    return _transpose_t(x)


METHODS = {
    "sum": _sum,
    "mean": _mean,
    "reshape": _reshape,
    "transpose": _transpose,
    "exp": _exp,
    "log": _log,
    "sqrt": _sqrt,
    "square": _square,
}

PROPERTIES = {
    "shape": _shape,
    "T": _T,
}
