"""NumPy conveniences met in NumPy-based AD code: ``np.append``, ``np.atleast_*d``,
``np.real_if_close``, scalar-type casts, the closeness tests, Python's ``sum``
of an array, ``np.inner`` with a 0-d operand and ``x.dtype``.

Gradients are checked in reverse and forward mode against float64 central
differences of the function run eagerly by NumPy; the functions without a
gradient against NumPy's own values.
"""
import numpy as np
import pytest

import s2sad
from gradcheck import check_jvp, check_vjp, numeric_grad

M = np.arange(1.0, 7.0).reshape(2, 3) * 0.41 - 1.1
V = np.array([0.3, -1.2, 2.5])


def append_flat(x):
    return np.append(x, [1.0, 2.0]) ** 2


def append_axis(x, y):
    return np.append(x, y * 2.0, axis=0) * x[0, 0]


def atleast_1d(x):
    return np.atleast_1d(x) ** 2


def atleast_2d(x):
    return np.atleast_2d(x) ** 2


def atleast_3d(x):
    return np.atleast_3d(x) ** 3


def atleast_several(x, y):
    a, b = np.atleast_2d(x, y)
    return np.sum(a) * np.sum(b ** 2)


def real_if_close(x):
    return np.sin(np.real_if_close(x))


def float64_cast(x):
    return np.float64(x) ** 2 + x


def float32_cast(x):
    return np.float64(np.float32(x)) ** 2 + x


def int_casts(x):
    return np.int64(x) * x + x.astype(int) + np.int32(x) * 1.0


def builtin_sum(x):
    return sum(x) ** 2


def builtin_sum_start(x):
    return sum(x, 1.5) * sum([x[0], x[1]])


def inner(x, y):
    return np.inner(x, y)


CASES = [
    (append_flat, (M,)),
    (append_axis, (M, M[:1] * 0.5)),
    (atleast_1d, (np.float64(0.7),)),
    (atleast_1d, (V,)),
    (atleast_2d, (V,)),
    (atleast_3d, (M,)),
    (atleast_3d, (V,)),
    (atleast_several, (np.float64(0.7), V)),
    (real_if_close, (M,)),
    (float64_cast, (V,)),
    (int_casts, (np.array([1.7, -2.2, 3.4]),)),
    (builtin_sum, (M,)),
    (builtin_sum_start, (M,)),
]
SHAPES = [(), (3,), (2, 3)]
INNER = [(a, b) for a in SHAPES for b in [(), (3,), (4, 3)]]


