"""MultiheadAttention and TransformerEncoderLayer.

Forward values are compared with a NumPy reference written from the
documented equations (per-head scaled dot-product attention, masks, output
projection; residual blocks with LayerNorm); gradients of inputs and every
Parameter with float64 central finite differences of the layer run eagerly.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, ParameterTuple
from s2sad import driver as G

from gradcheck import numeric_grad
from test_nn_layers import check_cell, to_float64, t64


# ------------------------------------------------------------------ NumPy reference
def np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_mha(m, query, key, value, key_padding_mask=None, attn_mask=None, average=True):
    """Loop over batch and heads; inputs [seq, batch, embed] (or batch first as ``m``)."""
    if m.batch_first:
        query, key, value = (a.swapaxes(0, 1) for a in (query, key, value))
    e, h, hd = m.embed_dim, m.num_heads, m.head_dim
    if m.same_dims:
        w = m.in_proj_weight.asnumpy()
        wq, wk, wv = w[:e], w[e:2 * e], w[2 * e:]
    else:
        wq, wk, wv = (getattr(m, n + "_proj_weight").asnumpy() for n in "qkv")
    b = m.in_proj_bias.asnumpy() if m.has_bias else np.zeros(3 * e)
    q, k, v = query @ wq.T + b[:e], key @ wk.T + b[e:2 * e], value @ wv.T + b[2 * e:]
    tgt, batch, _ = query.shape
    src = key.shape[0]
    out = np.zeros((tgt, batch, e))
    weights = np.zeros((batch, h, tgt, src))
    for n in range(batch):
        for j in range(h):
            cols = slice(j * hd, (j + 1) * hd)
            s = q[:, n, cols] @ k[:, n, cols].T / np.sqrt(hd)
            if attn_mask is not None:
                am = attn_mask if attn_mask.ndim == 2 else attn_mask[n * h + j]
                s = np.where(am, -np.inf, s) if am.dtype == bool else s + am
            if key_padding_mask is not None:
                s = np.where(key_padding_mask[n][None, :], -np.inf, s)
            p = np_softmax(s)
            weights[n, j] = p
            out[:, n, cols] = p @ v[:, n, cols]
    out = out @ m.out_proj.weight.asnumpy().T
    if m.has_bias:
        out = out + m.out_proj.bias.asnumpy()
    if m.batch_first:
        out = out.swapaxes(0, 1)
    return out, (weights.mean(1) if average else weights)


def np_layer_norm(x, norm):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + norm.epsilon) * norm.gamma.asnumpy() + norm.beta.asnumpy()


def np_encoder_layer(layer, x, mask=None, padding=None):
    def dense(d, a):
        return a @ d.weight.asnumpy().T + d.bias.asnumpy()

    def sa(a):
        return np_mha(layer.self_attn, a, a, a, padding, mask)[0]

    def ff(a):
        return dense(layer.linear2, np.maximum(dense(layer.linear1, a), 0))
    if layer.norm_first:
        x = x + sa(np_layer_norm(x, layer.norm1))
        return x + ff(np_layer_norm(x, layer.norm2))
    x = np_layer_norm(x + sa(x), layer.norm1)
    return np_layer_norm(x + ff(x), layer.norm2)


def _randomise_biases(cell, seed=11):
    """Nonzero biases, so that the tests see them (they start at zero)."""
    rng = np.random.default_rng(seed)
    for p in cell.get_parameters():
        if "bias" in p.name or "beta" in p.name:
            p.set_data(rng.standard_normal(p.shape))
    return cell


# ------------------------------------------------------------------ MultiheadAttention
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kdim", [None, 3])
@pytest.mark.parametrize("average", [True, False])
def test_mha_forward_matches_numpy(batch_first, kdim, average):
    m = _randomise_biases(to_float64(nn.MultiheadAttention(4, 2, kdim=kdim, vdim=kdim,
                                                           batch_first=batch_first)))
    kd = kdim or 4
    lay = (lambda s, b, d: (b, s, d)) if batch_first else (lambda s, b, d: (s, b, d))
    q, k, v = t64(lay(3, 2, 4), 1), t64(lay(5, 2, kd), 2), t64(lay(5, 2, kd), 3)
    padding = np.array([[False] * 4 + [True], [False] * 5])
    attn_mask = np.triu(np.ones((3, 5), bool), 3)
    out, w = m(q, k, v, Tensor(padding), True, Tensor(attn_mask), average)
    exp_out, exp_w = np_mha(m, q.asnumpy(), k.asnumpy(), v.asnumpy(), padding, attn_mask,
                            average)
    assert out.shape == lay(3, 2, 4)
    assert w.shape == ((2, 3, 5) if average else (2, 2, 3, 5))
    np.testing.assert_allclose(out.asnumpy(), exp_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.asnumpy(), exp_w, rtol=1e-12, atol=1e-12)


def test_mha_float_and_per_head_masks_are_added():
    m = to_float64(nn.MultiheadAttention(4, 2))
    q = t64((3, 2, 4), 1)
    mask = np.random.default_rng(0).standard_normal((4, 3, 3))
    out, w = m(q, q, q, None, True, Tensor(mask), False)
    exp_out, exp_w = np_mha(m, *(q.asnumpy(),) * 3, None, mask, False)
    np.testing.assert_allclose(out.asnumpy(), exp_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.asnumpy(), exp_w, rtol=1e-12, atol=1e-12)
    out, none = m(q, q, q, need_weights=False)
    assert none is None


class _Attend(nn.Cell):
    def __init__(self, m, padding, mask):
        super().__init__()
        self.m = m
        self.padding = padding
        self.mask = mask

    def construct(self, q, k, v, float_mask):
        out, w = self.m(q, k, v, self.padding, True, self.mask)
        out2, _ = self.m(q, k, v, None, False, float_mask)
        return out, w, out2


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_gradients_match_finite_differences(batch_first):
    m = _randomise_biases(to_float64(nn.MultiheadAttention(4, 2, batch_first=batch_first)))
    shape = (2, 3, 4) if batch_first else (3, 2, 4)
    padding = Tensor(np.array([[False, False, True], [False, False, False]]))
    mask = Tensor(np.triu(np.ones((3, 3), bool), 1))
    float_mask = t64((3, 3), 9)
    check_cell(_Attend(m, padding, mask), t64(shape, 1), t64(shape, 2), t64(shape, 3),
               float_mask, rtol=1e-5, atol=1e-7)


def test_mha_gradient_with_s2sad_grad():
    m = to_float64(nn.MultiheadAttention(4, 2, kdim=3, vdim=2))
    q, k, v = t64((3, 2, 4), 1), t64((4, 2, 3), 2), t64((4, 2, 2), 3)

    def loss(q, k, v):
        out, w = m(q, k, v)
        return (out * out).sum() + (w * w).sum()

    got = s2sad.grad(loss, grad_position=(0, 1, 2))(q, k, v)
    for i, g in enumerate(got):
        expected = numeric_grad(lambda *a: loss(*a).asnumpy(), [q, k, v], i)
        np.testing.assert_allclose(g.asnumpy(), expected, rtol=1e-6, atol=1e-8)


def test_mha_parameters_and_unsupported_options():
    names = dict((n, p.shape) for n, p in nn.MultiheadAttention(8, 2).parameters_and_names())
    assert names == {"in_proj_weight": (24, 8), "in_proj_bias": (24,),
                     "out_proj.weight": (8, 8), "out_proj.bias": (8,)}
    names = dict((n, p.shape) for n, p in nn.MultiheadAttention(8, 2, kdim=3, vdim=5,
                                                                 has_bias=False)
                 .parameters_and_names())
    assert names == {"q_proj_weight": (8, 8), "k_proj_weight": (8, 3),
                     "v_proj_weight": (8, 5), "out_proj.weight": (8, 8)}
    for arg in ("add_bias_kv", "add_zero_attn"):
        with pytest.raises(NotImplementedError, match=arg):
            nn.MultiheadAttention(8, 2, **{arg: True})
    with pytest.raises(ValueError, match="num_heads"):
        nn.MultiheadAttention(8, 3)


# ------------------------------------------------------------------ TransformerEncoderLayer
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_forward_matches_numpy(norm_first, batch_first):
    layer = _randomise_biases(to_float64(nn.TransformerEncoderLayer(
        4, 2, dim_feedforward=6, norm_first=norm_first, batch_first=batch_first)))
    x = t64((2, 3, 4) if batch_first else (3, 2, 4), 1)
    mask = np.triu(np.full((3, 3), -np.inf), 1)
    padding = np.array([[False, False, True], [False, False, False]])
    got = layer(x, Tensor(mask), Tensor(padding))
    xs = x.asnumpy().swapaxes(0, 1) if batch_first else x.asnumpy()
    layer.self_attn.batch_first = False       # the reference takes [seq, batch, embed]
    try:
        expected = np_encoder_layer(layer, xs, mask, padding)
    finally:
        layer.self_attn.batch_first = batch_first
    if batch_first:
        expected = expected.swapaxes(0, 1)
    np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_encoder_layer_gradients_in_training(norm_first, activation):
    layer = _randomise_biases(to_float64(nn.TransformerEncoderLayer(
        4, 2, dim_feedforward=6, dropout=0.2, activation=activation, norm_first=norm_first)))
    layer.set_train(True)
    check_cell(layer, t64((3, 2, 4), 1), rtol=1e-5, atol=1e-7, dropout_seed=5)


def test_encoder_layer_compiles_once_for_two_lengths(monkeypatch):
    layer = to_float64(nn.TransformerEncoderLayer(4, 2, dim_feedforward=6))
    grad = ops.GradOperation(get_by_list=True)(layer, ParameterTuple(layer.trainable_params()))
    grad(t64((3, 2, 4), 1))
    calls = []
    real = G.compile_grad

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(G, "compile_grad", counted)
    grad(t64((6, 2, 4), 2))
    assert not calls


def test_encoder_layer_defaults_and_bad_activation():
    layer = nn.TransformerEncoderLayer(8, 2)
    assert layer.linear1.weight.shape == (2048, 8)
    assert layer.norm1.epsilon == 1e-5
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
