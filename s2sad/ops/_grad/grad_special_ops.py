"""bprop and JVP rules for ``ops/operations/special_ops.py``.

Every slope is a composition of primitives (the densities of the incomplete
functions, the Bessel recurrences ``J_v' = (J_{v-1} - J_{v+1}) / 2``), so the
rules differentiate again.  None has a Taylor rule: each class says
``taylor = "nested"``.  The inputs without a derivative (shape parameters, a
Bessel function's order) get a zero here; the functional forms wrap them in
``NoGradient``, whose rule getters refuse while compiling.
"""
import math

from ...errors import CompileError
from ..operations import array_ops as A
from ..operations import elementwise_ops as E
from ..operations import math_ops as M
from ..operations import special_ops as S
from .grad_base import bprop_getters, jvp_getters
from .grad_math_ops import _unary_rules, tangent_sum, unbroadcast, zeros_like

exp = M.Exp()
log = M.Log()
log1p = M.Log1p()
sign = M.Sign()
gammaln = E.Gammaln()
digamma = E.Polygamma(0)
xlogy = E.Xlogy()
_HALF_SQRT_PI = math.sqrt(math.pi) / 2
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)


def d_gamma(x, out):
    return out * digamma(x)


def d_rgamma(x, out):
    return -(out * digamma(x))


def d_erfinv(x, out):
    return _HALF_SQRT_PI * exp(out * out)


def d_erfcinv(x, out):
    return -(_HALF_SQRT_PI * exp(out * out))


def d_log_ndtr(x, out):
    return exp(-0.5 * (x * x) - out - _LOG_SQRT_2PI)


for _prim, _d in [(S.Gamma, d_gamma), (S.Rgamma, d_rgamma), (S.Erfinv, d_erfinv),
                  (S.Erfcinv, d_erfcinv), (S.LogNdtr, d_log_ndtr)]:
    _unary_rules(_prim, _d)


def gamma_density(a, x):
    """x^(a-1) e^(-x) / Gamma(a): the slope of gammainc in x."""
    return exp(xlogy(a - 1, x) - x - gammaln(a))


def beta_density(a, b, x):
    """x^(a-1) (1-x)^(b-1) / B(a, b): the slope of betainc in x."""
    return exp(xlogy(a - 1, x) + xlogy(b - 1, 1 - x) - gammaln(a) - gammaln(b)
               + gammaln(a + b))


def t_density(df, t):
    """Student's t density: the slope of stdtr in t."""
    half = 0.5 * (df + 1)
    return exp(gammaln(half) - gammaln(0.5 * df) - 0.5 * (log(df) + _LOG_PI)
               - half * log1p(t * t / df))


def _shaped_rules(prim, slope, ternary=False):
    """Rules of a primitive ``f(p..., x)`` differentiable in its last input only:
    ``slope(prim, p..., x, out)`` is ``df/dx``; the parameters get zeros."""
    if ternary:
        def get_bprop(self):
            def bprop(a, b, x, out, dout):
                g = unbroadcast(dout * slope(self, a, b, x, out), x)
                return zeros_like(a), zeros_like(b), g
            return bprop

        def get_jvp(self):
            def jvp(a, b, x, out, ta, tb, tx):
                if tx is None:
                    return None
                return tangent_sum(tx * slope(self, a, b, x, out), None, out)
            return jvp
    else:
        def get_bprop(self):
            def bprop(p, x, out, dout):
                return zeros_like(p), unbroadcast(dout * slope(self, p, x, out), x)
            return bprop

        def get_jvp(self):
            def jvp(p, x, out, tp, tx):
                if tx is None:
                    return None
                return tangent_sum(tx * slope(self, p, x, out), None, out)
            return jvp
    get_bprop.__name__ = get_bprop.__qualname__ = "get_bprop_" + prim.__name__.lower()
    get_jvp.__name__ = get_jvp.__qualname__ = "get_jvp_" + prim.__name__.lower()
    bprop_getters.register(prim)(get_bprop)
    jvp_getters.register(prim)(get_jvp)


def s_gammainc(prim, a, x, out):
    return gamma_density(a, x)


def s_gammaincc(prim, a, x, out):
    return -gamma_density(a, x)


