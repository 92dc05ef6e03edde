"""Functional forms of math primitives (``ops.sin``, ``ops.matmul``, ...).

Python logic here only looks at compile-time constants (axes, flags, ``ord``);
anything that depends on a runtime shape is done inside a primitive, because
compiled code is shape-polymorphic.
"""
import builtins
import math

import numpy as np

from ...ir.primitive import complex_mode
from ..operations import math_ops as M
from ..operations import array_ops as A
from ..operations import elementwise_ops as E
from . import linalg_func
from .arrange_func import array_of
from ...runtime import constexpr

_add = M.Add()
_sub = M.Sub()
_mul = M.Mul()
_div = M.RealDiv()
_pow = M.Pow()
_neg = M.Neg()
_sin = M.Sin()
_cos = M.Cos()
_tan = M.Tan()
_exp = M.Exp()
_expm1 = M.Expm1()
_log = M.Log()
_log1p = M.Log1p()
_tanh = M.Tanh()
_sinh = M.Sinh()
_cosh = M.Cosh()
_asin = M.Asin()
_acos = M.Acos()
_atan = M.Atan()
_asinh = M.Asinh()
_acosh = M.Acosh()
_atanh = M.Atanh()
_atan2 = M.Atan2()
_sqrt = M.Sqrt()
_rsqrt = M.Rsqrt()
_reciprocal = M.Reciprocal()
_square = M.Square()
_abs = M.Abs()
_sign = M.Sign()
_erf = M.Erf()
_erfc = M.Erfc()
_floor = M.Floor()
_ceil = M.Ceil()
_round = M.Round()
_floordiv = M.FloorDiv()
_mod = M.Mod()
_maximum = M.Maximum()
_logaddexp = M.LogAddExp()
_logaddexp2 = M.LogAddExp2()
_minimum = M.Minimum()
_logical_and = M.LogicalAnd()
_logical_or = M.LogicalOr()
_logical_not = M.LogicalNot()
_bitwise_and = M.BitwiseAnd()
_bitwise_or = M.BitwiseOr()
_bitwise_xor = M.BitwiseXor()
_invert = M.Invert()
_matmul_ext = M.MatMulExt()
_dot = M.Dot()
_outer = M.Outer()
_inverse = M.MatrixInverse()
_det = M.MatrixDeterminant()
_reshape = A.Reshape()
_ones_like = A.OnesLike()
_cast = A.Cast()
_size = A.Size()

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_INF = float("inf")
_BOOL = np.bool_
_INT32 = np.int32


@constexpr
def _unsupported(what, name, value):
    """Reject, while compiling, an argument this version does not implement."""
    if value is not None:
        raise ValueError("%s: the '%s' argument is not supported by s2sad" % (what, name))
    return None


def _is_number(x):
    """Whether ``x`` is a Python number (known while compiling; an array never is)."""
    return isinstance(x, (int, float))


@constexpr
def _reduce_axis(axis):
    """NumPy/MindSpore ``axis=None`` (all axes) as the primitives' ``()``."""
    if axis is None:
        return ()
    if isinstance(axis, list):
        return tuple(axis)
    return axis


# ------------------------------------------------------------------ arithmetic
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


def floor_div(x, y):
    """``x // y`` (floor division)."""
    return _floordiv(x, y)


floor_divide = floor_div


def floor_mod(x, y):
    """``x % y`` with the sign of ``y`` (Python's and NumPy's remainder)."""
    return _mod(x, y)


def remainder(input, other):
    return _mod(input, other)


def maximum(input, other):
    return _maximum(input, other)


def minimum(input, other):
    return _minimum(input, other)


def atan2(input, other):
    return _atan2(input, other)


arctan2 = atan2


def logaddexp(x1, x2):
    """``log(exp(x1) + exp(x2))`` without overflow (one primitive: smooth at x1 = x2)."""
    return _logaddexp(x1, x2)


def logaddexp2(x1, x2):
    """``log2(2 ** x1 + 2 ** x2)`` without overflow (one primitive: smooth at x1 = x2)."""
    return _logaddexp2(x1, x2)


# -------------------------------------------------------------------- unary
def sin(x):
    return _sin(x)


