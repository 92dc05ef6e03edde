"""Elementwise functions NumPy users call (hypot, sinc, cbrt...), the
cumulative product, quantile weights and the ``scipy.special`` functions.

Most of NumPy's remaining elementwise functions are compositions of the math
primitives (``ops/function/stats_func.py``); a function gets a primitive here
when a composition would differ from NumPy's values (``hypot`` does not
overflow) or would lose its derivative somewhere (``sinc`` at 0, ``cumprod``
with zeros).  Helpers a primitive needs at run time are the ``stats_*`` functions of ``rt``.
"""
from ...ir.primitive import Primitive, constexpr
from . import math_ops as _math
from .math_ops import _NO_GRAD


def _unary(*args, **facts):
    """``math_ops._unary``, the class belonging to this module."""
    return _math._unary(*args, __module__=__name__, **facts)


def _binary(*args, **facts):
    """``math_ops._binary``, the class belonging to this module."""
    return _math._binary(*args, __module__=__name__, **facts)


# ---------------------------------------------------------------- elementwise
Hypot = _binary("Hypot", "xp.hypot", "sqrt(x^2 + y^2) without overflow (``np.hypot``).",
                "dx = dout * x / out, dy = dout * y / out",
                nondifferentiable="x = y = 0 (a cone's tip)", ufunc="hypot", rounded=True,
                taylor="nested")
Sinc = _unary("Sinc", "xp.sinc({0})", "sin(pi x) / (pi x), 1 at x = 0 (``np.sinc``).",
              "dx = dout * sinc_slope(x)", rounded=True, taylor="nested")
SincSlope = _unary(
    "SincSlope", "rt.stats_sinc_slope({0})",
    "The derivative of sinc: (cos(pi x) - sinc(x)) / x, 0 at x = 0 (a rule helper).",
    "dx = dout * (-pi^2 sinc(x) - 2 sinc_slope(x) / x), -pi^2/3 at x = 0",
    nondifferentiable="fourth and higher derivatives of sinc at exactly x = 0 (read as 0)",
    rounded=True, taylor="nested")
Cbrt = _unary("Cbrt", "xp.cbrt({0})", "The real cube root (``np.cbrt``), also of negative x.",
              "dx = dout / (3 out^2)", nondifferentiable="x = 0 (vertical tangent)",
              ufunc="cbrt", rounded=True, taylor="nested")
Copysign = _binary(
    "Copysign", "xp.copysign", "|x| with the sign of y (``np.copysign``; -0.0 counts as negative).",
    "dx = dout * copysign(1, x) * copysign(1, y), dy = 0",
    nondifferentiable="x = 0 (the kink of |x|; the slope of x's own sign side is used)",
    ufunc="copysign", taylor="nested")
Heaviside = _binary(
    "Heaviside", "xp.heaviside",
    "0 where x < 0, h where x == 0, 1 where x > 0 (``np.heaviside(x, h)``).",
    "dx = 0, dh = dout * (x == 0)",
    nondifferentiable="x = 0 (a jump; gradient 0 is used for x)", taylor="nested")
IsNan = _unary("IsNan", "xp.isnan({0})", "x is NaN (no gradient).", _NO_GRAD,
               differentiable=False)
IsFinite = _unary("IsFinite", "xp.isfinite({0})", "x is neither infinite nor NaN (no gradient).",
                  _NO_GRAD, differentiable=False)


class NanToNum(Primitive):
    """``x`` with NaN, +inf and -inf replaced by numbers (``np.nan_to_num``)."""
    elementwise = True
    taylor = "nested"   # a replaced element's series is constant: the nested path says so
    formula = "dx = dout where x is finite, 0 where it was replaced"

    def __init__(self, nan=0.0, posinf=None, neginf=None):
        super().__init__(nan=nan, posinf=posinf, neginf=neginf)

    def emit(self, x):
        return "xp.nan_to_num(%s, nan=%s, posinf=%s, neginf=%s)" % (
            x, constexpr(self.nan), constexpr(self.posinf), constexpr(self.neginf))


class CheckReal(Primitive):
    """``x`` itself, after checking it is not complex (``np.real``/``np.conj`` of a real array).

    Complex arrays need their own rules; this raises a TypeError naming
    ``what`` rather than differentiating them as if they were real.
    """
    view = True
    linearity = "linear"
    formula = "dx = dout"

    def __init__(self, what):
        super().__init__(what=what)

    def emit(self, x):
        return "rt.stats_check_real(%s, %r)" % (x, self.what)


# ---------------------------------------------------- complex parts (complex mode)
class _ComplexPart(Primitive):
    """An elementwise function of a complex value, staged only for complex inputs
    (a real program's ``np.real`` stays ``CheckReal``, its code unchanged)."""
    elementwise = True
    complex_ok = True
    func = None

    def emit(self, x):
        return "xp.%s(%s)" % (self.func, x)


class Real(_ComplexPart):
    """``np.real``: the real part."""
    func = "real"
    linearity = "linear"
    view = True
    formula = "dx = re(dout)"


class Imag(_ComplexPart):
    """``np.imag``: the imaginary part."""
    func = "imag"
    linearity = "linear"
    view = True
    formula = "dx = -1j * re(dout)"


class Conj(_ComplexPart):
    """``np.conj``: the complex conjugate."""
    func = "conj"
    ufunc = "conj"
    linearity = "linear"
    formula = "dx = conj(dout)"


