"""Functional forms, SciPy mappings and Tensor methods of the nn primitives inside
differentiated functions; a small network; dtypes; every nn primitive has its
rules.
"""
import inspect

import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.runtime import rt_nn
from s2sad.ops import operations as P
from s2sad.ops.operations import nn_ops
from s2sad.ops._grad import bprop_getters, jvp_getters
from s2sad.ops.primitive import Primitive

from gradcheck import check_jvp, check_vjp
from test_prims_nn import (CONV_CASES, CONV_FNS, away_from, distinct, f_bias_add, f_elu,
                           f_gelu_erf, f_gelu_tanh, f_leaky, f_log_softmax, f_relu, f_relu6,
                           f_sce, f_sigmoid, f_softmax, f_softplus, gelu_erf_ref, naive_conv,
                           normal, softmax_ref)
from test_prims_nn_pool_norm import (FixedDraws, POOL_CASES, POOL_FNS, f_bn_infer, f_bn_train,
                                     f_layer_norm, layer_norm_ref)


# --------------------------------------------------------- functional forms
def f_ops_activations(x):
    return (ops.relu(x) + ops.relu6(x) + ops.leaky_relu(x) + ops.elu(x, 0.5) + ops.gelu(x)
            + ops.gelu(x, approximate="tanh") + ops.sigmoid(x) + ops.softplus(x)
            + ops.softplus(x, beta=2))


def f_ops_softmax(x):
    return ops.softmax(x) * ops.log_softmax(x, axis=0) + ops.softmax(x, axis=0)


def f_ops_conv(x, w, b):
    return ops.conv2d(x, w, b, stride=2, pad_mode="pad", padding=1)


def f_ops_conv_same(x, w):
    return ops.conv2d(x, w, pad_mode="same")


def f_ops_pool(x):
    return ops.max_pool2d(x, 2) + ops.avg_pool2d(x, kernel_size=2, stride=2)


def f_ops_pool_padded(x):
    return ops.max_pool2d(x, 3, stride=2, padding=1) + ops.avg_pool2d(x, 3, 2, 1) \
        + ops.avg_pool2d(x, 3, 2, 1, count_include_pad=False)


def f_ops_layer_norm(x, w, b):
    return ops.layer_norm(x, (4,), w, b) + ops.layer_norm(x, (3, 4))


def f_ops_bias_add(x, b):
    return ops.bias_add(x, b)


def f_ops_dropout_off(x):
    return ops.dropout(x, p=0.3, training=False) + ops.dropout(x, p=0.0)


def f_ops_dropout(x):
    return ops.dropout(x, p=0.25)


FUNCTIONAL = [
    (f_ops_activations, [lambda: away_from((2, 3), 43, (0.0, 6.0))]),
    (f_ops_softmax, [lambda: normal((3, 4), 44)]),
    (f_ops_conv, [lambda: normal((2, 2, 5, 5), 45), lambda: normal((3, 2, 3, 3), 46),
                  lambda: normal((3,), 47)]),
    (f_ops_conv_same, [lambda: normal((1, 2, 4, 5), 48), lambda: normal((2, 2, 2, 3), 49)]),
    (f_ops_pool, [lambda: distinct((2, 2, 4, 4), 50)]),
    (f_ops_pool_padded, [lambda: distinct((1, 2, 5, 5), 51)]),
    (f_ops_layer_norm, [lambda: normal((2, 3, 4), 52), lambda: normal((4,), 53),
                        lambda: normal((4,), 54)]),
    (f_ops_bias_add, [lambda: normal((2, 3, 2), 55), lambda: normal((3,), 56)]),
    (f_ops_dropout_off, [lambda: normal((2, 3), 57)]),
]


@pytest.mark.parametrize("fn,makers", FUNCTIONAL, ids=lambda v: getattr(v, "__name__", ""))
def test_functional_forms(fn, makers):
    args = tuple(m() for m in makers)
    check_vjp(fn, args)
    check_jvp(fn, args)


