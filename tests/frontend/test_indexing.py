"""Indexing and item assignment inside differentiated code, against finite differences."""
import numpy as np
import pytest

import s2sad
from s2sad import ops

from gradcheck import check_vjp

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 5))
MASK = X > 0.1
IDX = np.array([3, 0, 3])          # a repeated row: its gradient adds up


def f_int(x):
    return x[0] * 2.0


def f_slices(x):
    return x[:, 1:3] * x[1:, ::2][:, :2].sum()


def f_newaxis(x):
    return x[..., None] * x[None, 0]


def f_negative_step(x):
    return x[::-1, ::-2] ** 2


def f_bool_mask(x):
    return np.sin(x[MASK])


def f_int_array(x):
    return x[IDX] * x[IDX, 1:2]


def f_setitem_int(x):
    y = x * 1.0
    y[1] = np.sin(x[2])
    return y * y


def f_setitem_mask(x):
    y = x * 1.0
    y[MASK] = x[MASK] ** 3
    return y


def f_setitem_value_gets_gradient(x, v):
    y = x * 1.0
    y[1:3, 0] = v * 2.0
    return np.tanh(y)


def f_aug_subscript(x):
    y = x * 1.0
    y[1:3] += np.cos(x[0])
    y[:, 0] *= 3.0
    return y


def f_runtime_index(x):
    n = x.shape[0]
    return x[n - 1] * x[n - 2:n].sum()


@pytest.mark.parametrize("fn", [f_int, f_slices, f_newaxis, f_negative_step, f_bool_mask,
                                f_int_array, f_setitem_int, f_setitem_mask, f_aug_subscript,
                                f_runtime_index], ids=lambda f: f.__name__)
def test_indexing_gradients(fn):
    check_vjp(fn, (X,))


def test_setitem_gradient_flows_to_both_operands():
    check_vjp(f_setitem_value_gets_gradient, (X, RNG.standard_normal(2)))


def test_setitem_does_not_modify_the_caller_array():
    x = X.copy()
    ops.GradOperation()(f_setitem_int)(x)
    np.testing.assert_array_equal(x, X)


def test_indexing_keeps_float32_and_python_scalars_do_not_upcast():
    x = s2sad.Tensor(X.astype(np.float32))
    g = ops.GradOperation()(f_setitem_mask)(x)
    assert g.dtype == s2sad.float32
    expected = np.where(MASK, 3 * X ** 2, 1.0)
    np.testing.assert_allclose(g.asnumpy(), expected, rtol=1e-5)