def cos(x):
    return _cos(x)


def tan(input):
    return _tan(input)


def exp(x):
    return _exp(x)


def expm1(input):
    return _expm1(input)


def exp2(input):
    """``2 ** input``, as ``exp(input * log(2))`` so a Python constant never upcasts."""
    return _exp(input * _LN2)


def log(x):
    return _log(x)


def log1p(input):
    return _log1p(input)


def log2(input):
    """Base-2 logarithm, as ``log(x) / log(2)``."""
    return _log(input) * (1.0 / _LN2)


def log10(input):
    """Base-10 logarithm, as ``log(x) / log(10)``."""
    return _log(input) * (1.0 / _LN10)


def tanh(x):
    return _tanh(x)


def sinh(input):
    return _sinh(input)


def cosh(input):
    return _cosh(input)


def asin(input):
    return _asin(input)


def acos(input):
    return _acos(input)


def atan(input):
    return _atan(input)


def asinh(input):
    return _asinh(input)


def acosh(input):
    return _acosh(input)


def atanh(input):
    return _atanh(input)


arcsin = asin
arccos = acos
arctan = atan
arcsinh = asinh
arccosh = acosh
arctanh = atanh


def sqrt(x):
    return _sqrt(x)


def rsqrt(input):
    return _rsqrt(input)


def reciprocal(input):
    return _reciprocal(input)


def square(x):
    return _square(x)


def abs(input):
    return _abs(input)


absolute = abs


def sign(input):
    return _sign(input)


def erf(input):
    return _erf(input)


def erfc(input):
    return _erfc(input)


def floor(input):
    return _floor(input)


def ceil(input):
    return _ceil(input)


def round(input, *, decimals=0):
    """Round half to even; ``decimals`` scales by a power of ten (zero gradient)."""
    if decimals == 0:
        return _round(input)
    scale = 10.0 ** decimals
    return _round(input * scale) * (1.0 / scale)


def logical_and(input, other):
    return _logical_and(input, other)


def logical_or(input, other):
    return _logical_or(input, other)


def logical_not(input):
    return _logical_not(input)


def bitwise_and(input, other):
    return _bitwise_and(input, other)


def bitwise_or(input, other):
    return _bitwise_or(input, other)


def bitwise_xor(input, other):
    return _bitwise_xor(input, other)


def invert(input):
    return _invert(input)


# ----------------------------------------------------------------- products
def matmul(x, y, transpose_a=False, transpose_b=False):
    """NumPy-semantics ``x @ y``; with a transpose flag, the 2-D ``MatMul`` primitive."""
    if transpose_a or transpose_b:
        return M.MatMul(transpose_a, transpose_b)(x, y)
    return _matmul_ext(x, y)


def batch_matmul(x, y, transpose_a=False, transpose_b=False):
    """Batched matrix product over the last two axes (batch dims broadcast)."""
    return M.BatchMatMul(transpose_a, transpose_b)(x, y)


def bmm(input_x, mat2):
    return M.BatchMatMul()(input_x, mat2)


def dot(input, other):
    """``np.dot``: a product with a Python number, else ``Dot`` (any ranks, read at
    run time)."""
    if _is_number(input) or _is_number(other):
        return input * other
    return _dot(input, other)


def outer(input, vec2):
    """Outer product of the flattened inputs."""
    return _outer(input, vec2)


def inner(a, b):
    """Sum over the last axes of both inputs (``np.inner``); a Python number multiplies."""
    if _is_number(a) or _is_number(b):
        return a * b
    if A.Rank()(a) == 0 or A.Rank()(b) == 0:
        return a * b
    return M.Tensordot(((-1,), (-1,)))(a, b)


def tensordot(x1, x2, axes):
    if _is_number(axes) or isinstance(axes, (tuple, list)):
        return M.Tensordot(axes)(x1, x2)
    return _tensordot_counted(x1, x2, axes)


