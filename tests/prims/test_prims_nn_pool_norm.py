"""Pooling, Dropout and normalisation primitives: eager results against NumPy
references, rules against float64 central finite differences.
"""
import numpy as np
import pytest

from s2sad import ops
from s2sad.runtime import rt_nn
from s2sad.ops import operations as P

from gradcheck import check_jvp, check_vjp
from test_prims_nn import _pair, conv_pads, distinct, normal


# -------------------------------------------------------------------- pooling
def naive_pool(x, kernel, stride, pads, kind, count_include_pad=False):
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])),
                constant_values=fill)
    inside = np.pad(np.ones((h, w)), ((pads[0], pads[1]), (pads[2], pads[3])))
    oh = (xp.shape[2] - kernel[0]) // stride[0] + 1
    ow = (xp.shape[3] - kernel[1]) // stride[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = slice(i * stride[0], i * stride[0] + kernel[0])
            cols = slice(j * stride[1], j * stride[1] + kernel[1])
            win = xp[:, :, rows, cols]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                count = kernel[0] * kernel[1] if count_include_pad else inside[rows, cols].sum()
                out[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return out


# (kernel, strides, pad_mode, pad)
POOL_CASES = [
    ((2, 2), 2, "valid", 0),
    ((3, 3), 1, "valid", 0),
    ((3, 3), 2, "same", 0),
    ((2, 3), (1, 2), "same", 0),
    ((3, 3), 2, "pad", 1),
]


def make_pool(kernel, strides, pad_mode, pad):
    mp = P.MaxPool(kernel, strides, pad_mode, pad=pad)
    ap = P.AvgPool(kernel, strides, pad_mode, pad=pad)
    mpg = P.MaxPoolGrad(kernel, strides, pad_mode, pad=pad)
    mpgg = P.MaxPoolGradGrad(kernel, strides, pad_mode, pad=pad)
    apg = P.AvgPoolGrad(kernel, strides, pad_mode, pad=pad)

    def f_max(x):
        return mp(x)

    def f_avg(x):
        return ap(x)

    def f_max_grad(dy):
        # x is a constant here: the argmax does not move
        return mpg(POOL_X, mp(POOL_X), dy)

    def f_max_grad_grad(g):
        return mpgg(POOL_X, mp(POOL_X), g)

    def f_avg_grad(dy):
        return apg(POOL_X, ap(POOL_X), dy)
    return f_max, f_avg, f_max_grad, f_max_grad_grad, f_avg_grad


POOL_X = distinct((2, 2, 5, 5), 26)
POOL_FNS = {case: make_pool(*case) for case in POOL_CASES}


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool(case):
    kernel, strides, pad_mode, pad = case
    f_max, _, f_max_grad, f_max_grad_grad, _ = POOL_FNS[case]
    pads = conv_pads(POOL_X.shape, kernel, _pair(strides), (1, 1), pad_mode, pad)
    out = f_max(POOL_X)
    np.testing.assert_array_equal(out, naive_pool(POOL_X, kernel, _pair(strides), pads, "max"))
    check_vjp(f_max, (POOL_X,))
    check_jvp(f_max, (POOL_X,))
    dy = normal(out.shape, 27)
    # MaxPoolGrad and MaxPoolGradGrad are adjoint linear maps (closed form) ...
    g = normal(POOL_X.shape, 28)
    np.testing.assert_allclose(np.sum(f_max_grad(dy) * g), np.sum(dy * f_max_grad_grad(g)),
                               rtol=1e-12)
    # ... MaxPoolGradGrad is MaxPool's tangent map ...
    np.testing.assert_allclose(f_max(POOL_X + 1e-3 * g) - out, 1e-3 * f_max_grad_grad(g),
                               rtol=1e-9, atol=1e-12)
    # ... and both have rules of their own
    check_vjp(f_max_grad, (dy,))
    check_jvp(f_max_grad, (dy,))
    check_vjp(f_max_grad_grad, (g,))
    check_jvp(f_max_grad_grad, (g,))


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_avg_pool(case):
    kernel, strides, pad_mode, pad = case
    _, f_avg, _, _, f_avg_grad = POOL_FNS[case]
    pads = conv_pads(POOL_X.shape, kernel, _pair(strides), (1, 1), pad_mode, pad)
    x = normal(POOL_X.shape, 29)
    out = f_avg(x)
    np.testing.assert_allclose(out, naive_pool(x, kernel, _pair(strides), pads, "avg"),
                               rtol=1e-12)
    check_vjp(f_avg, (x,))
    check_jvp(f_avg, (x,))
    dy = normal(out.shape, 30)
    np.testing.assert_allclose(np.sum(f_avg_grad(dy) * x), np.sum(dy * out), rtol=1e-12)
    check_vjp(f_avg_grad, (dy,))
    check_jvp(f_avg_grad, (dy,))


def test_pool_same_output_size():
    x = distinct((1, 1, 7, 6), 31)
    assert P.MaxPool(3, 2, "same")(x).shape == (1, 1, 4, 3)
    assert P.AvgPool(2, 3, "SAME")(x).shape == (1, 1, 3, 2)
    assert P.MaxPool((1, 1, 2, 2), (1, 1, 2, 2))(x).shape == (1, 1, 3, 3)


# -------------------------------------------------------------------- Dropout
class FixedDraws:
    """A stand-in generator returning the same uniforms for every draw of one shape."""

    def random(self, shape):
        return np.random.default_rng(123).random(shape)


dropout = P.Dropout(0.6)


def f_dropout(x):
    return dropout(x)


def f_dropout_out(x):
    out, mask = dropout(x)
    return out * 2.0


def test_dropout_eager_is_reproducible():
    x = normal((50, 40), 32)
    rt_nn.set_seed(0)
    out1, mask1 = dropout(x)
    rt_nn.set_seed(0)
    out2, mask2 = dropout(x)
    np.testing.assert_array_equal(out1, out2)
    np.testing.assert_array_equal(mask1, mask2)
    assert set(np.unique(mask1)) <= {0.0, 1.0}
    assert abs(mask1.mean() - 0.6) < 0.05
    np.testing.assert_allclose(out1, x * mask1 / 0.6, rtol=1e-15)
    out3, _ = dropout(x)
    assert not np.array_equal(out1, out3)


def test_dropout_gradient_uses_the_same_mask():
    x = normal((4, 5), 33)
    rt_nn.set_seed(7)
    _, mask = dropout(x)
    rt_nn.set_seed(7)
    g = ops.GradOperation()(f_dropout_out)(x)
    np.testing.assert_allclose(g, 2.0 * mask / 0.6, rtol=1e-15)


def test_dropout_rules(monkeypatch):
    monkeypatch.setattr(rt_nn, "_generator", FixedDraws())
    x = normal((3, 4), 34)
    check_vjp(f_dropout, (x,))
    check_jvp(f_dropout, (x,))


def test_dropout_keep_prob_validated():
    with pytest.raises(ValueError, match="keep_prob"):
        P.Dropout(0.0)
    assert P.Dropout.stateful


# ------------------------------------------------------------ normalisation
layer_norm = P.LayerNorm(1, 1, 1e-5)
layer_norm_last = P.LayerNorm(-1, -1, 1e-5)
layer_norm_2 = P.LayerNorm(2, 2)


def f_layer_norm(x, gamma, beta):
    return layer_norm(x, gamma, beta)


def f_layer_norm_last(x, gamma, beta):
    return layer_norm_last(x, gamma, beta)


def f_layer_norm_2(x, gamma, beta):
    return layer_norm_2(x, gamma, beta)


def f_layer_norm_y(x, gamma, beta):
    return layer_norm(x, gamma, beta)[0]


def layer_norm_ref(x, gamma, beta, begin, eps):
    axes = tuple(range(begin % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta, mean, var


@pytest.mark.parametrize("fn,begin,eps", [(f_layer_norm, 1, 1e-5), (f_layer_norm_last, -1, 1e-5),
                                          (f_layer_norm_2, 2, 1e-7), (f_layer_norm_y, 1, 1e-5)],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_layer_norm(fn, begin, eps):
    x = normal((2, 3, 4), 35)
    pshape = x.shape[begin % 3:]
    gamma, beta = 1 + 0.3 * normal(pshape, 36), normal(pshape, 37)
    got = fn(x, gamma, beta)
    ref = layer_norm_ref(x, gamma, beta, begin, eps)
    for a, b in zip(got if isinstance(got, tuple) else (got,), ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    check_vjp(fn, (x, gamma, beta))
    check_jvp(fn, (x, gamma, beta))


bn_train = P.BatchNorm(is_training=True, epsilon=1e-5, momentum=0.1)
bn_infer = P.BatchNorm(is_training=False, epsilon=1e-3)


def f_bn_train(x, scale, bias, mean, variance):
    return bn_train(x, scale, bias, mean, variance)


def f_bn_infer(x, scale, bias, mean, variance):
    return bn_infer(x, scale, bias, mean, variance)


def f_bn_train_y(x, scale, bias):
    return bn_train(x, scale, bias, BN_MEAN, BN_VAR)[0]


BN_MEAN = normal((3,), 38)
BN_VAR = np.random.default_rng(39).uniform(0.5, 2.0, 3)


def bn_inputs(xshape):
    return (normal(xshape, 40) * 2 + 1, 1 + 0.3 * normal((3,), 41), normal((3,), 42),
            BN_MEAN, BN_VAR)


@pytest.mark.parametrize("xshape", [(4, 3), (2, 3, 2, 3)], ids=str)
def test_batch_norm_training(xshape):
    x, scale, bias, mean, var = bn_inputs(xshape)
    y, bmean, bvar, new_mean, new_var = f_bn_train(x, scale, bias, mean, var)
    axes = tuple(a for a in range(len(xshape)) if a != 1)
    shape = [1] * len(xshape)
    shape[1] = 3
    n = x.size // 3
    np.testing.assert_allclose(bmean, x.mean(axis=axes), rtol=1e-12)
    np.testing.assert_allclose(bvar, x.var(axis=axes), rtol=1e-12)
    np.testing.assert_allclose(
        y, (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True)
                                                            + 1e-5)
        * scale.reshape(shape) + bias.reshape(shape), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(new_mean, 0.9 * mean + 0.1 * bmean, rtol=1e-12)
    np.testing.assert_allclose(new_var, 0.9 * var + 0.1 * bvar * n / (n - 1), rtol=1e-12)
    check_vjp(f_bn_train, (x, scale, bias, mean, var))
    check_jvp(f_bn_train, (x, scale, bias, mean, var))
    check_vjp(f_bn_train_y, (x, scale, bias))


@pytest.mark.parametrize("xshape", [(4, 3), (2, 3, 2, 2)], ids=str)
def test_batch_norm_inference(xshape):
    x, scale, bias, mean, var = bn_inputs(xshape)
    shape = [1] * len(xshape)
    shape[1] = 3
    y = f_bn_infer(x, scale, bias, mean, var)[0]
    np.testing.assert_allclose(y, (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3)
                               * scale.reshape(shape) + bias.reshape(shape), rtol=1e-12)
    check_vjp(f_bn_infer, (x, scale, bias, mean, var))
    check_jvp(f_bn_infer, (x, scale, bias, mean, var))


def test_batch_norm_training_needs_two_values_per_channel():
    with pytest.raises(ValueError, match="more than one value"):
        bn_train(normal((1, 3), 0), np.ones(3), np.zeros(3), np.zeros(3), np.ones(3))
