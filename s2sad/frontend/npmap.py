"""NumPy functions met in differentiated code, mapped to functional forms.

Whatever name the user imported NumPy under, ``np.sin`` is the same function
object, so the table is keyed by object.  A NumPy function applied to runtime
values that is not in the table is an error naming it, never a silent zero.
"""
import numpy as np


def _table():
    from ..ops import functional as F
    from ..ops import tensor_methods as T

    def np_sum(a, axis=None, keepdims=False):
        return T._sum(a, axis, keepdims)

    def np_mean(a, axis=None, keepdims=False):
        return T._mean(a, axis, keepdims)

    def np_reshape(a, newshape):
        return F.reshape(a, newshape)

    def np_transpose(a, axes=None):
        return T._transpose(a) if axes is None else F.transpose(a, axes)

    return {
        np.sin: F.sin, np.cos: F.cos, np.exp: F.exp, np.log: F.log, np.tanh: F.tanh,
        np.sqrt: F.sqrt, np.square: F.square, np.add: F.add, np.subtract: F.sub,
        np.multiply: F.mul, np.divide: F.div, np.true_divide: F.div, np.power: F.pow,
        np.negative: F.neg, np.matmul: F.matmul, np.sum: np_sum, np.mean: np_mean,
        np.reshape: np_reshape, np.transpose: np_transpose, np.zeros_like: F.zeros_like,
        np.ones_like: F.ones_like, np.shape: F.shape,
    }


_TABLE = None


def lookup(f):
    global _TABLE
    if _TABLE is None:
        _TABLE = _table()
    try:
        return _TABLE.get(f)
    except TypeError:
        return None


def is_numpy_function(f):
    mod = getattr(f, "__module__", None) or ""
    return mod == "numpy" or mod.startswith("numpy.")
