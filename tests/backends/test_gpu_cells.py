"""Cells on a GPU through PyTorch CUDA: ``set_context(device_target="GPU")``.

Skipped unless ``torch.cuda.is_available()``; on such a machine a small MLP
trains 5 steps on the GPU and gives the losses of the NumPy run.
"""
import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install -e '.[torch]' runs these tests)")
pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU available to PyTorch (torch.cuda.is_available() is False)",
                allow_module_level=True)

import s2sad  # noqa: E402
from s2sad import Tensor, context, nn  # noqa: E402


@pytest.fixture(autouse=True)
def cpu_afterwards():
    yield
    context.set_context(device_target="CPU", array_library=None)


def losses(device_target, steps=5):
    context.set_context(device_target=device_target)
    s2sad.set_seed(11)
    rng = np.random.RandomState(0)
    x = Tensor(rng.randn(16, 4).astype(np.float32))
    labels = Tensor(rng.randint(0, 3, 16).astype(np.int32))
    net = nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 3)])
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
