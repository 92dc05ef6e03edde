"""nn primitives: eager results against NumPy references, bprop and JVP rules
against float64 central finite differences, functional forms, SciPy mappings
and Tensor methods inside differentiated functions, and dtype preservation.

Inputs stay away from the points where a primitive is not differentiable
(0 for ReLU, 0 and 6 for ReLU6, ties for MaxPool).
"""
import inspect
import math

import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.backend import rt_nn
from s2sad.ops import operations as P
from s2sad.ops.operations import nn_ops
from s2sad.ops._grad import bprop_getters, jvp_getters
from s2sad.ops.primitive import Primitive

from gradcheck import check_jvp, check_vjp


# ------------------------------------------------------------------- inputs
def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def away_from(shape, seed, points=(0.0,), gap=0.1):
    """Standard normals (scaled by 3) at least ``gap`` away from every kink in ``points``."""
    x = 3 * normal(shape, seed)
    for p in points:
        close = np.abs(x - p) < gap
        x = np.where(close, p + np.where(x >= p, gap, -gap) * 2, x)
    return x


def distinct(shape, seed):
    """Values 0.1 apart in random order: no ties, and a 1e-6 step never reorders them."""
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.1 - 0.05 * n).reshape(shape)


def probabilities(shape, seed):
    p = np.random.default_rng(seed).uniform(0.1, 1.0, shape)
    return p / p.sum(axis=-1, keepdims=True)


LABELS = np.array([2, 0, 3])


# --------------------------------------------------------------- primitives
relu = P.ReLU()
relu6 = P.ReLU6()
leaky = P.LeakyReLU(0.3)
elu = P.ELU(1.5)
gelu_erf = P.GeLU("none")
gelu_tanh = P.GeLU("tanh")
gelu_grad_erf = P.GeLUGrad("none")
gelu_grad_tanh = P.GeLUGrad("tanh")
sigmoid = P.Sigmoid()
softplus = P.Softplus()
softmax = P.Softmax()
softmax0 = P.Softmax(0)
softmax_pair = P.Softmax((0, 2))
log_softmax = P.LogSoftmax()
log_softmax0 = P.LogSoftmax(0)
sce = P.SoftmaxCrossEntropyWithLogits()
sparse_sce = P.SparseSoftmaxCrossEntropyWithLogits()
sparse_sce_grad = P.SparseSoftmaxCrossEntropyWithLogits(is_grad=True)
bias_add = P.BiasAdd()
bias_add_nhwc = P.BiasAdd("NHWC")


def f_relu(x):
    return relu(x)


def f_relu6(x):
    return relu6(x)


def f_leaky(x):
    return leaky(x)


def f_elu(x):
    return elu(x)


def f_gelu_erf(x):
    return gelu_erf(x)


def f_gelu_tanh(x):
    return gelu_tanh(x)


def f_gelu_grad_erf(dy, x):
    return gelu_grad_erf(dy, x)


def f_gelu_grad_tanh(dy, x):
    return gelu_grad_tanh(dy, x)


def f_sigmoid(x):
    return sigmoid(x)


def f_softplus(x):
    return softplus(x)


def f_softmax(x):
    return softmax(x)


def f_softmax0(x):
    return softmax0(x)


def f_softmax_pair(x):
    return softmax_pair(x)


def f_log_softmax(x):
    return log_softmax(x)


def f_log_softmax0(x):
    return log_softmax0(x)


def f_sce(logits, labels):
    return sce(logits, labels)


def f_sce_loss(logits, labels):
    return sce(logits, labels)[0]


def f_sparse_sce(logits):
    return sparse_sce(logits, LABELS)


def f_sparse_sce_grad(logits):
    return sparse_sce_grad(logits, LABELS)


def f_bias_add(x, b):
    return bias_add(x, b)


def f_bias_add_nhwc(x, b):
    return bias_add_nhwc(x, b)


