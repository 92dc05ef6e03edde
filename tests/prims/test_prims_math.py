"""Math-family primitives: reverse and forward rules against finite differences,
eager results against NumPy, and the functional forms, NumPy mappings, Tensor
methods and operators that stage them.

Every differentiated function is a small function defined in this file (s2sad
reads its source); factories return nested functions calling one primitive.
"""
import math

import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.backend import rt_math
from s2sad.ops import operations as P
from s2sad.ops._grad import bprop_getters, jvp_getters
from s2sad.ops.composite import GradOperation

from gradcheck import check_jvp, check_vjp, numeric_grad


def normal(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape)


def uniform(lo, hi):
    def gen(shape, seed):
        return np.random.default_rng(seed).uniform(lo, hi, shape)
    return gen


def away_from_zero(shape, seed):
    """Normals pushed at least 0.3 away from 0 (for Abs, Sign and the like)."""
    x = normal(shape, seed)
    return np.where(x >= 0, x + 0.3, x - 0.3)


positive = uniform(0.5, 2.0)
unit = uniform(-0.8, 0.8)
above_one = uniform(1.2, 3.0)


def well_conditioned(shape, seed):
    """Random square matrices plus 3 I, so inverses and determinants are tame."""
    x = normal(shape, seed) * 0.5
    return x + 3.0 * np.eye(shape[-1])


def distinct(shape, seed):
    """A random permutation of well-separated values: no ties for max/min."""
    n = int(np.prod(shape)) if shape else 1
    values = np.random.default_rng(seed).permutation(n) * 0.37 - 0.5 * n * 0.37 + 0.11
    return values.reshape(shape)


# ===================================================================== unary
def make_unary(prim):
    def f_unary(x):
        return prim(x)
    return f_unary


erf_ref = np.vectorize(math.erf)
erfc_ref = np.vectorize(math.erfc)

# name -> (primitive, input generator, NumPy reference)
UNARY = {
    "Abs": (P.Abs(), away_from_zero, np.abs),
    "Reciprocal": (P.Reciprocal(), positive, np.reciprocal),
    "Rsqrt": (P.Rsqrt(), positive, lambda x: 1 / np.sqrt(x)),
    "Expm1": (P.Expm1(), normal, np.expm1),
    "Log1p": (P.Log1p(), positive, np.log1p),
    "Tan": (P.Tan(), unit, np.tan),
    "Asin": (P.Asin(), unit, np.arcsin),
    "Acos": (P.Acos(), unit, np.arccos),
    "Atan": (P.Atan(), normal, np.arctan),
    "Sinh": (P.Sinh(), normal, np.sinh),
    "Cosh": (P.Cosh(), normal, np.cosh),
    "Asinh": (P.Asinh(), normal, np.arcsinh),
    "Acosh": (P.Acosh(), above_one, np.arccosh),
    "Atanh": (P.Atanh(), unit, np.arctanh),
    "Erf": (P.Erf(), normal, erf_ref),
    "Erfc": (P.Erfc(), normal, erfc_ref),
    "Floor": (P.Floor(), normal, np.floor),
    "Ceil": (P.Ceil(), normal, np.ceil),
    "Round": (P.Round(), normal, np.round),
    # the primitives that were here before keep their rules
    "Neg": (P.Neg(), normal, np.negative),
    "Sin": (P.Sin(), normal, np.sin),
    "Cos": (P.Cos(), normal, np.cos),
    "Exp": (P.Exp(), normal, np.exp),
    "Log": (P.Log(), positive, np.log),
    "Tanh": (P.Tanh(), normal, np.tanh),
    "Sqrt": (P.Sqrt(), positive, np.sqrt),
    "Square": (P.Square(), normal, np.square),
}
UNARY_FNS = {name: make_unary(prim) for name, (prim, _, _) in UNARY.items()}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(2, 3), ()], ids=str)
def test_unary_vjp_jvp_eager(name, shape):
    prim, gen, ref = UNARY[name]
    x = gen(shape, 1)
    check_vjp(UNARY_FNS[name], (x,))
    check_jvp(UNARY_FNS[name], (x,))
    np.testing.assert_allclose(prim(x), ref(x), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["Floor", "Ceil", "Round"])
def test_piecewise_constant_gradient_is_zero(name):
    x = normal((2, 3), 2)
    g = GradOperation()(UNARY_FNS[name])(x)
    np.testing.assert_array_equal(g, np.zeros((2, 3)))
    _, t = s2sad.jvp(UNARY_FNS[name], x, np.ones((2, 3)))
    np.testing.assert_array_equal(t, np.zeros((2, 3)))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradient_keeps_float32(name):
    prim, gen, _ = UNARY[name]
    x = gen((2, 3), 3).astype(np.float32)
    g = GradOperation()(UNARY_FNS[name])(x)
    assert g.dtype == np.float32
    _, t = s2sad.jvp(UNARY_FNS[name], x, np.ones((2, 3), np.float32))
    assert t.dtype == np.float32


