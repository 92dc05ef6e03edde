"""save_checkpoint / load_checkpoint / load_param_into_net: a safe .npz round trip.

Values and dtypes must come back exactly; the file is written to the very
path given and read without unpickling; a checkpoint that does not fit the
network is refused before any Parameter changes.
"""
import os
import zipfile

import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Parameter, ParameterTuple
from s2sad.train import save_checkpoint, load_checkpoint, load_param_into_net


class Net(nn.Cell):
    """Float32 layers with non-trainable state, a float64 and an int Parameter."""

    def __init__(self, width=3):
        super().__init__()
        self.fc = nn.Dense(width, 2)
        self.bn = nn.BatchNorm1d(2)
        self.scale = Parameter(np.linspace(0.5, 1.5, 2), name="scale")           # float64
        self.steps = Parameter(np.array([7, 8], np.int32), name="steps", requires_grad=False)

    def construct(self, x):
        return self.bn(self.fc(x)) * self.scale


class Outer(nn.Cell):
    """``Net`` one level down: its Parameters are named ``inner.fc.weight`` ..."""

    def __init__(self):
        super().__init__()
        self.inner = Net()

    def construct(self, x):
        return self.inner(x)


def _values(cell):
    return {name: p.asnumpy().copy() for name, p in cell.parameters_and_names()}


def _randomise(cell, seed):
    rng = np.random.default_rng(seed)
    for _, p in cell.parameters_and_names():
        # positive: BatchNorm's moving variance is under a square root
        p.set_data((rng.uniform(0.5, 10.0, p.shape)).astype(p.asnumpy().dtype))


@pytest.fixture
def saved(tmp_path):
    s2sad.set_seed(0)
    net = Net()
    _randomise(net, 1)
    path = str(tmp_path / "net.ckpt")
    save_checkpoint(net, path)
    return net, path


def test_round_trip_keeps_values_and_dtypes(saved):
    net, path = saved
    other = Net()
    _randomise(other, 2)
    assert load_param_into_net(other, load_checkpoint(path)) == ([], [])
    want, got = _values(net), _values(other)
    assert list(got) == list(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_array_equal(got[name], want[name])
    assert other.scale.dtype == s2sad.float64 and other.steps.dtype == s2sad.int32
    assert other.steps.requires_grad is False          # the network's flags stay


def test_the_file_is_written_at_exactly_the_given_path_as_a_plain_npz(saved, tmp_path):
    _net, path = saved
    assert os.listdir(tmp_path) == ["net.ckpt"]
    assert zipfile.is_zipfile(path)
    with np.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files) == sorted(_values(_net))


def test_load_checkpoint_returns_named_parameters_and_loads_a_net(saved):
    net, path = saved
    params = load_checkpoint(path)
    assert all(isinstance(p, Parameter) and p.name == name for name, p in params.items())
    other = Net()
    load_checkpoint(path, net=other)
    np.testing.assert_array_equal(other.fc.weight.asnumpy(), net.fc.weight.asnumpy())


def test_loaded_parameters_do_not_share_memory_with_the_dict(saved):
    _net, path = saved
    params = load_checkpoint(path)
    other = Net()
    load_param_into_net(other, params)
    other.fc.weight.asnumpy()[...] = 0.0
    assert np.any(params["fc.weight"].asnumpy() != 0.0)


def test_a_loaded_network_has_the_saved_networks_gradient(saved):
    net, path = saved
    other = Net()
    load_checkpoint(path, net=other)
    x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    grads = [ops.GradOperation(get_by_list=True)(n, ParameterTuple(n.trainable_params()))(x)
             for n in (net, other)]
    assert len(grads[0]) == 5
    for a, b in zip(*grads):
        assert np.all(np.isfinite(a))
        np.testing.assert_array_equal(a, b)


