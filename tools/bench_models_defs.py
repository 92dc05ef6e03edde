"""The models of ``tools/bench_models.py``: NumPy functions, their hand-written gradients,
data, s2sad Cells, and the peers that need more than a rebound ``np``.

s2sad reads the source of the model functions from this file; autograd and JAX
run them with ``np`` rebound, PyTorch through a small namespace of the same
names (``bench_models.torch_numpy``).
"""
import numpy as np

import s2sad
from s2sad import nn, ops

F32, F64 = np.float32, np.float64
K = 5          # convolution kernel size
HEADS = 4      # attention heads
LORENZ = {"steps": 1000, "dt": 0.001}


def _rand(rng, shape, scale, dtype):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _onehot(rng, n, classes, dtype):
    return np.eye(classes, dtype=dtype)[rng.integers(0, classes, n)]


def _softmax_grad(logits, Y):
    """d mean softmax cross-entropy / d logits."""
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True) - Y) / logits.shape[0]


# ====================================================================== (g) LeNet
def lenet_td(C1, c1, C2, c2, W3, b3, W4, b4, W5, b5, x, Y):
    """LeNet-5 on NHWC input; convolutions as im2col (slices stacked) + tensordot."""
    oh = x.shape[1] - K + 1
    cols = np.stack([x[:, i:i + oh, j:j + oh, :] for i in range(K) for j in range(K)], axis=3)
    a1 = np.tanh(np.tensordot(cols, C1.reshape(K * K, C1.shape[2], C1.shape[3]),
                              axes=([3, 4], [0, 1])) + c1)
    p1 = np.mean(a1.reshape(x.shape[0], oh // 2, 2, oh // 2, 2, a1.shape[3]), axis=(2, 4))
    oh2 = p1.shape[1] - K + 1
    cols2 = np.stack([p1[:, i:i + oh2, j:j + oh2, :] for i in range(K) for j in range(K)], axis=3)
    a2 = np.tanh(np.tensordot(cols2, C2.reshape(K * K, C2.shape[2], C2.shape[3]),
                              axes=([3, 4], [0, 1])) + c2)
    p2 = np.mean(a2.reshape(x.shape[0], oh2 // 2, 2, oh2 // 2, 2, a2.shape[3]), axis=(2, 4))
    h3 = np.tanh(p2.reshape(x.shape[0], -1) @ W3 + b3)
    h4 = np.tanh(h3 @ W4 + b4)
    z = h4 @ W5 + b5
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / x.shape[0]


def lenet_es(C1, c1, C2, c2, W3, b3, W4, b4, W5, b5, x, Y):
    """``lenet_td`` with the convolutions as ``np.einsum``."""
    oh = x.shape[1] - K + 1
    cols = np.stack([x[:, i:i + oh, j:j + oh, :] for i in range(K) for j in range(K)], axis=3)
    a1 = np.tanh(np.einsum("nhwkc,kco->nhwo", cols,
                           C1.reshape(K * K, C1.shape[2], C1.shape[3])) + c1)
    p1 = np.mean(a1.reshape(x.shape[0], oh // 2, 2, oh // 2, 2, a1.shape[3]), axis=(2, 4))
    oh2 = p1.shape[1] - K + 1
    cols2 = np.stack([p1[:, i:i + oh2, j:j + oh2, :] for i in range(K) for j in range(K)], axis=3)
    a2 = np.tanh(np.einsum("nhwkc,kco->nhwo", cols2,
                           C2.reshape(K * K, C2.shape[2], C2.shape[3])) + c2)
    p2 = np.mean(a2.reshape(x.shape[0], oh2 // 2, 2, oh2 // 2, 2, a2.shape[3]), axis=(2, 4))
    h3 = np.tanh(p2.reshape(x.shape[0], -1) @ W3 + b3)
    h4 = np.tanh(h3 @ W4 + b4)
    z = h4 @ W5 + b5
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / x.shape[0]


def _im2col(x, oh):
    return np.stack([x[:, i:i + oh, j:j + oh, :] for i in range(K) for j in range(K)], axis=3)


def _col2im_add(dcols, shape, oh):
    """Adjoint of ``_im2col``: every patch's adjoint added into one buffer in place."""
    dx = np.zeros(shape, dcols.dtype)
    for idx in range(K * K):
        i, j = divmod(idx, K)
        dx[:, i:i + oh, j:j + oh, :] += dcols[:, :, :, idx, :]
    return dx


def _conv_hand(cols, C, dy):
    """(dC, dc) of ``y = tensordot(cols, C) + c`` given ``dy``."""
    dC = np.tensordot(cols, dy, axes=([0, 1, 2], [0, 1, 2])).reshape(C.shape)
    return dC, dy.sum(axis=(0, 1, 2))


def _unpool(dp, a):
    """Adjoint of the 2x2 average pooling of ``a``."""
    n, h, w, c = dp.shape
    return np.broadcast_to((dp * 0.25)[:, :, None, :, None, :],
                           (n, h, 2, w, 2, c)).reshape(a.shape)


def lenet_hand(C1, c1, C2, c2, W3, b3, W4, b4, W5, b5, x, Y):
    n = x.shape[0]
    oh = x.shape[1] - K + 1
    cols = _im2col(x, oh)
    Cm1 = C1.reshape(K * K, C1.shape[2], C1.shape[3])
    a1 = np.tanh(np.tensordot(cols, Cm1, axes=([3, 4], [0, 1])) + c1)
    p1 = a1.reshape(n, oh // 2, 2, oh // 2, 2, a1.shape[3]).mean(axis=(2, 4))
    oh2 = p1.shape[1] - K + 1
    cols2 = _im2col(p1, oh2)
    Cm2 = C2.reshape(K * K, C2.shape[2], C2.shape[3])
    a2 = np.tanh(np.tensordot(cols2, Cm2, axes=([3, 4], [0, 1])) + c2)
    p2 = a2.reshape(n, oh2 // 2, 2, oh2 // 2, 2, a2.shape[3]).mean(axis=(2, 4))
    f = p2.reshape(n, -1)
    h3 = np.tanh(f @ W3 + b3)
    h4 = np.tanh(h3 @ W4 + b4)
    dz = _softmax_grad(h4 @ W5 + b5, Y)
    dW5, db5 = h4.T @ dz, dz.sum(axis=0)
    dz4 = (dz @ W5.T) * (1 - h4 * h4)
    dW4, db4 = h3.T @ dz4, dz4.sum(axis=0)
    dz3 = (dz4 @ W4.T) * (1 - h3 * h3)
    dW3, db3 = f.T @ dz3, dz3.sum(axis=0)
    dy2 = _unpool((dz3 @ W3.T).reshape(p2.shape), a2) * (1 - a2 * a2)
    dC2, dc2 = _conv_hand(cols2, C2, dy2)
    dp1 = _col2im_add(np.tensordot(dy2, Cm2, axes=([3], [2])), p1.shape, oh2)
    dy1 = _unpool(dp1, a1) * (1 - a1 * a1)
    dC1, dc1 = _conv_hand(cols, C1, dy1)
    return dC1, dc1, dC2, dc2, dW3, db3, dW4, db4, dW5, db5


def lenet_data(quick):
    rng = np.random.default_rng(10)
    n = 2 if quick else 32
    shapes = [((K, K, 1, 6), 0.2), ((6,), 0.1), ((K, K, 6, 16), 0.08), ((16,), 0.1),
              ((400, 120), 0.05), ((120,), 0.1), ((120, 84), 0.09), ((84,), 0.1),
              ((84, 10), 0.1), ((10,), 0.1)]
    weights = [_rand(rng, s, sc, F32) for s, sc in shapes]
    return tuple(weights) + (_rand(rng, (n, 32, 32, 1), 1.0, F32), _onehot(rng, n, 10, F32))


class LeNet(nn.Cell):
    """``lenet_td`` with ``nn.Conv2d`` layers (NCHW); the dense weights as in ``lenet_td``."""

    def __init__(self, weights):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, K, pad_mode="valid", has_bias=True)
        self.conv2 = nn.Conv2d(6, 16, K, pad_mode="valid", has_bias=True)
        names = ("W3", "b3", "W4", "b4", "W5", "b5")
        for name, w in zip(names, weights[4:]):
            setattr(self, name, s2sad.Parameter(s2sad.Tensor(w), name=name))
        for conv, (C, c) in ((self.conv1, weights[0:2]), (self.conv2, weights[2:4])):
            conv.weight.set_data(s2sad.Tensor(np.ascontiguousarray(C.transpose(3, 2, 0, 1))))
            conv.bias.set_data(s2sad.Tensor(c))

    def construct(self, x, Y):
        a1 = ops.tanh(self.conv1(x))
        n, c, h, w = a1.shape
        p1 = ops.mean(a1.reshape(n, c, h // 2, 2, w // 2, 2), (3, 5))
        a2 = ops.tanh(self.conv2(p1))
        n, c, h, w = a2.shape
        p2 = ops.mean(a2.reshape(n, c, h // 2, 2, w // 2, 2), (3, 5))
        f = ops.transpose(p2, (0, 2, 3, 1)).reshape(n, -1)
        h3 = ops.tanh(ops.matmul(f, self.W3) + self.b3)
        h4 = ops.tanh(ops.matmul(h3, self.W4) + self.b4)
        z = ops.matmul(h4, self.W5) + self.b5
        z = z - ops.amax(z, 1, True)
        logp = z - ops.log(ops.sum(ops.exp(z), 1, keepdims=True))
        return -ops.sum(Y * logp) / n


def lenet_cell(args):
    """(net, its gradient function over all weights, its inputs, hand layout -> its layout)."""
    net = LeNet(args[:10])
    params = net.trainable_params()
    order = [p.name for p in params]
    grad = ops.GradOperation(get_by_list=True)(net, s2sad.ParameterTuple(params))
    x = np.ascontiguousarray(args[10].transpose(0, 3, 1, 2))
    names = ("conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
             "W3", "b3", "W4", "b4", "W5", "b5")

    def to_cell(ref):
        by_name = {}
        for name, g in zip(names, ref):
            by_name[name] = g.transpose(3, 2, 0, 1) if g.ndim == 4 else g
        return tuple(by_name[n] for n in order)
    return net, grad, (x, args[11]), to_cell


def torch_lenet_tool(R, args, ref):
    """PyTorch's own layers (``conv2d`` with its oneDNN kernels, ``avg_pool2d``) on the
    same weights, NCHW, gradient w.r.t. the 10 weights."""
    torch = R.peers["torch"].mod
    F = torch.nn.functional
    w = [torch.from_numpy(np.ascontiguousarray(a.transpose(3, 2, 0, 1)) if a.ndim == 4 else a)
         for a in args[:10]]
    x = torch.from_numpy(np.ascontiguousarray(args[10].transpose(0, 3, 1, 2)))
    Y = torch.from_numpy(args[11])

    def grad(*ws):
        ws = [a.detach().requires_grad_(True) for a in ws]
        C1, c1, C2, c2, W3, b3, W4, b4, W5, b5 = ws
        p1 = F.avg_pool2d(torch.tanh(F.conv2d(x, C1, c1)), 2)
        p2 = F.avg_pool2d(torch.tanh(F.conv2d(p1, C2, c2)), 2)
        h3 = torch.tanh(p2.permute(0, 2, 3, 1).reshape(x.shape[0], -1) @ W3 + b3)
        z = torch.tanh(h3 @ W4 + b4) @ W5 + b5
        loss = -(Y * torch.log_softmax(z, dim=1)).sum() / x.shape[0]
        return torch.autograd.grad(loss, ws)
    ref = tuple(g.transpose(3, 2, 0, 1) if g.ndim == 4 else g for g in ref)
    return R.tool("torch_nn", grad, tuple(w), ref, "float32")


# ====================================================================== (h) LSTM
def lstm(W, U, b, xs, h0, c0):
    """Final hidden state's squared norm; gates (input, forget, cell, output) by slicing."""
    H = h0.shape[1]
    h = h0
    c = c0
    for t in range(xs.shape[0]):
        z = xs[t] @ W + h @ U + b
        i = 1 / (1 + np.exp(-z[:, :H]))
        f = 1 / (1 + np.exp(-z[:, H:2 * H]))
        g = np.tanh(z[:, 2 * H:3 * H])
        o = 1 / (1 + np.exp(-z[:, 3 * H:]))
        c = f * c + i * g
        h = o * np.tanh(c)
    return np.sum(h * h)


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def lstm_hand(W, U, b, xs, h0, c0):
    H = h0.shape[1]
    hs, cs, gates = [h0], [c0], []
    for t in range(xs.shape[0]):
        z = xs[t] @ W + hs[-1] @ U + b
        i, f, o = _sigmoid(z[:, :H]), _sigmoid(z[:, H:2 * H]), _sigmoid(z[:, 3 * H:])
        g = np.tanh(z[:, 2 * H:3 * H])
        cs.append(f * cs[-1] + i * g)
        tc = np.tanh(cs[-1])
        hs.append(o * tc)
        gates.append((i, f, g, o, tc))
    dW, dU, db = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    dh, dc = 2 * hs[-1], np.zeros_like(c0)
    dz = np.empty((h0.shape[0], 4 * H), W.dtype)
    for t in range(xs.shape[0] - 1, -1, -1):
        i, f, g, o, tc = gates[t]
        dc = dc + dh * o * (1 - tc * tc)
        dz[:, :H] = dc * g * i * (1 - i)
        dz[:, H:2 * H] = dc * cs[t] * f * (1 - f)
        dz[:, 2 * H:3 * H] = dc * i * (1 - g * g)
        dz[:, 3 * H:] = dh * tc * o * (1 - o)
        dc = dc * f
        dW += xs[t].T @ dz
        dU += hs[t].T @ dz
        db += dz.sum(axis=0)
        dh = dz @ U.T
    return dW, dU, db


def lstm_data(quick):
    rng = np.random.default_rng(11)
    steps, batch, inp, hid = (5, 2, 4, 8) if quick else (50, 16, 32, 64)
    s = 1 / np.sqrt(hid)
    return (_rand(rng, (inp, 4 * hid), s, F32), _rand(rng, (hid, 4 * hid), s, F32),
            _rand(rng, (4 * hid,), s, F32), _rand(rng, (steps, batch, inp), 1.0, F32),
            np.zeros((batch, hid), F32), np.zeros((batch, hid), F32))


class LSTMLoss(nn.Cell):
    def __init__(self, W, U, b):
        super().__init__()
        self.lstm = nn.LSTM(W.shape[0], U.shape[0])
        self.lstm.weight_ih_l0.set_data(s2sad.Tensor(np.ascontiguousarray(W.T)))
        self.lstm.weight_hh_l0.set_data(s2sad.Tensor(np.ascontiguousarray(U.T)))
        self.lstm.bias_ih_l0.set_data(s2sad.Tensor(b))
        self.lstm.bias_hh_l0.set_data(s2sad.Tensor(np.zeros_like(b)))

    def construct(self, xs):
        _, (h, _) = self.lstm(xs)
        return ops.sum(h * h)


def lstm_cell(args):
    """s2sad's ``nn.LSTM`` on ``lstm``'s weights (zero initial state, as ``lstm_data``'s)."""
    W, U, b, xs = args[:4]
    net = LSTMLoss(W, U, b)
    params = net.trainable_params()
    grad = ops.GradOperation(get_by_list=True)(net, s2sad.ParameterTuple(params))

    def to_cell(ref):
        dW, dU, db = ref
        by_name = {"weight_ih_l0": dW.T, "weight_hh_l0": dU.T, "bias_ih_l0": db,
                   "bias_hh_l0": db}
        return tuple(by_name[p.name.split(".")[-1]] for p in params)
    return grad, (xs,), to_cell


def torch_lstm_tool(R, args, ref):
    """PyTorch's ``nn.LSTM`` with the same weights, gradient w.r.t. its four weights."""
    torch = R.peers["torch"].mod
    W, U, b, xs = args[:4]
    m = torch.nn.LSTM(W.shape[0], U.shape[0])
    with torch.no_grad():
        m.weight_ih_l0.copy_(torch.from_numpy(np.ascontiguousarray(W.T)))
        m.weight_hh_l0.copy_(torch.from_numpy(np.ascontiguousarray(U.T)))
        m.bias_ih_l0.copy_(torch.from_numpy(b))
        m.bias_hh_l0.zero_()
    params = [m.weight_ih_l0, m.weight_hh_l0, m.bias_ih_l0, m.bias_hh_l0]

    def grad(x):
        _, (h, _) = m(x)
        return torch.autograd.grad((h * h).sum(), params)
    dW, dU, db = ref
    return R.tool("torch_nn", grad, (torch.from_numpy(xs),), (dW.T, dU.T, db, db), "float32")


# ====================================================================== (i) transformer
def block(Wq, Wk, Wv, Wo, W1, W2, x):
    """Self-attention (4 heads), residual, layer norm, tanh feed-forward with residual."""
    n, t, d = x.shape
    dh = d // HEADS
    q = np.transpose((x @ Wq).reshape(n, t, HEADS, dh), (0, 2, 1, 3))
    k = np.transpose((x @ Wk).reshape(n, t, HEADS, dh), (0, 2, 3, 1))
    v = np.transpose((x @ Wv).reshape(n, t, HEADS, dh), (0, 2, 1, 3))
    s = (q @ k) * (1.0 / np.sqrt(dh))
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    p = e / np.sum(e, axis=-1, keepdims=True)
    a = np.transpose(p @ v, (0, 2, 1, 3)).reshape(n, t, d)
    y = x + a @ Wo
    mu = np.mean(y, axis=-1, keepdims=True)
    yc = y - mu
    r = 1 / np.sqrt(np.mean(yc * yc, axis=-1, keepdims=True) + 1e-5)
    m = yc * r
    out = m + np.tanh(m @ W1) @ W2
    return np.sum(out * out) / (n * t)


def block_hand(Wq, Wk, Wv, Wo, W1, W2, x):
    n, t, d = x.shape
    dh = d // HEADS
    x2 = x.reshape(n * t, d)

    def heads(w):
        return (x2 @ w).reshape(n, t, HEADS, dh).transpose(0, 2, 1, 3)

    def merge(z):
        return z.transpose(0, 2, 1, 3).reshape(n * t, d)
    q, k, v = heads(Wq), heads(Wk), heads(Wv)
    scale = 1.0 / np.sqrt(dh)
    s = (q @ k.transpose(0, 1, 3, 2)) * scale
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    a = merge(p @ v)
    y = x2 + a @ Wo
    yc = y - y.mean(axis=-1, keepdims=True)
    r = 1 / np.sqrt((yc * yc).mean(axis=-1, keepdims=True) + 1e-5)
    m = yc * r
    u = np.tanh(m @ W1)
    out = m + u @ W2
    dout = out * (2.0 / (n * t))
    dW2 = u.T @ dout
    du = (dout @ W2.T) * (1 - u * u)
    dW1 = m.T @ du
    dm = dout + du @ W1.T
    dy = r * (dm - dm.mean(axis=-1, keepdims=True)
              - m * (dm * m).mean(axis=-1, keepdims=True))
    dWo = a.T @ dy
    dA = (dy @ Wo.T).reshape(n, t, HEADS, dh).transpose(0, 2, 1, 3)
    dp = dA @ v.transpose(0, 1, 3, 2)
    dv = p.transpose(0, 1, 3, 2) @ dA
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * scale
    dq, dk = ds @ k, ds.transpose(0, 1, 3, 2) @ q
    return (x2.T @ merge(dq), x2.T @ merge(dk), x2.T @ merge(dv), dWo, dW1, dW2)


def block_data(quick):
    rng = np.random.default_rng(12)
    n, t, d = (2, 8, 16) if quick else (8, 64, 128)
    s = 1 / np.sqrt(d)
    ws = [_rand(rng, (d, d), s, F32) for _ in range(4)]
    return tuple(ws) + (_rand(rng, (d, 4 * d), s, F32), _rand(rng, (4 * d, d), s / 2, F32),
                        _rand(rng, (n, t, d), 1.0, F32))


# ====================================================================== (j) second order
def mlp_loss(W1, b1, W2, b2, x, Y):
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / x.shape[0]


def hvp_hand(W1, b1, W2, b2, x, Y, V):
    """The R-op: directional derivative of the W1 gradient along V."""
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    dh = ((p - Y) / x.shape[0]) @ W2.T
    Rh = (1 - h * h) * (x @ V)
    Rz = Rh @ W2
    Rp = p * (Rz - (p * Rz).sum(axis=1, keepdims=True))
    Rdz1 = ((Rp / x.shape[0]) @ W2.T) * (1 - h * h) - 2 * h * Rh * dh
    return x.T @ Rdz1


def hvp_data(quick):
    rng = np.random.default_rng(13)
    n, din, hid = (4, 6, 5) if quick else (64, 100, 50)
    return (_rand(rng, (din, hid), 1 / np.sqrt(din), F64), _rand(rng, (hid,), 0.1, F64),
            _rand(rng, (hid, 10), 1 / np.sqrt(hid), F64), _rand(rng, (10,), 0.1, F64),
            _rand(rng, (n, din), 1.0, F64), _onehot(rng, n, 10, F64),
            _rand(rng, (din, hid), 1.0, F64))


def hvp_s2sad():
    """Forward over reverse: ``s2sad.hvp``, the tangent of the W1 gradient along V
    without the gradient itself (as the R-op and autograd's ``hessian_vector_product``)."""
    def hvp(W1, b1, W2, b2, x, Y, V):
        return s2sad.hvp(lambda w: mlp_loss(w, b1, W2, b2, x, Y), W1, V)
    return hvp


def hvp_peers(R, args, ref, tools, safe):
    if R.has("torch"):
        torch = R.peers["torch"].mod
        from bench_models import torch_numpy
        f = _rebind(mlp_loss, torch_numpy(torch))

        def hvp_t(W1, b1, W2, b2, x, Y, V):
            w = W1.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(f(w, b1, W2, b2, x, Y), [w], create_graph=True)
            return torch.autograd.grad(g, [w], grad_outputs=[V])[0]
        t_args = tuple(torch.from_numpy(a) for a in args)
        tools["torch"] = safe(R, "torch", lambda: R.tool("torch", hvp_t, t_args, ref, "float64"))
    if R.has("jax"):
        jax = R.peers["jax"].mod
        gj = jax.grad(_rebind(mlp_loss, R.peers["jax"].np))

        def hvp_j(W1, b1, W2, b2, x, Y, V):
            return jax.jvp(lambda w: gj(w, b1, W2, b2, x, Y), (W1,), (V,))[1]
        _jax_rows(R, jax, hvp_j, args, ref, tools, safe)
    if R.has("autograd"):
        from autograd import hessian_vector_product
        hv = hessian_vector_product(_rebind(mlp_loss, R.peers["autograd"].np))
        tools["autograd"] = safe(R, "autograd", lambda: R.tool("autograd", hv, args, ref,
                                                               "float64"))


def _rebind(fn, module):
    from bench import rebind_numpy
    return rebind_numpy(fn, module)


def _jax_rows(R, jax, fn, args, ref, tools, safe):
    from bench import _jax_ready, _jax_compiled
    j_args = tuple(jax.device_put(a) for a in args)
    tools["jax"] = safe(R, "jax", lambda: R.tool("jax", _jax_ready(jax, fn), j_args, ref,
                                                 "float64"))

    def jit():
        cg, cg_s = _jax_compiled(jax, fn, j_args)
        return R.tool("jax_jit", _jax_ready(jax, cg), j_args, ref, "float64", setup_s=cg_s,
                      setup_what="jit trace + compile")
    tools["jax_jit"] = safe(R, "jax_jit", jit)


def logreg(w, X, y):
    m = y * (X @ w)
    return np.mean(np.log(1 + np.exp(-m))) + 0.005 * np.sum(w * w)


def logreg_hessian_hand(w, X, y):
    s = 1 / (1 + np.exp(-y * (X @ w)))
    return (X.T * (s * (1 - s) / X.shape[0])) @ X + 0.01 * np.eye(w.size)


def logreg_data(quick):
    rng = np.random.default_rng(14)
    n, d = (20, 5) if quick else (500, 50)
    return (_rand(rng, (d,), 0.1, F64), _rand(rng, (n, d), 1.0, F64),
            np.sign(rng.standard_normal(n)).astype(F64))


def hessian_peers(R, args, ref, tools, safe):
    if R.has("torch"):
        torch = R.peers["torch"].mod
        from bench_models import torch_numpy
        f = _rebind(logreg, torch_numpy(torch))
        t_args = tuple(torch.from_numpy(a) for a in args)

        def hess_t(w, X, y):
            return torch.autograd.functional.hessian(lambda u: f(u, X, y), w)
        tools["torch"] = safe(R, "torch", lambda: R.tool("torch", hess_t, t_args, ref, "float64"))
    if R.has("jax"):
        jax = R.peers["jax"].mod
        _jax_rows(R, jax, jax.hessian(_rebind(logreg, R.peers["jax"].np)), args, ref, tools,
                  safe)
    if R.has("autograd"):
        ag = R.peers["autograd"].mod
        h = ag.hessian(_rebind(logreg, R.peers["autograd"].np))
        tools["autograd"] = safe(R, "autograd", lambda: R.tool("autograd", h, args, ref,
                                                               "float64"))


# ====================================================================== (k) Lorenz RK4
def lorenz(s, r, b, x, y, z):
    """RK4 on the Lorenz system, scalars only; the sum of the final state."""
    h = LORENZ["dt"]
    for _ in range(LORENZ["steps"]):
        k1x = s * (y - x)
        k1y = x * (r - z) - y
        k1z = x * y - b * z
        x2 = x + 0.5 * h * k1x
        y2 = y + 0.5 * h * k1y
        z2 = z + 0.5 * h * k1z
        k2x = s * (y2 - x2)
        k2y = x2 * (r - z2) - y2
        k2z = x2 * y2 - b * z2
        x3 = x + 0.5 * h * k2x
        y3 = y + 0.5 * h * k2y
        z3 = z + 0.5 * h * k2z
        k3x = s * (y3 - x3)
        k3y = x3 * (r - z3) - y3
        k3z = x3 * y3 - b * z3
        x4 = x + h * k3x
        y4 = y + h * k3y
        z4 = z + h * k3z
        k4x = s * (y4 - x4)
        k4y = x4 * (r - z4) - y4
        k4z = x4 * y4 - b * z4
        x = x + h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        y = y + h / 6 * (k1y + 2 * k2y + 2 * k3y + k4y)
        z = z + h / 6 * (k1z + 2 * k2z + 2 * k3z + k4z)
    return x + y + z


def _lorenz_f(u, p):
    x, y, z = u
    s, r, b = p
    return (s * (y - x), x * (r - z) - y, x * y - b * z)


def _lorenz_vjp(u, p, g, gu, gp):
    """Add the adjoint of ``_lorenz_f(u, p)`` along ``g`` into the lists ``gu``, ``gp``."""
    x, y, z = u
    s, r, b = p
    gx, gy, gz = g
    gu[0] += -s * gx + (r - z) * gy + y * gz
    gu[1] += s * gx - gy + x * gz
    gu[2] += -x * gy - b * gz
    gp[0] += (y - x) * gx
    gp[1] += x * gy
    gp[2] += -z * gz


def _axpy(a, v, u):
    return (u[0] + a * v[0], u[1] + a * v[1], u[2] + a * v[2])


def lorenz_hand(s, r, b, x, y, z):
    """Reverse sweep over the stored stage inputs, in Python floats."""
    h = LORENZ["dt"]
    p = (float(s), float(r), float(b))
    u = (float(x), float(y), float(z))
    tape = []
    for _ in range(LORENZ["steps"]):
        k1 = _lorenz_f(u, p)
        u2 = _axpy(0.5 * h, k1, u)
        k2 = _lorenz_f(u2, p)
        u3 = _axpy(0.5 * h, k2, u)
        k3 = _lorenz_f(u3, p)
        u4 = _axpy(h, k3, u)
        k4 = _lorenz_f(u4, p)
        tape.append((u, u2, u3, u4))
        u = tuple(u[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]) for i in range(3))
    gu, gp = [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]
    for u, u2, u3, u4 in reversed(tape):
        gk4 = [h / 6 * v for v in gu]
        gk3 = [h / 3 * v for v in gu]
        gk2 = list(gk3)
        gk1 = list(gk4)
        g4 = [0.0, 0.0, 0.0]
        _lorenz_vjp(u4, p, gk4, g4, gp)
        gu = [gu[i] + g4[i] for i in range(3)]
        gk3 = [gk3[i] + h * g4[i] for i in range(3)]
        g3 = [0.0, 0.0, 0.0]
        _lorenz_vjp(u3, p, gk3, g3, gp)
        gu = [gu[i] + g3[i] for i in range(3)]
        gk2 = [gk2[i] + 0.5 * h * g3[i] for i in range(3)]
        g2 = [0.0, 0.0, 0.0]
        _lorenz_vjp(u2, p, gk2, g2, gp)
        gu = [gu[i] + g2[i] for i in range(3)]
        gk1 = [gk1[i] + 0.5 * h * g2[i] for i in range(3)]
        _lorenz_vjp(u, p, gk1, gu, gp)
    return tuple(np.float64(v) for v in gp)


def lorenz_data():
    return tuple(np.array(v, F64) for v in (10.0, 28.0, 8.0 / 3.0, 1.0, 1.0, 1.05))


def lorenz_jax_jit(R, args, ref, jit_tool):
    """JAX jit of ``lorenz`` with the step loop as ``lax.fori_loop`` (an unrolled
    1,000-step loop takes minutes to compile)."""
    jax = R.peers["jax"].mod
    h, steps = LORENZ["dt"], LORENZ["steps"]

    def f(s, r, b, x, y, z):
        def step(_, u):
            k1 = _lorenz_f(u, (s, r, b))
            k2 = _lorenz_f(_axpy(0.5 * h, k1, u), (s, r, b))
            k3 = _lorenz_f(_axpy(0.5 * h, k2, u), (s, r, b))
            k4 = _lorenz_f(_axpy(h, k3, u), (s, r, b))
            return tuple(u[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i])
                         for i in range(3))
        x, y, z = jax.lax.fori_loop(0, steps, step, (x, y, z))
        return x + y + z
    j_args = tuple(jax.device_put(a) for a in args)
    return jit_tool(R, jax, jax.grad(f, argnums=(0, 1, 2)), j_args, ref, "float64")


# ====================================================================== (l) training step
def train_data(quick):
    rng = np.random.default_rng(15)
    n, din, hid = (8, 32, 16) if quick else (64, 784, 256)
    return {"W1": _rand(rng, (hid, din), 1 / np.sqrt(din), F32), "b1": _rand(rng, (hid,), 0.1, F32),
            "W2": _rand(rng, (10, hid), 1 / np.sqrt(hid), F32), "b2": _rand(rng, (10,), 0.1, F32),
            "x": _rand(rng, (n, din), 1.0, F32), "labels": rng.integers(0, 10, n).astype(np.int32)}


LR = 0.01


def _hand_step(W, x, labels):
    """One SGD step of the tanh MLP (weights in ``nn.Dense``'s [out, in] layout), in place."""
    W1, b1, W2, b2 = W
    h = np.tanh(x @ W1.T + b1)
    Y = np.eye(10, dtype=x.dtype)[labels]
    dz = _softmax_grad(h @ W2.T + b2, Y)
    z = h @ W2.T + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    loss = -np.mean(np.log(e[np.arange(x.shape[0]), labels] / e.sum(axis=1)))
    dh = (dz @ W2) * (1 - h * h)
    for w, g in zip(W, (dh.T @ x, dh.sum(axis=0), dz.T @ h, dz.sum(axis=0))):
        w -= LR * g
    return loss


def train_steps(data):
    """(hand step, its args, s2sad step, its args, check): ``check`` runs one step of each
    from the same weights and compares the updated weights."""
    W = [data[k].copy() for k in ("W1", "b1", "W2", "b2")]
    net = nn.SequentialCell([nn.Dense(W[0].shape[1], W[0].shape[0], activation="tanh"),
                             nn.Dense(W[2].shape[1], W[2].shape[0])])
    params = net.trainable_params()
    for p, w in zip(params, W):
        p.set_data(s2sad.Tensor(w.copy()))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.SGD(params, learning_rate=LR))
    step.set_train()
    args = (data["x"], data["labels"])

    def check():
        W0 = [w.copy() for w in W]
        _hand_step(W0, *args)
        step(s2sad.Tensor(args[0]), s2sad.Tensor(args[1]))
        from bench import compare, Mismatch
        try:
            compare([np.asarray(p.asnumpy()) for p in params], W0, "float32")
        except Mismatch as e:
            return False, str(e)
        return True, ""
    t_args = (s2sad.Tensor(args[0]), s2sad.Tensor(args[1]))
    return _hand_step, (W,) + args, step, t_args, check


# ====================================================================== cold start
def _cold_grad(fn, data, wrt):
    args = data()
    return lambda: s2sad.grad(fn, grad_position=wrt)(*args)


def _cold_cell(data, make):
    args = data()
    return lambda: _call_cell(make, args)


def _call_cell(make, args):
    """Build the Cell and its gradient function, and call it once."""
    built = make(args)
    grad, cell_args = built[-3], built[-2]
    return grad(*cell_args)


def _cold_train(quick):
    data = train_data(quick)

    def run():
        _, _, step, t_args, _ = train_steps(data)
        step(*t_args)
    return run


COLD = {
    "g im2col+tensordot": lambda q: _cold_grad(lenet_td, lambda: lenet_data(q), tuple(range(10))),
    "g im2col+einsum": lambda q: _cold_grad(lenet_es, lambda: lenet_data(q), tuple(range(10))),
    "g nn.Conv2d": lambda q: _cold_cell(lambda: lenet_data(q), lenet_cell),
    "h LSTM (NumPy cell)": lambda q: _cold_grad(lstm, lambda: lstm_data(q), (0, 1, 2)),
    "h nn.LSTM": lambda q: _cold_cell(lambda: lstm_data(q), lstm_cell),
    "i transformer block": lambda q: _cold_grad(block, lambda: block_data(q), tuple(range(6))),
    "j HVP": lambda q: (lambda a: lambda: hvp_s2sad()(*a))(hvp_data(q)),
    "j Hessian": lambda q: (lambda a: lambda: s2sad.hessian(logreg)(*a))(logreg_data(q)),
    "k RK4 Lorenz": lambda q: (LORENZ.update(steps=10 if q else 1000)
                               or _cold_grad(lorenz, lorenz_data, (0, 1, 2))),
    "l TrainOneStepCell": _cold_train,
}
