"""bprop, JVP and Taylor decisions for ``ops/operations/elementwise_ops.py``.

The one-input functions register ``dout * slope`` and ``tx * slope`` through
``_unary_rules``; each two-input function has its bprop and JVP side by side.
None has a Taylor rule: each class says ``taylor = "nested"``.
"""
import math

from ..operations import array_ops as A
from ..operations import elementwise_ops as E
from ..operations import math_ops as M
from .grad_base import bprop_getters, jvp_getters
from .grad_math_ops import _unary_rules, binop_grad_common, tangent_sum

zeros_like = A.ZerosLike()
select = A.Select()
cos = M.Cos()
log = M.Log()
copysign = E.Copysign()
sinc = E.Sinc()
sinc_slope = E.SincSlope()
is_finite = E.IsFinite()
xdivy = E.Xdivy()
_PI2 = math.pi ** 2


def d_cbrt(x, out):
    return 1 / (3 * (out * out))


def d_sinc(x, out):
    return sinc_slope(x)


def d_sinc_slope(x, out):
    # sinc solves x y'' + 2 y' + pi^2 x y = 0; at x = 0 the limit -pi^2/3
    safe = select(x == 0, 1, x)
    return select(x == 0, -_PI2 / 3, -_PI2 * sinc(x) - 2 * out / safe)


def d_nan_to_num(x, out):
    return is_finite(x)


def d_gammaln(x, out):
    return E.Polygamma(0)(x)


for _prim, _d in [(E.Cbrt, d_cbrt), (E.Sinc, d_sinc), (E.SincSlope, d_sinc_slope),
                  (E.NanToNum, d_nan_to_num), (E.Gammaln, d_gammaln)]:
    _unary_rules(_prim, _d)


@bprop_getters.register(E.CheckReal)
def get_bprop_check_real(self):
    def bprop(x, out, dout):
        return (dout,)
    return bprop


@jvp_getters.register(E.CheckReal)
def get_jvp_check_real(self):
    def jvp(x, out, tx):
        return tx
    return jvp


@bprop_getters.register(E.Polygamma)
def get_bprop_polygamma(self):
    slope = E.Polygamma(self.n + 1)

    def bprop(x, out, dout):
        return (dout * slope(x),)
    return bprop


@jvp_getters.register(E.Polygamma)
def get_jvp_polygamma(self):
    slope = E.Polygamma(self.n + 1)

    def jvp(x, out, tx):
        return tx * slope(x)
    return jvp


@bprop_getters.register(E.Hypot)
def get_bprop_hypot(self):
    def bprop(x, y, out, dout):
        share = dout / out
        return binop_grad_common(x, y, share * x, share * y)
    return bprop


@jvp_getters.register(E.Hypot)
def get_jvp_hypot(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(None if tx is None else tx * x / out,
                           None if ty is None else ty * y / out, out)
    return jvp


def copysign_slope(x, y):
    """d copysign(x, y) / dx: +1 where x and y have the same sign bit, else -1."""
    return copysign(1.0, x) * copysign(1.0, y)


@bprop_getters.register(E.Copysign)
def get_bprop_copysign(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout * copysign_slope(x, y), zeros_like(out))
    return bprop


@jvp_getters.register(E.Copysign)
def get_jvp_copysign(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(None if tx is None else tx * copysign_slope(x, y), None, out)
    return jvp


@bprop_getters.register(E.Heaviside)
def get_bprop_heaviside(self):
    def bprop(x, h, out, dout):
        return binop_grad_common(x, h, zeros_like(out), dout * (x == 0))
    return bprop


@jvp_getters.register(E.Heaviside)
def get_jvp_heaviside(self):
    def jvp(x, h, out, tx, th):
        return tangent_sum(None, None if th is None else th * (x == 0), out)
    return jvp


@bprop_getters.register(E.Xlogy)
def get_bprop_xlogy(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout * log(y), dout * xdivy(x, y))
    return bprop


@jvp_getters.register(E.Xlogy)
def get_jvp_xlogy(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(None if tx is None else tx * log(y),
                           None if ty is None else ty * xdivy(x, y), out)
    return jvp


@bprop_getters.register(E.Xdivy)
def get_bprop_xdivy(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout / y, -(dout * xdivy(x, y * y)))
    return bprop


@jvp_getters.register(E.Xdivy)
def get_jvp_xdivy(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(None if tx is None else tx / y,
                           None if ty is None else -(ty * xdivy(x, y * y)), out)
    return jvp


def cumprod_parts(prim, x):
    """What the cumulative product's rules share, dividing by no zero.

    ``at``: the first zero along the axis; ``out_at``: the cumulative product
    with that zero read as 1; ``safe``: x with its zeros read as 1.  Then
    ``d out_j / d x_i`` (i <= j) is ``out_at_j`` for the first zero and
    ``out_j / x_i`` for every other i: that quotient is 0 after a zero, and
    its derivative (through ``out``, by these same rules) is the product of
    the others.
    """
    at = (E.ZeroCount(prim.axis)(x) == 1) & (x == 0)
    out_at = prim(select(at, 1, x))
    safe = select(x == 0, 1, x)
    return at, out_at, safe


@bprop_getters.register(E.CumProd)
def get_bprop_cumprod(self):
    reverse_cumsum = M.CumSum(False, True)

    def bprop(x, out, dout):
        at, out_at, safe = cumprod_parts(self, x)
        return (select(at, reverse_cumsum(dout * out_at, self.axis),
                       reverse_cumsum(dout * out, self.axis) / safe),)
    return bprop


@jvp_getters.register(E.CumProd)
def get_jvp_cumprod(self):
    cumsum = M.CumSum()

    def jvp(x, out, tx):
        at, out_at, safe = cumprod_parts(self, x)
        return (out * cumsum(select(at, 0, tx / safe), self.axis)
                + out_at * cumsum(select(at, tx, 0), self.axis))
    return jvp
