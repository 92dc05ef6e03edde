"""SiLU, Identity, Dropout(p=...), AdaptiveAvgPool2d, Conv1d, GroupNorm, Softmax/LogSoftmax
with an axis and Flatten(start_dim, end_dim).

Forward values are compared with NumPy references written from the layers'
documented formulas (explicit loops for the convolution and the pooling
bins); gradients of inputs and Parameters with float64 central finite
differences of the layer run eagerly.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, ParameterTuple

from gradcheck import numeric_grad, random_like_output, weighted_sum

RNG = np.random.default_rng(11)


def value(t):
    return np.asarray(t.asnumpy() if isinstance(t, Tensor) else t, dtype=np.float64)


def param_numeric_grad(scalar, param, eps=1e-6):
    base = param._data.copy()
    grad = np.zeros(base.shape)
    for k in range(base.size):
        for sign in (1, -1):
            param._data.reshape(-1)[k] = base.reshape(-1)[k] + sign * eps
            grad.reshape(-1)[k] += sign * scalar() / (2 * eps)
        param._data.reshape(-1)[k] = base.reshape(-1)[k]
    return grad


def check_grads(net, *inputs, rtol=1e-6, atol=1e-8):
    """Input and Parameter gradients of ``net`` (any output, a random sens) against finite
    differences; returns the trainable Parameters."""
    out = net(*inputs)
    sens = random_like_output(out, np.random.default_rng(0))
    params = ParameterTuple(net.trainable_params())
    input_grads, param_grads = ops.GradOperation(get_all=True, get_by_list=True,
                                                 sens_param=True)(net, params)(*inputs, sens)

    def scalar(*args):
        return weighted_sum(net(*args), sens)

    for i in range(len(inputs)):
        np.testing.assert_allclose(value(input_grads[i]), numeric_grad(scalar, list(inputs), i),
                                   rtol=rtol, atol=atol, err_msg="input %d" % i)
    for p, g in zip(params, param_grads):
        np.testing.assert_allclose(value(g), param_numeric_grad(lambda: scalar(*inputs), p),
                                   rtol=rtol, atol=atol, err_msg="parameter %s" % p.name)
    return params


def to_float64(cell):
    for p in cell.get_parameters():
        p.set_data(p._data.astype(np.float64))
    return cell


# ---------------------------------------------------------------- activations
def test_silu_and_identity():
    x = RNG.standard_normal((3, 4)) * 3
    np.testing.assert_allclose(value(nn.SiLU()(Tensor(x))), x / (1 + np.exp(-x)), rtol=1e-12)
    np.testing.assert_allclose(value(ops.silu(Tensor(x))), x / (1 + np.exp(-x)), rtol=1e-12)
    assert isinstance(nn.get_activation("silu"), nn.SiLU)
    np.testing.assert_array_equal(value(nn.Identity()(Tensor(x))), x)
    check_grads(nn.SiLU(), Tensor(x))
    check_grads(nn.Identity(), Tensor(x))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_and_log_softmax_take_an_axis(axis):
    x = RNG.standard_normal((2, 3, 4))
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    soft = e / e.sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(value(nn.Softmax(axis=axis)(Tensor(x))), soft, rtol=1e-12)
    np.testing.assert_allclose(value(nn.LogSoftmax(axis)(Tensor(x))), np.log(soft), rtol=1e-12)
    check_grads(nn.LogSoftmax(axis), Tensor(x))


def test_flatten_start_and_end_dim():
    x = RNG.standard_normal((2, 3, 4, 5))
    assert nn.Flatten()(Tensor(x)).shape == (2, 60)
    assert nn.Flatten(start_dim=1, end_dim=2)(Tensor(x)).shape == (2, 12, 5)
    np.testing.assert_array_equal(value(nn.Flatten(0, -1)(Tensor(x))), x.reshape(-1))


def test_dropout_p_or_keep_prob_but_not_both():
    assert nn.Dropout(p=0.2).keep_prob == pytest.approx(0.8)
    assert nn.Dropout(keep_prob=0.7).p == pytest.approx(0.3)
    with pytest.raises(ValueError, match="'keep_prob' and 'p' cannot both be given"):
        nn.Dropout(keep_prob=0.8, p=0.2)
    with pytest.raises(ValueError, match="'p' must be in"):
        nn.Dropout(p=1.0)


# ---------------------------------------------------------- AdaptiveAvgPool2d
def adaptive_avg_pool_reference(x, out_h, out_w):
    """Bin i of a length-L axis is [floor(i * L / out), ceil((i + 1) * L / out))."""
    h, w = x.shape[-2:]
    out_h = h if out_h is None else out_h
    out_w = w if out_w is None else out_w
    out = np.zeros(x.shape[:-2] + (out_h, out_w))
    for i in range(out_h):
        r0, r1 = (i * h) // out_h, -((-(i + 1) * h) // out_h)
        for j in range(out_w):
            c0, c1 = (j * w) // out_w, -((-(j + 1) * w) // out_w)
            out[..., i, j] = x[..., r0:r1, c0:c1].mean(axis=(-2, -1))
    return out


@pytest.mark.parametrize("output_size,shape", [
    ((3, 2), (2, 3, 6, 4)),      # divisible: an AvgPool with kernel = stride = (2, 2)
    (1, (2, 3, 5, 7)),           # global average
    ((3, 4), (2, 2, 7, 5)),      # neither axis divisible: overlapping bins
    ((None, 2), (3, 5, 6)),      # [C, H, W] input, None keeps H
])
def test_adaptive_avg_pool2d_values_and_gradients(output_size, shape):
    x = RNG.standard_normal(shape)
    pool = nn.AdaptiveAvgPool2d(output_size)
    pair = output_size if isinstance(output_size, tuple) else (output_size, output_size)
    expected = adaptive_avg_pool_reference(x, *pair)
    np.testing.assert_allclose(value(pool(Tensor(x))), expected, rtol=1e-12, atol=1e-14)
    check_grads(pool, Tensor(x))


def test_adaptive_avg_pool2d_divisible_case_equals_avg_pool2d():
    x = Tensor(RNG.standard_normal((2, 3, 6, 4)).astype(np.float32))
    np.testing.assert_allclose(value(nn.AdaptiveAvgPool2d((3, 2))(x)),
                               value(nn.AvgPool2d(kernel_size=2, stride=2)(x)), rtol=1e-6)


def test_adaptive_avg_pool2d_bad_output_size():
    for bad in (0, (2,), (2, 0), "2", (2.0, 2)):
        with pytest.raises(ValueError, match="'output_size' must be"):
            nn.AdaptiveAvgPool2d(bad)


# --------------------------------------------------------------------- Conv1d
def conv1d_reference(x, w, b, stride, pad_left, pad_right, dilation, group):
    n, c_in, length = x.shape
    c_out, c_per_group, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad_left, pad_right)))
    l_out = (xp.shape[-1] - dilation * (k - 1) - 1) // stride + 1
    out_per_group = c_out // group
    out = np.zeros((n, c_out, l_out))
    for o in range(c_out):
        g = o // out_per_group
        for t in range(l_out):
            window = xp[:, g * c_per_group:(g + 1) * c_per_group,
                        t * stride:t * stride + dilation * (k - 1) + 1:dilation]
            out[:, o, t] = (window * w[o]).sum(axis=(1, 2))
    return out if b is None else out + b[:, None]


@pytest.mark.parametrize("kwargs,pads", [
    (dict(kernel_size=3), (1, 1)),                                          # 'same', stride 1
    # 'same': ceil(9 / 2) = 5 outputs need 3 padded zeros, the odd one at the end
    (dict(kernel_size=4, stride=2), (1, 2)),
    (dict(kernel_size=3, pad_mode="valid", dilation=2, has_bias=True), (0, 0)),
    (dict(kernel_size=3, pad_mode="pad", padding=2, stride=2, has_bias=True), (2, 2)),
])
def test_conv1d_values_and_gradients(kwargs, pads):
    x = RNG.standard_normal((2, 4, 9))
    s2sad.set_seed(5)
    conv = to_float64(nn.Conv1d(4, 6, weight_init="normal", bias_init="normal", **kwargs))
    assert conv.weight.shape == (6, 4, kwargs["kernel_size"])
    b = conv.bias.asnumpy() if kwargs.get("has_bias") else None
    # weights ~ N(0, 0.01^2): scale them up so the comparison means something
    conv.weight.set_data(conv.weight._data * 100)
    expected = conv1d_reference(x, conv.weight.asnumpy(), b, kwargs.get("stride", 1), *pads,
                                kwargs.get("dilation", 1), 1)
    got = conv(Tensor(x))
    assert got.shape == expected.shape
    np.testing.assert_allclose(value(got), expected, rtol=1e-10, atol=1e-12)
    check_grads(conv, Tensor(x))


def test_conv1d_bad_arguments():
    with pytest.raises(ValueError, match="'padding' must be 0 when 'pad_mode' is 'same'"):
        nn.Conv1d(2, 2, 3, padding=1)
    with pytest.raises(ValueError, match="'pad_mode' must be"):
        nn.Conv1d(2, 2, 3, pad_mode="full")
    with pytest.raises(ValueError, match="'kernel_size' must be an int"):
        nn.Conv1d(2, 2, (3,))
    with pytest.raises(ValueError, match="divisible by group"):
        nn.Conv1d(3, 2, 3, group=2)
    with pytest.raises(NotImplementedError, match="For 'Conv1d', group=2"):
        nn.Conv1d(4, 2, 3, group=2)


# ------------------------------------------------------------ Conv2dTranspose
def conv_transpose_reference(x, w, b, stride, dilation, pads, out_hw):
    """out[n, o, i*s + a*d - top, j*s + c*d - left] += x[n, ci, i, j] * w[ci, o, a, c]."""
    n, c_in, h, wd = x.shape
    _, c_out, kh, kw = w.shape
    top, left = pads
    out = np.zeros((n, c_out) + tuple(out_hw))
    for i in range(h):
        for j in range(wd):
            for a in range(kh):
                for c in range(kw):
                    r = i * stride + a * dilation - top
                    q = j * stride + c * dilation - left
                    if 0 <= r < out_hw[0] and 0 <= q < out_hw[1]:
                        out[:, :, r, q] += x[:, :, i, j] @ w[:, :, a, c]
    return out if b is None else out + b[:, None, None]


@pytest.mark.parametrize("kwargs,pads,out_hw", [
    # 'same': output H * stride; Conv2d 'same' over 10 rows pads 1 row: top 0, bottom 1
    (dict(stride=2), (0, 0), (10, 8)),
    (dict(stride=1), (1, 1), (5, 4)),
    (dict(pad_mode="valid", stride=2, dilation=2), (0, 0), (13, 11)),
    (dict(pad_mode="pad", padding=1, stride=2, output_padding=1, has_bias=True), (1, 1),
     (10, 8)),
])
def test_conv2d_transpose_values_and_gradients(kwargs, pads, out_hw):
    x = RNG.standard_normal((2, 3, 5, 4))
    s2sad.set_seed(4)
    conv = to_float64(nn.Conv2dTranspose(3, 2, 3, weight_init="he_uniform", bias_init="normal",
                                         **kwargs))
    assert conv.weight.shape == (3, 2, 3, 3)
    b = conv.bias.asnumpy() if kwargs.get("has_bias") else None
    expected = conv_transpose_reference(x, conv.weight.asnumpy(), b, kwargs.get("stride", 1),
                                        kwargs.get("dilation", 1), pads, out_hw)
    got = conv(Tensor(x))
    assert got.shape == expected.shape
    np.testing.assert_allclose(value(got), expected, rtol=1e-10, atol=1e-12)
    check_grads(conv, Tensor(x))


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    # <conv2d(y), x> == <y, conv2d_transpose(x)> for the same weight and geometry
    y = RNG.standard_normal((2, 2, 10, 8))
    x = RNG.standard_normal((2, 3, 5, 4))
    conv = to_float64(nn.Conv2d(2, 3, 3, stride=2, pad_mode="same", weight_init="normal"))
    up = to_float64(nn.Conv2dTranspose(3, 2, 3, stride=2, pad_mode="same"))
    up.weight.set_data(conv.weight._data)
    lhs = np.sum(value(conv(Tensor(y))) * x)
    rhs = np.sum(y * value(up(Tensor(x))))
    assert value(conv(Tensor(y))).shape == x.shape
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)


def test_conv2d_transpose_bad_output_padding():
    with pytest.raises(ValueError, match="'output_padding' must be 0 unless"):
        nn.Conv2dTranspose(2, 2, 3, output_padding=1)
    with pytest.raises(ValueError, match="'output_padding' must be smaller"):
        nn.Conv2dTranspose(2, 2, 3, pad_mode="pad", output_padding=1)


# ------------------------------------------------------------------ GroupNorm
def group_norm_reference(x, groups, gamma, beta, eps):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    normed = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return normed.reshape(x.shape) * gamma.reshape(shape) + beta.reshape(shape)


@pytest.mark.parametrize("shape", [(2, 6, 3, 4), (3, 6, 5), (4, 6)])
def test_group_norm_values_and_gradients(shape):
    x = RNG.standard_normal(shape) * 2 + 1
    norm = to_float64(nn.GroupNorm(3, 6, eps=1e-3))
    norm.gamma.set_data(RNG.standard_normal(6))
    norm.beta.set_data(RNG.standard_normal(6))
    expected = group_norm_reference(x, 3, norm.gamma.asnumpy(), norm.beta.asnumpy(), 1e-3)
    np.testing.assert_allclose(value(norm(Tensor(x))), expected, rtol=1e-10, atol=1e-12)
    params = check_grads(norm, Tensor(x), rtol=1e-5, atol=1e-7)
    assert [p.name for p in params] == ["gamma", "beta"]


def test_group_norm_affine_false_and_errors():
    norm = nn.GroupNorm(2, 4, affine=False)
    assert not norm.trainable_params()
    with pytest.raises(ValueError, match="'num_channels' must be divided by 'num_groups'"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match="'num_groups' must be a positive int"):
        nn.GroupNorm(0, 4)


# -------------------------------------------------- all of them in one network
class SmallNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = to_float64(nn.Conv1d(2, 4, 3, has_bias=True, weight_init="he_uniform"))
        self.norm = to_float64(nn.GroupNorm(2, 4))
        self.act = nn.SiLU()
        self.pool = nn.AdaptiveAvgPool2d((None, 3))
        self.keep = nn.Identity()
        self.drop = nn.Dropout(p=0.5)      # evaluation mode: the identity
        self.flatten = nn.Flatten()
        self.dense = to_float64(nn.Dense(4 * 3, 3, weight_init="he_uniform"))
        self.loss = nn.CrossEntropyLoss()

    def construct(self, x, labels):
        y = self.act(self.norm(self.conv(x)))
        y = ops.squeeze(self.pool(ops.expand_dims(y, 2)), 2)
        y = self.drop(self.keep(y))
        return self.loss(self.dense(self.flatten(y)), labels)


def test_network_of_new_layers_differentiated_with_get_by_list():
    s2sad.set_seed(2)
    net = SmallNet()
    x = Tensor(RNG.standard_normal((5, 2, 7)))
    labels = Tensor(np.array([0, 2, 1, 1, 0], np.int32))
    params = ParameterTuple(net.trainable_params())
    grads = ops.GradOperation(get_by_list=True)(net, params)(x, labels)
    assert len(grads) == len(params) == 6
    for p, g in zip(params, grads):
        expected = param_numeric_grad(lambda: float(value(net(x, labels))), p)
        np.testing.assert_allclose(value(g), expected, rtol=1e-5, atol=1e-8,
                                   err_msg="parameter %s" % p.name)


# -------------------------------------------------------------- Assign, Print
class AssignNet(nn.Cell):
    def __init__(self, functional=False):
        super().__init__()
        self.w = s2sad.Parameter(Tensor(np.ones((2, 3), np.float32)), name="w")
        self.assign = ops.assign if functional else ops.Assign()

    def construct(self, x):
        self.assign(self.w, x)
        return ops.sum(self.w * x)


def test_assign_updates_a_parameter_eagerly():
    net = AssignNet()
    out = net(Tensor(np.full((2, 3), 2.0)))
    assert float(value(out)) == pytest.approx(24.0)       # the new value is read after
    assert net.w.dtype == s2sad.float32
    np.testing.assert_array_equal(net.w.asnumpy(), np.full((2, 3), 2.0))
    assert ops.assign(net.w, 5) is net.w                   # a number is broadcast
    np.testing.assert_array_equal(net.w.asnumpy(), np.full((2, 3), 5.0))
    with pytest.raises(TypeError, match="'variable' must be a Parameter"):
        ops.Assign()(Tensor(np.ones(3)), 1.0)
    with pytest.raises(ValueError, match="cannot be written into 'variable' of shape"):
        ops.Assign()(net.w, np.ones(4))


@pytest.mark.parametrize("functional", [False, True])
def test_assign_in_a_differentiated_function_writes_the_parameter(functional):
    net = AssignNet(functional)
    x = np.arange(6.0).reshape(2, 3)
    g = ops.GradOperation()(net)(Tensor(x))         # sum(x * x): the new w is x
    np.testing.assert_allclose(value(g), 2 * x)
    np.testing.assert_array_equal(net.w.asnumpy(), x.astype(np.float32))
    assert net.w.dtype == s2sad.float32


def test_print_runs_on_every_call_of_compiled_code(capsys):
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.print = ops.Print()

        def construct(self, x):
            self.print("x:", x)
            ops.print_("twice:", x * 2)
            return ops.sum(x * x)

    grad = ops.GradOperation()(Net())
    for k in (1.0, 3.0):
        np.testing.assert_allclose(value(grad(Tensor(np.full(2, k)))), [2 * k, 2 * k])
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["x: [1. 1.]", "twice: [2. 2.]", "x: [3. 3.]", "twice: [6. 6.]"]
