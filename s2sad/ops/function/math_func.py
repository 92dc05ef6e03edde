"""Functional forms of math primitives (``ops.sin``, ``ops.matmul``, ...)."""
import numpy as np

from ..operations import math_ops as M

_add = M.Add()
_sub = M.Sub()
_mul = M.Mul()
_div = M.RealDiv()
_pow = M.Pow()
_neg = M.Neg()
_sin = M.Sin()
_cos = M.Cos()
_exp = M.Exp()
_log = M.Log()
_tanh = M.Tanh()
_sqrt = M.Sqrt()
_square = M.Square()


def add(x, y):
    return _add(x, y)


def sub(x, y):
    return _sub(x, y)


def mul(x, y):
    return _mul(x, y)


def div(x, y):
    return _div(x, y)


def pow(x, y):
    return _pow(x, y)


def neg(x):
    return _neg(x)


def sin(x):
    return _sin(x)


def cos(x):
    return _cos(x)


def exp(x):
    return _exp(x)


def log(x):
    return _log(x)


def tanh(x):
    return _tanh(x)


def sqrt(x):
    return _sqrt(x)


def square(x):
    return _square(x)


def matmul(x, y, transpose_a=False, transpose_b=False):
    return M.MatMul(transpose_a, transpose_b)(x, y)


def reduce_sum(x, axis=(), keep_dims=False):
    return M.ReduceSum(keep_dims)(x, axis)


def reduce_mean(x, axis=(), keep_dims=False):
    return M.ReduceMean(keep_dims)(x, axis)


def sum(x, axis=None, keepdims=False):
    """MindSpore 2.x ``ops.sum`` (``None`` = all axes)."""
    return M.ReduceSum(keepdims)(x, () if axis is None else axis)


def mean(x, axis=None, keep_dims=False):
    """MindSpore 2.x ``ops.mean`` (``None`` = all axes)."""
    return M.ReduceMean(keep_dims)(x, () if axis is None else axis)



def _np_sum(a, axis=None, keepdims=False):
    return sum(a, axis, keepdims)


def _np_mean(a, axis=None, keepdims=False):
    return mean(a, axis, keepdims)


#: NumPy functions met in differentiated code -> the functional form to inline
NUMPY = {
    np.sin: sin, np.cos: cos, np.exp: exp, np.log: log, np.tanh: tanh, np.sqrt: sqrt,
    np.square: square, np.add: add, np.subtract: sub, np.multiply: mul, np.divide: div,
    np.true_divide: div, np.power: pow, np.negative: neg, np.matmul: matmul,
    np.sum: _np_sum, np.mean: _np_mean,
}


def _method_sum(x, axis=None, keepdims=False, keep_dims=False):
    return sum(x, axis, keepdims or keep_dims)


def _method_mean(x, axis=None, keepdims=False, keep_dims=False):
    return mean(x, axis, keepdims or keep_dims)


#: Tensor/ndarray methods met in differentiated code -> function(self, ...)
TENSOR_METHODS = {
    "sum": _method_sum, "mean": _method_mean, "exp": exp, "log": log, "sqrt": sqrt,
    "square": square,
}

#: Tensor/ndarray attributes -> function(self)
TENSOR_PROPERTIES = {}

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