def s_betainc(prim, a, b, x, out):
    return beta_density(a, b, x)


def s_stdtr(prim, df, t, out):
    return t_density(df, t)


def s_bessel(prim, v, x, out):
    lower = S.Bessel(prim.kind)(v - 1, x)
    upper = S.Bessel(prim.kind)(v + 1, x)
    if prim.kind == "iv":
        return 0.5 * (lower + upper)
    if prim.kind == "ive":
        return 0.5 * (lower + upper) - sign(x) * out
    return 0.5 * (lower - upper)


for _prim, _s in [(S.Gammainc, s_gammainc), (S.Gammaincc, s_gammaincc),
                  (S.Stdtr, s_stdtr), (S.Bessel, s_bessel)]:
    _shaped_rules(_prim, _s)
_shaped_rules(S.Betainc, s_betainc, ternary=True)


flip = A.ReverseV2()
valid = S.Convolve("valid")


@bprop_getters.register(S.Convolve)
def get_bprop_convolve(self):
    pad = S.ConvolvePad(self.mode)

    def bprop(a, b, out, dout):
        full = pad(dout, a, b)      # the adjoint of the crop to ``mode``
        return valid(full, flip(b)), valid(full, flip(a))
    return bprop


@jvp_getters.register(S.Convolve)
def get_jvp_convolve(self):
    def jvp(a, b, out, ta, tb):
        if ta is None:
            return self(a, tb)
        if tb is None:
            return self(ta, b)
        return self(ta, b) + self(a, tb)
    return jvp


def _shape_lender_rules(prim, adjoint_cls):
    """Rules of ``prim(x, a, b)``, linear in x, a and b lending their shapes only."""
    def get_bprop(self):
        adjoint = adjoint_cls(self.mode)

        def bprop(x, a, b, out, dout):
            return adjoint(dout, a, b), zeros_like(a), zeros_like(b)
        return bprop

    def get_jvp(self):
        def jvp(x, a, b, out, tx, ta, tb):
            if tx is None:
                return None
            return self(tx, a, b)
        return jvp
    get_bprop.__name__ = get_bprop.__qualname__ = "get_bprop_" + prim.__name__.lower()
    get_jvp.__name__ = get_jvp.__qualname__ = "get_jvp_" + prim.__name__.lower()
    bprop_getters.register(prim)(get_bprop)
    jvp_getters.register(prim)(get_jvp)


_shape_lender_rules(S.ConvolveCrop, S.ConvolvePad)
_shape_lender_rules(S.ConvolvePad, S.ConvolveCrop)


swap = A.SwapAxes(-1, -2)
sylvester = S.SolveSylvester()


@bprop_getters.register(S.SolveSylvester)
def get_bprop_solve_sylvester(self):
    def bprop(a, b, q, out, dout):
        g = sylvester(swap(a), swap(b), dout)
        return -(g @ swap(out)), -(swap(out) @ g), g
    return bprop


@jvp_getters.register(S.SolveSylvester)
def get_jvp_solve_sylvester(self):
    def jvp(a, b, q, out, ta, tb, tq):
        # a dX + dX b = dq - da X - X db
        rhs = zeros_like(out) if tq is None else tq
        if ta is not None:
            rhs = rhs - ta @ out
        if tb is not None:
            rhs = rhs - out @ tb
        return sylvester(a, b, rhs)
    return jvp


@bprop_getters.register(S.Sqrtm)
def get_bprop_sqrtm(self):
    def bprop(a, out, dout):
        return (sylvester(swap(out), swap(out), dout),)
    return bprop


@jvp_getters.register(S.Sqrtm)
def get_jvp_sqrtm(self):
    def jvp(a, out, ta):
        return sylvester(out, out, ta)     # X dX + dX X = da
    return jvp


def _refuse(prim):
    raise CompileError(
        "no derivative with respect to %s: it has no closed form" % prim.what,
        hint="differentiate with respect to the other arguments only (pass this one as a "
             "constant, or choose other argnums)")


@bprop_getters.register(S.NoGradient)
def get_bprop_no_gradient(self):
    _refuse(self)


@jvp_getters.register(S.NoGradient)
def get_jvp_no_gradient(self):
    _refuse(self)
