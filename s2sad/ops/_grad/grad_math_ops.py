"""bprop, JVP and Taylor rules for math primitives (elementwise, reductions, linear algebra).

Each primitive's rules sit together: its bprop, its JVP, then (where Taylor
mode has one) its Taylor rule.  A JVP shared by a family (the products'
``get_jvp_bilinear``) sits with the family.
"""
import math

from ...ir.nodes import Const
from ...ir.primitive import complex_mode
from ..operations import math_ops as M
from ..operations import array_ops as A
from .grad_base import bprop_getters, jvp_getters, taylor_rules

unbroadcast = A.Unbroadcast()
broadcast_like = A.BroadcastLike()
cos = M.Cos()
sin = M.Sin()
log = M.Log()
zeros_like = A.ZerosLike()
select = A.Select()


def tangent_sum(a, b, out):
    """The tangent ``a + b`` of a broadcasting op, either may be ``None`` (both: ``None``)."""
    if a is None and b is None:
        return None
    if a is None:
        return broadcast_like(b, out)
    if b is None:
        return broadcast_like(a, out)
    return broadcast_like(a + b, out)


def binop_grad_common(x, y, dx, dy):
    """Reduce each gradient of a broadcasting binary op to its input's shape."""
    return unbroadcast(dx, x), unbroadcast(dy, y)


@bprop_getters.register(M.Add)
def get_bprop_add(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout, dout)
    return bprop


