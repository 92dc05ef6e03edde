"""Functional forms of array primitives (``ops.reshape``, ``ops.transpose``, ...)."""
import numpy as np

from ..operations import array_ops as A

_reshape = A.Reshape()
_transpose = A.Transpose()
_transpose_t = A.TransposeT()
_zeros_like = A.ZerosLike()
_ones_like = A.OnesLike()
_shape = A.Shape()
_stop_gradient = A.StopGradient()
_depend = A.Depend()


def reshape(x, shape):
    return _reshape(x, shape)


def transpose(x, perm):
    return _transpose(x, perm)


def zeros_like(x):
    return _zeros_like(x)


def ones_like(x):
    return _ones_like(x)


def shape(x):
    return _shape(x)


def stop_gradient(x):
    """The value of ``x``, through which no gradient flows."""
    return _stop_gradient(x)


def depend(value, expr):
    """``value``, evaluated after ``expr`` (only an ordering dependency)."""
    return _depend(value, expr)


def _np_reshape(a, newshape):
    return reshape(a, newshape)


def _np_transpose(a, axes=None):
    return _transpose_t(a) if axes is None else transpose(a, tuple(axes))


def _method_reshape(x, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return reshape(x, tuple(shape))


def _method_transpose(x, *axes):
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = axes[0]
    if not axes:
        return _transpose_t(x)
    return transpose(x, tuple(axes))


def _property_t(x):
    return _transpose_t(x)


NUMPY = {
    np.reshape: _np_reshape, np.transpose: _np_transpose, np.zeros_like: zeros_like,
    np.ones_like: ones_like, np.shape: shape,
}

TENSOR_METHODS = {"reshape": _method_reshape, "transpose": _method_transpose}

TENSOR_PROPERTIES = {"shape": shape, "T": _property_t}

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