def test_what_was_not_loaded_is_reported_both_ways(saved):
    _net, path = saved
    params = load_checkpoint(path)
    params["extra"] = Parameter(np.zeros(3), name="extra")
    del params["scale"]
    other = Net()
    before = other.scale.asnumpy().copy()
    param_not_load, ckpt_not_load = load_param_into_net(other, params)
    assert param_not_load == ["scale"] and ckpt_not_load == ["extra"]
    np.testing.assert_array_equal(other.scale.asnumpy(), before)


def test_filter_prefix_leaves_names_out(saved):
    _net, path = saved
    assert sorted(load_checkpoint(path, filter_prefix="bn.")) == ["fc.bias", "fc.weight",
                                                                  "scale", "steps"]
    assert sorted(load_checkpoint(path, filter_prefix=["bn", "fc", "s"])) == []


def test_a_wrong_shape_is_an_error_naming_the_parameter_and_nothing_changes(saved, tmp_path):
    _net, path = saved
    wide = Net(width=5)
    before = _values(wide)
    with pytest.raises(ValueError, match=r"'fc\.weight' has shape \(2, 3\).*\(2, 5\)"):
        load_param_into_net(wide, load_checkpoint(path))
    for name, value in _values(wide).items():
        np.testing.assert_array_equal(value, before[name])


def test_another_dtype_is_cast_unless_strict(saved):
    _net, path = saved
    params = load_checkpoint(path)
    params["scale"] = Parameter(params["scale"].asnumpy().astype(np.float32), name="scale")
    other = Net()
    load_param_into_net(other, params)
    assert other.scale.dtype == s2sad.float64
    with pytest.raises(ValueError, match="'scale' is float32.*strict_load=False"):
        load_param_into_net(Net(), params, strict_load=True)


def test_a_wrapped_network_loads_by_dotted_suffix_unless_strict(saved):
    net, path = saved
    outer = Outer()
    assert load_param_into_net(outer, load_checkpoint(path)) == ([], [])
    np.testing.assert_array_equal(outer.inner.fc.weight.asnumpy(), net.fc.weight.asnumpy())
    param_not_load, ckpt_not_load = load_param_into_net(Outer(), load_checkpoint(path),
                                                        strict_load=True)
    assert len(param_not_load) == len(ckpt_not_load) == 8


def test_other_forms_of_save_obj(tmp_path):
    path = str(tmp_path / "list.ckpt")
    save_checkpoint([{"name": "a", "data": s2sad.Tensor(np.arange(3.0))},
                     {"name": "b", "data": np.int64(4)}], path)
    params = load_checkpoint(path)
    np.testing.assert_array_equal(params["a"].asnumpy(), [0.0, 1.0, 2.0])
    assert params["b"].asnumpy().dtype == np.int64 and params["b"].shape == ()
    save_checkpoint({"c": np.ones((2, 2), np.float16)}, path)
    assert load_checkpoint(path)["c"].dtype == s2sad.float16


def test_refused_inputs(tmp_path):
    with pytest.raises(TypeError, match="save_obj"):
        save_checkpoint(42, str(tmp_path / "x.ckpt"))
    with pytest.raises(TypeError, match="Python objects"):
        save_checkpoint({"o": np.array([object()])}, str(tmp_path / "x.ckpt"))
    with pytest.raises(TypeError, match="'net' must be a Cell"):
        load_param_into_net({}, {})
    with pytest.raises(TypeError, match="must be Parameters"):
        load_param_into_net(Net(), {"scale": np.zeros(2)})


def test_pickled_or_foreign_files_are_refused(tmp_path):
    pickled = str(tmp_path / "pickled.ckpt")
    with open(pickled, "wb") as handle:
        np.savez(handle, w=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="not a checkpoint written by s2sad.*pickle"):
        load_checkpoint(pickled)
    foreign = tmp_path / "mindspore.ckpt"
    foreign.write_bytes(b"\x0a\x05hello protobuf")
    with pytest.raises(ValueError, match="MindSpore's own .ckpt format cannot be read"):
        load_checkpoint(str(foreign))
    with pytest.raises(FileNotFoundError, match="missing.ckpt"):
        load_checkpoint(str(tmp_path / "missing.ckpt"))
