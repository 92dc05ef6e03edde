"""MindSpore's import lines and ``set_context`` run unchanged on s2sad.

The import lines run in a fresh interpreter, as a user's script would: there
``import s2sad as mindspore`` is the first line and registers the package
under ``mindspore``.  ``save_graphs`` is checked against ``get_source`` and
``get_ir`` of the same gradient, and that gradient against its closed form.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import s2sad
import s2sad as mindspore
from mindspore import context, ops, nn  # noqa: E402
from s2sad import context as s2sad_context

from repo import ROOT


IMPORT_LINES = """\
import s2sad as mindspore
from mindspore import context
from mindspore import set_context, get_context, GRAPH_MODE, PYNATIVE_MODE
from mindspore import save_checkpoint, load_checkpoint, load_param_into_net
from mindspore.common import dtype as mstype
from mindspore.common.tensor import Tensor
from mindspore.common.parameter import Parameter, ParameterTuple
from mindspore.common.initializer import Normal
from mindspore.common import api
from mindspore.ops import operations as P
from mindspore.ops import functional as F
from mindspore.ops import composite as C
from mindspore.nn import layer, loss, optim, wrap
from mindspore.nn.loss import MSELoss
from mindspore.nn.optim import Momentum
from mindspore.nn.wrap import TrainOneStepCell
from mindspore import train
from mindspore.train import save_checkpoint, load_checkpoint, load_param_into_net
from mindspore.train.serialization import save_checkpoint
import mindspore.dataset as ds
from mindspore.dataset import NumpySlicesDataset, GeneratorDataset
import mindspore.context
import mindspore.common.dtype as mstype
import mindspore.ops as ops
import mindspore.nn as nn
context.set_context(mode=context.GRAPH_MODE, device_target="CPU")
mindspore.set_context(mode=mindspore.PYNATIVE_MODE)
assert mstype.float32 is mindspore.float32 and Tensor is mindspore.Tensor
assert Parameter is mindspore.Parameter and ParameterTuple is mindspore.ParameterTuple
assert P is ops.operations and F is ops.functional and C is ops.composite
assert C.GradOperation is ops.GradOperation
assert ds.NumpySlicesDataset is NumpySlicesDataset
print("imported")
"""


def _run(script):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


@pytest.fixture(autouse=True)
def fresh_context():
    """Every test starts from the default settings and an empty cache, and leaves them so."""
    s2sad_context._reset()
    s2sad.clear_caches()
    yield
    s2sad_context._reset()


def test_mindspore_import_lines_run_in_a_fresh_interpreter():
    done = _run(IMPORT_LINES)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "imported\n"


def test_each_import_path_names_the_same_objects():
    from s2sad.common import dtype, tensor, parameter
    assert dtype.float64 is s2sad.float64 and tensor.Tensor is s2sad.Tensor
    assert parameter.Parameter is s2sad.Parameter
    assert ops.P is ops.operations and ops.F is ops.functional and ops.C is ops.composite
    assert s2sad.context is context and s2sad.set_context is context.set_context
    assert s2sad.train.save_checkpoint is s2sad.save_checkpoint


def test_jit_imports_from_common_api():
    from mindspore.common.api import jit, ms_function, jit_class, ms_class
    assert (jit, ms_function, jit_class, ms_class) == (
        s2sad.jit, s2sad.ms_function, s2sad.jit_class, s2sad.ms_class)
    assert not hasattr(s2sad.common.api, "something_else")


# ------------------------------------------------------------------ context
def test_defaults_and_modes_are_recorded():
    assert context.get_context("mode") == context.PYNATIVE_MODE == 1
    assert context.GRAPH_MODE == 0 and s2sad.GRAPH_MODE == 0
    assert context.get_context("device_target") == "CPU"
    context.set_context(mode=context.GRAPH_MODE, device_target="CPU", device_id=0)
    assert mindspore.get_context("mode") == mindspore.GRAPH_MODE


def test_both_modes_run_the_same_gradient():
    def f(x):
        return np.sin(x) * x

    x = np.linspace(-1.0, 1.0, 5)
    closed = np.cos(x) * x + np.sin(x)
    for mode in (context.GRAPH_MODE, context.PYNATIVE_MODE):
        context.set_context(mode=mode)
        np.testing.assert_allclose(ops.GradOperation()(f)(x), closed, rtol=1e-12)


@pytest.mark.parametrize("key,value", [
    ("max_call_depth", 10000), ("pynative_synchronize", True), ("enable_graph_kernel", True),
    ("jit_config", {"jit_level": "O1"}), ("device_id", 3), ("graph_kernel_flags", "--x"),
    ("enable_compile_cache", True)])
def test_other_keys_are_accepted_and_recorded(key, value):
    context.set_context(**{key: value})
    assert context.get_context(key) == value


def test_ascend_is_refused_saying_what_is_available():
    with pytest.raises(ValueError, match="the CPU, or on a GPU through PyTorch"):
        context.set_context(device_target="Ascend")
    assert context.get_context("device_target") == "CPU"


def test_a_gpu_without_cuda_torch_is_refused_saying_what_to_install():
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if gpu:
        pytest.skip("PyTorch sees a CUDA GPU here, so device_target='GPU' is accepted and its "
                    "refusal cannot happen; tests/backends/test_gpu_cells.py checks the GPU instead")
    with pytest.raises(ValueError, match="device_target='GPU' needs .*(CUDA|GPU)"):
        context.set_context(device_target="GPU")
    assert context.get_context("device_target") == "CPU"
    assert context.array_target is None


def test_unknown_targets_modes_and_keys_raise_value_error():
    with pytest.raises(ValueError, match="'device_target' must be one of"):
        context.set_context(device_target="TPU")
    with pytest.raises(ValueError, match="GRAPH_MODE"):
        context.set_context(mode=2)
    with pytest.raises(ValueError, match="'save_graph' is not recognized.*'save_graphs'"):
        context.set_context(save_graph=True)
    with pytest.raises(ValueError, match="'nope' is not recognized"):
        context.get_context("nope")


def test_a_failing_call_sets_nothing():
    with pytest.raises(ValueError):
        context.set_context(mode=context.GRAPH_MODE, device_id=5, devicetarget="CPU")
    assert context.get_context("mode") == context.PYNATIVE_MODE
    assert context.get_context("device_id") == 0


# -------------------------------------------------------------- save_graphs
def _cube_grad():
    def cube(x):
        return x * x * x

    return ops.GradOperation()(cube)


def test_save_graphs_writes_each_compiled_gradient_source_and_ir(tmp_path):
    folder = tmp_path / "graphs"                     # created on the first compile
    context.set_context(save_graphs=True, save_graphs_path=str(folder))
    grad = _cube_grad()
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(grad(x), 3 * x * x, rtol=1e-12)
    files = sorted(os.listdir(folder))
    assert len(files) == 2 and files[0].endswith(".ir") and files[1].endswith(".py")
    assert files[0][:-3] == files[1][:-3] and "cube" in files[0]
    source = (folder / files[1]).read_text()
    ir = (folder / files[0]).read_text()
    assert source.rstrip("\n") == str(s2sad.get_source(grad)).rstrip("\n")
    assert s2sad.get_ir(grad) in ir and s2sad.get_ir(grad, stage="forward") in ir
    grad(np.ones(2))                                   # cached: nothing new is compiled
    assert len(os.listdir(folder)) == 2
    s2sad.clear_caches()
    grad(np.ones(2))                                   # compiled again: two files more
    later = sorted(set(os.listdir(folder)) - set(files))
    assert len(later) == 2 and later[0] > files[1]     # numbered on, nothing overwritten


def test_nothing_is_written_when_save_graphs_is_off(tmp_path):
    context.set_context(save_graphs_path=str(tmp_path / "graphs"))
    _cube_grad()(np.ones(3))
    assert not (tmp_path / "graphs").exists()


def test_cell_gradients_are_saved_too(tmp_path):
    context.set_context(save_graphs=1, save_graphs_path=str(tmp_path))

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = s2sad.Parameter(np.array([2.0, 3.0]), name="w")

        def construct(self, x):
            return (self.w * x).sum()

    net = Net()
    grads = ops.GradOperation(get_by_list=True)(net, s2sad.ParameterTuple([net.w]))(
        np.array([5.0, 7.0]))
    np.testing.assert_allclose(grads[0], [5.0, 7.0])
    written = os.listdir(tmp_path)
    assert len(written) == 2 and any("construct" in name for name in written)
