"""Tensor methods, functional forms, NumPy calls, ``stop_gradient`` and ``depend``
staging the core primitives: bprop against float64 central finite differences
through ``gradcheck.check_vjp``.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops

from gradcheck import check_vjp
from test_prims_core import normal, positive


# ---------------------------------------------- Tensor methods and properties
def f_T(x):
    return x.T


def f_sum_method(x):
    return x.sum()


def f_sum_axis_method(x):
    return x.sum(axis=0)


def f_mean_method(x):
    return x.mean()


def f_reshape_method(x):
    return x.reshape(2, -1)


def f_transpose_method(x):
    return x.transpose(1, 0)


@pytest.mark.parametrize("fn", [f_T, f_sum_method, (f_sum_axis_method),
                                f_mean_method, f_reshape_method,
                                (f_transpose_method)],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("wrap", ["ndarray", "Tensor"])
def test_methods(fn, wrap):
    x = normal((4, 3), 17)
    if wrap == "Tensor":
        x = s2sad.Tensor(x)
    check_vjp(fn, (x,))


# ------------------------------------------------------------ functional forms
def f_ops_sin(x):
    return ops.sin(x)


def f_ops_matmul(x, w):
    return ops.matmul(x, w)


def f_ops_matmul_tb(x, w):
    return ops.matmul(x, w, transpose_b=True)


def f_ops_reduce_sum(x):
    return ops.reduce_sum(x, 1)


def f_ops_reduce_sum_keep(x):
    return ops.reduce_sum(x, (0, 1), keep_dims=True)


def f_ops_chain(x):
    return ops.mean(ops.exp(ops.mul(x, x)), 0) + ops.sum(ops.cos(x))


@pytest.mark.parametrize("fn,shapes", [(f_ops_sin, [(2, 3)]),
                                       (f_ops_matmul, [(2, 3), (3, 4)]),
                                       (f_ops_matmul_tb, [(2, 3), (4, 3)]),
                                       (f_ops_reduce_sum, [(2, 3)]),
                                       (f_ops_reduce_sum_keep, [(2, 3)]),
                                       (f_ops_chain, [(2, 3)])],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_functional(fn, shapes):
    check_vjp(fn, tuple(normal(s, 18 + i) for i, s in enumerate(shapes)))


# ---------------------------------------------------------------- NumPy calls
def f_np_sin(x):
    return np.sin(x)


def f_np_sum_axis(x):
    return np.sum(x, axis=0)


def f_np_tanh(x):
    return np.tanh(x)


def f_np_exp(x):
    return np.exp(x)


def f_np_log(x):
    return np.log(x)


def f_np_sqrt(x):
    return np.sqrt(x)


def f_np_mean(x):
    return np.mean(x)


def f_np_matmul(x, w):
    return np.matmul(x, w)


def f_np_mixed(x, w):
    return np.sum(np.tanh(np.matmul(x, w)) * np.cos(x[:, 0:1]), axis=1)


@pytest.mark.parametrize("fn,shapes,gen", [
    (f_np_sin, [(2, 3)], normal),
    (f_np_sum_axis, [(2, 3)], normal),
    (f_np_tanh, [(2, 3)], normal),
    (f_np_exp, [(2, 3)], normal),
    (f_np_log, [(2, 3)], positive),
    (f_np_sqrt, [(2, 3)], positive),
    (f_np_mean, [(2, 3)], normal),
    (f_np_matmul, [(2, 3), (3, 4)], normal),
    (f_np_mixed, [(2, 3), (3, 4)], normal),
], ids=lambda v: getattr(v, "__name__", ""))
def test_numpy_calls(fn, shapes, gen):
    check_vjp(fn, tuple(gen(s, 19 + i) for i, s in enumerate(shapes)))


# -------------------------------------------------- stop_gradient and depend
def f_stop(x):
    return x * ops.stop_gradient(x)


def f_depend_functional(a, b):
    return ops.depend(a, b)


def test_stop_gradient_blocks():
    x = normal((2, 3), 20)
    g = s2sad.ops.GradOperation()(f_stop)(x)
    # d/dx sum(x * c) with c = x held constant is c == x (not 2x)
    np.testing.assert_allclose(g, x, rtol=1e-15)


def test_depend_passes_gradient_to_value_only():
    a = normal((2, 3), 21)
    b = normal((4,), 22)
    sens = normal((2, 3), 23)
    ga, gb = s2sad.ops.GradOperation(get_all=True, sens_param=True)(f_depend_functional)(
        a, b, sens)
    np.testing.assert_allclose(ga, sens, rtol=1e-15)
    np.testing.assert_array_equal(gb, np.zeros((4,)))
