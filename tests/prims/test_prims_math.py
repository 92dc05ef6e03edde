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
from s2sad.runtime import rt_math
from s2sad.ops import operations as P
from s2sad.ops._grad import bprop_getters, jvp_getters
from s2sad.ops.composite import GradOperation

from gradcheck import check_jvp, check_vjp


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


# ================================================================= registry
OWNED = ["Add", "Sub", "Mul", "RealDiv", "Pow", "FloorDiv", "Mod", "Atan2", "Maximum",
         "Minimum", "LogAddExp", "LogAddExp2", "Neg", "Sin", "Cos", "Tan", "Exp", "Expm1", "Log", "Log1p", "Tanh",
         "Sinh", "Cosh", "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh", "Sqrt", "Rsqrt",
         "Reciprocal", "Square", "Abs", "Erf", "Erfc", "Floor", "Ceil", "Round", "MatMul",
         "MatMulExt", "MatMulGradA", "MatMulGradB", "BatchMatMul", "Dot", "DotGradA", "DotGradB",
         "Outer", "Tensordot", "TensordotGradA",
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
    assert set(OWNED) | set(NOT_DIFFERENTIABLE) | {"Div", "Det", "FloorMod", "TensorAdd"} == exported
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
