"""nn primitives: eager results against NumPy references, bprop and JVP rules
against float64 central finite differences, functional forms, SciPy mappings
and Tensor methods inside differentiated functions, and dtype preservation.

Inputs stay away from the points where a primitive is not differentiable
(0 for ReLU, 0 and 6 for ReLU6, ties for MaxPool).
"""
import math

import numpy as np
import pytest

from s2sad import ops
from s2sad.runtime import rt_math, rt_nn
from s2sad.ops import operations as P

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


def f_sce_backprop(logits, labels):
    return sce(logits, labels)[1]


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
    monkeypatch.setattr(rt_math, "_special", None)
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
    check_vjp(f_sce_loss, (logits, y))       # the backprop output unread: None to the rule
    check_vjp(f_sce_backprop, (logits, y))   # the loss unread
    check_jvp(f_sce, (logits, y))


def test_softmax_cross_entropy_gradient_of_the_loss_alone_skips_the_backprop_terms():
    """A loss reads only the first output: its rule gets None for the second and
    writes no terms of it (they were products with an array of zeros)."""
    import s2sad
    logits, labels = normal((3, 4), 14), probabilities((3, 4), 15)

    def loss(z):
        return f_sce_loss(z, labels).sum()
    src = s2sad.get_source(s2sad.grad(loss), logits)
    assert "zeros_like" not in src
    np.testing.assert_allclose(s2sad.grad(loss)(logits), sce(logits, labels)[1], rtol=1e-12)


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_sigmoid_is_accurate_on_both_forms_and_warns_of_nothing(dtype):
    """The fast form (every x above exp's overflow point) and the overflow-free one
    (some x below it) against the exact value, relatively, in the far tails too."""
    import warnings
    info = np.finfo(dtype)
    lo = -float(np.log(info.max)) * 1.15        # under the overflow point: the safe form
    for xs in (np.linspace(-0.9 * -lo / 1.15, 60, 4001), np.linspace(lo, 60, 4001)):
        x = xs.astype(dtype)
        exact = 1 / (1 + np.exp(-x.astype(np.longdouble)))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = rt_nn.nn_sigmoid(x)
        assert got.dtype == dtype
        normal = exact >= info.tiny             # subnormal results have fewer bits
        # exp(-L) turns L's rounding into a relative error |x| times larger
        bound = 8 * float(info.eps) * np.maximum(1, np.abs(x.astype(np.longdouble)))
        error = np.abs(got.astype(np.longdouble) - exact) / exact
        assert np.all(error[normal] <= bound[normal])
    assert np.isnan(rt_nn.nn_sigmoid(np.array([0.0, np.nan], dtype))[1])
    assert rt_nn.nn_sigmoid(np.zeros(0, dtype)).shape == (0,)
    assert type(rt_nn.nn_sigmoid(dtype(2.0))) is dtype