def test_erf_fallback_without_scipy(monkeypatch):
    x = np.linspace(-3, 3, 13).astype(np.float32)
    monkeypatch.setattr(rt_math, "_special", None)
    got = rt_math.math_erf(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, erf_ref(x.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(rt_math.math_erfc(np.float64(0.5)), math.erfc(0.5), rtol=1e-15)
    assert isinstance(rt_math.math_erfc(np.float64(0.5)), np.float64)


def test_sign_and_logical_have_no_gradient():
    x = away_from_zero((2, 3), 4)
    np.testing.assert_array_equal(P.Sign()(x), np.sign(x))
    g = GradOperation()(f_sign_times)(x)
    np.testing.assert_allclose(g, np.sign(x), rtol=1e-15)
    a, b = x > 0, x > 0.5
    np.testing.assert_array_equal(P.LogicalAnd()(a, b), a & b)
    np.testing.assert_array_equal(P.LogicalOr()(a, b), a | b)
    np.testing.assert_array_equal(P.LogicalNot()(a), ~a)
    g = GradOperation()(f_logical)(x)
    np.testing.assert_allclose(g, ((x > 0) & ~(x > 0.5)).astype(float), rtol=1e-15)


def f_sign_times(x):
    return x * P.Sign()(x)


def f_logical(x):
    return x * ops.logical_and(x > 0, ops.logical_not(x > 0.5))


# ==================================================================== binary
def make_binary(prim):
    def f_binary(x, y):
        return prim(x, y)
    return f_binary


def mod_safe_y(shape, seed):
    """Divisors in [0.7, 1.3] with either sign, for Mod and FloorDiv."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.7, 1.3, shape) * np.where(rng.random(shape) < 0.5, -1.0, 1.0)


BINARY = {
    "Atan2": (P.Atan2(), normal, normal, np.arctan2),
    "Maximum": (P.Maximum(), normal, normal, np.maximum),
    "Minimum": (P.Minimum(), normal, normal, np.minimum),
    "LogAddExp": (P.LogAddExp(), normal, normal, np.logaddexp),
    "LogAddExp2": (P.LogAddExp2(), normal, normal, np.logaddexp2),
    "Mod": (P.Mod(), normal, mod_safe_y, np.mod),
    "FloorDiv": (P.FloorDiv(), normal, mod_safe_y, np.floor_divide),
}
BINARY_FNS = {name: make_binary(prim) for name, (prim, _, _, _) in BINARY.items()}
BROADCAST = [((2, 3), (2, 3)), ((), (2, 3)), ((3, 1), (1, 4)), ((2, 1, 3), (4, 3))]


def far_from_jumps(name, x, y):
    """Whether x / y keeps clear of integers (where Mod and FloorDiv jump)."""
    if name not in ("Mod", "FloorDiv"):
        return True
    q = np.asarray(x / y)
    return np.all(np.abs(q - np.round(q)) > 1e-3)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", BROADCAST, ids=str)
def test_binary_vjp_jvp_eager(name, shapes):
    prim, gen_x, gen_y, ref = BINARY[name]
    x, y = gen_x(shapes[0], 5), gen_y(shapes[1], 6)
    assert far_from_jumps(name, x, y)
    grads = check_vjp(BINARY_FNS[name], (x, y))
    assert np.shape(grads[0]) == np.shape(x) and np.shape(grads[1]) == np.shape(y)
    check_jvp(BINARY_FNS[name], (x, y))
    np.testing.assert_allclose(prim(x, y), ref(x, y), rtol=1e-14)


def test_floordiv_gradient_is_zero_and_mod_closed_form():
    x, y = normal((2, 3), 7), mod_safe_y((2, 3), 8)
    gx, gy = GradOperation(get_all=True)(BINARY_FNS["FloorDiv"])(x, y)
    np.testing.assert_array_equal(gx, 0 * x)
    np.testing.assert_array_equal(gy, 0 * y)
    gx, gy = GradOperation(get_all=True)(BINARY_FNS["Mod"])(x, y)
    np.testing.assert_array_equal(gx, np.ones((2, 3)))
    np.testing.assert_allclose(gy, -np.floor_divide(x, y), rtol=1e-15)


def test_maximum_minimum_split_ties_evenly():
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([2.0, 2.0, 2.0])
    gx, gy = GradOperation(get_all=True)(BINARY_FNS["Maximum"])(x, y)
    np.testing.assert_array_equal(gx, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(gy, [1.0, 0.5, 0.0])
    gx, gy = GradOperation(get_all=True)(BINARY_FNS["Minimum"])(x, y)
    np.testing.assert_array_equal(gx, [1.0, 0.5, 0.0])
    np.testing.assert_array_equal(gy, [0.0, 0.5, 1.0])


def f_relu_like(x):
    return ops.maximum(x, 0.0) + np.minimum(x, 1.0)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradient_keeps_float32(name):
    _, gen_x, gen_y, _ = BINARY[name]
    x = gen_x((2, 3), 9).astype(np.float32)
    y = gen_y((3,), 10).astype(np.float32)
    gx, gy = GradOperation(get_all=True)(BINARY_FNS[name])(x, y)
    assert gx.dtype == np.float32 and gy.dtype == np.float32


def test_python_scalar_does_not_upcast():
    x = normal((2, 3), 11).astype(np.float32)
    g = GradOperation()(f_relu_like)(x)
    assert g.dtype == np.float32
    check_vjp(f_relu_like, (normal((2, 3), 11) + 0.05,))


# ---------------------------------------------------------------- operators
def f_floordiv_op(x, y):
    return x // y + x


def f_mod_op(x, y):
    return x % y


def f_mod_const(x):
    return x % 0.75


def f_matmul_op_vec(x, y):
    return x @ y


@pytest.mark.parametrize("fn,args", [
    (f_floordiv_op, ((2, 3), (3,))),
    (f_mod_op, ((2, 3), (3,))),
    (f_mod_const, ((2, 3),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_floordiv_mod_operators(fn, args):
    values = [normal(args[0], 12)] + [mod_safe_y(s, 13) for s in args[1:]]
    assert far_from_jumps("Mod", values[0], values[1] if len(values) > 1 else 0.75)
    check_vjp(fn, tuple(values))
    check_jvp(fn, tuple(values))


def test_operators_on_tensors_stage_the_primitives():
    x, y = normal((2, 3), 14), mod_safe_y((2, 3), 15)
    grad_fn = GradOperation(get_all=True)(f_mod_op)
    gx, gy = grad_fn(s2sad.Tensor(x), s2sad.Tensor(y))
    np.testing.assert_allclose(gy.asnumpy(), -np.floor_divide(x, y), rtol=1e-15)
    forward = s2sad.get_ir(grad_fn, stage="forward")
    assert "Mod" in forward
    assert "FloorDiv" in s2sad.get_ir(GradOperation()(f_floordiv_op), x, y, stage="forward")
    assert "MatMulExt" in s2sad.get_ir(GradOperation()(f_matmul_op_vec), x[0], y.T,
                                       stage="forward")


# ================================================================ reductions
def make_reduce(cls, axis, keep_dims):
    op = cls(keep_dims)

    def f_reduce(x):
        return op(x, axis)
    return f_reduce


REDUCE_REF = {P.ReduceMax: np.max, P.ReduceMin: np.min, P.ReduceProd: np.prod}
AXES = [(), 0, 1, (0, 1), -1]


@pytest.mark.parametrize("cls", [P.ReduceMax, P.ReduceMin, P.ReduceProd],
                         ids=lambda c: c.__name__)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keep_dims", [False, True])
def test_reduce(cls, axis, keep_dims):
    x = distinct((3, 4), 16) if cls is not P.ReduceProd else uniform(0.5, 1.5)((3, 4), 16)
    fn = make_reduce(cls, axis, keep_dims)
    check_vjp(fn, (x,))
    check_jvp(fn, (x,))
    np_axis = None if axis == () else axis
    np.testing.assert_allclose(fn(x), REDUCE_REF[cls](x, axis=np_axis, keepdims=keep_dims),
                               rtol=1e-14)


def test_reduce_3d():
    x = distinct((2, 3, 4), 17)
    for cls in (P.ReduceMax, P.ReduceMin, P.ReduceProd):
        fn = make_reduce(cls, (0, 2), False)
        check_vjp(fn, (x * 0.3,))
        check_jvp(fn, (x * 0.3,))


def test_reduce_max_splits_ties_evenly():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])
    g = GradOperation()(make_reduce(P.ReduceMax, 1, False))(x)
    np.testing.assert_array_equal(g, [[0, 0.5, 0.5], [1, 0, 0]])
    g = GradOperation()(make_reduce(P.ReduceMin, (), False))(np.array([1.0, 1.0, 2.0, 1.0]))
    np.testing.assert_allclose(g, [1 / 3, 1 / 3, 0, 1 / 3], rtol=1e-15)


@pytest.mark.parametrize("keep_dims", [False, True])
def test_reduce_max_ties_in_float32_both_modes(keep_dims):
    # row 0 ties three ways, row 1 twice, row 2 not at all
    x = np.array([[2, 2, 2, 0], [1, 5, 5, 3], [4, 0, 1, 2]], np.float32)
    fn = make_reduce(P.ReduceMax, 1, keep_dims)
    g = GradOperation()(fn)(x)
    want = np.array([[1 / 3, 1 / 3, 1 / 3, 0], [0, .5, .5, 0], [1, 0, 0, 0]], np.float32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, want, rtol=1e-7)      # float32 rounding of 1/3
    # forward mode: the mean of the tangents at the ties (the same convention)
    t = np.arange(12, dtype=np.float32).reshape(3, 4)
    _, tangent = s2sad.jvp(fn, (x,), (t,))
    assert tangent.dtype == np.float32
    want_t = np.array([1.0, 5.5, 8.0], np.float32)
    np.testing.assert_allclose(tangent, want_t[:, None] if keep_dims else want_t, rtol=1e-7)


@pytest.mark.parametrize("zeros", [1, 2], ids=["one_zero", "two_zeros"])
def test_reduce_prod_with_zeros(zeros):
    x = uniform(0.5, 1.5)((3, 4), 18)
    x[0, 1] = 0.0
    if zeros == 2:
        x[0, 3] = 0.0
    x[2, 2] = 0.0
    for axis in [(), 1, 0]:
        fn = make_reduce(P.ReduceProd, axis, False)
        grads = check_vjp(fn, (x,))
        assert np.all(np.isfinite(grads[0]))
        check_jvp(fn, (x,))
    g = GradOperation()(make_reduce(P.ReduceProd, 1, False))(x)
    expected = np.array([[np.prod(np.delete(row, j)) for j in range(4)] for row in x])
    np.testing.assert_allclose(g, expected, rtol=1e-14)


def make_cumsum(exclusive, reverse, axis):
    op = P.CumSum(exclusive, reverse)

    def f_cumsum(x):
        return op(x, axis)
    return f_cumsum


def cumsum_ref(x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis)
    if exclusive:
        out = out - x
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum(exclusive, reverse, axis):
    x = normal((3, 4), 19)
    fn = make_cumsum(exclusive, reverse, axis)
    check_vjp(fn, (x,))
    check_jvp(fn, (x,))
    np.testing.assert_allclose(fn(x), cumsum_ref(x, axis, exclusive, reverse), rtol=1e-14)
    if not exclusive and not reverse:
        np.testing.assert_allclose(fn(x), np.cumsum(x, axis=axis), rtol=1e-14)
    if exclusive and not reverse:
        np.testing.assert_array_equal(np.take(fn(x), 0, axis=axis), 0.0)


def make_logsumexp(axis, keep_dims):
    op = P.LogSumExp(keep_dims)

    def f_logsumexp(x):
        return op(x, axis)
    return f_logsumexp


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keep_dims", [False, True])
def test_logsumexp(axis, keep_dims):
    x = normal((3, 4), 20)
    fn = make_logsumexp(axis, keep_dims)
    check_vjp(fn, (x,))
    check_jvp(fn, (x,))
    np_axis = None if axis == () else axis
    expected = np.log(np.sum(np.exp(x), axis=np_axis, keepdims=keep_dims))
    np.testing.assert_allclose(fn(x), expected, rtol=1e-14)


def test_logsumexp_is_stable():
    x = np.array([[1000.0, 1000.0], [-1000.0, -1001.0]], np.float32)
    out = P.LogSumExp()(x, 1)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [1000 + np.log(2), -1000 + np.log1p(np.exp(-1))],
                               rtol=1e-6)
    g = GradOperation()(make_logsumexp(1, False))(x)
    # exp(x - out) with |out| ~ 1000 in float32: one ulp of out is ~6e-5
    np.testing.assert_allclose(g, [[0.5, 0.5], [1 / (1 + np.exp(-1)), 1 / (1 + np.e)]],
                               rtol=1e-4)
    assert np.all(np.isfinite(g))


def make_arg_with_value(cls, axis, keep_dims):
    op = cls(axis, keep_dims)

    def f_arg_with_value(x):
        return op(x)
    return f_arg_with_value


def make_arg_value_only(cls, axis, keep_dims):
    op = cls(axis, keep_dims)

    def f_arg_value(x):
        index, value = op(x)
        return value * 2.0
    return f_arg_value


@pytest.mark.parametrize("cls", [P.ArgMaxWithValue, P.ArgMinWithValue],
                         ids=lambda c: c.__name__)
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keep_dims", [False, True])
def test_arg_with_value(cls, axis, keep_dims):
    x = distinct((3, 4), 21)
    index, value = cls(axis, keep_dims)(x)
    argf, redf = (np.argmax, np.max) if cls is P.ArgMaxWithValue else (np.argmin, np.min)
    np.testing.assert_array_equal(index, argf(x, axis=axis, keepdims=keep_dims))
    assert index.dtype == np.int32
    np.testing.assert_array_equal(value, redf(x, axis=axis, keepdims=keep_dims))
    check_vjp(make_arg_value_only(cls, axis, keep_dims), (x,))
    check_jvp(make_arg_value_only(cls, axis, keep_dims), (x,))
    # both outputs returned: the index carries no gradient
    check_vjp(make_arg_with_value(cls, axis, keep_dims), (x,))


def test_arg_with_value_ties_go_to_first_index():
    x = np.array([[1.0, 3.0, 3.0]])
    g = GradOperation()(make_arg_value_only(P.ArgMaxWithValue, 1, False))(x)
    np.testing.assert_array_equal(g, [[0.0, 2.0, 0.0]])


@pytest.mark.parametrize("cls", [P.ReduceMax, P.ReduceProd, P.LogSumExp],
                         ids=lambda c: c.__name__)
def test_reduction_gradient_keeps_float32(cls):
    x = uniform(0.5, 1.5)((3, 4), 22).astype(np.float32)
    g = GradOperation()(make_reduce(cls, 1, False))(x)
    assert g.dtype == np.float32


# ============================================================ linear algebra
matmul_ext = P.MatMulExt()


def f_matmul_ext(x, y):
    return matmul_ext(x, y)


MATMUL_SHAPES = [
    ((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)),
    ((2, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((2, 1, 2, 3), (4, 3, 2)),
    ((4,), (2, 4, 3)), ((2, 3, 4), (4,)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("form", ["primitive", "operator", "numpy", "ops"])
def test_matmul_ext(shapes, form):
    fn = {"primitive": f_matmul_ext, "operator": f_matmul_op_vec, "numpy": f_np_matmul,
          "ops": f_ops_matmul}[form]
    x, y = normal(shapes[0], 23), normal(shapes[1], 24)
    grads = check_vjp(fn, (x, y))
    assert grads[0].shape == x.shape and grads[1].shape == y.shape
    check_jvp(fn, (x, y))
    np.testing.assert_allclose(matmul_ext(x, y), np.matmul(x, y), rtol=1e-14)


def f_np_matmul(x, y):
    return np.matmul(x, y)


class _Marked(np.ndarray):
    """An ndarray subclass: its products keep their type through ``@``."""


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.complex128,
                                   np.int64, np.bool_], ids=lambda d: np.dtype(d).name)
def test_matmul_gradients_equal_matmul_bit_for_bit(dtype):
    # rank-1 and rank-2 gradients call np.dot (no matmul dispatch): the same
    # values and dtype as the matmul formulas, which the rules wrote before
    from s2sad.backend import runtime as rt
    rng = np.random.default_rng(27)

    def arr(shape):
        a = rng.standard_normal(shape) * 3
        return (a > 0) if dtype is np.bool_ else a.astype(dtype)
    for n, m, k in [(3, 4, 5), (1, 7, 1), (16, 16, 16), (40, 3, 9)]:
        x, y, x1, y1 = arr((n, m)), arr((m, k)), arr(m), arr(m)
        d2, d1, dv = arr((n, k)), arr(n), arr(k)
        cases = [(rt.math_matmul_grad_a(d2, x, y), d2 @ y.T),
                 (rt.math_matmul_grad_a(dv, x1, y), y @ dv),
                 (rt.math_matmul_grad_b(d2, x, y), x.T @ d2),
                 (rt.math_matmul_grad_b(d1, x, y1), x.T @ d1)]
        # a batched adjoint (a gradient differentiated again) keeps matmul's
        # broadcasting, which np.dot does not do
        d3 = arr((2, n, k))
        cases += [(rt.math_matmul_grad_a(d3, x, y), d3 @ y.T),
                  (rt.math_matmul_grad_b(d3, x, y), x.T @ d3)]
        for got, want in cases:
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    # a subclass keeps its own product
    x, d = arr((3, 4)).view(_Marked), arr(3)
    assert type(rt.math_matmul_grad_b(d, x, arr(4))) is _Marked


def f_ops_matmul(x, y):
    return ops.matmul(x, y)


def make_bmm(ta, tb):
    op = P.BatchMatMul(ta, tb)

    def f_bmm(x, y):
        return op(x, y)
    return f_bmm


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("batch", [((2,), (2,)), ((1,), (3,)), ((2, 3), (3,)), ((), ())],
                         ids=str)
def test_batch_matmul(ta, tb, batch):
    xs = batch[0] + ((3, 2) if ta else (2, 3))
    ys = batch[1] + ((4, 3) if tb else (3, 4))
    x, y = normal(xs, 25), normal(ys, 26)
    fn = make_bmm(ta, tb)
    grads = check_vjp(fn, (x, y))
    assert grads[0].shape == x.shape and grads[1].shape == y.shape
    check_jvp(fn, (x, y))
    a = np.swapaxes(x, -1, -2) if ta else x
    b = np.swapaxes(y, -1, -2) if tb else y
    np.testing.assert_allclose(fn(x, y), np.matmul(a, b), rtol=1e-14)


def f_dot(x, y):
    return P.Dot()(x, y)


def f_outer(x, y):
    return P.Outer()(x, y)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                    ((2, 3), (3, 4))], ids=str)
def test_dot(shapes):
    x, y = normal(shapes[0], 27), normal(shapes[1], 28)
    check_vjp(f_dot, (x, y))
    check_jvp(f_dot, (x, y))
    np.testing.assert_allclose(f_dot(x, y), np.dot(x, y), rtol=1e-14)


def test_dot_rejects_other_ranks():
    with pytest.raises(ValueError, match="1-D and 2-D"):
        P.Dot()(np.ones((2, 2, 2)), np.ones((2, 2)))


@pytest.mark.parametrize("shapes", [((3,), (4,)), ((2, 2), (3,))], ids=str)
def test_outer(shapes):
    x, y = normal(shapes[0], 29), normal(shapes[1], 30)
    grads = check_vjp(f_outer, (x, y))
    assert grads[0].shape == x.shape
    check_jvp(f_outer, (x, y))
    np.testing.assert_allclose(f_outer(x, y), np.outer(x, y), rtol=1e-14)


def make_tensordot(axes):
    op = P.Tensordot(axes)

    def f_tensordot(x, y):
        return op(x, y)
    return f_tensordot


def make_tensordot_grad(cls, axes):
    op = cls(axes)

    def f_tensordot_grad(x, y):
        return op(x, y)
    return f_tensordot_grad


TENSORDOT_CASES = [
    (1, (2, 3), (3, 4)),
    (2, (2, 3, 4), (3, 4, 5)),
    (0, (2,), (3,)),
    (((1, 0), (0, 1)), (3, 2, 4), (2, 3)),
    (((0,), (2,)), (4, 2), (3, 2, 4)),
    (((-1,), (-1,)), (2, 3), (4, 3)),
    (((2, 0), (1, 2)), (3, 4, 2), (5, 2, 3)),
]


@pytest.mark.parametrize("axes,xs,ys", TENSORDOT_CASES, ids=str)
def test_tensordot_and_its_gradient_primitives(axes, xs, ys):
    x, y = normal(xs, 31), normal(ys, 32)
    fn = make_tensordot(axes)
    grads = check_vjp(fn, (x, y))
    assert grads[0].shape == x.shape and grads[1].shape == y.shape
    check_jvp(fn, (x, y))
    np.testing.assert_allclose(fn(x, y), np.tensordot(x, y, axes), rtol=1e-13)
    # the gradient primitives are bilinear primitives with rules of their own
    dout = normal(np.shape(fn(x, y)), 33)
    ga = make_tensordot_grad(P.TensordotGradA, axes)
    gb = make_tensordot_grad(P.TensordotGradB, axes)
    np.testing.assert_allclose(ga(dout, y), grads_of_tensordot(x, y, dout, axes)[0],
                               rtol=1e-12, atol=1e-12)
    check_vjp(ga, (dout, y))
    check_jvp(ga, (dout, y))
    check_vjp(gb, (x, dout))
    check_jvp(gb, (x, dout))


def grads_of_tensordot(x, y, dout, axes):
    """Reference gradients: contract dout with the other operand by einsum."""
    letters = "abcdefghij"
    ia, ib = rt_math.math_tensordot_axes(x.ndim, y.ndim, axes)
    xl = list(letters[:x.ndim])
    yl = [None] * y.ndim
    for a, b in zip(ia, ib):
        yl[b] = xl[a]
    k = x.ndim
    for j in range(y.ndim):
        if yl[j] is None:
            yl[j] = letters[k]
            k += 1
    out = [c for i, c in enumerate(xl) if i not in ia] + [c for j, c in enumerate(yl)
                                                         if j not in ib]
    spec = "%s,%s->%s" % ("".join(out), "".join(yl), "".join(xl))
    return (np.einsum(spec, dout, y),)


def make_inverse(adjoint):
    op = P.MatrixInverse(adjoint)

    def f_inverse(x):
        return op(x)
    return f_inverse


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)], ids=str)
def test_matrix_inverse(adjoint, shape):
    x = well_conditioned(shape, 34)
    fn = make_inverse(adjoint)
    check_vjp(fn, (x,))
    check_jvp(fn, (x,))
    a = np.swapaxes(x, -1, -2) if adjoint else x
    np.testing.assert_allclose(fn(x), np.linalg.inv(a), rtol=1e-13)


def f_det(x):
    return P.MatrixDeterminant()(x)


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (1, 1)], ids=str)
def test_matrix_determinant(shape):
    x = well_conditioned(shape, 35)
    check_vjp(f_det, (x,))
    check_jvp(f_det, (x,))
    np.testing.assert_allclose(f_det(x), np.linalg.det(x), rtol=1e-13)
    assert P.Det is P.MatrixDeterminant


def test_linalg_gradients_keep_float32():
    x = well_conditioned((3, 3), 36).astype(np.float32)
    assert GradOperation()(f_det)(x).dtype == np.float32
    assert GradOperation()(make_inverse(False))(x).dtype == np.float32
    y = normal((3, 4), 37).astype(np.float32)
    gx, gy = GradOperation(get_all=True)(f_matmul_ext)(x[0], y)
    assert gx.dtype == np.float32 and gy.dtype == np.float32


# ============================================== functional forms, NumPy, methods
def f_ops_elementwise(x, y):
    return (ops.abs(x) + ops.atan2(x, y) + ops.erf(x) + ops.erfc(y) + ops.maximum(x, y)
            + ops.minimum(x, y) + ops.tan(x * 0.3) + ops.sinh(x) + ops.cosh(y)
            + ops.asinh(x) + ops.atan(y) + ops.expm1(x) + ops.reciprocal(y * y + 1.0)
            + ops.rsqrt(y * y + 1.0) + ops.log1p(x * x) + ops.sign(x) * x
            + ops.floor(x) + ops.ceil(y) + ops.round(x))


def f_ops_unit(x):
    return ops.asin(x) + ops.acos(x) + ops.atanh(x) + ops.arcsin(x) + ops.acosh(x * x + 1.5)


def f_ops_reductions(x):
    values, indices = ops.max(x, 1)
    low, _ = ops.min(x, axis=0, keepdims=True)
    flat_max, flat_index = ops.max(x)
    return (ops.sum(values) + ops.sum(low) + flat_max + ops.amax(x) + ops.amin(x, 1).sum()
            + ops.prod(x, 1).sum() + ops.cumsum(x, 1).sum() + ops.logsumexp(x, 0).sum()
            + ops.reduce_max(x, 0).sum() + ops.reduce_prod(x, (), True).sum())


def f_ops_linalg(a, b):
    return (ops.dot(a, b).sum() + ops.outer(a[0], b[:, 0]).sum()
            + ops.tensordot(a, b, 1).sum() + ops.det(a @ b) + ops.inverse(a @ b).sum()
            + ops.bmm(a, b).sum() + ops.batch_matmul(a, b, transpose_a=True,
                                                     transpose_b=True).sum()
            + ops.matmul(a, b).sum())


def f_np_elementwise(x, y):
    return (np.abs(x) + np.absolute(y) + np.sign(x) * y + np.reciprocal(y * y + 1.0)
            + np.expm1(x) + np.log1p(x * x) + np.tan(x * 0.3) + np.arctan(x)
            + np.arctan2(x, y) + np.sinh(x) + np.cosh(y) + np.arcsinh(x)
            + np.maximum(x, y) + np.minimum(x, y) + np.floor(x) + np.ceil(y) + np.round(x)
            + np.floor_divide(x, 0.7) + np.mod(x, 0.7) + np.log2(y * y + 1.0)
            + np.log10(x * x + 1.0) + np.exp2(x) + np.logaddexp(x, y))


def f_np_unit(x):
    return np.arcsin(x) + np.arccos(x) + np.arctanh(x) + np.arccosh(x * x + 1.5)


def f_np_reductions(x):
    return (np.max(x, axis=1).sum() + np.amax(x) + np.min(x, 0, keepdims=True).sum()
            + np.amin(x) + np.prod(x, axis=1).sum() + np.prod(x) + np.cumsum(x).sum()
            + (np.cumsum(x, axis=0) * x).sum())


def f_np_linalg(a, b):
    return (np.dot(a, b).sum() + np.inner(a, a).sum() + np.outer(a, b).sum()
            + np.tensordot(a, b, axes=1).sum() + np.tensordot(a, b, ([0], [1])).sum()
            + np.linalg.det(a @ b) + np.linalg.inv(a @ b).sum() + np.matmul(a[0], b).sum())


def f_methods_numpy(x):
    # method names ndarray and Tensor share, so both run eagerly too
    return (x.max() + x.max(axis=1).sum() + x.min(0, keepdims=True).sum() + x.prod(1).sum()
            + x.prod(keepdims=True).sum() + x.cumsum(axis=1).sum() + x.cumsum().sum()
            + x.round().sum() + x.dot(x[0]).sum() + x.dot(x.T).sum())


def f_methods_mindspore(x):
    # MindSpore Tensor methods ndarray lacks
    return (x.abs().sum() + (x.sign() * x).sum() + x.floor().sum() + x.ceil().sum()
            + x.matmul(x.T).sum() + x.logsumexp(1).sum() + x.norm() + x.erf().sum()
            + x.maximum(x * 0.5).sum() + x.amax(0).sum())


def f_tensor_norm_args(x):
    return x.norm(1, 0)


def f_tensor_max_keep_dims(x, w):
    return x.max(1, keep_dims=True) * w


def f_builtin_abs(x):
    return abs(x) * 2.0


FORMS = [
    (f_ops_elementwise, [away_from_zero, away_from_zero], [(2, 3), (2, 3)]),
    (f_ops_unit, [unit], [(2, 3)]),
    (f_ops_reductions, [distinct], [(3, 4)]),
    (f_ops_linalg, [well_conditioned, well_conditioned], [(3, 3), (3, 3)]),
    (f_np_elementwise, [uniform(0.1, 0.6), away_from_zero], [(2, 3), (2, 3)]),
    (f_np_unit, [unit], [(2, 3)]),
    (f_np_reductions, [distinct], [(3, 4)]),
    (f_np_linalg, [well_conditioned, well_conditioned], [(3, 3), (3, 3)]),
    (f_methods_numpy, [distinct], [(3, 4)]),
    (f_builtin_abs, [away_from_zero], [(2, 3)]),
]


@pytest.mark.parametrize("fn,gens,shapes", FORMS, ids=lambda v: getattr(v, "__name__", ""))
def test_functional_numpy_and_methods(fn, gens, shapes):
    args = tuple(g(s, 40 + i) * (0.25 if g is distinct else 1.0)
                 for i, (g, s) in enumerate(zip(gens, shapes)))
    check_vjp(fn, args, rtol=1e-5, atol=1e-5)
    check_jvp(fn, args)


@pytest.mark.parametrize("wrap", ["ndarray", "Tensor"])
def test_methods_on_tensors_and_arrays(wrap):
    x = distinct((3, 4), 41) * 0.25
    arg = s2sad.Tensor(x) if wrap == "Tensor" else x
    grads = check_vjp(f_methods_numpy, (arg,), rtol=1e-5, atol=1e-5)
    assert np.shape(grads[0]) == (3, 4)


def test_mindspore_methods_on_tensors():
    x = distinct((3, 4), 41) * 0.25
    grads = check_vjp(f_methods_mindspore, (s2sad.Tensor(x),), rtol=1e-5, atol=1e-5)
    assert isinstance(grads[0], s2sad.Tensor)


def test_tensor_norm_method_with_arguments_eager():
    x = distinct((3, 4), 46) * 0.25
    check_vjp(f_tensor_norm_args, (s2sad.Tensor(x),))


def test_tensor_max_keep_dims_eager():
    x = s2sad.Tensor(distinct((3, 4), 47) * 0.25)
    assert x.max(1, keep_dims=True).shape == (3, 1)


def test_functional_forms_eager():
    x = distinct((3, 4), 42) * 0.25
    t = s2sad.Tensor(x)
    values, indices = ops.max(t, 1)
    np.testing.assert_allclose(values.asnumpy(), x.max(1), rtol=1e-6)
    np.testing.assert_array_equal(indices.asnumpy(), x.argmax(1))
    value, index = ops.min(x)
    assert value == x.min() and index == x.argmin()
    np.testing.assert_allclose(ops.amax(x, 0), x.max(0), rtol=1e-15)
    np.testing.assert_allclose(ops.prod(x, 1, keep_dims=True), x.prod(1, keepdims=True))
    np.testing.assert_allclose(ops.cumsum(x, 0), np.cumsum(x, 0), rtol=1e-15)
    np.testing.assert_allclose(ops.logaddexp(x, x.T[:3, :1]), np.logaddexp(x, x.T[:3, :1]),
                               rtol=1e-14)
    np.testing.assert_allclose(ops.exp2(x), np.exp2(x), rtol=1e-14)
    np.testing.assert_allclose(ops.log2(x * x + 1), np.log2(x * x + 1), rtol=1e-14)
    np.testing.assert_allclose(ops.log10(x * x + 1), np.log10(x * x + 1), rtol=1e-14)
    np.testing.assert_allclose(ops.round(x, decimals=1), np.round(x, 1), rtol=1e-14)
    np.testing.assert_allclose(ops.inner(x, x), np.inner(x, x), rtol=1e-14)
    np.testing.assert_allclose(t.prod(1).asnumpy(), x.prod(1), rtol=1e-6)
    np.testing.assert_allclose(t.cumsum(0).asnumpy(), np.cumsum(x, 0), rtol=1e-6)
    np.testing.assert_allclose(t.sign().asnumpy(), np.sign(x))
    # NumPy functions on a Tensor call its methods (with out=None)
    np.testing.assert_allclose(np.asarray(np.prod(t, axis=0)), x.prod(0), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(np.cumsum(t, axis=1)), np.cumsum(x, 1), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(np.round(t, 1)), np.round(x, 1), rtol=1e-14)
    assert P.Div is P.RealDiv and P.FloorMod is P.Mod


def test_unsupported_arguments_are_compile_errors():
    with pytest.raises(s2sad.CompileError, match="out"):
        GradOperation()(f_np_max_out)(normal((2, 3), 43))
    with pytest.raises(ValueError, match="dtype"):
        ops.prod(normal((2, 3), 43), dtype=np.float32)


def f_np_max_out(x):
    return np.max(x, 0, np.zeros(3))


# ===================================================================== norms
def make_norm(ord, dim, keepdim):
    def f_norm(x):
        return ops.norm(x, ord, dim, keepdim)
    return f_norm


def make_np_norm(ord, axis, keepdims):
    def f_np_norm(x):
        return np.linalg.norm(x, ord, axis, keepdims)
    return f_np_norm


INF = float("inf")
NORM_CASES = [
    # (ord, dim, input shape)
    (None, None, (3, 4)), (None, None, (5,)), ("fro", None, (3, 4)), (2, None, (5,)),
    (1, None, (5,)), (1, None, (3, 4)), (INF, None, (5,)), (INF, None, (3, 4)),
    (-INF, None, (5,)), (-1, None, (3, 4)), (3, None, (5,)), (0.5, None, (5,)),
    (None, 1, (3, 4)), (2, 0, (3, 4)), (1, -1, (3, 4)), (INF, 1, (3, 4)), (-INF, 0, (3, 4)),
    (3, 1, (3, 4)), (None, (0, 1), (3, 4)), ("fro", (1, 2), (2, 3, 4)),
    (1, (0, 1), (3, 4)), (INF, (1, 0), (3, 4)), (-1, (-2, -1), (2, 3, 4)),
    (-INF, (0, 2), (3, 2, 4)),
]


@pytest.mark.parametrize("ord,dim,shape", NORM_CASES, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_norm(ord, dim, shape, keepdim):
    x = distinct(shape, 44) * 0.3
    expected = np.linalg.norm(x, ord, dim, keepdim)
    fn = make_norm(ord, dim, keepdim)
    np.testing.assert_allclose(fn(x), expected, rtol=1e-13)
    assert np.shape(fn(x)) == np.shape(expected)
    check_vjp(fn, (x,))
    check_jvp(fn, (x,))
    np_fn = make_np_norm(ord, dim, keepdim)
    grads = check_vjp(np_fn, (x,))
    assert grads[0].shape == x.shape


def f_sum_squares(x):
    return P.SumSquares()(x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sum_squares_rules_and_value(dtype):
    x = normal((3, 4), 46).astype(dtype)
    # a sum of 12 squares: float32 rounding (eps 1.2e-7), or float64's
    np.testing.assert_allclose(f_sum_squares(x), np.sum(x.astype(np.float64) ** 2),
                               rtol=1e-6 if dtype == np.float32 else 1e-14)
    if dtype == np.float64:
        check_vjp(f_sum_squares, (x,))
        check_jvp(f_sum_squares, (x,))
    else:
        assert GradOperation()(f_sum_squares)(x).dtype == np.float32


def test_sum_squares_of_other_kinds_is_numpys_sum():
    for x in (np.arange(6, dtype=np.int32).reshape(2, 3), np.float64(3.0),
              np.array([1 + 2j, 3 - 1j]), np.ones((4, 6))[:, ::2] * 2.0):
        out = rt_math.math_sum_squares(x)
        np.testing.assert_array_equal(out, np.sum(x * x))
        assert np.asarray(out).dtype == np.asarray(np.sum(x * x)).dtype


def test_euclidean_norm_of_everything_is_numpys_to_the_bit():
    # np.linalg.norm takes the same dot product; the sum of squares differs in rounding
    x = normal((7, 9), 47)
    for fn in (make_norm(None, None, False), make_np_norm(None, None, False)):
        assert fn(x) == np.linalg.norm(x)
        g = GradOperation()(fn)
        # a closed form in float64, the same values by other ops: rounding only
        np.testing.assert_allclose(g(x), x / np.linalg.norm(x), rtol=1e-14)
        assert "rt.math_sum_squares(x)" in s2sad.get_source(g)


def test_norm_zero_ord_counts_nonzeros():
    x = np.array([0.0, 1.5, -2.0, 0.0])
    np.testing.assert_allclose(ops.norm(x, 0), 2.0)


@pytest.mark.parametrize("ord,dim,shape,match", [
    (2, None, (3, 4), "matrix 2-norm"),
    (1, None, (2, 3, 4), "1-D or 2-D"),
    (2, (0, 1), (3, 4), "not supported"),
    ("nuc", (0, 1), (3, 4), "not supported"),
    ("fro", 0, (3, 4), "matrix norm"),
], ids=str)
def test_norm_rejects_unsupported(ord, dim, shape, match):
    with pytest.raises((ValueError, s2sad.CompileError), match=match):
        GradOperation()(make_norm(ord, dim, False))(np.ones(shape))


def test_norm_on_tensor_eager_and_float32():
    x = distinct((3, 4), 45).astype(np.float32) * 0.3
    out = ops.norm(s2sad.Tensor(x), 1, 1)
    np.testing.assert_allclose(out.asnumpy(), np.linalg.norm(x, 1, 1), rtol=1e-6)
    g = GradOperation()(make_norm(None, None, False))(x)
    assert g.dtype == np.float32


# ================================================================= registry
OWNED = ["Add", "Sub", "Mul", "RealDiv", "Pow", "FloorDiv", "Mod", "Atan2", "Maximum",
         "Minimum", "LogAddExp", "LogAddExp2", "Neg", "Sin", "Cos", "Tan", "Exp", "Expm1", "Log", "Log1p", "Tanh",
         "Sinh", "Cosh", "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh", "Sqrt", "Rsqrt",
         "Reciprocal", "Square", "Abs", "Erf", "Erfc", "Floor", "Ceil", "Round", "MatMul",
         "MatMulExt", "MatMulGradA", "MatMulGradB", "BatchMatMul", "Dot", "Outer", "Tensordot", "TensordotGradA",
         "TensordotGradB", "MatrixInverse", "MatrixDeterminant", "ReduceSum", "ReduceMean",
         "ReduceMax", "ReduceMin", "ReduceProd", "SumSquares", "CumSum", "LogSumExp", "ArgMaxWithValue",
         "ArgMinWithValue"]
NOT_DIFFERENTIABLE = ["Sign", "Equal", "NotEqual", "Less", "LessEqual", "Greater",
                      "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalNot",
                      "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert",
                      "ArgIndicator", "NormShape"]


def test_family_primitives_have_rules_and_docs():
    from s2sad.ops.operations import math_ops
    exported = set(math_ops.__all__)
    assert set(OWNED) | set(NOT_DIFFERENTIABLE) | {"Div", "Det", "FloorMod"} == exported
    for name in OWNED:
        cls = getattr(P, name)
        assert cls.differentiable, name
        assert bprop_getters.lookup(cls.__new__(cls)) is not None, name
        assert jvp_getters.lookup(cls.__new__(cls)) is not None, name
    for name in OWNED + NOT_DIFFERENTIABLE:
        cls = getattr(P, name)
        assert cls.__doc__ and cls.__doc__.strip(), name
        assert isinstance(cls.formula, str) and cls.formula, name
    for name in NOT_DIFFERENTIABLE:
        assert not getattr(P, name).differentiable, name


# ============================================ rules differentiate again
# Reverse mode applied to the adjoint program itself: every rule above is made
# of primitives with rules, so the second derivative comes out of the same
# machinery.  Checked against finite differences of the first gradient.
def second_order(fn, args):
    """Gradient of the sum of all first-order input gradients, by reverse mode twice."""
    from s2sad.ad import grad as G
    from s2sad.ad.reverse import reverse
    from s2sad.backend.codegen import CodeGen
    from s2sad.backend.compile import compile_source
    from s2sad.ir.passes import dce
    specs = tuple(G.arg_spec(a) for a in args)
    t = G.trace(fn, None, args, specs)
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


# ------------------------------------------------- matmul gradient primitives
# MatMulGradA/B(d, x, y) are the gradients of <d, x @ y> w.r.t. x and y, for
# every rank pairing NumPy's matmul allows (1-D promotion, batch broadcast).
MATMUL_RANKS = [((2, 3), (3, 4)), ((2, 3), (3,)), ((3,), (3, 4)), ((3,), (3,)),
                ((2, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((1, 2, 3), (4, 3, 2))]


@pytest.mark.parametrize("xs,ys", MATMUL_RANKS, ids=str)
def test_matmul_grad_primitives_are_the_matmul_gradient(xs, ys):
    x, y = normal(xs, 95), normal(ys, 96)
    d = normal(np.shape(x @ y), 97)
    pair = lambda a, b: np.sum(d * (a @ b))  # noqa: E731
    gx = numeric_grad(pair, [x, y], 0)
    gy = numeric_grad(pair, [x, y], 1)
    np.testing.assert_allclose(P.MatMulGradA()(d, x, y), gx, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(P.MatMulGradB()(d, x, y), gy, rtol=1e-7, atol=1e-8)


def f_matmul_grad_a(d, y):
    return P.MatMulGradA()(d, _MGA_X, y)


def f_matmul_grad_b(d, x):
    return P.MatMulGradB()(d, x, _MGB_Y)


_MGA_X = np.zeros((2, 3))
_MGB_Y = np.zeros((3, 4))


def test_matmul_grad_primitives_rules():
    check_vjp(f_matmul_grad_a, (normal((2, 4), 98), normal((3, 4), 99)))
    check_jvp(f_matmul_grad_a, (normal((2, 4), 98), normal((3, 4), 99)))
    check_vjp(f_matmul_grad_b, (normal((2, 4), 98), normal((2, 3), 99)))
    check_jvp(f_matmul_grad_b, (normal((2, 4), 98), normal((2, 3), 99)))


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