def test_functional_forms_eager_match_primitives():
    x = normal((2, 3), 58)
    np.testing.assert_allclose(ops.gelu(x), gelu_erf_ref(x), rtol=1e-12)
    np.testing.assert_allclose(ops.softplus(x, beta=2), np.log1p(np.exp(2 * x)) / 2, rtol=1e-12)
    np.testing.assert_allclose(ops.leaky_relu(x), np.where(x > 0, x, 0.2 * x))
    xc, w, b = normal((1, 2, 5, 5), 59), normal((3, 2, 3, 3), 60), normal((3,), 61)
    np.testing.assert_allclose(ops.conv2d(xc, w, b),
                               naive_conv(xc, w, (1, 1), (0,) * 4, (1, 1))
                               + b.reshape(1, 3, 1, 1), rtol=1e-12)
    xn = normal((2, 3, 4), 62)
    np.testing.assert_allclose(ops.layer_norm(xn, (4,)),
                               layer_norm_ref(xn, 1.0, 0.0, -1, 1e-5)[0], rtol=1e-10)
    assert ops.relu.__module__.endswith("nn_func")


def test_functional_dropout(monkeypatch):
    x = normal((40, 50), 63)
    rt_nn.set_seed(0)
    a = ops.dropout(x, p=0.25)
    rt_nn.set_seed(0)
    b = ops.dropout(s2sad.Tensor(x), p=0.25)
    assert isinstance(b, s2sad.Tensor)
    np.testing.assert_array_equal(a, b.asnumpy())
    kept = a != 0
    np.testing.assert_allclose(a[kept], x[kept] / 0.75, rtol=1e-15)
    assert abs(kept.mean() - 0.75) < 0.05
    monkeypatch.setattr(rt_nn, "_generator", FixedDraws())
    check_vjp(f_ops_dropout, (normal((3, 4), 64),))


def f_unsupported_pool(x):
    return ops.max_pool2d(x, 2, ceil_mode=True)


def test_functional_unsupported_options_are_errors():
    with pytest.raises(NotImplementedError, match="ceil_mode"):
        ops.max_pool2d(distinct((1, 1, 4, 4), 0), 2, ceil_mode=True)
    with pytest.raises(s2sad.CompileError, match="ceil_mode"):
        ops.GradOperation()(f_unsupported_pool)(distinct((1, 1, 4, 4), 0))
    with pytest.raises(NotImplementedError, match="group"):
        ops.conv2d(normal((1, 2, 4, 4), 0), normal((2, 1, 3, 3), 1), groups=2)


# ---------------------------------------------- SciPy mappings, Tensor methods
try:
    import scipy.special as sp
except ImportError:  # SciPy is optional
    sp = None


def f_sp_expit(x):
    return sp.expit(x)


def f_sp_softmax(x):
    return sp.softmax(x, axis=1) + sp.log_softmax(x, axis=0)


def f_sp_softmax_all(x):
    return sp.softmax(x)


@pytest.mark.skipif(sp is None, reason="SciPy is an optional extra: its functions map to "
                                        "primitives only where it is installed")
@pytest.mark.parametrize("fn", [f_sp_expit, f_sp_softmax, f_sp_softmax_all],
                         ids=lambda f: f.__name__)
def test_scipy_mappings(fn):
    x = normal((3, 4), 65)
    check_vjp(fn, (x,))
    check_jvp(fn, (x,))


def f_methods(x):
    return x.sigmoid() + x.relu() + x.softmax() + x.softmax(axis=0)


def test_tensor_methods():
    x = away_from((3, 4), 66)
    check_vjp(f_methods, (s2sad.Tensor(x),))
    # check_jvp works on ndarrays, which lack these methods eagerly: compare modes on a Tensor
    assert s2sad.check_grads(f_methods, (s2sad.Tensor(x),)) < 1e-6
    t = s2sad.Tensor(x)
    np.testing.assert_allclose(t.softmax(0).asnumpy(), softmax_ref(x, 0), rtol=1e-12)
    np.testing.assert_allclose(t.relu().asnumpy(), np.maximum(x, 0))
    np.testing.assert_allclose(t.sigmoid().asnumpy(), 1 / (1 + np.exp(-x)), rtol=1e-12)


