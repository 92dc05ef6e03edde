"""Tensors, Parameters and Cells holding PyTorch arrays: ``set_context(array_library="torch")``.

The CPU here runs the same code a GPU runs (``device_target="GPU"`` only
changes the device the data is made on; ``test_gpu_cells.py``).  Every
result is compared with the NumPy run of the same program.
"""
import os

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install -e '.[torch]' runs these tests)")
pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")

import s2sad  # noqa: E402
from s2sad import Parameter, ParameterTuple, Tensor, context, nn, ops  # noqa: E402
from s2sad.common.initializer import initializer  # noqa: E402


@pytest.fixture(autouse=True)
def numpy_afterwards():
    yield
    context.set_context(array_library=None)


def on(library):
    context.set_context(array_library=library)


# ------------------------------------------------------------------ Tensors
def test_tensors_made_under_the_option_hold_torch_data_with_mindspore_dtypes():
    on("torch")
    t = Tensor([1.0, 2.0, 3.0])
    assert type(t._data) is torch.Tensor and t._data.device.type == "cpu"
    assert t.dtype == s2sad.float32 and t.shape == (3,) and t.size == 3 and t.ndim == 1
    assert Tensor(np.ones(2)).dtype == s2sad.float64        # an ndarray keeps its dtype
    assert Tensor([1, 2]).dtype == s2sad.int64
    assert Tensor(np.ones(2), s2sad.float16)._data.dtype == torch.float16
    p = Parameter(np.zeros((2, 3), np.float32), name="w")
    assert type(p._data) is torch.Tensor
    assert repr(p) == "Parameter (name=w, shape=(2, 3), dtype=Float32, requires_grad=True)"
    on("numpy")
    assert type(Tensor([1.0])._data) is np.ndarray       # the default is NumPy again


def test_asnumpy_copies_back_and_repr_reads_like_numpys():
    on("torch")
    t = Tensor(np.array([[1.5, -2.0], [0.25, 4.0]], np.float32))
    a = t.asnumpy()
    assert type(a) is np.ndarray and a.dtype == np.float32
    a[0, 0] = 99.0
    assert t.asnumpy()[0, 0] == 1.5                     # a copy
    shown = repr(t)
    on("numpy")
    assert shown == repr(Tensor(np.array([[1.5, -2.0], [0.25, 4.0]], np.float32)))
    assert float(Tensor(np.float32(2.5))) == 2.5


def test_eager_arithmetic_matches_numpy_and_stays_torch():
    a = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    b = np.array([[0.5, 4.0], [-1.0, 2.0]], np.float32)

    def compute(x, y):
        return [x + y, x - 1, 2 - x, x * y, x / y, 1 / y, x @ y, x ** 2, -x, abs(x),
                x > y, x.sum(), x.sum(axis=1, keepdims=True), x.mean(0), x.max(), x.min(1),
                x.reshape(4), x.T, x.transpose(1, 0), x.expand_dims(0).squeeze(),
                x.astype(s2sad.float64), x.exp(), y.abs().sqrt(), x.square(), x[1], x.copy()]
    on("torch")
    got = compute(Tensor(a), Tensor(b))
    on("numpy")
    expected = compute(Tensor(a), Tensor(b))
    for g, e in zip(got, expected):
        assert type(g._data) is torch.Tensor
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-6)


def test_mixing_libraries_eagerly_is_refused():
    on("torch")
    t = Tensor([1.0, 2.0])
    on("numpy")
    n = Tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="mixes torch data on cpu with a NumPy array"):
        t + n
    with pytest.raises(TypeError, match="mixes torch data on cpu with a NumPy array"):
        n * t
    with pytest.raises(TypeError, match="NumPy's sin was called on a Tensor holding torch"):
        np.sin(t)
    with pytest.raises(TypeError, match="asnumpy"):
        np.asarray(t)
    with pytest.raises(TypeError, match="mixes torch data on cpu with a NumPy array"):
        ops.Add()(t, n)
    with pytest.raises(TypeError, match="mixes torch data on cpu with a NumPy array"):
        t[0] = n[0]
    with pytest.raises(TypeError, match="cannot write torch data into a Tensor holding NumPy"):
        n[0] = t[0]
    t[1] = 5.0
    assert t.tolist() == [1.0, 5.0]
    meta = Tensor(torch.ones(2, device="meta"))
    with pytest.raises(TypeError, match="mixes torch data on cpu with torch data on meta"):
        t + meta


def square_sum(x):
    return (x * x).sum()