@pytest.mark.parametrize("fn,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_gradient_matches_finite_differences(fn, args):
    assert np.allclose(s2sad.jit(fn)(*args), fn(*args))
    check_vjp(fn, args)
    check_jvp(fn, args)


def test_append_and_atleast_give_numpys_shapes():
    assert s2sad.jit(atleast_3d)(V).shape == np.atleast_3d(V).shape
    assert s2sad.jit(atleast_2d)(V).shape == (1, 3)
    assert s2sad.jit(append_flat)(M).shape == (8,)


def test_float32_cast_passes_the_gradient():
    # finite differences cannot see through float32 rounding: the closed form
    grad = s2sad.grad(lambda x: np.sum(float32_cast(x)))(V)
    assert np.allclose(grad, 2.0 * V + 1.0, rtol=1e-6)


def test_integer_cast_passes_no_gradient():
    # d/dx (int(x) * x) is int(x), as NumPy-based ADs give (the cast itself is flat)
    x = np.array([1.7, -2.2, 3.4])
    grad = s2sad.grad(lambda x: np.sum(int_casts(x)))(x)
    expected = x.astype(int)
    assert np.allclose(grad, expected)
    assert np.allclose(grad, numeric_grad(lambda x: np.sum(int_casts(x)), (x,), 0))


@pytest.mark.parametrize("shapes", INNER, ids=str)
def test_inner_with_any_operand_rank(shapes):
    rng = np.random.default_rng(0)
    args = tuple(rng.standard_normal(s) for s in shapes)
    assert np.allclose(s2sad.jit(inner)(*args), np.inner(*args))
    check_vjp(inner, args)
    check_jvp(inner, args)


@pytest.mark.parametrize("shapes", [((), (3,)), ((2, 3), ())], ids=str)
def test_inner_with_a_0d_operand_second_order(shapes):
    rng = np.random.default_rng(1)
    args = tuple(rng.standard_normal(s) for s in shapes)
    s2sad.check_grads(inner, args, order=2)


def closeness(x, y):
    return np.isclose(x, y), np.allclose(x, y), np.array_equal(x, y), \
        np.allclose(x, y, atol=0.5), np.array_equal(x, x[:2])


@pytest.mark.filterwarnings("ignore:invalid value encountered")   # inf - inf
@pytest.mark.parametrize("x,y", [
    (V, V), (V, V + 1e-10), (V, V + 0.1), (np.array([0.3, np.inf, 2.5]), V),
    (np.array([0.3, np.inf, -np.inf]), np.array([0.3, np.inf, np.inf])),
    (V, np.array([0.3, np.inf, 2.5]))], ids=["same", "near", "far", "inf", "infs", "inf-b"])
def test_closeness_tests_match_numpy(x, y):
    got = s2sad.jit(closeness)(x, y)
    for g, e in zip(got, closeness(x, y)):
        assert np.array_equal(np.asarray(g), np.asarray(e))


def assert_then_square(x):
    assert np.allclose(x, x)
    if np.array_equal(x, 2.0 * x):
        return np.sum(x)
    return np.sum(x ** 2)


def test_closeness_tests_steer_assert_and_if_at_run_time():
    assert np.allclose(s2sad.grad(assert_then_square)(V), 2.0 * V)
    assert np.allclose(s2sad.grad(assert_then_square)(np.zeros(3)), np.ones(3))


def dtype_program(x):
    assert x.dtype == np.float64 or x.dtype == np.float32
    z = np.zeros(3, dtype=x.dtype)
    return np.sum((x + z).astype(x.dtype) ** 2)


def dtype_branch(x):
    if x.dtype == np.float32:
        return np.sum(x)
    return np.sum(x * 3.0)


def cast_like_other(x, y):
    return np.sum(x.astype(y.dtype) * x)


def test_dtype_attribute_is_read_at_run_time():
    check_vjp(dtype_program, (V,))
    check_jvp(dtype_program, (V,))
    g32 = s2sad.grad(dtype_program)(V.astype(np.float32))
    assert g32.dtype == np.float32 and np.allclose(g32, 2.0 * V, rtol=1e-6)
    assert np.allclose(s2sad.grad(dtype_branch)(np.ones(2, np.float32)), 1.0)
    assert np.allclose(s2sad.grad(dtype_branch)(np.ones(2)), 3.0)


def test_cast_to_a_run_time_dtype_differentiates_only_to_floats():
    x = np.array([1.7, -2.2, 3.4])
    g_int = s2sad.grad(cast_like_other)(x, np.arange(2))
    assert np.allclose(g_int, x.astype(np.int64))          # the cast passes nothing
    assert np.allclose(g_int, numeric_grad(cast_like_other, (x, np.arange(2)), 0))
    assert np.allclose(s2sad.grad(cast_like_other)(x, np.ones(2)), 2.0 * x)
    s2sad.check_grads(cast_like_other, (x, np.ones(2)), order=2)
    assert np.allclose(s2sad.hessian(lambda x: cast_like_other(x, np.arange(2)))(x), 0.0)


def pair_of_shapes(xs):
    return np.sum(xs[0]) * np.sum(xs[1] ** 2)


def test_check_grads_takes_lists_of_arrays_of_different_shapes():
    s2sad.check_grads(pair_of_shapes, ([V, M],), order=1)
    s2sad.check_grads(lambda a, b: [a * 2.0, b ** 2], (V, M), order=2)


def append_to_a_list(a0, a1, a2, b):
    return np.append([a0, a1, a2 * a0], b) ** 2


def append_nested_lists(a, b, c, d):
    return np.sin(np.append([[a, b], [c, d]], [[a * d, 2.0]], axis=0))


@pytest.mark.parametrize("fn", [append_to_a_list, append_nested_lists])
def test_append_to_a_list_of_differentiated_numbers(fn):
    args = tuple(np.float64(v) for v in (0.7, -1.3, 2.1, 0.4))
    np.testing.assert_allclose(s2sad.jit(fn)(*args), fn(*args), rtol=1e-14)
    s2sad.check_grads(fn, args, order=2)
