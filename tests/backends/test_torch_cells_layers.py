"""Pooling, normalisation, dropout, embedding, recurrent and attention layers on
PyTorch data (``set_context(array_library="torch")``).

Each layer's output and its gradients with respect to the input and every
Parameter are compared with the NumPy run of the same Cell (same seed, same
weights); a few ``TrainOneStepCell`` steps give NumPy's losses and, for
BatchNorm, NumPy's moving statistics.  Dropout draws its masks from PyTorch's
generator, so it is checked by its statistics and by repeating a seed.
"""
import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install -e '.[torch]' runs these tests)")
pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")

import s2sad  # noqa: E402
from s2sad import ParameterTuple, Tensor, context, nn, ops  # noqa: E402


@pytest.fixture(autouse=True)
def numpy_afterwards():
    yield
    context.set_context(array_library=None)


def on(library):
    context.set_context(array_library=library)


class SelfAttention(nn.Cell):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(4, 2)

    def construct(self, x):
        out, weights = self.mha(x, x, x)
        return out + ops.mean(weights)


def floats(*shape):
    return np.random.RandomState(0).randn(*shape).astype(np.float32)


def ids(*shape):
    ids = np.random.RandomState(1).randint(0, 6, shape).astype(np.int32)
    ids[0, :2] = 3                                  # a repeated id: its rows add up
    return ids


#: layer -> (make the Cell, its input)
LAYERS = {
    "MaxPool2d": (lambda: nn.MaxPool2d(2, 2), floats(2, 3, 6, 6)),
    "MaxPool2d-same": (lambda: nn.MaxPool2d(3, 2, pad_mode="same"), floats(2, 3, 7, 6)),
    "MaxPool2d-pad": (lambda: nn.MaxPool2d(3, 1, pad_mode="pad", padding=1), floats(1, 2, 5, 5)),
    "MaxPool2d-ties": (lambda: nn.MaxPool2d(3, 2, pad_mode="same"),    # first maximum wins
                       np.round(floats(2, 2, 7, 6) / 2)),
    "AvgPool2d": (lambda: nn.AvgPool2d(2, 2), floats(2, 3, 6, 6)),
    "AvgPool2d-same": (lambda: nn.AvgPool2d(3, 2, pad_mode="same"), floats(2, 3, 7, 6)),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((4, 3)), floats(2, 3, 6, 7)),
    "AdaptiveAvgPool2d-global": (lambda: nn.AdaptiveAvgPool2d(1), floats(2, 3, 5, 4)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(4, moving_mean_init="normal",
                                           moving_var_init="ones"), floats(5, 4)),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3, gamma_init="normal", beta_init="normal"),
                    floats(2, 3, 4, 4)),
    "LayerNorm": (lambda: nn.LayerNorm((4,), gamma_init="normal", beta_init="normal"),
                  floats(3, 5, 4)),
    "Dropout-eval": (lambda: nn.Dropout(p=0.3), floats(3, 4)),
    "LSTM": (lambda: nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True),
             floats(2, 5, 3)),
    "GRU": (lambda: nn.GRU(3, 4, batch_first=True), floats(2, 5, 3)),
    "RNN": (lambda: nn.RNN(3, 4, nonlinearity="relu"), floats(5, 2, 3)),
    "MultiheadAttention": (SelfAttention, floats(3, 2, 4)),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(4, 2, 8), floats(3, 2, 4)),
    "GELU": (lambda: nn.GELU(), floats(3, 4) * 2),
    "GELU-tanh": (lambda: nn.GELU(approximate=True), floats(3, 4) * 2),
    "ELU": (lambda: nn.ELU(0.6), floats(3, 4) * 2),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.3), floats(3, 4)),
    "ReLU6": (lambda: nn.ReLU6(), floats(3, 4) * 5),
}


def first(out):
    return out[0] if isinstance(out, tuple) else out


def layer_gradients(library, name):
    """[loss, d input, d each Parameter] of a loss that is no quadratic of the output
    (a normalised output's sum of squares would have zero gradients)."""
    on(library)
    s2sad.set_seed(4)
    make, x = LAYERS[name]
    net = make()

    def loss(x):
        out = first(net(x))
        return (ops.tanh(out) * (out + 0.3)).sum()
    weights = ParameterTuple(net.trainable_params())
    value, (gx, gw) = s2sad.value_and_grad(loss, 0, weights)(Tensor(x))
    return [value, gx] + list(gw)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_value_and_gradients_on_torch_match_numpy(name):
    got = layer_gradients("torch", name)
    expected = layer_gradients("numpy", name)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert type(g._data) is torch.Tensor and g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-4, atol=1e-5)
    assert np.any(got[1].asnumpy() != 0)


