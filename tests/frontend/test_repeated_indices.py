"""Item assignment with indices that name one position twice, and lists inside index tuples.

NumPy's ``y[idx] = v`` with a repeated position keeps one write (the last), so
the other writes of ``v`` have no effect on the result; ``y[idx] += v`` reads
``y[idx]`` once, adds and writes back (buffered), so ``y[0]`` becomes
``y[0] + v[last]``.  Every gradient here is compared with central differences
of the function run eagerly by NumPy, and the second derivatives with
``check_grads(order=2)``.
"""
import numpy as np
import pytest

import s2sad

from gradcheck import check_vjp, numeric_grad

C = np.array([1.3, 0.7, -0.4, 2.1])
C22 = np.reshape(C, (2, 2))
C34 = np.arange(12.0).reshape(3, 4) * 0.3 - 1.0
IDX = np.array([1, 3, 1])           # an int array index naming position 1 twice
X = np.array([0.5, -0.2, 0.9, 0.3])
V = np.array([0.7, -1.1])


# --------------------------------------------------------- repeated writes
def set_repeat(x, v):
    y = x * 1.0
    y[[0, 0]] = v
    return np.sum(np.sin(y) * C)


def add_repeat(x, v):
    y = x * 1.0
    y[[0, 0]] += v
    return np.sum(np.sin(y) * C)


def set_negative(x, v):
    y = x[:3] * 1.0
    y[[-1, 2]] = v               # -1 and 2 are the same element of a length-3 axis
    return np.sum(np.sin(y) * C[:3])


def add_negative(x, v):
    y = x[:3] * 1.0
    y[[-1, 2]] += v
    return np.sum(np.sin(y) * C[:3])


def set_2d(x, v):
    y = np.reshape(x, (2, 2)) * 1.0
    y[[0, 0], [1, 1]] = v
    return np.sum(np.sin(y) * C22)


def add_2d(x, v):
    y = np.reshape(x, (2, 2)) * 1.0
    y[[0, 0], [1, 1]] += v
    return np.sum(np.sin(y) * C22)


def set_int_array(x, v):
    y = x * 1.0
    y[IDX] = np.concatenate([v, v[:1] * 2.0])
    return np.sum(np.sin(y) * C)


def add_int_array(x, v):
    y = x * 1.0
    y[IDX] += np.concatenate([v, v[:1] * 2.0])
    return np.sum(np.sin(y) * C)


def set_scalar_repeat(x, v):
    y = x * 1.0
    y[[2, 2, 0]] = v[0]          # one value broadcast to three writes, two of them lost
    return np.sum(np.sin(y) * C)


def set_rows_repeat(x, v):
    y = np.reshape(x, (2, 2)) * 1.0
    y[[1, 1], :] = np.reshape(np.concatenate([v, v * v]), (2, 2))
    return np.sum(np.sin(y) * C22)


# ------------------------------------------------- positions never repeat
def set_mask(x, v):
    y = x * 1.0
    y[x > 0] = v[0] * v[1]
    return np.sum(np.sin(y) * C)


def add_mask(x, v):
    y = x * 1.0
    y[x > 0] += v[0]
    return np.sum(np.sin(y) * C)


def set_step(x, v):
    y = x * 1.0
    y[::2] = v
    return np.sum(np.sin(y) * C)


def add_negative_step(x, v):
    y = x * 1.0
    y[::-2] += v
    return np.sum(np.sin(y) * C)


def set_distinct(x, v):
    y = x * 1.0
    y[[3, 0]] = v
    return np.sum(np.sin(y) * C)


def set_repeat_in_loop(x, v):
    y = np.reshape(x, (2, 2)) * 1.0
    for i in range(2):                       # a runtime loop: [i, i] is built at run time
        y[[i, i], 1] = v * y[i, [0, 0]]
    return np.sum(np.sin(y) * C22)


def add_repeat_in_loop(x, v):
    y = np.reshape(x, (2, 2)) * 1.0
    for i in range(2):
        y[i, [1, 1]] += v
    return np.sum(np.sin(y) * C22)