def _tensordot_counted(a, b, n):
    """``tensordot(a, b, n)`` for a count ``n`` known only at run time (``np.ndim(v)``).

    ``Tensordot`` needs its axes while compiling; here a's last n axes are
    flattened into one of size K, b reshaped to (K, -1), and one matmul
    contracts them: ops with rules of their own, so every order differentiates.
    """
    lead = A.Shape()(a)[:A.Rank()(a) - n]
    a_k = _reshape(a, lead + (-1,))
    b_k = _reshape(b, (A.Shape()(a_k)[-1], -1))
    return _reshape(_matmul_ext(a_k, b_k), lead + A.Shape()(b)[n:])


def inverse(input):
    """Inverse of each matrix in the last two axes."""
    return _inverse(input)


def det(input):
    """Determinant of each matrix in the last two axes."""
    return _det(input)


matrix_determinant = det


# --------------------------------------------------------------- reductions
def reduce_sum(x, axis=(), keep_dims=False):
    return M.ReduceSum(keep_dims)(x, axis)


def reduce_mean(x, axis=(), keep_dims=False):
    return M.ReduceMean(keep_dims)(x, axis)


def reduce_max(x, axis=(), keep_dims=False):
    return M.ReduceMax(keep_dims)(x, axis)


def reduce_min(x, axis=(), keep_dims=False):
    return M.ReduceMin(keep_dims)(x, axis)


def reduce_prod(x, axis=(), keep_dims=False):
    return M.ReduceProd(keep_dims)(x, axis)


def sum(x, axis=None, keepdims=False):
    """MindSpore 2.x ``ops.sum`` (``None`` = all axes)."""
    return M.ReduceSum(keepdims)(x, _reduce_axis(axis))


def mean(x, axis=None, keep_dims=False):
    """MindSpore 2.x ``ops.mean`` (``None`` = all axes)."""
    return M.ReduceMean(keep_dims)(x, _reduce_axis(axis))


def amax(input, axis=None, keepdims=False):
    """The max over ``axis`` (``None`` = all axes)."""
    return M.ReduceMax(keepdims)(input, _reduce_axis(axis))


def amin(input, axis=None, keepdims=False):
    """The min over ``axis`` (``None`` = all axes)."""
    return M.ReduceMin(keepdims)(input, _reduce_axis(axis))


def _arg_extremum(cls, input, axis, keepdims):
    if axis is None:
        index, value = cls(0, False)(_reshape(input, (-1,)))
        return value, index
    index, value = cls(axis, keepdims)(input)
    return value, index


def max(input, axis=None, keepdims=False):
    """MindSpore 2.x ``ops.max``: ``(values, indices)`` along ``axis``.

    With ``axis=None`` the index is into the flattened input (MindSpore
    documents a fixed 0 there).  The values' gradient goes to the index found.
    """
    return _arg_extremum(M.ArgMaxWithValue, input, axis, keepdims)


def min(input, axis=None, keepdims=False):
    """MindSpore 2.x ``ops.min``: ``(values, indices)`` along ``axis``."""
    return _arg_extremum(M.ArgMinWithValue, input, axis, keepdims)


def argmax_with_value(x, axis=0, keep_dims=False):
    return M.ArgMaxWithValue(axis, keep_dims)(x)


def argmin_with_value(x, axis=0, keep_dims=False):
    return M.ArgMinWithValue(axis, keep_dims)(x)


def prod(input, axis=None, keep_dims=False, dtype=None):
    """Product over ``axis`` (``None`` = all axes)."""
    _unsupported("ops.prod", "dtype", dtype)
    return M.ReduceProd(keep_dims)(input, _reduce_axis(axis))


def cumsum(x, axis, dtype=None):
    """Cumulative sum along ``axis``."""
    _unsupported("ops.cumsum", "dtype", dtype)
    return M.CumSum()(x, axis)


def logsumexp(input, axis, keep_dims=False):
    """``log(sum(exp(input)))`` over ``axis``, computed stably."""
    return M.LogSumExp(keep_dims)(input, axis)


# --------------------------------------------------------------------- norms
@constexpr
def _norm_dims(dim):
    """``dim`` as ``None`` or a tuple of ints."""
    if dim is None:
        return None
    if isinstance(dim, int):
        return (dim,)
    return tuple(dim)


@constexpr
def _check_vector_ord(ord):
    if isinstance(ord, str):
        raise ValueError("norm: ord=%r is a matrix norm; give two dims" % (ord,))
    return ord