@jvp_getters.register(M.Add)
def get_jvp_add(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(tx, ty, out)
    return jvp


@bprop_getters.register(M.Sub)
def get_bprop_sub(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout, -dout)
    return bprop


@jvp_getters.register(M.Sub)
def get_jvp_sub(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(tx, None if ty is None else -ty, out)
    return jvp


@bprop_getters.register(M.Mul)
def get_bprop_mul(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout * y, dout * x)
    return bprop


@jvp_getters.register(M.Mul)
def get_jvp_mul(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(None if tx is None else tx * y, None if ty is None else x * ty, out)
    return jvp


@bprop_getters.register(M.RealDiv)
def get_bprop_realdiv(self):
    def bprop(x, y, out, dout):
        dx = dout / y
        return binop_grad_common(x, y, dx, -(dx * out))
    return bprop


@jvp_getters.register(M.RealDiv)
def get_jvp_realdiv(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(None if tx is None else tx / y,
                           None if ty is None else -(ty * out / y), out)
    return jvp


@taylor_rules.register(M.RealDiv)
def taylor_realdiv(T, a, b, out):
    """``q = a / b`` from ``q b = a``: ``q_k = (a_k - sum_{j=1..k} C(k,j) b_j q_(k-j)) / b``."""
    q = [out]
    for k in range(1, T.K + 1):
        num = T.total([(1, a[k])] + [(-math.comb(k, j), T.mul(b[j], q[k - j]))
                                     for j in range(1, k + 1)])
        q.append(None if num is None else T.emit(M.RealDiv(), [num, b[0]]))
    return q


def pow_slope(x, y):
    """``d(x ** y)/dx``: ``y * x ** (y - 1)``, which is 0 * inf at x = 0 when y is 0.

    A Python-number exponent picks the form while compiling (``x ** 0`` has
    slope ``zeros_like(x)``, ``x ** 2`` slope ``2 * x``); an array exponent
    is moved to 0 where x and y are both 0, so the slope there is
    ``0 * 0 ** 0 = 0`` (moved only there: at y = 0, x > 0 its derivative in
    y stays ``1 / x``).
    """
    if isinstance(y, (int, float)):
        if y == 0:
            return zeros_like(x)
        return 2 * x if y == 2 else y * x ** (y - 1)
    return y * x ** (y - 1 + ((x == 0) & (y == 0)))


def pow_log_base(x):
    """``log(x)`` for ``d(x ** y)/dy = x ** y * log(x)``, read as 0 where x is 0.

    There ``x ** y`` is 0 for y > 0, so the slope is 0 rather than 0 * -inf
    (as PyTorch and JAX give); for y < 0 it is inf * 0, undefined.
    """
    return log(select(x == 0, 1, x))


@bprop_getters.register(M.Pow)
def get_bprop_pow(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout * pow_slope(x, y), dout * (out * pow_log_base(x)))
    return bprop


@jvp_getters.register(M.Pow)
def get_jvp_pow(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(None if tx is None else tx * pow_slope(x, y),
                           None if ty is None else ty * (out * pow_log_base(x)), out)
    return jvp


@bprop_getters.register(M.Neg)
def get_bprop_neg(self):
    def bprop(x, out, dout):
        return (-dout,)
    return bprop


@jvp_getters.register(M.Neg)
def get_jvp_neg(self):
    def jvp(x, out, tx):
        return -tx
    return jvp


def sin_cos_series(T, x, s0, c0):
    """``s' = c x'``, ``c' = -s x'``, built together (the Taylor rules of Sin and Cos)."""
    s, c = [s0], [c0]
    for k in range(1, T.K + 1):
        s.append(T.total([(math.comb(k - 1, j), T.mul(x[j + 1], c[k - 1 - j]))
                          for j in range(k)]))
        c.append(T.total([(-math.comb(k - 1, j), T.mul(x[j + 1], s[k - 1 - j]))
                          for j in range(k)]))
    return s, c


@bprop_getters.register(M.Sin)
def get_bprop_sin(self):
    def bprop(x, out, dout):
        return (dout * cos(x),)
    return bprop


@jvp_getters.register(M.Sin)
def get_jvp_sin(self):
    def jvp(x, out, tx):
        return tx * cos(x)
    return jvp


@taylor_rules.register(M.Sin)
def taylor_sin(T, x, out):
    return sin_cos_series(T, x, out, T.emit(M.Cos(), [x[0]]))[0]


@bprop_getters.register(M.Cos)
def get_bprop_cos(self):
    def bprop(x, out, dout):
        return (-(dout * sin(x)),)
    return bprop


@jvp_getters.register(M.Cos)
def get_jvp_cos(self):
    def jvp(x, out, tx):
        return -(tx * sin(x))
    return jvp


@taylor_rules.register(M.Cos)
def taylor_cos(T, x, out):
    return sin_cos_series(T, x, T.emit(M.Sin(), [x[0]]), out)[1]


@bprop_getters.register(M.Exp)
def get_bprop_exp(self):
    def bprop(x, out, dout):
        return (dout * out,)
    return bprop


@jvp_getters.register(M.Exp)
def get_jvp_exp(self):
    def jvp(x, out, tx):
        return tx * out
    return jvp


@taylor_rules.register(M.Exp)
def taylor_exp(T, x, out):
    return T.ode(x, out, lambda y, m: y[m])


@bprop_getters.register(M.Log)
def get_bprop_log(self):
    def bprop(x, out, dout):
        return (dout / x,)
    return bprop


@jvp_getters.register(M.Log)
def get_jvp_log(self):
    def jvp(x, out, tx):
        return tx / x
    return jvp


@taylor_rules.register(M.Log)
def taylor_log(T, x, out):
    """``x y' = x'``: ``y_k = (x_k - sum_{j=1..k-1} C(k-1,j) x_j y_(k-j)) / x``."""
    y = [out]
    for k in range(1, T.K + 1):
        num = T.total([(1, x[k])] + [(-math.comb(k - 1, j), T.mul(x[j], y[k - j]))
                                     for j in range(1, k)])
        y.append(None if num is None else T.emit(M.RealDiv(), [num, x[0]]))
    return y


def memo_series(fn):
    """One emission per coefficient of an auxiliary series (Taylor rules of Tanh, Sigmoid)."""
    cache = {}

    def get(y, m):
        if m not in cache:
            cache[m] = fn(y, m)
        return cache[m]
    return get


@bprop_getters.register(M.Tanh)
def get_bprop_tanh(self):
    def bprop(x, out, dout):
        return (dout * (1 - out * out),)
    return bprop


@jvp_getters.register(M.Tanh)
def get_jvp_tanh(self):
    def jvp(x, out, tx):
        return tx * (1 - out * out)
    return jvp


@taylor_rules.register(M.Tanh)
def taylor_tanh(T, x, out):
    def g(y, m):        # 1 - y^2
        if m == 0:
            return T.emit(M.Sub(), [Const(1), T.emit(M.Mul(), [out, out])])
        s = T.square_series(y, m)
        return T.scale(-1, s)
    return T.ode(x, out, memo_series(g))


@bprop_getters.register(M.Sqrt)
def get_bprop_sqrt(self):
    def bprop(x, out, dout):
        return (dout / (2 * out),)
    return bprop


@jvp_getters.register(M.Sqrt)
def get_jvp_sqrt(self):
    def jvp(x, out, tx):
        return tx / (2 * out)
    return jvp


@taylor_rules.register(M.Sqrt)
def taylor_sqrt(T, x, out):
    """``y^2 = x``: ``y_k = (x_k - sum_{j=1..k-1} C(k,j) y_j y_(k-j)) / (2 y)``."""
    y = [out]
    two_y = None
    for k in range(1, T.K + 1):
        num = T.total([(1, x[k])] + [(-math.comb(k, j), T.mul(y[j], y[k - j]))
                                     for j in range(1, k)])
        if num is not None and two_y is None:
            two_y = T.emit(M.Mul(), [Const(2), out])
        y.append(None if num is None else T.emit(M.RealDiv(), [num, two_y]))
    return y


@bprop_getters.register(M.Square)
def get_bprop_square(self):
    def bprop(x, out, dout):
        return (dout * (2 * x),)
    return bprop


@jvp_getters.register(M.Square)
def get_jvp_square(self):
    def jvp(x, out, tx):
        return tx * (2 * x)
    return jvp


@taylor_rules.register(M.Square)
def taylor_square(T, x, out):
    return [out] + [T.square_series(x, k) for k in range(1, T.K + 1)]


# its JVP is get_jvp_bilinear (with the other products, below)
@bprop_getters.register(M.MatMul)
def get_bprop_matmul(self):
    ta = self.transpose_a
    tb = self.transpose_b
    mul1 = M.MatMul(transpose_a=(ta and tb), transpose_b=(ta or (not tb)))
    mul2 = M.MatMul(transpose_a=((not ta) or tb), transpose_b=(ta and tb))

    def bprop(x, w, out, dout):
        if ta:
            dx = mul1(w, dout)
        else:
            dx = mul1(dout, w)
        if tb:
            dw = mul2(dout, x)
        else:
            dw = mul2(x, dout)
        return dx, dw
    return bprop


@bprop_getters.register(M.ReduceSum)
def get_bprop_reducesum(self):
    expand = A.ExpandReduced(self.keep_dims)

    def bprop(x, axis, out, dout):
        return broadcast_like(expand(dout, x, axis), x), zeros_like(axis)
    return bprop


@bprop_getters.register(M.ReduceMean)
def get_bprop_reducemean(self):
    expand = A.ExpandReduced(self.keep_dims)
    count = A.ReducedCount()

    def bprop(x, axis, out, dout):
        # divided before broadcasting: one value per mean, not one per element
        return broadcast_like(expand(dout / count(x, axis), x, axis), x), zeros_like(axis)
    return bprop


@jvp_getters.register(M.ReduceSum)
@jvp_getters.register(M.ReduceMean)
def get_jvp_reduce(self):
    def jvp(x, axis, out, tx, taxis):
        return self(tx, axis)
    return jvp


@bprop_getters.register(M.SumSquares)
def get_bprop_sum_squares(self):
    def bprop(x, out, dout):
        return (dout * (2 * x),)
    return bprop


@jvp_getters.register(M.SumSquares)
def get_jvp_sum_squares(self):
    reduce_sum = M.ReduceSum()

    def jvp(x, out, tx):
        return reduce_sum(tx * (2 * x), ())
    return jvp


# =============================================================================
# Elementwise primitives beyond the arithmetic above.  Each bprop is followed
# by its JVP; both are written with primitives only, so they differentiate again.
# =============================================================================
exp = M.Exp()
sqrt = M.Sqrt()
rsqrt = M.Rsqrt()
sinh = M.Sinh()
cosh = M.Cosh()
sign = M.Sign()
equal = M.Equal()
greater = M.Greater()
less = M.Less()
floor_div = M.FloorDiv()
ones_like = A.OnesLike()
reshape = A.Reshape()
shape_of = A.Shape()

_TWO_OVER_SQRT_PI = 1.1283791670955126


def _unary_rules(prim, derivative):
    """Register bprop ``dout * derivative(x, out)`` and JVP ``tx * derivative(x, out)``."""
    def get_bprop(self):
        def bprop(x, out, dout):
            return (dout * derivative(x, out),)
        return bprop

    def get_jvp(self):
        def jvp(x, out, tx):
            return tx * derivative(x, out)
        return jvp
    get_bprop.__name__ = get_bprop.__qualname__ = "get_bprop_" + prim.__name__.lower()
    get_jvp.__name__ = get_jvp.__qualname__ = "get_jvp_" + prim.__name__.lower()
    bprop_getters.register(prim)(get_bprop)
    jvp_getters.register(prim)(get_jvp)


def d_tan(x, out):
    return 1 + out * out


def d_expm1(x, out):
    return exp(x)


def d_log1p(x, out):
    return 1 / (1 + x)


def d_sinh(x, out):
    return cosh(x)


def d_cosh(x, out):
    return sinh(x)


def d_asin(x, out):
    return rsqrt(1 - x * x)


def d_acos(x, out):
    return -rsqrt(1 - x * x)


def d_atan(x, out):
    return 1 / (1 + x * x)


def d_asinh(x, out):
    return rsqrt(x * x + 1)


def d_acosh(x, out):
    """For complex x the principal branch's: 1/sqrt(x^2 - 1) has a cut along the
    imaginary axis and flips sign where Re(x) < 0."""
    if complex_mode():
        return 1 / (sqrt(x - 1) * sqrt(x + 1))
    return rsqrt(x * x - 1)


def d_atanh(x, out):
    return 1 / (1 - x * x)


def d_rsqrt(x, out):
    return -0.5 * (out * out * out)


def d_reciprocal(x, out):
    return -(out * out)


def d_abs(x, out):
    return sign(x)


def d_erf(x, out):
    return _TWO_OVER_SQRT_PI * exp(-(x * x))


def d_erfc(x, out):
    return -_TWO_OVER_SQRT_PI * exp(-(x * x))


for _prim, _d in [(M.Tan, d_tan), (M.Expm1, d_expm1), (M.Log1p, d_log1p), (M.Sinh, d_sinh),
                  (M.Cosh, d_cosh), (M.Asin, d_asin), (M.Acos, d_acos), (M.Atan, d_atan),
                  (M.Asinh, d_asinh), (M.Acosh, d_acosh), (M.Atanh, d_atanh),
                  (M.Rsqrt, d_rsqrt), (M.Reciprocal, d_reciprocal), (M.Abs, d_abs),
                  (M.Erf, d_erf), (M.Erfc, d_erfc)]:
    _unary_rules(_prim, _d)


@bprop_getters.register(M.Floor)
@bprop_getters.register(M.Ceil)
@bprop_getters.register(M.Round)
def get_bprop_piecewise_constant(self):
    def bprop(x, out, dout):
        return (zeros_like(x),)
    return bprop


@jvp_getters.register(M.Floor)
@jvp_getters.register(M.Ceil)
@jvp_getters.register(M.Round)
def get_jvp_piecewise_constant(self):
    def jvp(x, out, tx):
        return None
    return jvp


@bprop_getters.register(M.FloorDiv)
def get_bprop_floordiv(self):
    def bprop(x, y, out, dout):
        return zeros_like(x), zeros_like(y)
    return bprop


@jvp_getters.register(M.FloorDiv)
def get_jvp_floordiv(self):
    def jvp(x, y, out, tx, ty):
        return None
    return jvp


@bprop_getters.register(M.Mod)
def get_bprop_mod(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout, -(dout * floor_div(x, y)))
    return bprop


@jvp_getters.register(M.Mod)
def get_jvp_mod(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(tx, None if ty is None else -(ty * floor_div(x, y)), out)
    return jvp


@bprop_getters.register(M.Atan2)
def get_bprop_atan2(self):
    def bprop(x, y, out, dout):
        scale = dout / (x * x + y * y)
        return binop_grad_common(x, y, scale * y, -(scale * x))
    return bprop


@jvp_getters.register(M.Atan2)
def get_jvp_atan2(self):
    def jvp(x, y, out, tx, ty):
        r2 = x * x + y * y
        return tangent_sum(None if tx is None else tx * y / r2,
                           None if ty is None else -(ty * x / r2), out)
    return jvp


def extremum_weights(x, y, first_wins):
    """Where the gradient of max/min(x, y) goes: masks (x wins, y wins, tie).

    ``first_wins`` is the comparison that makes x the result; a tie sends
    half to each.  The masks are booleans, so multiplying keeps the
    gradient's dtype.
    """
    tie = equal(x, y)
    return first_wins(x, y), first_wins(y, x), tie


@bprop_getters.register(M.Maximum)
@bprop_getters.register(M.Minimum)
def get_bprop_maximum_minimum(self):
    wins = greater if isinstance(self, M.Maximum) else less

    def bprop(x, y, out, dout):
        wx, wy, tie = extremum_weights(x, y, wins)
        half = dout * tie * 0.5
        return binop_grad_common(x, y, dout * wx + half, dout * wy + half)
    return bprop


@jvp_getters.register(M.Maximum)
@jvp_getters.register(M.Minimum)
def get_jvp_maximum_minimum(self):
    wins = greater if isinstance(self, M.Maximum) else less

    def jvp(x, y, out, tx, ty):
        wx, wy, tie = extremum_weights(x, y, wins)
        return tangent_sum(None if tx is None else tx * wx + tx * tie * 0.5,
                           None if ty is None else ty * wy + ty * tie * 0.5, out)
    return jvp


_LN2 = math.log(2.0)


def log_add_shares(x, y, out, ln_base):
    """The slopes of ``out = log_b(b ** x + b ** y)``: ``b ** (x - out)`` and ``b ** (y - out)``.

    Smooth everywhere (both in (0, 1], summing to 1), so differentiating
    them again gives the curvature at x = y (1/4 for base e) that a form
    built from max and abs would lose.
    """
    if ln_base == 1:
        return exp(x - out), exp(y - out)
    return exp((x - out) * ln_base), exp((y - out) * ln_base)


def _ln_base(prim):
    return 1 if isinstance(prim, M.LogAddExp) else _LN2


@bprop_getters.register(M.LogAddExp)
@bprop_getters.register(M.LogAddExp2)
def get_bprop_logaddexp(self):
    ln_base = _ln_base(self)

    def bprop(x, y, out, dout):
        sx, sy = log_add_shares(x, y, out, ln_base)
        return binop_grad_common(x, y, dout * sx, dout * sy)
    return bprop


@jvp_getters.register(M.LogAddExp)
@jvp_getters.register(M.LogAddExp2)
def get_jvp_logaddexp(self):
    ln_base = _ln_base(self)

    def jvp(x, y, out, tx, ty):
        sx, sy = log_add_shares(x, y, out, ln_base)
        return tangent_sum(None if tx is None else tx * sx, None if ty is None else ty * sy,
                           out)
    return jvp


# =============================================================================
# Reductions
# =============================================================================
def extremum_hits(x, axis, out, keep_dims, count_keep_dims):
    """Where ``x`` attains its max/min (a mask), and how often per reduced slice.

    Ties split the gradient evenly.  The count is divided into the (small)
    reduced-shaped values and the mask spreads them: two passes over ``x``'s
    size, where a mask cast to ``x``'s dtype, divided and multiplied made four.
    """
    hit = equal(x, A.ExpandReduced(keep_dims)(out, x, axis))
    return hit, A.CastLike()(M.ReduceSum(count_keep_dims)(hit, axis), x)


@bprop_getters.register(M.ReduceMax)
@bprop_getters.register(M.ReduceMin)
def get_bprop_reduce_extremum(self):
    expand = A.ExpandReduced(self.keep_dims)
    keep = self.keep_dims

    def bprop(x, axis, out, dout):
        hit, count = extremum_hits(x, axis, out, keep, True)
        return (expand(dout, x, axis) / count) * hit, zeros_like(axis)
    return bprop


@jvp_getters.register(M.ReduceMax)
@jvp_getters.register(M.ReduceMin)
def get_jvp_reduce_extremum(self):
    reduce_sum = M.ReduceSum(self.keep_dims)
    keep = self.keep_dims

    def jvp(x, axis, out, tx, taxis):
        hit, count = extremum_hits(x, axis, out, keep, keep)
        return reduce_sum(tx * hit, axis) / count
    return jvp


def prod_partials(x, axis):
    """d prod(x over axis) / dx: the product of the other elements, exact with zeros.

    Zeros are replaced by ones (``safe``) so nothing divides by zero; with no
    zero in a product the partial is ``prod / x``, with one zero it is the
    product of the rest at that zero and 0 elsewhere, with more it is 0.
    """
    is_zero = equal(x, 0)
    safe = x + is_zero
    rest = M.ReduceProd(True)(safe, axis)
    zeros = M.ReduceSum(True)(is_zero, axis)
    return (rest / safe) * equal(zeros, 0) + rest * (is_zero * equal(zeros, 1))


@bprop_getters.register(M.ReduceProd)
def get_bprop_reduce_prod(self):
    expand = A.ExpandReduced(self.keep_dims)

    def bprop(x, axis, out, dout):
        return expand(dout, x, axis) * prod_partials(x, axis), zeros_like(axis)
    return bprop


@jvp_getters.register(M.ReduceProd)
def get_jvp_reduce_prod(self):
    reduce_sum = M.ReduceSum(self.keep_dims)

    def jvp(x, axis, out, tx, taxis):
        return reduce_sum(tx * prod_partials(x, axis), axis)
    return jvp


@bprop_getters.register(M.CumSum)
def get_bprop_cumsum(self):
    reverse_cumsum = M.CumSum(self.exclusive, not self.reverse)

    def bprop(x, axis, out, dout):
        return reverse_cumsum(dout, axis), zeros_like(axis)
    return bprop


@jvp_getters.register(M.CumSum)
def get_jvp_cumsum(self):
    def jvp(x, axis, out, tx, taxis):
        return self(tx, axis)
    return jvp


@bprop_getters.register(M.LogSumExp)
def get_bprop_logsumexp(self):
    expand = A.ExpandReduced(self.keep_dims)

    def bprop(x, axis, out, dout):
        return expand(dout, x, axis) * exp(x - expand(out, x, axis)), zeros_like(axis)
    return bprop


@jvp_getters.register(M.LogSumExp)
def get_jvp_logsumexp(self):
    reduce_sum = M.ReduceSum(self.keep_dims)
    expand = A.ExpandReduced(self.keep_dims)

    def jvp(x, axis, out, tx, taxis):
        return reduce_sum(tx * exp(x - expand(out, x, axis)), axis)
    return jvp


@bprop_getters.register(M.ArgMaxWithValue)
@bprop_getters.register(M.ArgMinWithValue)
def get_bprop_arg_with_value(self):
    indicator = M.ArgIndicator(self.axis, self.keep_dims)
    expand = A.ExpandReduced(self.keep_dims)
    axis = self.axis

    def bprop(x, out, dout):
        return (indicator(out[0], x) * expand(dout[1], x, axis),)
    return bprop


@jvp_getters.register(M.ArgMaxWithValue)
@jvp_getters.register(M.ArgMinWithValue)
def get_jvp_arg_with_value(self):
    indicator = M.ArgIndicator(self.axis, self.keep_dims)
    reduce_sum = M.ReduceSum(self.keep_dims)
    axis = self.axis

    def jvp(x, out, tx):
        return None, reduce_sum(tx * indicator(out[0], x), axis)
    return jvp


# =============================================================================
# Products and linear algebra
# =============================================================================
bmm_nn = M.BatchMatMul(False, False)
bmm_nt = M.BatchMatMul(False, True)
bmm_tn = M.BatchMatMul(True, False)
bmm_tt = M.BatchMatMul(True, True)
matmul_ext = M.MatMulExt()
matmul_grad_a = M.MatMulGradA()
matmul_grad_b = M.MatMulGradB()


@bprop_getters.register(M.MatMulExt)
def get_bprop_matmul_ext(self):
    def bprop(x, y, out, dout):
        return matmul_grad_a(dout, x, y), matmul_grad_b(dout, x, y)
    return bprop


@bprop_getters.register(M.MatMulGradA)
def get_bprop_matmul_grad_a(self):
    def bprop(d, x, y, out, dout):
        return matmul_ext(dout, y), zeros_like(x), matmul_grad_b(d, dout, y)
    return bprop


@jvp_getters.register(M.MatMulGradA)
@jvp_getters.register(M.DotGradA)
def get_jvp_matmul_grad_a(self):
    def jvp(d, x, y, out, td, tx, ty):
        return tangent_sum(None if td is None else self(td, x, y),
                           None if ty is None else self(d, x, ty), out)
    return jvp


@bprop_getters.register(M.MatMulGradB)
def get_bprop_matmul_grad_b(self):
    def bprop(d, x, y, out, dout):
        return matmul_ext(x, dout), matmul_grad_a(d, x, dout), zeros_like(y)
    return bprop


@jvp_getters.register(M.MatMulGradB)
@jvp_getters.register(M.DotGradB)
def get_jvp_matmul_grad_b(self):
    def jvp(d, x, y, out, td, tx, ty):
        return tangent_sum(None if td is None else self(td, x, y),
                           None if tx is None else self(d, tx, y), out)
    return jvp


dot = M.Dot()
dot_grad_a = M.DotGradA()
dot_grad_b = M.DotGradB()


# Dot and its two gradients: the matmul set's rules, with np.dot's contraction
@bprop_getters.register(M.Dot)
def get_bprop_dot(self):
    def bprop(x, y, out, dout):
        return dot_grad_a(dout, x, y), dot_grad_b(dout, x, y)
    return bprop


@bprop_getters.register(M.DotGradA)
def get_bprop_dot_grad_a(self):
    def bprop(d, x, y, out, dout):
        return dot(dout, y), zeros_like(x), dot_grad_b(d, dout, y)
    return bprop


@bprop_getters.register(M.DotGradB)
def get_bprop_dot_grad_b(self):
    def bprop(d, x, y, out, dout):
        return dot(x, dout), dot_grad_a(d, x, dout), zeros_like(y)
    return bprop


@jvp_getters.register(M.MatMul)
@jvp_getters.register(M.MatMulExt)
@jvp_getters.register(M.Dot)
@jvp_getters.register(M.BatchMatMul)
@jvp_getters.register(M.Outer)
@jvp_getters.register(M.Tensordot)
@jvp_getters.register(M.TensordotGradA)
@jvp_getters.register(M.TensordotGradB)
def get_jvp_bilinear(self):
    """A product linear in each input: d(x*y) = dx*y + x*dy, with the same primitive."""
    def jvp(x, y, out, tx, ty):
        if tx is None:
            return self(x, ty)
        if ty is None:
            return self(tx, y)
        return self(tx, y) + self(x, ty)
    return jvp


@bprop_getters.register(M.BatchMatMul)
def get_bprop_batch_matmul(self):
    ta = self.transpose_a
    tb = self.transpose_b

    def bprop(x, w, out, dout):
        if ta and tb:
            dx = bmm_tt(w, dout)
            dw = bmm_tt(dout, x)
        elif ta:
            dx = bmm_nt(w, dout)
            dw = bmm_nn(x, dout)
        elif tb:
            dx = bmm_nn(dout, w)
            dw = bmm_tn(dout, x)
        else:
            dx = bmm_nt(dout, w)
            dw = bmm_tn(x, dout)
        return unbroadcast(dx, x), unbroadcast(dw, w)
    return bprop


@bprop_getters.register(M.Outer)
def get_bprop_outer(self):
    def bprop(x, y, out, dout):
        dx = reshape(matmul_ext(dout, reshape(y, (-1,))), shape_of(x))
        dy = reshape(matmul_ext(reshape(x, (-1,)), dout), shape_of(y))
        return dx, dy
    return bprop


# Tensordot and its two gradients form a family closed under differentiation:
# each is bilinear, and the adjoint of each argument is another member.
@bprop_getters.register(M.Tensordot)
def get_bprop_tensordot(self):
    grad_a = M.TensordotGradA(self.axes)
    grad_b = M.TensordotGradB(self.axes)

    def bprop(a, b, out, dout):
        return grad_a(dout, b), grad_b(a, dout)
    return bprop


@bprop_getters.register(M.TensordotGradA)
def get_bprop_tensordot_grad_a(self):
    tensordot = M.Tensordot(self.axes)
    grad_b = M.TensordotGradB(self.axes)

    def bprop(g, b, out, dout):
        return tensordot(dout, b), grad_b(dout, g)
    return bprop


@bprop_getters.register(M.TensordotGradB)
def get_bprop_tensordot_grad_b(self):
    tensordot = M.Tensordot(self.axes)
    grad_a = M.TensordotGradA(self.axes)

    def bprop(a, g, out, dout):
        return grad_a(g, dout), tensordot(a, dout)
    return bprop


@bprop_getters.register(M.MatrixInverse)
def get_bprop_matrix_inverse(self):
    adjoint = self.adjoint

    def bprop(x, out, dout):
        if adjoint:
            return (-bmm_nn(bmm_nt(out, dout), out),)
        return (-bmm_tn(out, bmm_nt(dout, out)),)
    return bprop


@jvp_getters.register(M.MatrixInverse)
def get_jvp_matrix_inverse(self):
    adjoint = self.adjoint

    def jvp(x, out, tx):
        if adjoint:
            return -bmm_nn(bmm_nt(out, tx), out)
        return -bmm_nn(out, bmm_nn(tx, out))
    return jvp


inverse_transpose = M.MatrixInverse(adjoint=True)
expand_matrix = A.ExpandReduced(False)
sum_matrix = M.ReduceSum(False)


@bprop_getters.register(M.MatrixDeterminant)
def get_bprop_matrix_determinant(self):
    def bprop(x, out, dout):
        return (expand_matrix(dout * out, x, (-2, -1)) * inverse_transpose(x),)
    return bprop


@jvp_getters.register(M.MatrixDeterminant)
def get_jvp_matrix_determinant(self):
    def jvp(x, out, tx):
        return out * sum_matrix(inverse_transpose(x) * tx, (-2, -1))
    return jvp
