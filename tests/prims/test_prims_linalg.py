"""Linear-algebra primitives of the math family (matmul, batched matmul, norms,
the matmul gradient primitives): rules against finite differences, eager
results against NumPy.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.runtime import rt_math
from s2sad.ops import operations as P
from s2sad.ops.composite import GradOperation

from gradcheck import check_jvp, check_vjp, numeric_grad
from test_prims_math import distinct, f_matmul_op_vec, normal, well_conditioned


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
    from s2sad import runtime as rt
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


def test_dot_takes_every_rank_as_numpy():
    # a 0-D operand multiplies; a 3-D second operand is contracted on its
    # second-to-last axis (the gradients: tests/prims/test_prims_dot_ranks.py)
    a, b = normal((2, 3), 1), normal((2, 3, 4), 2)
    np.testing.assert_allclose(P.Dot()(a, b), np.dot(a, b), rtol=1e-14)
    np.testing.assert_allclose(P.Dot()(np.float64(2.0), b), 2.0 * b, rtol=1e-14)


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
    (1, None, (2, 3, 4), "1-D or 2-D"),
    (-1, None, (4,), "give dim=0"),
    (-2, None, (4,), "give dim=0"),
    ("nuc", None, (4,), "give dim=0"),
    ("max", (0, 1), (3, 4), "invalid matrix norm"),
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