class Angle(_ComplexPart):
    """``np.angle``: the argument, in radians."""
    func = "angle"
    taylor = "nested"   # no series rule written
    formula = "dx = re(dout) * -1j * conj(x) / |x|^2 (0 in a program of real inputs)"


class RealLike(Primitive):
    """``t``'s real part where ``like`` is real, ``t`` itself where it is complex (the
    tangent and cotangent of ``np.real_if_close``, whose result type is decided at
    run time by the values)."""
    complex_ok = True
    linearity = "linear"
    formula = "dt = re(dout) where like is real, else dout"

    def emit(self, t, like):
        return "rt.real_like(%s, %s)" % (t, like)


class RealOutput(Primitive):
    """The differentiated output itself, after checking it is real (programs with
    complex inputs not declared holomorphic).  Stateful: the check must run even
    where no later op reads the output (a non-scalar output's gradient seeds the
    adjoint with ones and never reads the value, so dead-code elimination would
    drop it, and a complex output's holomorphic derivative came back silently)."""
    complex_ok = True
    stateful = True
    view = True
    linearity = "linear"
    output_shape_of = 0
    formula = "dx = dout"

    def emit(self, x):
        return "rt.check_real_output(%s)" % x


# ------------------------------------------------------------- cumulative product
class CumProd(Primitive):
    """Cumulative product along ``axis`` (``np.cumprod``).

    Its rules divide by no element that may be zero: the first zero along the
    axis gets the products of the others, the elements before it the usual
    ``sum / x``, and those after it a multiple of the zero.  Second derivatives
    are exact with at most one zero along the axis (as ``np.prod``'s).
    """
    taylor = "nested"   # no series rule written
    formula = "dx_i = sum over j >= i of dout_j * prod over k <= j, k != i of x_k"
    nondifferentiable = "second order only: two or more zeros along the axis"

    def __init__(self, axis):
        super().__init__(axis=axis)

    def emit(self, x):
        return "xp.cumprod(%s, axis=%d)" % (x, self.axis)


class ZeroCount(Primitive):
    """How many zeros ``x`` has along ``axis`` up to each element (no gradient)."""
    differentiable = False
    formula = _NO_GRAD

    def __init__(self, axis):
        super().__init__(axis=axis)

    def emit(self, x):
        return "xp.cumsum(%s == 0, axis=%d)" % (x, self.axis)


# ----------------------------------------------------------------- statistics
class QuantileWeights(Primitive):
    """The weights that make ``sum(w * x, axis)`` the ``q`` quantiles of ``x`` (no gradient).

    Linear interpolation between the two order statistics around
    ``q * (n - 1)`` (NumPy's default method); a list ``q`` adds a leading
    axis.  The weights are piecewise constant in ``x``, so the quantile's
    gradient is the weights themselves.
    """
    differentiable = False
    formula = _NO_GRAD

    def __init__(self, q, axis):
        super().__init__(q=q, axis=axis)

    def emit(self, x):
        return "rt.stats_quantile_weights(%s, %s, %s)" % (x, constexpr(self.q),
                                                          constexpr(self.axis))


class StatsShape(Primitive):
    """A runtime shape for a statistic (no gradient): ``kind`` ``'weights'``
    (``np.average``'s 1-D weights laid along ``axis`` of ``a``) or ``'vector'``
    (``a``'s own shape, checked 1-D); see ``rt.stats_shape``."""
    differentiable = False
    small_result = True
    formula = _NO_GRAD

    def __init__(self, kind, axis=None, what=""):
        super().__init__(kind=kind, axis=axis, what=what)

    def emit(self, a, w):
        return "rt.stats_shape(%s, %s, %r, %s, %r)" % (a, w, self.kind, constexpr(self.axis),
                                                       self.what)


# -------------------------------------------------------------- scipy.special
Gammaln = _unary("Gammaln", "rt.stats_special('gammaln', {0})",
                 "log|Gamma(x)| (``scipy.special.gammaln``; needs SciPy at run time).",
                 "dx = dout * digamma(x)", nondifferentiable="x = 0, -1, -2, ... (poles)",
                 rounded=True, taylor="nested")


class Polygamma(Primitive):
    """The ``n``-th derivative of digamma (``n = 0``: ``scipy.special.digamma``; needs SciPy)."""
    elementwise = True
    rounded = True
    taylor = "nested"   # no series rule written
    formula = "dx = dout * polygamma(n + 1, x)"
    nondifferentiable = "x = 0, -1, -2, ... (poles)"

    def __init__(self, n=0):
        super().__init__(n=int(n))

    def emit(self, x):
        return "rt.stats_polygamma(%d, %s)" % (self.n, x)


Xlogy = _binary("Xlogy", "rt.stats_xlogy", "x * log(y), 0 where x == 0 (``scipy.special.xlogy``).",
                "dx = dout * log(y), dy = dout * xdivy(x, y)",
                nondifferentiable="y <= 0", rounded=True, taylor="nested")
Xdivy = _binary("Xdivy", "rt.stats_xdivy", "x / y, 0 where x == 0 (a rule helper).",
                "dx = dout / y, dy = -dout * xdivy(x, y * y)",
                nondifferentiable="y = 0", rounded=True, taylor="nested")

__all__ = [_n for _n, _v in list(globals().items())
           if isinstance(_v, type) and issubclass(_v, Primitive) and _v is not Primitive
           and not _n.startswith("_")]