@constexpr
def _check_matrix_ord(ord):
    if ord not in (1, -1, 2, -2, _INF, -_INF, "fro", "nuc", None):
        raise ValueError("norm: invalid matrix norm ord=%r" % (ord,))
    return ord


def _squares(x):
    """``x * x``; ``|x|^2`` (real, as NumPy's norms) where the program may hold complex values."""
    if complex_mode():
        return _abs_squared(x)
    return x * x


def _abs_squared(x):
    """|x|^2 of a complex program's value, ``re(x conj(x))``: real, as NumPy's norms and
    variances of complex arrays are (``x * x`` would be complex, and wrong)."""
    return E.Real()(x * E.Conj()(x))


def _vector_norm(x, ord, axis, keepdim):
    """The p-norm over ``axis`` (``()`` = all axes)."""
    if ord == 2:
        if axis == () and not keepdim and not complex_mode():
            return _sqrt(M.SumSquares()(x))
        return _sqrt(M.ReduceSum(keepdim)(_squares(x), axis))
    if ord == 1:
        return M.ReduceSum(keepdim)(_abs(x), axis)
    if ord == _INF:
        return M.ReduceMax(keepdim)(_abs(x), axis)
    if ord == -_INF:
        return M.ReduceMin(keepdim)(_abs(x), axis)
    if ord == 0:
        return M.ReduceSum(keepdim)(_ones_like(x) * M.NotEqual()(x, 0), axis)
    return M.ReduceSum(keepdim)(_abs(x) ** ord, axis) ** (1.0 / ord)


def _matrix_norm(x, ord, dims, keepdim):
    """Frobenius, 1 (max column sum), inf (max row sum) and their -1/-inf minima; the
    singular-value norms 2, -2 and 'nuc'."""
    if ord == "fro" or ord is None:
        return _sqrt(M.ReduceSum(keepdim)(_squares(x), dims))
    if ord == 2 or ord == -2 or ord == "nuc":
        return linalg_func.singular_value_norm(x, ord, dims, keepdim)
    if ord == 1 or ord == -1:
        sum_axis = dims[0]
        pick_axis = dims[1]
    else:
        sum_axis = dims[1]
        pick_axis = dims[0]
    sums = M.ReduceSum(True)(_abs(x), sum_axis)
    if ord > 0:
        picked = M.ReduceMax(True)(sums, pick_axis)
    else:
        picked = M.ReduceMin(True)(sums, pick_axis)
    if keepdim:
        return picked
    return M.ReduceSum(False)(picked, dims)  # drops the two size-1 axes


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """MindSpore 2.x ``ops.norm``: vector norms over one dim, matrix norms over two.

    ``ord``: None/2 (Euclidean; Frobenius over two dims), 1, inf, -inf, other
    p for vectors, 'fro', 'nuc', 1, -1, 2, -2, inf, -inf for matrices (2, -2
    and 'nuc' from the singular values).  With ``dim=None`` and ``ord=None``
    the input is treated as one flat vector; with another ``ord`` the input
    must be 1-D or 2-D, checked at run time.  The 2-norm has no gradient at 0.
    """
    _unsupported("ops.norm", "dtype", dtype)
    dims = _norm_dims(dim)
    if dims is None:
        if ord is None or ord == "fro":
            return _vector_norm(A, 2, (), keepdim)
        if ord == 1 or ord == -1 or ord == 2 or ord == -2 or ord == _INF or ord == -_INF \
                or ord == "nuc":
            # the input's rank decides: 2-D is a matrix, 1-D a column whose
            # matrix 1, 2 and inf norms are its vector norms (NormShape checks)
            matrix = _reshape(A, M.NormShape("matrix", ord)(A))
            value = _matrix_norm(matrix, ord, (0, 1), False)
            if keepdim:
                return _reshape(value, M.NormShape("kept", ord)(A))
            return value
        vector = _reshape(A, M.NormShape("vector", _check_vector_ord(ord))(A))
        return _vector_norm(vector, ord, (), keepdim)
    if len(dims) == 1:
        return _vector_norm(A, 2 if ord is None else _check_vector_ord(ord), dims, keepdim)
    return _matrix_norm(A, _check_matrix_ord(ord), dims, keepdim)


