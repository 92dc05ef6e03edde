"""Functional forms of the primitives (``ops.sin``, ``ops.matmul``, ...).

Each is a small Python function over primitive instances.  Called eagerly it
runs the primitives; met inside a differentiated function, the frontend
inlines its source like any user helper, so these need no rules of their own.
"""
from .operations import math_ops as M
from .operations import array_ops as A

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
_reshape = A.Reshape()
_transpose = A.Transpose()
_zeros_like = A.ZerosLike()
_ones_like = A.OnesLike()
_shape = A.Shape()
_stop_gradient = A.StopGradient()
_depend = A.Depend()


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
