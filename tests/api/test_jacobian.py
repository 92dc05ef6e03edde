"""Jacobian and Hessian with ``paddle.incubate.autograd`` semantics.

Flattened ``[M, N]`` (``[B, M, N]`` batched) matrices, evaluated by rows on
indexing and cached; checked against finite-difference matrices and the
Paddle batched ``multiply`` example.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops, Tensor, Jacobian, Hessian


def multiply(x, y):
    return x * y


def sin_times(x):
    return ops.sin(x) * 2.0


def two_in_two_out(x, y):
    return ops.sin(x) * y.sum(), x.reshape(-1)[0:2] * y[1]


def matvec(a, x):
    return a @ x


def batched_mix(x, y):
    return ops.tanh(x) * y[:, 0:1], (x * x).sum(axis=1)


def cubic(x):
    return (x * x * x).sum() + x[0] * x[1]


def cubic_pair(x, y):
    return (x * x * y).sum() + ops.sin(y).sum()


def batched_cubic(x):
    return (x * x * x).sum(axis=1)


def batched_cubic_keepdims(x, y):
    return (x * x * y).sum(axis=1, keepdims=True)


def arr(t):
    return np.asarray(t.asnumpy() if isinstance(t, Tensor) else t)


def _flat_call(fn, xs_flat, shapes, batched):
    """``fn`` on flat inputs, outputs flattened and concatenated as Jacobian does."""
    xs, k = [], 0
    for shape in shapes:
        size = int(np.prod(shape[1:] if batched else shape, dtype=np.int64))
        if batched:
            xs.append(Tensor(xs_flat[:, k:k + size].reshape(shape)))
        else:
            xs.append(Tensor(xs_flat[k:k + size].reshape(shape)))
        k += size
    out = fn(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    if batched:
        return np.concatenate([arr(o).reshape(arr(o).shape[0], -1) for o in outs], axis=1)
    return np.concatenate([arr(o).reshape(-1) for o in outs])


def fd_matrix(fn, xs, batched=False, eps=1e-6):
    """The flattened Jacobian by central differences: ``[M, N]`` or ``[B, M, N]``."""
    xs = xs if isinstance(xs, tuple) else (xs,)
    shapes = [arr(x).shape for x in xs]
    if batched:
        flat = np.concatenate([arr(x).reshape(arr(x).shape[0], -1) for x in xs], axis=1)
        b, n = flat.shape
        m = _flat_call(fn, flat, shapes, True).shape[1]
        jac = np.zeros((b, m, n))
        for j in range(n):
            d = np.zeros_like(flat)
            d[:, j] = eps
            jac[:, :, j] = (_flat_call(fn, flat + d, shapes, True)
                            - _flat_call(fn, flat - d, shapes, True)) / (2 * eps)
        return jac
    flat = np.concatenate([arr(x).reshape(-1) for x in xs])
    m = _flat_call(fn, flat, shapes, False).size
    jac = np.zeros((m, flat.size))
    for j in range(flat.size):
        d = np.zeros_like(flat)
        d[j] = eps
        jac[:, j] = (_flat_call(fn, flat + d, shapes, False)
                     - _flat_call(fn, flat - d, shapes, False)) / (2 * eps)
    return jac


RNG = np.random.default_rng(42)


# ---------------------------------------------------------------- Jacobian
def test_single_input_non_batched():
    x = Tensor(RNG.standard_normal((2, 3)))
    J = Jacobian(sin_times, x)
    assert J.shape == [6, 6]
    assert J.num_evaluations == 0          # nothing computed before indexing
    full = J[:]
    assert isinstance(full, Tensor) and full.shape == (6, 6)
    np.testing.assert_allclose(arr(full), fd_matrix(sin_times, x), atol=1e-8)
    np.testing.assert_allclose(arr(full), np.diag(2 * np.cos(arr(x)).reshape(-1)),
                               atol=1e-14)


def test_tuple_inputs_and_outputs_non_batched():
    x = Tensor(RNG.standard_normal((2, 2)))
    y = Tensor(RNG.standard_normal((3,)))
    J = Jacobian(two_in_two_out, (x, y))
    assert J.shape == [4 + 2, 4 + 3]
    expected = fd_matrix(two_in_two_out, (x, y))
    np.testing.assert_allclose(arr(J[:]), expected, atol=1e-8)
    np.testing.assert_allclose(arr(J[0, :]), expected[0, :], atol=1e-8)
    np.testing.assert_allclose(arr(J[:, 0:3]), expected[:, 0:3], atol=1e-8)
    np.testing.assert_allclose(arr(J[-1]), expected[-1], atol=1e-8)
    np.testing.assert_allclose(arr(J[1:5:2, 4:]), expected[1:5:2, 4:], atol=1e-8)
    np.testing.assert_allclose(arr(J[..., 2]), expected[..., 2], atol=1e-8)


def test_matrix_vector_jacobian_is_exact():
    a = RNG.standard_normal((4, 3))
    x = RNG.standard_normal(3)
    J = Jacobian(matvec, (a, x))
    full = J[:]
    assert isinstance(full, np.ndarray)      # arrays in, arrays out
    np.testing.assert_allclose(full[:, 12:], a, atol=1e-14)
    expected_da = np.zeros((4, 12))
    for i in range(4):
        expected_da[i, 3 * i:3 * i + 3] = x
    np.testing.assert_allclose(full[:, :12], expected_da, atol=1e-14)


def test_batched_tuple_inputs_and_outputs():
    x = Tensor(RNG.standard_normal((3, 2)))
    y = Tensor(RNG.standard_normal((3, 4)))
    J = Jacobian(batched_mix, (x, y), is_batched=True)
    assert J.shape == [3, 2 + 1, 2 + 4]
    expected = fd_matrix(batched_mix, (x, y), batched=True)
    np.testing.assert_allclose(arr(J[:]), expected, atol=1e-8)
    np.testing.assert_allclose(arr(J[:, 2, :]), expected[:, 2, :], atol=1e-8)
    np.testing.assert_allclose(arr(J[1, 0:2, 1]), expected[1, 0:2, 1], atol=1e-8)


def test_paddle_batched_multiply_example():
    x = Tensor(RNG.standard_normal((2, 8)).astype(np.float32))
    y = Tensor(RNG.standard_normal((2, 8)).astype(np.float32))
    J = Jacobian(multiply, (x, y), is_batched=True)
    assert J.shape == [2, 8, 16]
    xa, ya = arr(x), arr(y)
    expected = np.concatenate([np.stack([np.diag(r) for r in ya]),
                               np.stack([np.diag(r) for r in xa])], axis=2)
    row = J[:, 0, :]
    assert row.shape == (2, 16) and row.dtype == s2sad.float32
    np.testing.assert_allclose(arr(row), expected[:, 0, :])
    col = J[:, 0:3, :]
    assert col.shape == (2, 3, 16)
    np.testing.assert_allclose(arr(col), expected[:, 0:3, :])
    whole = J[:]
    assert whole.shape == (2, 8, 16)
    np.testing.assert_allclose(arr(whole), expected)
    np.testing.assert_allclose(arr(whole), fd_matrix(multiply, (x, y), True, eps=1e-3),
                               atol=1e-3)


def test_rows_are_cached():
    x = Tensor(RNG.standard_normal((2, 8)))
    y = Tensor(RNG.standard_normal((2, 8)))
    J = Jacobian(multiply, (x, y), is_batched=True)
    first = J[:, 0, :]
    assert J.num_evaluations == 1
    again = J[:, 0, :]
    assert J.num_evaluations == 1            # identical indexing computes nothing new
    np.testing.assert_array_equal(arr(first), arr(again))
    J[:, 0:3, :]
    assert J.num_evaluations == 3            # rows 1 and 2 only
    J[:, 2:5, 0:4]
    assert J.num_evaluations == 5            # rows 3 and 4 only
    J[:]
    assert J.num_evaluations == 8
    J[:, 7, :]
    J[:]
    assert J.num_evaluations == 8


def test_non_batched_caching_counts_rows():
    x = Tensor(RNG.standard_normal((5,)))
    J = Jacobian(sin_times, x)
    J[1]
    J[1, 2:4]
    assert J.num_evaluations == 1
    J[0:3]
    assert J.num_evaluations == 3
    J[:, 0]                                  # a column needs every row
    assert J.num_evaluations == 5


def test_indexing_errors():
    J = Jacobian(sin_times, Tensor(np.ones(3)))
    with pytest.raises(IndexError, match="out of range"):
        J[3]
    with pytest.raises(IndexError, match="too many indices"):
        J[0, 0, 0]
    with pytest.raises(TypeError, match="ints and slices"):
        J[[0, 1]]
    with pytest.raises(TypeError, match="'xs' must be a Tensor"):
        Jacobian(sin_times, 3.0)
    with pytest.raises(ValueError, match="same first"):
        Jacobian(multiply, (Tensor(np.ones((2, 3))), Tensor(np.ones((3,)))), is_batched=True)


# ----------------------------------------------------------------- Hessian
def test_hessian_single_input():
    x = Tensor(RNG.standard_normal(4))
    H = Hessian(cubic, x)
    assert H.shape == [4, 4]
    expected = np.diag(6 * arr(x))
    expected[0, 1] = expected[1, 0] = 1.0
    np.testing.assert_allclose(arr(H[:]), expected, atol=1e-12)
    assert H.num_evaluations == 4
    np.testing.assert_allclose(arr(H[1, :]), expected[1], atol=1e-12)
    assert H.num_evaluations == 4


def test_hessian_tuple_inputs_against_finite_differences():
    x = Tensor(RNG.standard_normal((2,)))
    y = Tensor(RNG.standard_normal((2,)))
    H = Hessian(cubic_pair, (x, y))
    assert H.shape == [4, 4]

    def gradient(a, b):
        return s2sad.grad(cubic_pair, (0, 1))(a, b)
    expected = fd_matrix(gradient, (x, y))
    np.testing.assert_allclose(arr(H[:]), expected, atol=1e-7)
    np.testing.assert_allclose(arr(H[:]), arr(H[:]).T, atol=1e-12)


def test_hessian_batched():
    x = Tensor(RNG.standard_normal((3, 2)))
    H = Hessian(batched_cubic, x, is_batched=True)
    assert H.shape == [3, 2, 2]
    expected = np.stack([np.diag(6 * r) for r in arr(x)])
    np.testing.assert_allclose(arr(H[:]), expected, atol=1e-12)
    y = Tensor(RNG.standard_normal((3, 2)))
    H2 = Hessian(batched_cubic_keepdims, (x, y), is_batched=True)
    assert H2.shape == [3, 4, 4]
    xa, ya = arr(x), arr(y)
    for b in range(3):
        e = np.zeros((4, 4))
        e[0:2, 0:2] = np.diag(2 * ya[b])
        e[0:2, 2:4] = e[2:4, 0:2] = np.diag(2 * xa[b])
        np.testing.assert_allclose(arr(H2[b]), e, atol=1e-12)


def test_hessian_requires_scalar_output():
    with pytest.raises(ValueError, match=r"must return a scalar, but its output has shape "
                                         r"\[3\].*\.sum\(\).*'Jacobian'"):
        Hessian(sin_times, Tensor(np.ones(3)))
    with pytest.raises(ValueError, match="per batch element"):
        Hessian(multiply, (Tensor(np.ones((2, 3))), Tensor(np.ones((2, 3)))), is_batched=True)