# ------------------------------------------------------ NumPy's signatures
# NumPy's reductions take a list of arrays or numbers as the array it makes of them.
# ``axis=()`` reduces no axis in NumPy (the primitives' ``()`` is every axis, as in
# MindSpore): the values themselves, in the dtype a reduction gives (bool -> int, and a
# mean's float)
def _no_axis(axis):
    return type(axis) in (tuple, list) and not axis


def _np_sum(a, axis=None, keepdims=False):
    if _no_axis(axis):
        return add(array_of(a), 0)
    return sum(array_of(a), axis, keepdims)


def _np_mean(a, axis=None, keepdims=False):
    if _no_axis(axis):
        return mul(array_of(a), 1.0)
    return mean(array_of(a), axis, keepdims)


def _np_max(a, axis=None, out=None, keepdims=False):
    _unsupported("np.max", "out", out)
    if _no_axis(axis):
        return A.Identity()(array_of(a))
    return amax(array_of(a), axis, keepdims)


def _np_min(a, axis=None, out=None, keepdims=False):
    _unsupported("np.min", "out", out)
    if _no_axis(axis):
        return A.Identity()(array_of(a))
    return amin(array_of(a), axis, keepdims)


def _np_prod(a, axis=None, dtype=None, out=None, keepdims=False):
    _unsupported("np.prod", "dtype", dtype)
    _unsupported("np.prod", "out", out)
    if _no_axis(axis):
        return add(array_of(a), 0)
    return M.ReduceProd(keepdims)(array_of(a), _reduce_axis(axis))


def _np_cumsum(a, axis=None, dtype=None, out=None):
    _unsupported("np.cumsum", "dtype", dtype)
    _unsupported("np.cumsum", "out", out)
    if axis is None:
        return M.CumSum()(_reshape(a, (-1,)), 0)
    return M.CumSum()(a, axis)


def _np_round(a, decimals=0, out=None):
    _unsupported("np.round", "out", out)
    return round(a, decimals=decimals)


def _np_matmul(x1, x2):
    return _matmul_ext(x1, x2)


def _np_dot(a, b, out=None):
    _unsupported("np.dot", "out", out)
    return dot(a, b)


def _np_outer(a, b, out=None):
    _unsupported("np.outer", "out", out)
    return _outer(a, b)


def _np_tensordot(a, b, axes=2):
    return tensordot(a, b, axes)


def _np_linalg_norm(x, ord=None, axis=None, keepdims=False):
    return norm(array_of(x), ord, axis, keepdims)


def _np_inv(a):
    return _inverse(a)


def _np_det(a):
    return _det(a)


#: NumPy functions met in differentiated code -> the functional form to inline
NUMPY = {
    np.sin: sin, np.cos: cos, np.tan: tan, np.exp: exp, np.expm1: expm1, np.exp2: exp2,
    np.log: log, np.log1p: log1p, np.log2: log2, np.log10: log10, np.tanh: tanh,
    np.sinh: sinh, np.cosh: cosh, np.arcsin: asin, np.arccos: acos, np.arctan: atan,
    np.arcsinh: asinh, np.arccosh: acosh, np.arctanh: atanh, np.arctan2: atan2,
    np.sqrt: sqrt, np.reciprocal: reciprocal, np.square: square, np.abs: abs,
    np.absolute: abs, np.sign: sign, np.floor: floor, np.ceil: ceil, np.round: _np_round,
    np.add: add, np.subtract: sub, np.multiply: mul, np.divide: div, np.true_divide: div,
    np.power: pow, np.negative: neg, np.floor_divide: floor_div, np.mod: floor_mod,
    np.remainder: floor_mod, np.maximum: maximum, np.minimum: minimum,
    np.logaddexp: logaddexp, np.logaddexp2: logaddexp2, np.logical_and: logical_and,
    np.logical_or: logical_or, np.logical_not: logical_not, np.bitwise_and: bitwise_and,
    np.bitwise_or: bitwise_or, np.bitwise_xor: bitwise_xor, np.invert: invert,
    np.sum: _np_sum, np.mean: _np_mean, np.max: _np_max, np.amax: _np_max, np.min: _np_min,
    np.amin: _np_min, np.prod: _np_prod, np.cumsum: _np_cumsum,
    np.matmul: _np_matmul, np.dot: _np_dot, np.inner: inner, np.outer: _np_outer,
    np.tensordot: _np_tensordot, np.linalg.norm: _np_linalg_norm, np.linalg.inv: _np_inv,
    np.linalg.det: _np_det,
}