def embedding_gradient(library):
    on(library)
    s2sad.set_seed(4)
    net = nn.Embedding(6, 3)

    def loss(x):
        return (ops.tanh(net(x)) * 2).sum()
    value, (grad,) = s2sad.value_and_grad(loss, None, ParameterTuple(net.trainable_params()))(
        Tensor(ids(2, 4)))
    return value, grad


def test_embedding_table_gradient_adds_repeated_ids_as_numpy_does():
    value, grad = embedding_gradient("torch")
    value_np, grad_np = embedding_gradient("numpy")
    assert type(grad._data) is torch.Tensor and grad.shape == (6, 3)
    np.testing.assert_allclose(float(value), float(value_np), rtol=1e-5)
    np.testing.assert_allclose(grad.asnumpy(), grad_np.asnumpy(), rtol=1e-5, atol=1e-7)


def test_max_pool_second_order_matches_numpy():
    """Forward over reverse: the gradient of <grad f(x), v> reads MaxPool's tangent map
    (``nn_max_pool_grad_grad``)."""
    def hvp(library):
        on(library)
        pool = nn.MaxPool2d(3, 2, pad_mode="same")
        v = Tensor(floats(1, 2, 5, 5)[:, :, ::-1].copy())

        def f(x):
            return (pool(x) ** 3).sum()
        grad_f = s2sad.grad(f)

        def directional(x):
            return (grad_f(x) * v).sum()
        return s2sad.grad(directional)(Tensor(floats(1, 2, 5, 5)))
    got, expected = hvp("torch"), hvp("numpy")
    assert type(got._data) is torch.Tensor
    np.testing.assert_allclose(got.asnumpy(), expected.asnumpy(), rtol=1e-4, atol=1e-5)
    assert np.any(expected.asnumpy() != 0)


def test_forward_mode_through_pooling_and_normalisation_matches_numpy():
    """The JVP rules of the layers (MaxPool's reads its tangent at each window's maximum)."""
    def tangents(library):
        on(library)
        s2sad.set_seed(2)
        net = nn.SequentialCell([nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.MaxPool2d(2, 2),
                                 nn.AvgPool2d(1, 1), nn.Flatten(), nn.LayerNorm((12,))])

        def f(x):
            return ops.tanh(net(x))
        x, v = floats(2, 2, 4, 4), floats(2, 2, 4, 4)[::-1].copy()
        if library == "torch":
            x, v = torch.as_tensor(x), torch.as_tensor(v)
        out, tangent = s2sad.jvp(f, (x,), (v,))
        return [getattr(a, "numpy", lambda: a)() for a in (out, tangent)]
    got, expected = tangents("torch"), tangents("numpy")
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
    assert np.any(expected[1] != 0)


# ------------------------------------------------------------------ training
class ConvNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, pad_mode="same", has_bias=True)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2, 2)
        self.avg = nn.AvgPool2d(2, 1)
        self.adaptive = nn.AdaptiveAvgPool2d((2, 2))
        self.head = nn.SequentialCell([nn.Flatten(), nn.BatchNorm1d(16), nn.Dense(16, 3)])

    def construct(self, x):
        x = self.pool(ops.relu(self.bn(self.conv(x))))
        return self.head(self.adaptive(self.avg(x)))


class Tagger(nn.Cell):
    """Embedding -> LSTM -> LayerNorm -> Dense over the last step."""

    def __init__(self, rnn):
        super().__init__()
        self.embed = nn.Embedding(6, 5)
        self.rnn = rnn
        size = 4 * (2 if rnn.bidirectional else 1)
        self.norm = nn.LayerNorm((size,))
        self.head = nn.Dense(size, 3)

    def construct(self, ids):
        out = first(self.rnn(self.embed(ids)))
        return self.head(self.norm(out[:, -1]))


def train(library, make, x, steps=4):
    on(library)
    s2sad.set_seed(9)
    net = make()
    labels = Tensor(np.array([0, 2, 1, 2], np.int32)[:x.shape[0]])
    loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    step = nn.TrainOneStepCell(loss, nn.Momentum(net.trainable_params(), 0.1, 0.9))
    step.set_train()
    losses = [float(step(Tensor(x), labels)) for _ in range(steps)]
    net.set_train(False)
    return losses, net, net(Tensor(x))