CASES = [set_repeat_in_loop, add_repeat_in_loop, set_repeat, add_repeat, set_negative, add_negative, set_2d, add_2d, set_int_array,
         add_int_array, set_scalar_repeat, set_rows_repeat, set_mask, add_mask, set_step,
         add_negative_step, set_distinct]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_first_order_matches_numpy(fn):
    check_vjp(fn, (X, V))


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_both_modes_and_second_order(fn):
    s2sad.check_grads(fn, (X, V), order=2)


def test_last_write_wins_closed_form():
    def f(x, v):
        y = x * 1.0
        y[[0, 0]] = v
        return np.sum(y * C)
    dx, dv = s2sad.grad(f, grad_position=(0, 1))(X, V)
    np.testing.assert_allclose(dv, [0.0, 1.3])
    np.testing.assert_allclose(dx, [0.0, 0.7, -0.4, 2.1])


def test_buffered_add_closed_form():
    def f(x, v):
        y = x * 1.0
        y[[0, 0]] += v
        return np.sum(y * C)
    assert np.isclose(f(X, V), np.sum(C * np.array([X[0] + V[1], X[1], X[2], X[3]])))
    dx, dv = s2sad.grad(f, grad_position=(0, 1))(X, V)
    np.testing.assert_allclose(dv, [0.0, 1.3])
    np.testing.assert_allclose(dx, C)


def index_input(x, v, idx):
    y = x * 1.0
    y[idx] = v
    return np.sum(np.sin(y) * C)


@pytest.mark.parametrize("idx", [np.array([2, 2]), np.array([-1, 3]), np.array([1, 2])],
                         ids=["repeat", "negative-repeat", "distinct"])
def test_runtime_index_array(idx):
    """An index array passed at run time: the same function, repeats or not."""
    dx, dv = s2sad.grad(index_input, grad_position=(0, 1))(X, V, idx)
    np.testing.assert_allclose(dx, numeric_grad(index_input, (X, V, idx), 0), atol=1e-8)
    np.testing.assert_allclose(dv, numeric_grad(index_input, (X, V, idx), 1), atol=1e-8)


def test_distinct_indices_keep_every_write():
    from s2sad.runtime.rt_array import array_setitem_value_grad
    d = np.arange(5.0)
    assert array_setitem_value_grad(d, np.array([4, 1])).tolist() == [4.0, 1.0]
    assert array_setitem_value_grad(d, [1, 4, 1]).tolist() == [0.0, 4.0, 1.0]
    assert array_setitem_value_grad(d, slice(None, None, 2)).tolist() == [0.0, 2.0, 4.0]


# ------------------------------------------------ lists inside index tuples
def read_columns(x):
    y = x * 1.0
    return np.sum(np.sin(y[:, [0, 2]]) * C34[:, :2])


def assign_columns(x, v):
    y = x * 1.0
    y[:, [0, 2]] = v
    return np.sum(np.sin(y) * C34)


def add_columns(x, v):
    y = x * 1.0
    y[:, [3, 3]] += v            # a list in a tuple that also repeats
    return np.sum(np.sin(y) * C34)


def read_rows_columns(x):
    return np.sum(np.cos(x[[0, 2], 1:]) * x[1, [0, 3, 3]])


X34 = np.linspace(-1.0, 1.2, 12).reshape(3, 4)
V32 = np.linspace(0.2, 0.9, 6).reshape(3, 2)


@pytest.mark.parametrize("fn,args", [(read_columns, (X34,)), (assign_columns, (X34, V32)),
                                     (add_columns, (X34, V32)), (read_rows_columns, (X34,))],
                         ids=["read", "assign", "add", "rows-columns"])
def test_list_inside_index_tuple(fn, args):
    check_vjp(fn, args)
    s2sad.check_grads(fn, args, order=2)


def test_list_inside_index_tuple_hessian():
    h = s2sad.hessian(read_columns)(X34)
    expected = np.zeros((3, 4, 3, 4))
    for i in range(3):
        for k, j in enumerate([0, 2]):
            expected[i, j, i, j] = -np.sin(X34[i, j]) * C34[i, k]
    np.testing.assert_allclose(np.asarray(h), expected, atol=1e-12)