def test_a_plain_functions_prepared_call_path_is_not_taken_by_torch_tensors():
    """After calls with NumPy Tensors (which prepare a per-call path), a Tensor of torch
    data runs the code compiled for torch, not NumPy's."""
    grad = ops.GradOperation()(square_sum)
    x = np.array([1.0, -2.0, 0.5], np.float32)
    for _ in range(3):
        assert type(grad(Tensor(x))._data) is np.ndarray
    on("torch")
    g = grad(Tensor(x))
    assert type(g._data) is torch.Tensor and g.dtype == s2sad.float32
    np.testing.assert_allclose(g.asnumpy(), 2 * x)
    assert s2sad.get_source(grad).startswith("# runs on torch arrays (cpu)")
    on("numpy")
    assert type(grad(Tensor(x))._data) is np.ndarray


def test_an_option_value_that_is_not_a_library_is_refused():
    with pytest.raises(ValueError, match="'array_library' must be one of 'numpy', 'torch'"):
        context.set_context(array_library="cupy")
    with pytest.raises(ValueError, match="array_library='numpy' cannot hold data on the GPU"):
        context.set_context(device_target="GPU", array_library="numpy")
    assert context.array_target is None


# ------------------------------------------------------------------ Cells
class MLP(nn.Cell):
    def __init__(self, act=nn.Tanh):
        super().__init__()
        self.d1, self.act, self.d2 = nn.Dense(3, 5), act(), nn.Dense(5, 3)

    def construct(self, x):
        return self.d2(self.act(self.d1(x)))


def data():
    rng = np.random.RandomState(0)
    x = rng.randn(8, 3).astype(np.float32)
    labels = rng.randint(0, 3, 8).astype(np.int32)
    return x, labels


def gradients(library, act=nn.Tanh):
    on(library)
    s2sad.set_seed(3)
    x, labels = data()
    net = MLP(act)
    loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    weights = ParameterTuple(net.trainable_params())
    grads = ops.GradOperation(get_by_list=True)(loss, weights)(Tensor(x), Tensor(labels))
    value, (gx,), wgrads = _value_and_grad(loss, weights, Tensor(x), Tensor(labels))
    return grads, value, gx, wgrads


def _value_and_grad(loss, weights, x, labels):
    value, (inputs, weight_grads) = s2sad.value_and_grad(loss, 0, weights)(x, labels)
    return value, (inputs,), weight_grads


@pytest.mark.parametrize("act", [nn.Tanh, nn.ReLU, nn.Sigmoid])
def test_cell_gradients_with_torch_parameters_match_numpy(act):
    got = gradients("torch", act)
    expected = gradients("numpy", act)
    for g, e in zip(got[0], expected[0]):
        assert type(g._data) is torch.Tensor and g.dtype == e.dtype == s2sad.float32
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-5, atol=1e-7)
    assert type(got[1]._data) is torch.Tensor
    np.testing.assert_allclose(float(got[1]), float(expected[1]), rtol=1e-6)
    np.testing.assert_allclose(got[2].asnumpy(), expected[2].asnumpy(), rtol=1e-5, atol=1e-7)
    for g, e in zip(got[3], expected[3]):
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-5, atol=1e-7)


def test_the_compiled_code_says_it_runs_on_torch():
    on("torch")
    loss = nn.WithLossCell(MLP(), nn.MSELoss())
    grad = ops.GradOperation(get_by_list=True)(loss, ParameterTuple(loss.trainable_params()))
    x = Tensor(np.ones((2, 3), np.float32))
    y = Tensor(np.zeros((2, 3), np.float32))
    grad(x, y)
    assert s2sad.get_source(grad, x, y).splitlines()[0] == "# runs on torch arrays (cpu), op by op"


def test_a_cell_made_before_the_option_is_refused_with_torch_inputs():
    net = MLP()                                  # NumPy Parameters
    on("torch")
    x = Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"reads NumPy data when it runs \(.*d1.*\), but its "
                                        r"other data is torch arrays on cpu.*set_context"):
        ops.GradOperation(get_by_list=True)(net, ParameterTuple(net.trainable_params()))(x)


def test_torch_parameters_with_numpy_inputs_are_refused():
    on("torch")
    net = MLP()
    on("numpy")
    with pytest.raises(TypeError, match="mix torch arrays with an s2sad Tensor"):
        ops.GradOperation(get_by_list=True)(net, ParameterTuple(net.trainable_params()))(
            Tensor(np.ones((2, 3), np.float32)))


class Scaled(nn.Cell):
    """Reads its input and Parameters from attributes: its only argument is a number,
    so the arguments alone do not say which library the code must be compiled for."""

    def __init__(self):
        super().__init__()
        self.net = MLP()
        self.x = Tensor(np.ones((2, 3), np.float32))

    def construct(self, scale):
        return (self.net(self.x) * scale).sum()


