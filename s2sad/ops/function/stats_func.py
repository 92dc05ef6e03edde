"""NumPy's remaining elementwise functions, statistics and ``scipy.special`` basics.

Where a composition of primitives gives NumPy's values it is used
(``deg2rad(x)`` is one multiplication, ``ptp`` a max minus a min); the
primitives of ``ops/operations/elementwise_ops.py`` cover the rest.  The
conventions (ties, NaN, points without a derivative) are in
docs/numpy-coverage.md, "Elementwise functions and statistics".
"""
import functools
import math
import operator

import numpy as np

from ..operations import array_ops as A
from ..operations import elementwise_ops as E
from ..operations import math_ops as M
from ...runtime import constexpr
from .arrange_func import array_of
from ...ir.primitive import complex_mode
from .math_func import _reduce_axis, _unsupported, amax, amin, erf, erfc, std, var
from .math_func import logsumexp as _logsumexp_prim

_abs = M.Abs()
_pow = M.Pow()
_log = M.Log()
_maximum = M.Maximum()
_minimum = M.Minimum()
_select = A.Select()
_cast = A.Cast()
_reshape = A.Reshape()
_zeros_like = A.ZerosLike()
_ones_like = A.OnesLike()
_broadcast_like = A.BroadcastLike()
_stop_gradient = A.StopGradient()
_isnan = E.IsNan()

_DEG = math.pi / 180.0
_RAD = 180.0 / math.pi


# ---------------------------------------------------------------- elementwise
def fabs(x):
    """``|x|`` (``np.fabs``; a float input keeps its dtype)."""
    return _abs(x)


def hypot(x1, x2):
    return E.Hypot()(x1, x2)


def fmax(x1, x2):
    """The larger of x1 and x2, ignoring a NaN in either (NaN only when both are)."""
    return _select(_isnan(x2), x1, _select(_isnan(x1), x2, _maximum(x1, x2)))


def fmin(x1, x2):
    """The smaller of x1 and x2, ignoring a NaN in either (NaN only when both are)."""
    return _select(_isnan(x2), x1, _select(_isnan(x1), x2, _minimum(x1, x2)))


def sinc(x):
    return E.Sinc()(x)


def cbrt(x):
    return E.Cbrt()(x)


def copysign(x1, x2):
    return E.Copysign()(x1, x2)


def heaviside(x1, x2):
    """0, ``x2`` or 1 by the sign of x1: no gradient in x1, ``x2``'s where x1 == 0."""
    return E.Heaviside()(x1, x2)


def deg2rad(x):
    """``x * (pi / 180)``: NumPy's own formula, one multiplication."""
    return x * _DEG


def rad2deg(x):
    """``x * (180 / pi)``: NumPy's own formula, one multiplication."""
    return x * _RAD


radians = deg2rad
degrees = rad2deg


