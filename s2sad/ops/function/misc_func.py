"""NumPy conveniences met in NumPy-based AD code: ``np.append``, ``np.atleast_*d``,
``np.real_if_close``, scalar-type casts (``np.float32(x)``), the closeness tests
(``np.allclose``...) and Python's ``sum`` of an array.

Each is written over existing primitives.  The closeness tests carry no
gradient (they compare) and run at run time, so they can steer an ``if`` or
an ``assert``; a cast to an integer or bool type passes no gradient, as in
other NumPy-based ADs.
"""
import builtins

import numpy as np

from ..operations import arrange_ops as R
from ..operations import array_ops as A
from ..operations import math_ops as M
from ...runtime.rt_array import array_fail
from .arrange_func import _np_asarray

_cast = A.Cast()
_reshape = A.Reshape()
_abs = M.Abs()
_equal = M.Equal()
_less_equal = M.LessEqual()
_logical_or = M.LogicalOr()
_logical_and = M.LogicalAnd()
_less = M.Less()
_reduce_all = M.ReduceMin(False)
_reduce_sum = M.ReduceSum(False)
_shape = A.Shape()
_dtype = A.DType()
_BOOL = np.bool_


def _np_append(arr, values, axis=None):
    """``np.append``: both raveled and joined, or joined along ``axis``; a list
    (of arrays and numbers, nested) is the array NumPy makes of it."""
    arr = _np_asarray(arr)
    values = _np_asarray(values)
    if axis is None:
        return A.Concat(0)((_reshape(arr, (-1,)), _reshape(values, (-1,))))
    return A.Concat(axis)((arr, values))


def _np_atleast_1d(*arys):
    return _atleast("atleast_1d", arys)


def _np_atleast_2d(*arys):
    return _atleast("atleast_2d", arys)


def _np_atleast_3d(*arys):
    return _atleast("atleast_3d", arys)


def _atleast(fn, arys):
    """One array for one argument, a list for several, as NumPy returns them."""
    if len(arys) == 1:
        return R.Rearrange(fn)(arys[0])
    out = []
    for a in arys:
        out.append(R.Rearrange(fn)(a))
    return out


def _np_real_if_close(a, tol=100):
    return R.Rearrange("real_if_close", tol=tol)(a)


def _np_isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``np.isclose`` (no gradient): NumPy's formula for finite values; equal values
    are close (infinities included)."""
    if equal_nan:
        array_fail("np.isclose: equal_nan=True is not supported by s2sad")
    near = _less_equal(_abs(a - b), atol + rtol * _abs(b))
    # an infinity is close only to itself (the formula would call it close to anything)
    finite = _logical_and(_less(_abs(a), np.inf), _less(_abs(b), np.inf))
    return _logical_or(_equal(a, b), _logical_and(near, finite))


def _np_allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _reduce_all(_cast(_np_isclose(a, b, rtol, atol, equal_nan), _BOOL), ())


def _np_array_equal(a1, a2, equal_nan=False):
    """``np.array_equal`` (no gradient): same shape and equal elements."""
    if equal_nan:
        array_fail("np.array_equal: equal_nan=True is not supported by s2sad")
    if _shape(a1) != _shape(a2):
        return False
    return _reduce_all(_cast(_equal(a1, a2), _BOOL), ())


def _builtin_sum(iterable, start=0):
    """Python's ``sum``: of a list or tuple item by item; of an array over its rows
    (axis 0), as Python iterates an array."""
    if isinstance(iterable, (list, tuple)):
        total = start
        for item in iterable:
            total = total + item
        return total
    return _reduce_sum(iterable, 0) + start


def _property_dtype(x):
    """``x.dtype``: a run-time value, usable in ``astype(x.dtype)``,
    ``np.zeros(n, dtype=x.dtype)`` and comparisons."""
    return _dtype(x)


def _caster(dtype):
    """``np.float32(x)`` and its kind: a cast to that scalar type."""
    def cast_to(x=0):
        return _cast(x, dtype)
    cast_to.__name__ = "_np_" + dtype.__name__
    cast_to.__s2sad_fold__ = True       # of a constant: NumPy's own scalar, evaluated now
    return cast_to


_CAST_TYPES = (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
               np.uint8, np.bool_)

#: NumPy functions met in differentiated code -> the functional form to inline
NUMPY = {
    np.append: _np_append, np.atleast_1d: _np_atleast_1d, np.atleast_2d: _np_atleast_2d,
    np.atleast_3d: _np_atleast_3d, np.real_if_close: _np_real_if_close,
    np.isclose: _np_isclose, np.allclose: _np_allclose, np.array_equal: _np_array_equal,
}
NUMPY.update((t, _caster(t)) for t in _CAST_TYPES)

#: Tensor/ndarray attributes -> function(self)
TENSOR_PROPERTIES = {"dtype": _property_dtype}

#: builtins applied to runtime values -> functional form
BUILTINS = {builtins.sum: _builtin_sum}

__all__ = []
