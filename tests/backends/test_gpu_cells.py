"""Cells on a GPU through PyTorch CUDA: ``set_context(device_target="GPU")``.

Skipped unless ``torch.cuda.is_available()``; on such a machine a small MLP,
a convolutional net with batch normalisation and pooling, and an
Embedding-LSTM tagger train 5 steps on the GPU and give the losses of the
NumPy run; Dropout draws its masks there.
"""
import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install -e '.[torch]' runs these tests)")
pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")
if not torch.cuda.is_available():
    pytest.skip("PyTorch sees no CUDA GPU (torch.cuda.is_available() is False): these checks run "
                "where one is (docs/backends.md, 'GPUs')",
                allow_module_level=True)

import s2sad  # noqa: E402
from s2sad import Tensor, context, nn, ops  # noqa: E402


@pytest.fixture(autouse=True)
def cpu_afterwards():
    yield
    context.set_context(device_target="CPU", array_library=None)


def mlp():
    return nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 3)])


def mlp_input(rng):
    return rng.randn(16, 4).astype(np.float32)


def losses(device_target, steps=5, make=mlp, make_input=mlp_input):
    context.set_context(device_target=device_target)
    s2sad.set_seed(11)
    rng = np.random.RandomState(0)
    x = Tensor(make_input(rng))
    labels = Tensor(rng.randint(0, 3, 16).astype(np.int32))
    net = make()
    loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    step = nn.TrainOneStepCell(loss, nn.Momentum(net.trainable_params(), 0.1, 0.9))
    out = [float(step(x, labels)) for _ in range(steps)]
    return out, net


def test_an_mlp_trains_on_the_gpu_with_numpys_losses():
    got, net = losses("GPU")
    assert all(p._data.device.type == "cuda" for p in net.trainable_params())
    expected, _ = losses("CPU")
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    assert got[-1] < got[0]


def test_tensors_are_made_on_the_gpu_and_read_back():
    context.set_context(device_target="GPU")
    t = Tensor([1.0, 2.0, 3.0])
    assert t._data.device.type == "cuda" and t.dtype == s2sad.float32
    np.testing.assert_allclose((t * 2 + 1).asnumpy(), [3.0, 5.0, 7.0])


class ConvNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, pad_mode="same")
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(3, 2, pad_mode="same")
        self.avg = nn.AdaptiveAvgPool2d(2)
        self.head = nn.Dense(16, 3)

    def construct(self, x):
        x = self.avg(self.pool(ops.relu(self.bn(self.conv(x)))))
        return self.head(ops.reshape(x, (x.shape[0], -1)))


class Tagger(nn.Cell):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(7, 5)
        self.lstm = nn.LSTM(5, 6, batch_first=True)
        self.norm = nn.LayerNorm((6,))
        self.head = nn.Dense(6, 3)

    def construct(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(self.norm(out[:, -1]))


LAYER_NETS = {"conv-batchnorm-pooling": (ConvNet, lambda rng: rng.randn(16, 2, 6, 6).astype(
                  np.float32)),
              "embedding-lstm-layernorm": (Tagger, lambda rng: rng.randint(0, 7, (16, 5)).astype(
                  np.int32))}


@pytest.mark.parametrize("name", sorted(LAYER_NETS))
def test_pooling_normalisation_and_recurrent_layers_train_on_the_gpu_with_numpys_losses(name):
    make, make_input = LAYER_NETS[name]
    got, net = losses("GPU", make=make, make_input=make_input)
    assert all(p._data.device.type == "cuda" for p in net.get_parameters())
    expected, net_np = losses("CPU", make=make, make_input=make_input)
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    assert got[-1] < got[0]
    if name.startswith("conv"):         # the moving statistics moved as on the CPU
        np.testing.assert_allclose(net.bn.moving_mean.asnumpy(),
                                   net_np.bn.moving_mean.asnumpy(), rtol=1e-4, atol=1e-6)


def test_dropout_draws_its_masks_on_the_gpu():
    context.set_context(device_target="GPU")
    s2sad.set_seed(1)
    drop = nn.Dropout(p=0.25)
    drop.set_train()
    out = drop(Tensor(np.ones((64, 64), np.float32)))
    assert out._data.device.type == "cuda"
    kept = out.asnumpy() != 0
    np.testing.assert_allclose(out.asnumpy()[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 4 * np.sqrt(0.75 * 0.25 / kept.size)