def float_power(x1, x2):
    """``x1 ** x2`` computed in float64, as NumPy's ``float_power``."""
    return _pow(_cast(x1, np.float64), x2)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN and infinities replaced by numbers; replaced elements get no gradient."""
    return E.NanToNum(nan, posinf, neginf)(x)


def real(val):
    """The real part; in a program of real inputs, a real array itself (complex: a TypeError)."""
    if complex_mode():
        return E.Real()(val)
    return E.CheckReal("np.real")(val)


def imag(val):
    """The imaginary part; in a program of real inputs, zeros (complex: a TypeError)."""
    if complex_mode():
        return E.Imag()(val)
    return _zeros_like(E.CheckReal("np.imag")(val))


def conj(x):
    """The conjugate; in a program of real inputs, a real array itself (complex: a TypeError)."""
    if complex_mode():
        return E.Conj()(x)
    return E.CheckReal("np.conj")(x)


def angle(z, deg=False):
    """The argument of a complex value (``np.angle``); of a real one, 0 or pi, a real
    step whose gradient is 0 (as NumPy's value is real)."""
    out = E.Angle()(z)
    return out * (180.0 / 3.141592653589793) if deg else out


conjugate = conj


# ``operator`` functions (``functools.reduce(operator.mul, xs)``) stage as the
# operators themselves, so constants, tuples and lists behave as Python's do
def _op_add(a, b):
    return a + b


def _op_sub(a, b):
    return a - b


def _op_mul(a, b):
    return a * b


def _op_truediv(a, b):
    return a / b


def _op_floordiv(a, b):
    return a // b


def _op_mod(a, b):
    return a % b


def _op_pow(a, b):
    return a ** b


def _op_matmul(a, b):
    return a @ b


def _op_neg(a):
    return -a


def _op_pos(a):
    return +a


def _functools_reduce(function, sequence, *initial):
    """``functools.reduce`` over a list, tuple or array's rows, unrolled where the length is known."""
    if initial:
        acc = initial[0]
        rest = sequence
    else:
        acc = sequence[0]
        rest = sequence[1:]
    for item in rest:
        acc = function(acc, item)
    return acc


# ----------------------------------------------------------------- statistics
def _np_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
            mean=None, correction=None):
    _check_stat_args("np.var", dtype, out, where, mean)
    return var(array_of(a), axis, ddof if correction is None else correction, keepdims)


def _np_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
            mean=None, correction=None):
    _check_stat_args("np.std", dtype, out, where, mean)
    return std(array_of(a), axis, ddof if correction is None else correction, keepdims)


def _check_stat_args(what, dtype, out, where, mean):
    _unsupported(what, "dtype", dtype)
    _unsupported(what, "out", out)
    _unsupported(what, "where", where)
    _unsupported(what, "mean", mean)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """``sum(a * w, axis) / sum(w, axis)``; 1-D weights lie along ``axis``.

    Traced weights get their gradient too.  Weights summing to 0 give inf or
    NaN (NumPy raises ZeroDivisionError).
    """
    axes = _reduce_axis(axis)
    if weights is None:
        avg = M.ReduceMean(keepdims)(a, axes)
        scale = _size_ratio(a, avg)
    else:
        w = _reshape(weights, E.StatsShape("weights", axis, "np.average")(a, weights))
        scale = M.ReduceSum(keepdims)(_broadcast_like(w, a), axes)
        avg = M.ReduceSum(keepdims)(a * w, axes) / scale
    if returned:
        return avg, _broadcast_like(scale, avg)
    return avg


def _size_ratio(a, avg):
    """How many elements each mean reduced, in ``avg``'s dtype."""
    return _ones_like(avg) * (A.Size()(a) / A.Size()(avg))


@constexpr
def _quantiles(q, scale, what):
    """``q / scale`` as a float or a tuple of floats; ``q`` must be known while compiling."""
    if isinstance(q, (list, tuple, np.ndarray)):
        values = tuple(float(v) / scale for v in np.asarray(q).reshape(-1))
    else:
        values = float(q) / scale
    if np.any(np.asarray(values) < 0) or np.any(np.asarray(values) > 1):
        raise ValueError("%s: q must be in [0, %g], got %r" % (what, scale, q))
    return values


@constexpr
def _quantile_axis(axis, what):
    if axis is not None and not isinstance(axis, int):
        raise ValueError("%s: axis=%r is not supported by s2sad; give one axis or None"
                         % (what, axis))
    return axis


@constexpr
def _check_method(method, interpolation, what):
    if method != "linear" or interpolation not in (None, "linear"):
        raise ValueError("%s: only method='linear' is supported by s2sad" % what)
    return method


