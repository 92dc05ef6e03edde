"""Conv2D's im2col helpers against a direct loop convolution and finite
differences, and a TrainOneStepCell step against an SGD step written out."""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor
from s2sad.runtime import rt_nn

from gradcheck import numeric_grad
from test_nn_layers import check_cell, to_float64

GEOMETRIES = [  # (stride, pad_mode, pad, dilation)
    ((1, 1), "valid", (0, 0, 0, 0), (1, 1)),
    ((2, 1), "valid", (0, 0, 0, 0), (1, 1)),
    ((2, 2), "same", (0, 0, 0, 0), (1, 1)),
    ((1, 2), "pad", (1, 0, 2, 1), (1, 1)),
    ((1, 1), "valid", (0, 0, 0, 0), (2, 1)),
    ((3, 2), "pad", (2, 2, 1, 1), (2, 2)),
    ((1, 1), "same", (0, 0, 0, 0), (1, 3)),
]


def loop_conv(x, w, stride, pad_mode, pad, dilation):
    """Cross-correlation one output pixel at a time (float64, no windows, no matmul)."""
    kh, kw = w.shape[2:]
    top, bottom, left, right = rt_nn._pads(x.shape[2:], (kh, kw), stride, dilation,
                                           pad_mode, pad)
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    span = ((kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1)
    oh = (xp.shape[2] - span[0]) // stride[0] + 1
    ow = (xp.shape[3] - span[1]) // stride[1] + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for r in range(oh):
        for c in range(ow):
            r0, c0 = r * stride[0], c * stride[1]
            patch = xp[:, :, r0:r0 + span[0]:dilation[0], c0:c0 + span[1]:dilation[1]]
            out[:, :, r, c] = np.einsum("nchw,ochw->no", patch, w)
    return out


def _case(seed, x_shape=(2, 3, 9, 8), w_shape=(4, 3, 3, 2)):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(x_shape), rng.standard_normal(w_shape)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_conv_helpers_match_a_loop_convolution_and_its_adjoints(geometry):
    x, w = _case(0)
    out = rt_nn.nn_conv2d(x, w, *geometry)
    expected = loop_conv(x, w, *geometry)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    dout = np.random.default_rng(1).standard_normal(out.shape)
    dx = rt_nn.nn_conv2d_backprop_input(dout, w, x.shape, *geometry)
    dw = rt_nn.nn_conv2d_backprop_filter(dout, x, w.shape, *geometry)
    assert dx.shape == x.shape and dw.shape == w.shape
    assert dx.flags.c_contiguous and out.flags.c_contiguous
    # the loop convolution is linear in each argument: its gradient is its adjoint
    f_x = lambda a: np.sum(loop_conv(a, w, *geometry) * dout)  # noqa: E731
    f_w = lambda b: np.sum(loop_conv(x, b, *geometry) * dout)  # noqa: E731
    np.testing.assert_allclose(dx, numeric_grad(f_x, [x], 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dw, numeric_grad(f_w, [w], 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("x_shape,w_shape,pad_mode,pad,dilation", [
    ((3, 2, 9, 8), (4, 2, 3, 2), "valid", (0, 0, 0, 0), (1, 1)),
    ((2, 3, 7, 11), (5, 3, 3, 3), "same", (0, 0, 0, 0), (2, 1)),
    ((2, 1, 6, 5), (2, 1, 2, 3), "pad", (1, 2, 0, 3), (1, 2)),
    ((1, 2, 5, 30), (3, 2, 3, 3), "valid", (0, 0, 0, 0), (1, 1))])   # a long row
def test_stride_one_input_gradient_by_whole_channels_equals_row_by_row(
        x_shape, w_shape, pad_mode, pad, dilation):
    """Both col2im forms of the stride-1 input gradient give the same array."""
    x, w = _case(7, x_shape, w_shape)
    geometry = ((1, 1), pad_mode, pad, dilation)
    dout = np.random.default_rng(8).standard_normal(rt_nn.nn_conv2d(x, w, *geometry).shape)
    pads = rt_nn._pads(x.shape[2:], w.shape[2:], (1, 1), dilation, pad_mode, pad)
    padded_cn = (x.shape[1], x.shape[0], x.shape[2] + pads[0] + pads[1],
                 x.shape[3] + pads[2] + pads[3])
    rows = rt_nn._col2im(rt_nn._weight_matrix(w).T @ rt_nn._channels_first(dout), padded_cn,
                         w.shape[2:], (1, 1), dilation, *dout.shape[2:])
    whole = rt_nn._col2im_rows(w, dout, padded_cn, w.shape[2:], dilation)
    np.testing.assert_allclose(whole, rows, rtol=1e-12, atol=1e-12)
    got = rt_nn.nn_conv2d_backprop_input(dout, w, x.shape, *geometry)
    np.testing.assert_allclose(got, np.transpose(rt_nn._crop(rows, pads, x.shape[2:]),
                                                 (1, 0, 2, 3)), rtol=1e-12, atol=1e-12)


def test_conv_helpers_float32_and_non_contiguous_inputs():
    x, w = _case(2, (3, 2, 7, 7), (5, 2, 3, 3))
    geometry = ((2, 2), "same", (0, 0, 0, 0), (1, 1))
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)   # strided
    out = rt_nn.nn_conv2d(xt.astype(np.float32), w.astype(np.float32), *geometry)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, loop_conv(x, w, *geometry), rtol=1e-4, atol=1e-4)
    dout = np.random.default_rng(3).standard_normal(out.shape)
    dout_t = np.ascontiguousarray(dout.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    np.testing.assert_allclose(rt_nn.nn_conv2d_backprop_filter(dout_t, xt, w.shape, *geometry),
                               rt_nn.nn_conv2d_backprop_filter(dout, x, w.shape, *geometry),
                               rtol=1e-12)
    np.testing.assert_allclose(rt_nn.nn_conv2d_backprop_input(dout_t, w, x.shape, *geometry),
                               rt_nn.nn_conv2d_backprop_input(dout, w, x.shape, *geometry),
                               rtol=1e-12)


@pytest.mark.parametrize("stride,pad_mode,padding,dilation", [
    (2, "valid", 0, 1), (1, "same", 0, 2), ((2, 1), "pad", (1, 2, 0, 1), (1, 2))])
def test_conv2d_cell_gradients_against_finite_differences(stride, pad_mode, padding, dilation):
    net = to_float64(nn.Conv2d(3, 2, (3, 2), stride=stride, pad_mode=pad_mode, padding=padding,
                               dilation=dilation, has_bias=True, weight_init="normal",
                               bias_init="normal"))
    x = Tensor(np.random.default_rng(4).standard_normal((2, 3, 8, 7)))
    check_cell(net, x, rtol=1e-6, atol=1e-8)


def test_conv2d_second_order_against_finite_differences():
    """grad of (sum of squares of a conv's input gradient) w.r.t. the weight: the
    bprops of both backprop primitives run on the im2col helpers."""
    x, w = _case(5, (2, 2, 6, 5), (3, 2, 2, 2))
    conv = ops.Conv2D(3, 2, pad_mode="pad", pad=1, stride=2, dilation=1)

    def inner(a, b):
        return ops.sum(ops.tanh(conv(a, b)))

    def outer(a, b):
        gx = s2sad.grad(inner, grad_position=0)(a, b)
        return ops.sum(gx * gx)

    got = s2sad.grad(outer, grad_position=(0, 1))(x, w)

    def plain(a, b):   # the first-order gradient is checked by the tests above
        return float(np.sum(np.asarray(s2sad.grad(inner, grad_position=0)(a, b)) ** 2))
    for i in (0, 1):
        np.testing.assert_allclose(np.asarray(got[i]), numeric_grad(plain, [x, w], i),
                                   rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("x_shape,w_shape", [((0, 2, 5, 5), (3, 2, 3, 3)),
                                             ((2, 2, 5, 5), (0, 2, 3, 3)),
                                             ((2, 0, 5, 5), (3, 0, 3, 3))])
def test_conv_helpers_accept_empty_batches_and_channels(x_shape, w_shape):
    x, w = np.ones(x_shape), np.ones(w_shape)
    geometry = ((1, 1), "valid", (0, 0, 0, 0), (1, 1))
    out = rt_nn.nn_conv2d(x, w, *geometry)
    assert out.shape == (x_shape[0], w_shape[0], 3, 3)
    np.testing.assert_array_equal(out, loop_conv(x, w, *geometry))
    dx = rt_nn.nn_conv2d_backprop_input(out, w, x.shape, *geometry)
    dw = rt_nn.nn_conv2d_backprop_filter(out, x, w.shape, *geometry)
    assert dx.shape == x.shape and dw.shape == w.shape
    assert not dx.any() and not dw.any()


def test_group_convolution_is_refused_not_wrong():
    with pytest.raises(NotImplementedError, match="group"):
        nn.Conv2d(2, 2, 3, group=2)


# ------------------------------------------------------------- training step
def _mlp_step(momentum, nesterov=False, steps=3, weight_decay=0.0, dampening=0.0):
    rng = np.random.default_rng(6)
    net = to_float64(nn.SequentialCell([nn.Dense(5, 4, activation="tanh"), nn.Dense(4, 3)]))
    params = net.trainable_params()
    x = rng.standard_normal((6, 5))
    labels = rng.integers(0, 3, 6).astype(np.int32)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.SGD(params, learning_rate=0.1, momentum=momentum, nesterov=nesterov,
                 weight_decay=weight_decay, dampening=dampening)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    W = [p.asnumpy().copy() for p in params]
    V = [None] * len(W)
    for _ in range(steps):
        h = np.tanh(x @ W[0].T + W[1])
        z = h @ W[2].T + W[3]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        dz = (e / e.sum(axis=1, keepdims=True) - np.eye(3)[labels]) / len(x)
        dh = (dz @ W[2]) * (1 - h * h)
        G = [dh.T @ x, dh.sum(0), dz.T @ h, dz.sum(0)]
        for k, g in enumerate(G):
            g = g + weight_decay * W[k]
            V[k] = g if V[k] is None else momentum * V[k] + (1 - dampening) * g
            W[k] = W[k] - 0.1 * ((g + momentum * V[k]) if nesterov else V[k])
        step(Tensor(x), Tensor(labels))
    for p, w in zip(params, W):
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-12, atol=1e-14)
    for v_param, v in zip(opt.accum, V):
        np.testing.assert_allclose(v_param.asnumpy(), v, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kwargs", [
    dict(momentum=0.0), dict(momentum=0.9), dict(momentum=0.9, nesterov=True),
    dict(momentum=0.5, dampening=0.3, weight_decay=0.01)])
def test_train_one_step_cell_equals_sgd_written_out(kwargs):
    _mlp_step(**kwargs)


def test_sgd_updates_the_parameters_arrays_in_place():
    net = nn.Dense(3, 2)
    params = net.trainable_params()
    before = [p._data for p in params]
    opt = nn.SGD(params, learning_rate=0.5)
    opt(tuple(Tensor(np.ones(p.shape, np.float32)) for p in params))
    opt(tuple(Tensor(np.ones(p.shape, np.float32)) for p in params))
    assert all(p._data is b for p, b in zip(params, before))
    assert all(p._data.dtype == np.float32 for p in params)


def test_sgd_step_allocates_at_most_one_temporary_of_the_weights():
    """The update runs in place: one ``lr * v`` temporary, not fresh copies of the
    new state and the new weights."""
    import tracemalloc
    p = s2sad.Parameter(Tensor(np.ones((512, 512), np.float32)), name="w")
    opt = nn.SGD([p], learning_rate=0.1, momentum=0.0)
    g = (Tensor(np.full((512, 512), 0.5, np.float32)),)
    opt(g)
    tracemalloc.start()
    try:
        opt(g)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * p._data.nbytes, peak / p._data.nbytes
    np.testing.assert_allclose(p.asnumpy(), 1 - 2 * 0.1 * 0.5, rtol=1e-6)
