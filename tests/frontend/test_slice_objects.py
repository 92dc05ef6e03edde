"""Slice objects: bounds that are NumPy integers, and ``slice(...)`` of runtime values.

Bounds kept as ``np.int64`` (``np.prod(shape)``) were written ``v[0:np.int64(2)]``
in generated code, which names ``np``, absent from its namespace: a NameError
on every call.  ``slice(i * n, (i + 1) * n)`` of a runtime ``i`` (a minibatch
index passed as ``s2sad.mutable``) was refused, while ``x[i * n:(i + 1) * n]``
compiled.
"""
import numpy as np

import s2sad

from gradcheck import numeric_grad

STOP = np.prod((2,))                    # np.int64(2)
PARAMS = slice(np.int64(1), np.prod((2, 2)), np.int64(2))


def head_squares(v):
    return np.sum(v[0:STOP] ** 2)


def strided(v):
    return np.sum(np.sin(v[PARAMS]))


def negative(v):
    return np.sum(v[np.int64(-3):np.int64(-1)] * 3.0)


def test_numpy_integer_bounds_are_written_as_ints():
    v = np.linspace(-1.0, 2.0, 6)
    np.testing.assert_allclose(s2sad.grad(head_squares)(v), [2 * v[0], 2 * v[1], 0, 0, 0, 0])
    assert "v[0:2]" in s2sad.get_source(s2sad.grad(head_squares), v)
    want = np.zeros(6)
    want[1:4:2] = np.cos(v[1:4:2])
    np.testing.assert_allclose(s2sad.grad(strided)(v), want)
    assert "v[1:4:2]" in s2sad.get_source(s2sad.grad(strided), v)
    np.testing.assert_allclose(s2sad.grad(negative)(v), [0, 0, 0, 3.0, 3.0, 0])


def batch_loss(W, X, i):
    rows = slice(i * 2, (i + 1) * 2)
    return np.sum(np.tanh(X[rows] @ W))


def prefix_and_stride(W, X, n):
    return np.sum(X[slice(n)] @ W) + np.sum(np.sin(X[slice(1, None, n)] @ W))


def test_slice_of_runtime_bounds_is_built_at_run_time():
    rng = np.random.default_rng(3)
    W, X = rng.standard_normal((3, 2)), rng.standard_normal((6, 3))
    g = s2sad.grad(batch_loss, grad_position=(0, 1))
    for i in range(3):
        got = g(W, X, s2sad.mutable(i))
        for k in (0, 1):
            np.testing.assert_allclose(got[k], numeric_grad(batch_loss, (W, X, i), k),
                                       rtol=1e-6, atol=1e-9)
    assert "slice(mul_i, mul_add_i, None)" in s2sad.get_source(g, W, X, s2sad.mutable(0))
    for n in (1, 2, 4):
        np.testing.assert_allclose(
            s2sad.grad(prefix_and_stride)(W, X, s2sad.mutable(n)),
            numeric_grad(prefix_and_stride, (W, X, n), 0), rtol=1e-6, atol=1e-9)