def _quantile(a, q, axis, keepdims, what):
    """The ``q`` (constant) quantiles of ``a``: weights times ``a``, summed."""
    axis = _quantile_axis(axis, what)
    weights = E.QuantileWeights(q, axis)(a)
    if isinstance(q, tuple):
        if axis is None:
            _unsupported(what + " with a list q and axis=None", "keepdims",
                         True if keepdims else None)
            return M.ReduceSum(False)(_reshape(weights * a, (len(q), -1)), 1)
        return M.ReduceSum(keepdims)(weights * a, axis + 1 if axis >= 0 else axis)
    return M.ReduceSum(keepdims)(weights * a, _reduce_axis(axis))


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """Linear interpolation between order statistics; ties: the first in a stable sort."""
    _unsupported("np.quantile", "out", out)
    _unsupported("np.quantile", "weights", weights)
    _check_method(method, interpolation, "np.quantile")
    return _quantile(a, _quantiles(q, 1.0, "np.quantile"), axis, keepdims, "np.quantile")


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    _unsupported("np.percentile", "out", out)
    _unsupported("np.percentile", "weights", weights)
    _check_method(method, interpolation, "np.percentile")
    return _quantile(a, _quantiles(q, 100.0, "np.percentile"), axis, keepdims,
                     "np.percentile")


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The 0.5 quantile: the mean of the two middle elements for an even count."""
    _unsupported("np.median", "out", out)
    return _quantile(a, 0.5, axis, keepdims, "np.median")


def ptp(a, axis=None, out=None, keepdims=False):
    """``max - min`` over ``axis``: each extremum's gradient as ``np.max``'s and ``np.min``'s."""
    _unsupported("np.ptp", "out", out)
    return amax(a, axis, keepdims) - amin(a, axis, keepdims)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product; the gradient is exact with zeros in the input."""
    _unsupported("np.cumprod", "dtype", dtype)
    _unsupported("np.cumprod", "out", out)
    if axis is None:
        return E.CumProd(0)(_reshape(a, (-1,)))
    return E.CumProd(axis)(a)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """``n``-th differences along ``axis``, as slices subtracted."""
    _unsupported("np.diff", "prepend", prepend)
    _unsupported("np.diff", "append", append)
    x = A.MoveAxis(axis, -1)(a)
    for _ in range(n):
        x = x[..., 1:] - x[..., :-1]
    return A.MoveAxis(-1, axis)(x)


@constexpr
def _gradient_axes(axis, varargs):
    """(axes, spacings): one constant spacing per axis (default 1)."""
    axes = (0,) if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    spacing = tuple(varargs)
    if not spacing:
        spacing = (1.0,) * len(axes)
    elif len(spacing) == 1:
        spacing = spacing * len(axes)
    if len(spacing) != len(axes):
        raise TypeError("np.gradient: give one spacing, or one per axis")
    for h in spacing:
        if not isinstance(h, (int, float, np.number)):
            raise ValueError("np.gradient: s2sad supports constant scalar spacings only "
                             "(coordinate arrays are not supported)")
    return axes, tuple(float(h) for h in spacing)


def _gradient_along(f, axis, h):
    """Central differences inside, one-sided at the two ends (``edge_order=1``)."""
    x = A.MoveAxis(axis, -1)(f)
    first = (x[..., 1:2] - x[..., 0:1]) / h
    inner = (x[..., 2:] - x[..., :-2]) / (2.0 * h)
    last = (x[..., -1:] - x[..., -2:-1]) / h
    return A.MoveAxis(-1, axis)(A.Concat(-1)((first, inner, last)))


def gradient(f, *varargs, axis=None, edge_order=1):
    """``np.gradient`` with constant spacings; an n-d ``f`` needs ``axis``."""
    if edge_order != 1:
        _unsupported("np.gradient", "edge_order", edge_order)
    axes, spacing = _gradient_axes(axis, varargs)
    if axis is None:
        f = _reshape(f, E.StatsShape("vector", None, "np.gradient")(f, f))
    if len(axes) == 1:
        return _gradient_along(f, axes[0], spacing[0])
    return tuple(_gradient_along(f, ax, h) for ax, h in zip(axes, spacing))


def nansum(a, axis=None, dtype=None, out=None, keepdims=False):
    """The sum with NaN read as 0 (NaN elements get no gradient)."""
    _unsupported("np.nansum", "dtype", dtype)
    _unsupported("np.nansum", "out", out)
    return M.ReduceSum(keepdims)(_select(_isnan(a), 0, a), _reduce_axis(axis))


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    """The mean of the elements that are not NaN (NaN where all are)."""
    _unsupported("np.nanmean", "dtype", dtype)
    _unsupported("np.nanmean", "out", out)
    axes = _reduce_axis(axis)
    nan = _isnan(a)
    count = M.ReduceSum(keepdims)(_select(nan, 0, _ones_like(a)), axes)
    return M.ReduceSum(keepdims)(_select(nan, 0, a), axes) / count


# -------------------------------------------------------------- scipy.special
def logit(x):
    """``log(x / (1 - x))``."""
    return _log(x / (1 - x))


def _sp_logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))``; with ``b``, shifted by the (gradient-free) max."""
    _unsupported("scipy.special.logsumexp", "return_sign", True if return_sign else None)
    axes = _reduce_axis(axis)
    if b is None:
        return _logsumexp_prim(a, axes, keepdims)
    shift = _stop_gradient(M.ReduceMax(True)(a, axes))
    total = M.ReduceSum(keepdims)(b * M.Exp()(a - shift), axes)
    return _log(total) + M.ReduceSum(keepdims)(shift, axes)   # keepdims or the 1s dropped