# ----------------------------------------------------------- a small network
conv_net = P.Conv2D(4, 3, pad_mode="same")
pool_net = P.MaxPool(2, 2)
sce_net = P.SparseSoftmaxCrossEntropyWithLogits()
NET_LABELS = np.array([1, 0])


def f_cnn(x, w, b, fc):
    h = ops.relu(ops.bias_add(conv_net(x, w), b))
    h = pool_net(h)
    h = ops.reshape(h, (2, -1))
    return sce_net(ops.matmul(h, fc), NET_LABELS)


def test_small_cnn_all_modes_agree():
    args = (normal((2, 2, 4, 4), 67), normal((4, 2, 3, 3), 68), normal((4,), 69),
            normal((16, 3), 70))
    assert s2sad.check_grads(f_cnn, args) < 1e-5


# ------------------------------------------------------------------- dtypes
def f32_cases():
    x = away_from((2, 2, 4, 4), 71, (0.0, 6.0)).astype(np.float32)
    w = normal((3, 2, 3, 3), 72).astype(np.float32)
    b = normal((2,), 73).astype(np.float32)
    v = np.ones(2, np.float32)
    return [
        (f_relu, (x,)), (f_relu6, (x,)), (f_leaky, (x,)), (f_elu, (x,)), (f_gelu_erf, (x,)),
        (f_gelu_tanh, (x,)), (f_sigmoid, (x,)), (f_softplus, (x,)), (f_softmax, (x,)),
        (f_log_softmax, (x,)), (f_bias_add, (x, b)), (f_ops_activations, (x,)),
        (CONV_FNS[CONV_CASES[3]][1], (x[:, :, :, :4], w)),
        (POOL_FNS[POOL_CASES[2]][0], (x,)), (POOL_FNS[POOL_CASES[4]][1], (x,)),
        (f_layer_norm, (x, w[0, 0, 0, 0] + np.ones((2, 4, 4), np.float32),
                        np.zeros((2, 4, 4), np.float32))),
        (f_bn_train, (x, v, b, b, v)), (f_bn_infer, (x, v, b, b, v)),
        (f_sce, (x[0, 0], np.full((4, 4), 0.25, np.float32))),
    ]


F32_CASES = f32_cases()


@pytest.mark.parametrize("fn,args", F32_CASES, ids=["%d-%s" % (i, c[0].__name__)
                                                     for i, c in enumerate(F32_CASES)])
def test_float32_stays_float32(fn, args):
    out = fn(*args)
    for o in (out if isinstance(out, tuple) else (out,)):
        assert np.result_type(o) == np.float32, (fn.__name__, np.result_type(o))
    grads = ops.GradOperation(get_all=True)(fn)(*args)
    for g in grads:
        assert np.result_type(g) == np.float32, (fn.__name__, np.result_type(g))


def test_float16_activations():
    x = away_from((3,), 74).astype(np.float16)
    for fn in (f_relu, f_sigmoid, f_gelu_erf, f_softplus, f_elu):
        assert fn(x).dtype == np.float16
        assert ops.GradOperation()(fn)(x).dtype == np.float16


# ---------------------------------------------------------------- registry
def _nn_primitives():
    return sorted({v for v in vars(nn_ops).values()
                   if inspect.isclass(v) and issubclass(v, Primitive) and v is not Primitive
                   and not v.__name__.startswith("_")}, key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", _nn_primitives(), ids=lambda c: c.__name__)
def test_primitive_documented_and_ruled(cls):
    assert cls.__doc__ and cls.__doc__.strip()
    assert getattr(P, cls.__name__) is cls
    if cls.differentiable:
        assert isinstance(cls.__dict__.get("formula"), str) and cls.formula
        assert bprop_getters.lookup(cls.__new__(cls)) is not None
        assert jvp_getters.lookup(cls.__new__(cls)) is not None


def test_mindspore_aliases():
    assert P.Elu is P.ELU and P.GELU is P.GeLU
    assert P.GeLU().approximate == "tanh"
    assert ops.Softmax().axis == -1 and ops.LeakyReLU().alpha == 0.2