# ------------------------------------------------------------ tensor methods
def _method_sum(x, axis=None, keepdims=False, keep_dims=False):
    return sum(x, axis, keepdims or keep_dims)


def _method_mean(x, axis=None, keepdims=False, keep_dims=False):
    return mean(x, axis, keepdims or keep_dims)


def _method_max(x, axis=None, keepdims=False, keep_dims=False, *, initial=None, where=None,
                return_indices=False):
    """``Tensor.max``/``ndarray.max``: the values (and indices if ``return_indices``)."""
    _unsupported("Tensor.max", "initial", initial)
    _unsupported("Tensor.max", "where", where)
    if return_indices:
        return max(x, axis, keepdims or keep_dims)
    return amax(x, axis, keepdims or keep_dims)


def _method_min(x, axis=None, keepdims=False, keep_dims=False, *, initial=None, where=None,
                return_indices=False):
    """``Tensor.min``/``ndarray.min``: the values (and indices if ``return_indices``)."""
    _unsupported("Tensor.min", "initial", initial)
    _unsupported("Tensor.min", "where", where)
    if return_indices:
        return min(x, axis, keepdims or keep_dims)
    return amin(x, axis, keepdims or keep_dims)


# ``out`` is accepted (and must be None) because NumPy's np.prod(t), np.cumsum(t)
# and np.round(t) call these methods with it
def _method_prod(x, axis=None, keep_dims=False, dtype=None, out=None, keepdims=False):
    _unsupported("Tensor.prod", "dtype", dtype)
    _unsupported("Tensor.prod", "out", out)
    return M.ReduceProd(keep_dims or keepdims)(x, _reduce_axis(axis))


def _method_cumsum(x, axis=None, dtype=None, out=None):
    return _np_cumsum(x, axis, dtype, out)


def _method_norm(x, ord=None, dim=None, keepdim=False, *, dtype=None):
    return norm(x, ord, dim, keepdim, dtype=dtype)


def _method_round(x, decimals=0, out=None):
    _unsupported("Tensor.round", "out", out)
    return round(x, decimals=decimals)


def _method_logsumexp(x, axis, keepdims=False, keep_dims=False):
    return logsumexp(x, axis, keepdims or keep_dims)



def _method_argmax(x, axis=None, keepdims=False):
    """``Tensor.argmax``: the (int32) index of the first max along ``axis``
    (``None``: into the flattened tensor)."""
    return _arg_index(M.ArgMaxWithValue, x, axis, keepdims)


def _method_argmin(x, axis=None, keepdims=False):
    """``Tensor.argmin``: the (int32) index of the first min along ``axis``."""
    return _arg_index(M.ArgMinWithValue, x, axis, keepdims)


def _arg_index(cls, x, axis, keepdims):
    if axis is None:
        index = cls(0, False)(_reshape(x, (-1,)))[0]
        if keepdims:
            # NumPy's shape (1, ..., 1): broadcast the 0-d index against a
            # keep-dims reduction of x, which has that shape
            ones = _cast(_ones_like(M.ReduceMax(True)(x, ())), _INT32)
            return _mul(ones, index)
        return index
    return cls(axis, keepdims)(x)[0]


def _method_all(x, axis=None, keep_dims=False, keepdims=False, out=None):
    """``Tensor.all``: logical and over ``axis`` (``None``: all axes); a bool Tensor."""
    _unsupported("Tensor.all", "out", out)
    return M.ReduceMin(keep_dims or keepdims)(_cast(x, _BOOL), _reduce_axis(axis))