def gelu_erf_ref(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def gelu_tanh_ref(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# name -> (function, input makers, NumPy reference or None)
ELEMENTWISE = {
    "ReLU": (f_relu, [lambda s: away_from(s, 1)], lambda x: np.maximum(x, 0)),
    "ReLU6": (f_relu6, [lambda s: away_from(s, 2, (0.0, 6.0))], lambda x: np.clip(x, 0, 6)),
    "LeakyReLU": (f_leaky, [lambda s: away_from(s, 3)], lambda x: np.where(x > 0, x, 0.3 * x)),
    "ELU": (f_elu, [lambda s: away_from(s, 4)],
            lambda x: np.where(x > 0, x, 1.5 * (np.exp(x) - 1))),
    "GeLU-erf": (f_gelu_erf, [lambda s: normal(s, 5) * 2], gelu_erf_ref),
    "GeLU-tanh": (f_gelu_tanh, [lambda s: normal(s, 6) * 2], gelu_tanh_ref),
    "Sigmoid": (f_sigmoid, [lambda s: normal(s, 7) * 3], lambda x: 1 / (1 + np.exp(-x))),
    "Softplus": (f_softplus, [lambda s: normal(s, 8) * 3], lambda x: np.log1p(np.exp(x))),
}

NOT_ELEMENTWISE = {
    "Softmax": (f_softmax, [(3, 4)], lambda x: softmax_ref(x, -1)),
    "Softmax-axis0": (f_softmax0, [(3, 4)], lambda x: softmax_ref(x, 0)),
    "Softmax-axes(0,2)": (f_softmax_pair, [(2, 3, 2)], lambda x: softmax_ref(x, (0, 2))),
    "LogSoftmax": (f_log_softmax, [(3, 4)], lambda x: np.log(softmax_ref(x, -1))),
    "LogSoftmax-axis0": (f_log_softmax0, [(3, 4)], lambda x: np.log(softmax_ref(x, 0))),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@pytest.mark.parametrize("shape", [(2, 3), (4,)], ids=str)
def test_elementwise_eager_vjp_jvp(name, shape):
    fn, makers, ref = ELEMENTWISE[name]
    x = makers[0](shape)
    np.testing.assert_allclose(fn(x), ref(x), rtol=1e-12, atol=1e-14)
    check_vjp(fn, (x,))
    check_jvp(fn, (x,))


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_numpy_scalar(name):
    fn, makers, ref = ELEMENTWISE[name]
    x = np.float64(makers[0](()))
    (g,) = check_vjp(fn, (x,))
    assert np.shape(g) == ()


@pytest.mark.parametrize("name", sorted(NOT_ELEMENTWISE))
def test_softmax_family(name):
    fn, shapes, ref = NOT_ELEMENTWISE[name]
    x = normal(shapes[0], 9)
    np.testing.assert_allclose(fn(x), ref(x), rtol=1e-12, atol=1e-14)
    check_vjp(fn, (x,))
    check_jvp(fn, (x,))


def test_softmax_and_sigmoid_do_not_overflow():
    x = np.array([[-1000.0, 0.0, 1000.0]])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        np.testing.assert_allclose(softmax(x), [[0.0, 0.0, 1.0]])
        np.testing.assert_allclose(sigmoid(x), [[0.0, 0.5, 1.0]])
        np.testing.assert_allclose(softplus(x), [[0.0, math.log(2), 1000.0]])
        np.testing.assert_allclose(log_softmax(x), [[-2000.0, -1000.0, 0.0]])


@pytest.mark.parametrize("fn", [f_gelu_grad_erf, f_gelu_grad_tanh], ids=lambda f: f.__name__)
def test_gelu_grad_primitive(fn):
    dy, x = normal((2, 3), 10), normal((2, 3), 11) * 2
    ref = gelu_erf_ref if fn is f_gelu_grad_erf else gelu_tanh_ref
    eps = 1e-6
    np.testing.assert_allclose(fn(dy, x), dy * (ref(x + eps) - ref(x - eps)) / (2 * eps),
                               rtol=1e-7, atol=1e-8)
    check_vjp(fn, (dy, x))
    check_jvp(fn, (dy, x))


def test_erf_fallback_without_scipy(monkeypatch):
    x = np.linspace(-3, 3, 13, dtype=np.float32)
    expected = np.array([math.erf(v) for v in x.astype(np.float64)])
    monkeypatch.setattr(rt_nn, "_scipy_erf", None)
    got = rt_nn.nn_erf(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert isinstance(rt_nn.nn_erf(np.float64(0.5)), np.float64)


# ------------------------------------------------------------------- losses
def test_softmax_cross_entropy_eager():
    logits, labels = normal((3, 4), 12), probabilities((3, 4), 13)
    loss, backprop = sce(logits, labels)
    np.testing.assert_allclose(loss, -(labels * np.log(softmax_ref(logits, -1))).sum(-1),
                               rtol=1e-12)
    np.testing.assert_allclose(backprop, softmax_ref(logits, -1) - labels, rtol=1e-12,
                               atol=1e-15)


@pytest.mark.parametrize("labels", ["probabilities", "unnormalised"])
def test_softmax_cross_entropy_rules(labels):
    logits = normal((3, 4), 14)
    y = probabilities((3, 4), 15) if labels == "probabilities" else \
        np.random.default_rng(15).uniform(0.1, 1.0, (3, 4))
    check_vjp(f_sce, (logits, y))
    check_vjp(f_sce_loss, (logits, y))
    check_jvp(f_sce, (logits, y))


def test_softmax_cross_entropy_logits_gradient_is_dloss_times_backprop():
    logits, labels = normal((3, 4), 16), probabilities((3, 4), 17)
    dloss = normal((3,), 18)
    g = ops.GradOperation(sens_param=True)(f_sce_loss)(logits, labels, dloss)
    np.testing.assert_allclose(g, dloss[:, None] * sce(logits, labels)[1], rtol=1e-12)


def test_sparse_softmax_cross_entropy():
    logits = normal((3, 4), 19)
    logp = np.log(softmax_ref(logits, -1))
    np.testing.assert_allclose(f_sparse_sce(logits), -logp[np.arange(3), LABELS].mean(),
                               rtol=1e-12)
    onehot = np.eye(4)[LABELS]
    np.testing.assert_allclose(f_sparse_sce_grad(logits),
                               (softmax_ref(logits, -1) - onehot) / 3, rtol=1e-12, atol=1e-15)
    for fn in (f_sparse_sce, f_sparse_sce_grad):
        check_vjp(fn, (logits,))
        check_jvp(fn, (logits,))


def f_sparse_sce_with_labels(logits, labels):
    return sparse_sce(logits, labels)


def test_sparse_softmax_cross_entropy_labels_get_no_gradient():
    logits = normal((3, 4), 20)
    g_logits, g_labels = ops.GradOperation(get_all=True)(f_sparse_sce_with_labels)(
        logits, LABELS)
    np.testing.assert_array_equal(g_labels, np.zeros(3))
    np.testing.assert_allclose(g_logits, f_sparse_sce_grad(logits), rtol=1e-12)


# --------------------------------------------------------------------- BiasAdd
@pytest.mark.parametrize("fn,xshape,axis", [(f_bias_add, (2, 3), 1),
                                            (f_bias_add, (2, 3, 4, 5), 1),
                                            (f_bias_add, (2, 3, 4), 1),
                                            (f_bias_add_nhwc, (2, 4, 5, 3), 3)],
                         ids=["2d", "nchw", "ncl", "nhwc"])
def test_bias_add(fn, xshape, axis):
    x, b = normal(xshape, 21), normal((3,), 22)
    shape = [1] * len(xshape)
    shape[axis] = 3
    np.testing.assert_allclose(fn(x, b), x + b.reshape(shape), rtol=1e-15)
    check_vjp(fn, (x, b))
    check_jvp(fn, (x, b))


def test_norm_axes():
    x = normal((2, 3, 4, 5), 0)
    assert P.NormAxes(1)(x) == (1, 2, 3)
    assert P.NormAxes(-2)(x) == (2, 3)
    assert P.NormAxes(0, 1)(x) == (0, 2, 3)
    assert P.NormAxes(0, -1)(x) == (0, 1, 2)
    assert P.NormAxes(0, 1)(x[0, 0]) == (0,)
    assert not P.NormAxes.differentiable


def test_bias_add_rejects_bad_bias():
    with pytest.raises(ValueError, match="bias"):
        bias_add(normal((2, 3), 0), normal((4,), 1))


# ----------------------------------------------------------------- convolution
def same_pads(size, k, s, d):
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def naive_conv(x, w, stride, pads, dilation):
    """Direct loops over every output element."""
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    n, c, h, wd = xp.shape
    o, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    oh = (h - (kh - 1) * dh - 1) // sh + 1
    ow = (wd - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    for b in range(n):
        for f in range(o):
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0
                    for ch in range(c):
                        for p in range(kh):
                            for q in range(kw):
                                acc += xp[b, ch, i * sh + p * dh, j * sw + q * dw] * w[f, ch, p, q]
                    out[b, f, i, j] = acc
    return out


def conv_pads(xshape, kernel, stride, dilation, pad_mode, pad):
    if pad_mode == "same":
        return (same_pads(xshape[2], kernel[0], stride[0], dilation[0])
                + same_pads(xshape[3], kernel[1], stride[1], dilation[1]))
    if pad_mode == "pad":
        return pad if isinstance(pad, tuple) else (pad,) * 4
    return (0, 0, 0, 0)


# (kernel, stride, pad_mode, pad, dilation)
CONV_CASES = [
    ((3, 3), 1, "valid", 0, 1),
    ((3, 3), 2, "valid", 0, 1),
    ((3, 3), 1, "same", 0, 1),
    ((3, 3), 2, "same", 0, 1),
    ((3, 3), 1, "pad", (1, 0, 2, 1), 1),
    ((3, 3), 2, "pad", 1, 2),
    ((3, 2), (2, 1), "same", 0, 1),
]


def make_conv(kernel, stride, pad_mode, pad, dilation):
    conv = P.Conv2D(3, kernel, pad_mode=pad_mode, pad=pad, stride=stride, dilation=dilation)
    bi = P.Conv2DBackpropInput(3, kernel, pad_mode=pad_mode, pad=pad, stride=stride,
                               dilation=dilation)
    bf = P.Conv2DBackpropFilter(3, kernel, pad_mode=pad_mode, pad=pad, stride=stride,
                                dilation=dilation)

    def f_conv(x, w):
        return conv(x, w)

    def f_input_grad(dy, w):
        return bi(dy, w, (2, 2, 5, 5))

    def f_filter_grad(dy, x):
        return bf(dy, x, (3, 2) + kernel)
    return conv, f_conv, f_input_grad, f_filter_grad


CONV_FNS = {case: make_conv(*case) for case in CONV_CASES}


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv2d(case):
    kernel, stride, pad_mode, pad, dilation = case
    conv, f_conv, f_input_grad, f_filter_grad = CONV_FNS[case]
    x, w = normal((2, 2, 5, 5), 23), normal((3, 2) + kernel, 24)
    out = f_conv(x, w)
    pads = conv_pads(x.shape, kernel, _pair(stride), _pair(dilation), pad_mode, pad)
    np.testing.assert_allclose(out, naive_conv(x, w, _pair(stride), pads, _pair(dilation)),
                               rtol=1e-12, atol=1e-12)
    if pad_mode == "same":
        assert out.shape[2:] == (-(-5 // _pair(stride)[0]), -(-5 // _pair(stride)[1]))
    check_vjp(f_conv, (x, w))
    check_jvp(f_conv, (x, w))
    # both gradient primitives are adjoints of the convolution ...
    dy = normal(out.shape, 25)
    dx = f_input_grad(dy, w)
    dw = f_filter_grad(dy, x)
    inner = np.sum(out * dy)
    np.testing.assert_allclose(np.sum(x * dx), inner, rtol=1e-12)
    np.testing.assert_allclose(np.sum(w * dw), inner, rtol=1e-12)
    # ... and have rules of their own
    check_vjp(f_input_grad, (dy, w))
    check_jvp(f_input_grad, (dy, w))
    check_vjp(f_filter_grad, (dy, x))
    check_jvp(f_filter_grad, (dy, x))


def test_conv2d_rejects_unsupported_configurations():
    with pytest.raises(NotImplementedError, match="group"):
        P.Conv2D(4, 3, group=2)
    with pytest.raises(NotImplementedError, match="NCHW"):
        P.Conv2D(4, 3, data_format="NHWC")
    with pytest.raises(ValueError, match="pad"):
        P.Conv2D(4, 3, pad_mode="valid", pad=1)
    with pytest.raises(ValueError, match="kernel_size"):
        P.Conv2D(3, 2)(normal((1, 2, 5, 5), 0), normal((3, 2, 3, 3), 1))


def test_conv2d_attributes_normalised():
    conv = P.Conv2D(8, 3, stride=(1, 1, 2, 2), pad_mode="PAD", pad=(1, 2))
    assert conv.kernel_size == (3, 3) and conv.stride == (2, 2)
    assert conv.pad == (1, 1, 2, 2) and conv.pad_mode == "pad"
    assert conv == P.Conv2D(8, (3, 3), stride=2, pad_mode="pad", pad=(1, 1, 2, 2))


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


@pytest.mark.skipif(sp is None, reason="SciPy is not installed")
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