def test_a_conv_net_with_batch_norm_and_pooling_trains_to_numpys_losses_and_statistics():
    got, net, out = train("torch", ConvNet, floats(4, 2, 6, 6))
    expected, net_np, out_np = train("numpy", ConvNet, floats(4, 2, 6, 6))
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    assert got[-1] < got[0]
    for bn, bn_np in ((net.bn, net_np.bn), (net.head[1], net_np.head[1])):
        for stat, stat_np in ((bn.moving_mean, bn_np.moving_mean),
                              (bn.moving_variance, bn_np.moving_variance)):
            assert type(stat._data) is torch.Tensor
            np.testing.assert_allclose(stat.asnumpy(), stat_np.asnumpy(), rtol=1e-4, atol=1e-6)
        assert np.any(bn.moving_mean.asnumpy() != 0)        # training moved them
    # evaluation mode normalises with the moving statistics, as NumPy's does
    assert type(out._data) is torch.Tensor
    np.testing.assert_allclose(out.asnumpy(), out_np.asnumpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("rnn", [lambda: nn.LSTM(5, 4, batch_first=True),
                                 lambda: nn.GRU(5, 4, batch_first=True, bidirectional=True),
                                 lambda: nn.RNN(5, 4, batch_first=True)],
                         ids=["LSTM", "GRU", "RNN"])
def test_an_embedding_and_recurrent_tagger_trains_to_numpys_losses(rnn):
    x = ids(4, 6)
    got, _, out = train("torch", lambda: Tagger(rnn()), x)
    expected, _, out_np = train("numpy", lambda: Tagger(rnn()), x)
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    assert got[-1] < got[0]
    np.testing.assert_allclose(out.asnumpy(), out_np.asnumpy(), rtol=1e-4, atol=1e-5)


def test_a_transformer_encoder_layer_trains_to_numpys_losses():
    class Encoder(nn.Cell):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
            self.head = nn.Dense(4, 3)

        def construct(self, x):
            return self.head(ops.mean(self.layer(x), 1))
    got, _, _ = train("torch", Encoder, floats(4, 3, 4))
    expected, _, _ = train("numpy", Encoder, floats(4, 3, 4))
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    assert got[-1] < got[0]


# ------------------------------------------------------------------ dropout
def dropout_value_and_grad(keep_prob=0.7, shape=(40, 50)):
    net = nn.Dropout(keep_prob=keep_prob)
    net.set_train()
    return s2sad.value_and_grad(lambda_sum(net))(Tensor(np.ones(shape, np.float32)))


def lambda_sum(net):
    def total(x):
        return net(x).sum()
    return total


def test_dropout_in_training_keeps_a_fraction_and_scales_it():
    on("torch")
    s2sad.set_seed(3)
    value, grad = dropout_value_and_grad(0.7)
    assert type(grad._data) is torch.Tensor and grad.shape == (40, 50)
    g = grad.asnumpy()
    kept = g != 0
    np.testing.assert_allclose(g[kept], 1 / 0.7, rtol=1e-6)     # the kept ones, scaled
    assert abs(kept.mean() - 0.7) < 4 * np.sqrt(0.7 * 0.3 / g.size)
    # the value and the gradient of one call share its mask
    np.testing.assert_allclose(float(value), g.sum(), rtol=1e-5)


def test_dropout_masks_repeat_with_the_seed_and_differ_between_calls():
    on("torch")
    s2sad.set_seed(3)
    first_mask = dropout_value_and_grad()[1].asnumpy()
    second_mask = dropout_value_and_grad()[1].asnumpy()
    s2sad.set_seed(3)
    again = dropout_value_and_grad()[1].asnumpy()
    np.testing.assert_array_equal(first_mask, again)
    assert np.any(first_mask != second_mask)


def test_eager_dropout_and_batch_norm_on_torch_tensors():
    on("torch")
    s2sad.set_seed(2)
    drop = nn.Dropout(p=0.5)
    drop.set_train()
    out = drop(Tensor(np.ones((8, 8), np.float32)))
    assert type(out._data) is torch.Tensor
    assert set(np.unique(out.asnumpy())) <= {0.0, 2.0}
    bn = nn.BatchNorm1d(3, momentum=0.5)
    bn.set_train()
    x = floats(6, 3)
    bn(Tensor(x))
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.5 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.asnumpy(), 0.5 + 0.5 * x.var(0, ddof=1),
                               rtol=1e-5)