def gammaln(x):
    return E.Gammaln()(x)


def digamma(x):
    return E.Polygamma(0)(x)


def polygamma(n, x):
    """The ``n``-th derivative of digamma; ``n`` must be known while compiling."""
    return E.Polygamma(n)(x)


def xlogy(x, y):
    return E.Xlogy()(x, y)


def _method_conj(x):
    return conj(x)


def _method_cumprod(x, axis=None, dtype=None, out=None):
    return cumprod(x, axis, dtype, out)


#: NumPy (and ``operator``) functions met in differentiated code -> functional form
NUMPY = {
    np.fabs: fabs, np.hypot: hypot, np.fmax: fmax, np.fmin: fmin, np.sinc: sinc, np.cbrt: cbrt,
    np.copysign: copysign, np.heaviside: heaviside, np.deg2rad: deg2rad, np.rad2deg: rad2deg,
    np.radians: radians, np.degrees: degrees, np.float_power: float_power,
    np.nan_to_num: nan_to_num, np.real: real, np.imag: imag, np.conj: conj, np.angle: angle,
    np.conjugate: conjugate, np.var: _np_var, np.std: _np_std, np.average: average,
    np.median: median, np.quantile: quantile, np.percentile: percentile, np.ptp: ptp,
    np.cumprod: cumprod, np.diff: diff, np.gradient: gradient, np.nansum: nansum,
    np.nanmean: nanmean,
    operator.add: _op_add, operator.sub: _op_sub, operator.mul: _op_mul,
    operator.truediv: _op_truediv, operator.floordiv: _op_floordiv, operator.mod: _op_mod,
    operator.pow: _op_pow, operator.matmul: _op_matmul, operator.neg: _op_neg,
    operator.pos: _op_pos, functools.reduce: _functools_reduce,
}

#: ``scipy.special`` functions by name (looked up only when the program imported SciPy)
SCIPY_SPECIAL = {
    "logit": logit, "logsumexp": _sp_logsumexp, "erf": erf, "erfc": erfc, "gammaln": gammaln,
    "digamma": digamma, "psi": digamma, "polygamma": polygamma, "xlogy": xlogy,
}

TENSOR_METHODS = {"conj": _method_conj, "conjugate": _method_conj, "cumprod": _method_cumprod}

TENSOR_PROPERTIES = {"real": real, "imag": imag}

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v)
           and getattr(_v, "__module__", None) == __name__ and _n != "constexpr"]