def test_switching_the_option_compiles_for_each_library():
    for library in ("torch", "numpy", "torch", "numpy"):
        on(library)
        s2sad.set_seed(0)
        cell = Scaled()
        grads = ops.GradOperation(get_by_list=True)(cell, ParameterTuple(cell.trainable_params()))(
            2.0)
        want = np.ndarray if library == "numpy" else torch.Tensor
        assert all(type(g._data) is want for g in grads)
        if library == "torch":
            expected = [g.asnumpy() for g in grads]
        else:
            for g, e in zip(grads, expected):
                np.testing.assert_allclose(g.asnumpy(), e, rtol=1e-5, atol=1e-7)


def training_losses(library, optimizer, loss_fn, labels_of, steps=5):
    on(library)
    s2sad.set_seed(7)
    x, labels = data()
    net = MLP(nn.ReLU)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer(net.trainable_params()))
    step.set_train()
    out = [float(step(Tensor(x), Tensor(labels_of(labels)))) for _ in range(steps)]
    assert all(type(p._data) is (torch.Tensor if library == "torch" else np.ndarray)
               for p in net.trainable_params())
    return out


OPTIMIZERS = {"SGD": lambda p: nn.SGD(p, 0.1, momentum=0.5),
              "Momentum": lambda p: nn.Momentum(p, 0.1, 0.9),
              "Adam": lambda p: nn.Adam(p, 0.01, weight_decay=1e-3)}
LOSSES = {"sparse-ce": (lambda: nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                        lambda labels: labels),
          "mse": (nn.MSELoss, lambda labels: np.eye(3, dtype=np.float32)[labels])}


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_training_an_mlp_gives_numpys_losses(opt, loss):
    make_loss, labels_of = LOSSES[loss]
    got = training_losses("torch", OPTIMIZERS[opt], make_loss(), labels_of)
    expected = training_losses("numpy", OPTIMIZERS[opt], make_loss(), labels_of)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert got[-1] < got[0]


def test_an_op_without_a_torch_implementation_names_itself_and_the_option():
    on("torch")
    with pytest.raises(TypeError, match="primitive ArgMaxWithValue has no implementation for "
                                        "torch arrays.*array_library='numpy'"):
        ops.argmax_with_value(Tensor(np.ones((2, 4), np.float32)), 1)


def conv_gradients(library, pad_mode, stride):
    on(library)
    s2sad.set_seed(2)
    x = Tensor(np.random.RandomState(0).randn(2, 3, 7, 6).astype(np.float32))
    net = nn.SequentialCell([nn.Conv2d(3, 4, 3, stride=stride, pad_mode=pad_mode, padding=(
        1 if pad_mode == "pad" else 0), has_bias=True), nn.ReLU(), nn.Flatten()])

    def loss(x):
        return (net(x) ** 2).sum()
    value, (gx, gw) = s2sad.value_and_grad(loss, 0, ParameterTuple(net.trainable_params()))(x)
    return [value, gx] + list(gw)


@pytest.mark.parametrize("pad_mode,stride", [("same", 1), ("same", 2), ("valid", 2),
                                             ("pad", 1)])
def test_conv2d_gradients_on_torch_match_numpy(pad_mode, stride):
    got = conv_gradients("torch", pad_mode, stride)
    expected = conv_gradients("numpy", pad_mode, stride)
    for g, e in zip(got, expected):
        assert type(g._data) is torch.Tensor and g.shape == e.shape
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------ initializers
def test_initializers_and_layers_make_torch_data_and_checkpoints_are_numpy(tmp_path):
    on("torch")
    s2sad.set_seed(5)
    w = initializer("normal", (4, 3))
    dense = nn.Dense(3, 4, weight_init="normal")
    assert type(w._data) is torch.Tensor and w.dtype == s2sad.float32
    assert type(dense.weight._data) is torch.Tensor
    assert type(initializer(w, (4, 3))._data) is torch.Tensor
    path = os.path.join(tmp_path, "dense.ckpt")
    s2sad.save_checkpoint(dense, path)
    saved = s2sad.load_checkpoint(path)
    assert all(type(v._data) is torch.Tensor for v in saved.values())
    on("numpy")
    s2sad.set_seed(5)
    np.testing.assert_array_equal(w.asnumpy(), initializer("normal", (4, 3)).asnumpy())
    with np.load(path, allow_pickle=False) as archive:     # NumPy arrays inside
        arrays = {k: archive[k] for k in archive.files}
    np.testing.assert_array_equal(next(a for a in arrays.values() if a.shape == (4, 3)),
                                  dense.weight.asnumpy())
