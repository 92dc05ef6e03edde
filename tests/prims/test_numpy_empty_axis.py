"""NumPy's reductions over ``axis=()`` reduce no axis (``np.sum(x, axis=())`` is ``x``).

The primitives read ``()`` as every axis, as MindSpore's ``ReduceSum`` does; the
NumPy functions keep NumPy's meaning.  Values are compared with NumPy run
eagerly, gradients with float64 central differences.
"""
import numpy as np
import pytest

import s2sad

from gradcheck import numeric_grad


def sums(x):
    return np.sum(np.sum(x, axis=()) ** 2) + np.sum(np.mean(x, axis=()) * x)


def extremes(x):
    return np.sum(np.max(x, axis=()) ** 3 - np.min(x, axis=()) * np.prod(x, axis=()))


@pytest.mark.parametrize("fn", [sums, extremes])
def test_no_axis_reduces_nothing(fn):
    x = np.linspace(0.5, 1.5, 6).reshape(2, 3)
    value, grad = s2sad.value_and_grad(fn)(x)
    assert value == pytest.approx(fn(x), rel=1e-14)
    # central differences in float64, step 1e-6
    np.testing.assert_allclose(grad, numeric_grad(fn, (x,), 0), rtol=1e-6, atol=1e-9)


def test_no_axis_keeps_numpys_dtypes():
    mask = np.array([True, False, True])
    out = s2sad.value_and_grad(lambda x, m: np.sum(x * np.sum(m, axis=())), grad_position=0)(
        np.ones(3), mask)
    assert out[0] == 2.0
    np.testing.assert_array_equal(out[1], [1.0, 0.0, 1.0])
