"""``import s2sad`` stays cheap: optional libraries are imported when first used.

SciPy alone took a third of a second to import, paid by every ``s2sad``
command and every program, most of which never call ``erf``.
"""
import subprocess
import sys

from repo import ROOT


def test_importing_s2sad_imports_no_optional_library():
    probe = ("import sys, s2sad; "
             "print(sorted(m for m in ('scipy', 'pygments', 'torch', 'jax') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _run(probe, tmp_path):
    """What the script ``probe`` prints, run in a fresh process (a file: s2sad reads its source)."""
    script = tmp_path / "probe.py"
    script.write_text(probe)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# what ``import s2sad`` and a first gradient of a NumPy function leave unloaded
LAZY = ("s2sad.nn.layer", "s2sad.nn.loss", "s2sad.nn.optim", "s2sad.nn.wrap",
        "s2sad.nn.metrics", "s2sad.train", "s2sad.dataset", "s2sad.communication",
        "s2sad.highlight", "numpy.random", "difflib", "html")


def test_importing_s2sad_leaves_nn_train_dataset_and_numpy_random_unloaded(tmp_path):
    probe = ("import sys, numpy as np, s2sad\n"
             "first = sorted(m for m in %r if m in sys.modules)\n"
             "def f(x):\n"
             "    return np.sum(np.tanh(x) * x)\n"
             "g = s2sad.grad(f)(np.ones(3))\n"
             "print(first, sorted(m for m in %r if m in sys.modules))" % (LAZY, LAZY))
    assert _run(probe, tmp_path) == "[] []"


def test_lazily_loaded_names_are_the_same_objects_under_every_path(tmp_path):
    probe = """
import s2sad as mindspore
from mindspore.nn.loss import MSELoss
from mindspore import nn, Model
import mindspore.train.model
import s2sad.nn.loss, s2sad.train
from s2sad.nn import *
ok = [MSELoss is s2sad.nn.loss.MSELoss, nn.MSELoss is MSELoss, Dense is nn.layer.Dense,
      Model is s2sad.train.Model, mindspore.train.model is s2sad.train.model,
      s2sad.nn.loss.__spec__.name == "s2sad.nn.loss", "Dense" in dir(nn),
      "Model" in dir(s2sad), s2sad.dataset.NumpySlicesDataset.__module__ == "s2sad.dataset.datasets"]
try:
    nn.NoSuchLayer
except AttributeError:
    ok.append(True)
print(ok)
"""
    assert _run(probe, tmp_path) == str([True] * 10)


def test_numpy_random_imported_after_a_first_gradient_still_draws_on_every_call(tmp_path):
    # the first gradient is compiled before anything imports numpy.random; the
    # draws of the second must then run on each call, not fold to constants
    probe = """
import sys
import numpy as np
import s2sad

def square(x):
    return np.sum(x * x)

def noisy(x):
    rng = np.random.default_rng(1)      # a new generator on every call
    return np.sum(x * rng.uniform(size=x.shape)) + np.sum(x * np.random.uniform(size=x.shape))

x = np.ones(3)
s2sad.grad(square)(x)
before = "numpy.random" in sys.modules
grad = s2sad.grad(noisy)
np.random.seed(0)
g1 = grad(x)
g2 = grad(x)
np.random.seed(0)
u = np.random.default_rng(1).uniform(size=3)
print(before, np.allclose(g1, u + np.random.uniform(size=3)),
      np.allclose(g2, u + np.random.uniform(size=3)))
"""
    assert _run(probe, tmp_path) == "False True True"


def test_a_layer_loads_the_layers_only_and_each_submodule_loads_on_its_own_names(tmp_path):
    # a network built of layers does not pay for the optimizers, losses, wrappers,
    # metrics nor the distributed modules; each of those loads with its own names
    rest = ("s2sad.nn.loss", "s2sad.nn.optim", "s2sad.nn.wrap", "s2sad.nn.metrics",
            "s2sad.nn.grad_reducer", "s2sad.nn.loss_scale", "s2sad.communication")
    probe = """
import sys
from s2sad import nn
def loaded():
    return sorted(m for m in %r if m in sys.modules)
dense = nn.Dense
first = loaded()
sgd = nn.SGD
second = loaded()
from s2sad.nn import *
print(first, second, len(loaded()), "s2sad.nn.layer" in sys.modules,
      SGD is sgd, Dense is dense, nn.SGD.__module__, MSELoss is nn.loss.MSELoss)
""" % (rest,)
    assert _run(probe, tmp_path) == (
        "[] ['s2sad.nn.optim'] 7 True True True s2sad.nn.optim.sgd True")


def test_a_training_step_on_one_process_leaves_the_distributed_modules_unloaded(tmp_path):
    probe = """
import sys
import numpy as np
from s2sad import nn, Tensor
net = nn.WithLossCell(nn.Dense(3, 2), nn.MSELoss())
step = nn.TrainOneStepCell(net, nn.SGD(net.trainable_params(), learning_rate=0.1))
loss = step(Tensor(np.ones((4, 3), np.float32)), Tensor(np.zeros((4, 2), np.float32)))
print(np.isfinite(float(loss.asnumpy())),
      sorted(m for m in ("s2sad.nn.grad_reducer", "s2sad.communication") if m in sys.modules))
"""
    assert _run(probe, tmp_path) == "True []"
