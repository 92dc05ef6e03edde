"""Math rules differentiated again (reverse mode over the adjoint program), and ``x ** y`` at zero.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.runtime import rt_math
from s2sad.ops import operations as P
from s2sad.ops.composite import GradOperation

from test_prims_math import distinct, mod_safe_y, normal, well_conditioned


# ============================================ rules differentiate again
# Reverse mode applied to the adjoint program itself: every rule above is made
# of primitives with rules, so the second derivative comes out of the same
# machinery.  Checked against finite differences of the first gradient.
def second_order(fn, args):
    """Gradient of the sum of all first-order input gradients, by reverse mode twice."""
    from s2sad.driver.specs import arg_spec
    from s2sad.driver.tracing import trace
    from s2sad.ad.reverse import reverse
    from s2sad.backend.codegen import CodeGen
    from s2sad.backend.compile import compile_source
    from s2sad.ir.passes import dce
    specs = tuple(arg_spec(a) for a in args)
    t = trace(fn, None, args, specs)
    first = dce(reverse(t.forward, t.flat_inputs))
    second = dce(reverse(first, t.flat_inputs, name="second_order"))
    gen = CodeGen()
    source = gen.function(second)
    return compile_source(source, second.name, gen.consts.namespace())(*args)


def numeric_second_order(fn, args, eps=1e-6):
    first = GradOperation(get_all=True)(fn)

    def total(*a):
        return builtin_sum(float(np.sum(g)) for g in first(*a))
    out = []
    for i, a in enumerate(args):
        grad = np.zeros_like(a)
        for k in range(a.size):
            plus, minus = [list(args) for _ in range(2)]
            plus[i], minus[i] = a.copy(), a.copy()
            plus[i].flat[k] += eps
            minus[i].flat[k] -= eps
            grad.flat[k] = (total(*plus) - total(*minus)) / (2 * eps)
        out.append(grad)
    return out


builtin_sum = sum


def h_unary(x):
    return (P.Tan()(x * 0.3) + P.Asin()(x * 0.4) + P.Erf()(x) + P.Rsqrt()(x * x + 1.0)
            + P.Reciprocal()(x * x + 1.0) + P.Abs()(x) * x + P.Acosh()(x * x + 1.5)
            + P.Atanh()(x * 0.4) + P.Erfc()(x) * x + P.Log1p()(x * x) + P.Expm1()(x))


def h_binary(x, y):
    return (P.Atan2()(x, y) + P.Maximum()(x, y) * x + P.Minimum()(x, y) * y
            + P.Mod()(x, y) * y)


def h_reductions(x):
    return (P.ReduceMax()(x, 1) * P.ReduceSum()(x, 1) + P.ReduceProd()(x, 1)
            + P.CumSum(True, False)(x, 1).sum(1) * x[:, 0] + P.LogSumExp()(x, 1)
            + P.ArgMinWithValue(1)(x)[1] * x[:, 1])


def h_products(x, y):
    return (P.MatMulExt()(x[0], y) ** 2 + P.BatchMatMul(True, False)(x, y) ** 2
            + P.Tensordot(1)(x, y) ** 2 + P.Dot()(x, y[0]).sum() ** 2
            + P.Outer()(x[1], y[:, 2]).sum(0) ** 2)


def h_matrix(x):
    return (P.MatrixInverse()(x) + P.MatrixInverse(True)(x) * P.MatrixDeterminant()(x)
            + ops.norm(x, 1) * ops.norm(x))


SECOND_ORDER = [
    (h_unary, [normal], [(2, 3)]),
    (h_binary, [normal, mod_safe_y], [(2, 3), (3,)]),
    (h_reductions, [distinct], [(3, 4)]),
    (h_products, [normal, normal], [(3, 3), (3, 3)]),
    (h_matrix, [well_conditioned], [(3, 3)]),
]


@pytest.mark.parametrize("fn,gens,shapes", SECOND_ORDER,
                         ids=lambda v: getattr(v, "__name__", ""))
def test_rules_differentiate_again(fn, gens, shapes):
    args = tuple(g(s, 50 + i) * (0.25 if g is distinct else 1.0)
                 for i, (g, s) in enumerate(zip(gens, shapes)))
    got = second_order(fn, args)
    for g, expected in zip(got, numeric_second_order(fn, args)):
        np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-5)


# ============================================================ x ** y at zero
# d(x ** y)/dx = y * x ** (y - 1) is 0 * inf at x = 0 when y = 0, and
# d(x ** y)/dy = x ** y * log(x) is 0 * -inf at x = 0 when y > 0; the true
# slopes there are 0 (x ** 0 is constant; 0 ** y is 0 for every y > 0).
def f_pow_consts(x):
    return np.sum(x ** 0 + x ** 1 + x ** 2 + x ** 3 + 2.0 * x ** 0.0)


def f_pow_arrays(x, y):
    return np.sum(x ** y)


def f_pow_square(x):
    return np.sum(x ** 2)


def test_constant_exponents_at_zero_closed_form():
    x = np.array([0.0, 0.5, -1.5, 2.0])
    g = GradOperation()(f_pow_consts)
    np.testing.assert_array_equal(g(x), 1 + 2 * x + 3 * x ** 2)   # exact: small integers
    square = GradOperation()(f_pow_square)
    np.testing.assert_array_equal(square(x), 2 * x)
    code = [ln.strip() for ln in square.last.source.splitlines() if not ln.strip().startswith("#")]
    assert "d_x = 2 * x" in code and not any("**" in ln for ln in code)   # no ``x ** 1``
    # second derivative: 2 + 6x, 0 ** 1 included
    gg = GradOperation()(GradOperation()(f_pow_consts))
    np.testing.assert_array_equal(gg(x), 2 + 6 * x)
    np.testing.assert_array_equal(s2sad.jvp(f_pow_consts, (x,), (np.ones(4),))[1],
                                  np.sum(1 + 2 * x + 3 * x ** 2))


def test_array_exponents_at_zero_closed_form():
    x = np.array([0.0, 0.0, 0.0, 1.5, 2.0, 0.7])
    y = np.array([0.0, 1.0, 2.5, 0.0, 3.0, -1.2])
    with np.errstate(divide="raise", invalid="raise"):      # no 0 * inf on the way
        dx, dy = GradOperation(get_all=True)(f_pow_arrays)(x, y)
    expect_dx = np.array([0.0, 1.0, 0.0, 0.0, 12.0, -1.2 * 0.7 ** -2.2])
    expect_dy = np.array([0.0, 0.0, 0.0, np.log(1.5), 8 * np.log(2.0), 0.7 ** -1.2 * np.log(0.7)])
    # float64 rounding of pow and log
    np.testing.assert_allclose(dx, expect_dx, rtol=1e-14, atol=0)
    np.testing.assert_allclose(dy, expect_dy, rtol=1e-14, atol=0)
    _, t = s2sad.jvp(f_pow_arrays, (x, y), (np.ones(6), np.ones(6)))
    np.testing.assert_allclose(t, np.sum(expect_dx + expect_dy), rtol=1e-14)


def f_pow_dx(x, y):
    return GradOperation()(f_pow_arrays)(x, y)


def test_mixed_second_derivative_where_the_exponent_is_zero():
    """d/dy of d(x ** y)/dx is x ** (y - 1) * (1 + y log x): 1/x at y = 0, x > 0."""
    x = np.array([0.5, 1.5, 2.0])
    y = np.array([0.0, 0.0, 1.3])
    got = GradOperation(get_all=True)(f_pow_dx)(x, y)[1]
    np.testing.assert_allclose(got, x ** (y - 1) * (1 + y * np.log(x)), rtol=1e-14)


def f_bitwise(x):
    inside = (x > 0) & ~(x > 0.5)
    outer = (x < -1) ^ (x < -2) | np.bitwise_and(x < -5, True)
    return np.sum(x * inside + 3.0 * x * ops.bitwise_or(outer, ops.invert(x == x)))


def test_bitwise_operators_select_without_a_gradient():
    x = np.array([-6.0, -3.0, -1.5, -0.5, 0.2, 0.7])
    inside = (x > 0) & ~(x > 0.5)
    outer = ((x < -1) ^ (x < -2)) | (x < -5)
    np.testing.assert_array_equal(GradOperation()(f_bitwise)(x), inside + 3.0 * outer)
    a, b = np.array([5, 3, 0]), np.array([3, 6, 7])
    for prim, ref in ((P.BitwiseAnd(), a & b), (P.BitwiseOr(), a | b), (P.BitwiseXor(), a ^ b)):
        np.testing.assert_array_equal(prim(a, b), ref)
    np.testing.assert_array_equal(P.Invert()(a), ~a)
    t = s2sad.Tensor(np.array([True, False]))
    np.testing.assert_array_equal((t & True).asnumpy(), [True, False])
    np.testing.assert_array_equal((False | t).asnumpy(), [True, False])
    np.testing.assert_array_equal((t ^ t).asnumpy(), [False, False])
    np.testing.assert_array_equal((~t).asnumpy(), [False, True])


def _row_sums(x):
    return np.sum(np.sum(x, axis=1) * np.max(x, axis=1) * np.min(x, axis=1))


@pytest.mark.parametrize("name", ["sum", "max", "min"])
def test_generated_reductions_are_numpys_to_the_bit(name):
    # generated code calls the ufunc's reduction (rt.math_sum ...) to skip
    # np.sum's function layer: values, dtypes and result types must not change
    fast, ref = getattr(rt_math, "math_" + name), getattr(np, name)
    cases = [(normal((5, 7), 61), {}), (normal((5, 7), 62).astype(np.float32), {"axis": 1}),
             (np.arange(12, dtype=np.int8).reshape(3, 4), {"axis": (0, 1), "keepdims": True}),
             (np.array([True, False, True]), {}), (np.float64(2.5), {}), (3, {}),
             ([[1.5, 2.0], [0.5, 4.0]], {"axis": 0}), (normal((2, 3, 4), 63), {"axis": -1})]
    for x, kw in cases:
        got, want = fast(x, **kw), ref(x, **kw)
        np.testing.assert_array_equal(got, want)
        assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
    if name != "sum":       # an empty max has no value, in both
        with pytest.raises(ValueError, match="zero-size"):
            fast(np.ones(0))


def test_generated_code_reduces_through_the_runtime():
    x = normal((3, 4), 64)
    g = GradOperation()(_row_sums)
    src = s2sad.get_source(g, x)
    for name in ("sum", "max", "min"):
        assert "rt.math_%s(x, axis=1)" % name in src
    # the product rule over three row reductions, each by its own closed form
    s, mx, mn = x.sum(1), x.max(1), x.min(1)
    hit_max, hit_min = x == mx[:, None], x == mn[:, None]
    want = (mx * mn)[:, None] + (s * mn)[:, None] * hit_max + (s * mx)[:, None] * hit_min
    np.testing.assert_allclose(g(x), want, rtol=1e-12)