def _method_any(x, axis=None, keep_dims=False, keepdims=False, out=None):
    """``Tensor.any``: logical or over ``axis`` (``None``: all axes); a bool Tensor."""
    _unsupported("Tensor.any", "out", out)
    return M.ReduceMax(keep_dims or keepdims)(_cast(x, _BOOL), _reduce_axis(axis))


def var(input, axis=None, ddof=0, keepdims=False):
    """The variance over ``axis`` (``None``: all axes), dividing by ``N - ddof``.

    Composed of means, so its gradient is the chain rule's: ``2 (x - mean) /
    (N - ddof)`` spread over the reduced elements.  Of a complex array it is
    the mean of ``|x - mean|^2``, real as NumPy's.
    """
    axes = _reduce_axis(axis)
    centred = _sub(input, M.ReduceMean(True)(input, axes))
    if complex_mode():
        out = M.ReduceMean(keepdims)(_abs_squared(centred), axes)
    else:
        out = M.ReduceMean(keepdims)(_square(centred), axes)
    if ddof:
        n = _size(input) / _size(out)   # the number of elements each result reduces
        out = _mul(out, n / (n - ddof))
    return out


def std(input, axis=None, ddof=0, keepdims=False):
    """The standard deviation ``sqrt(var(...))`` (its gradient is infinite where it is 0)."""
    return _sqrt(var(input, axis, ddof, keepdims))


# ``dtype`` and ``out`` are accepted (and must be None) because np.var(t) and
# np.std(t) call these methods with them
def _method_var(x, axis=None, ddof=0, keepdims=False, dtype=None, out=None):
    _unsupported("Tensor.var", "dtype", dtype)
    _unsupported("Tensor.var", "out", out)
    return var(x, axis, ddof, keepdims)


def _method_std(x, axis=None, ddof=0, keepdims=False, dtype=None, out=None):
    _unsupported("Tensor.std", "dtype", dtype)
    _unsupported("Tensor.std", "out", out)
    return std(x, axis, ddof, keepdims)


#: Tensor/ndarray methods met in differentiated code -> function(self, ...)
TENSOR_METHODS = {
    "sum": _method_sum, "mean": _method_mean, "max": _method_max, "min": _method_min,
    "amax": amax, "amin": amin, "prod": _method_prod, "cumsum": _method_cumsum,
    "logsumexp": _method_logsumexp, "norm": _method_norm,
    "exp": exp, "expm1": expm1, "log": log, "log1p": log1p, "log2": log2, "log10": log10,
    "sqrt": sqrt, "rsqrt": rsqrt, "square": square, "reciprocal": reciprocal,
    "sin": sin, "cos": cos, "tan": tan, "tanh": tanh, "sinh": sinh, "cosh": cosh,
    "asin": asin, "acos": acos, "atan": atan, "arcsin": asin, "arccos": acos,
    "arctan": atan, "asinh": asinh, "acosh": acosh, "atanh": atanh, "arcsinh": asinh,
    "arccosh": acosh, "arctanh": atanh, "atan2": atan2, "erf": erf, "erfc": erfc,
    "abs": abs, "absolute": abs, "sign": sign, "floor": floor, "ceil": ceil,
    "round": _method_round, "maximum": maximum, "minimum": minimum,
    "matmul": _np_matmul, "dot": _np_dot, "outer": outer,
    "argmax": _method_argmax, "argmin": _method_argmin, "all": _method_all,
    "any": _method_any, "var": _method_var, "std": _method_std,
}

#: Tensor/ndarray attributes -> function(self)
TENSOR_PROPERTIES = {}


def _builtin_max(*args):
    """Python's ``max`` of runtime values: the first largest item (its gradient goes
    to that one item), over several arguments or one sequence."""
    items = args[0] if len(args) == 1 else args
    best = items[0]
    for item in items[1:]:
        if item > best:
            best = item
    return best


def _builtin_min(*args):
    """Python's ``min`` of runtime values: the first smallest item."""
    items = args[0] if len(args) == 1 else args
    best = items[0]
    for item in items[1:]:
        if item < best:
            best = item
    return best


#: builtins applied to runtime values -> functional form (``abs(x)`` stages Abs)
BUILTINS = {builtins.abs: abs, builtins.max: _builtin_max, builtins.min: _builtin_min}

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__
           and _n != "constexpr"]
