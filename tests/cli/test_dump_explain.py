"""``s2sad dump --explain`` describes every ``rt.<name>`` the generated code calls.

The descriptions are the runtime helpers' own docstrings (``backend/explain.py``):
every public helper must have one, and every helper a broad set of programs
calls -- the samples, generated programs (``program_gen``), higher orders and
forward mode, a convolutional network -- must be described in the legend.
"""
import glob
import os
import re

import pytest

from s2sad import cli
from s2sad.backend import explain

import program_gen

from repo import ROOT

NN = """\
import numpy as np
from s2sad import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode="same")
        self.pool = nn.MaxPool2d(2, 2)
        self.norm = nn.LayerNorm((2,), begin_norm_axis=-1, begin_params_axis=-1)
        self.dense = nn.Dense(8, 3)

    def construct(self, x):
        h = self.pool(ops.relu(self.conv(x)))
        h = self.norm(ops.transpose(h, (0, 2, 3, 1)))
        h = ops.reshape(h, (-1, 8))
        y = ops.softmax(self.dense(ops.sigmoid(h)), axis=-1)
        return ops.reduce_mean(ops.log_softmax(y, axis=-1) * ops.erf(y))
"""

#: (target, options) dumped; FILE is relative to the repository
SAMPLES = [
    ("samples/sin_cos_net.py::Net", []),
    ("samples/sin_cos_net.py::Net", ["--order", "3"]),
    ("samples/sin_cos_net.py::Net", ["--mode", "forward"]),
    ("samples/matmul_net.py::Net", ["--get-all", "--get-by-list", "--sens-param"]),
    ("samples/d2l_control_flow.py::f", []),
    ("samples/d2l_control_flow.py::f", ["--order", "2"]),
    ("samples/d2l_control_flow.py::f", ["--mode", "forward"]),
    ("samples/mlp_digits.py::MLP", ["--get-by-list"]),
    ("samples/paddle_higher_order.py::f", ["--order", "3"]),
    ("samples/paddle_higher_order.py::dddf", []),
    ("samples/paddle_higher_order.py::func", ["--mode", "forward"]),
]

SEEDS = range(8)


def explained(capsys, target, options):
    code = cli.main(["dump", target, "--explain", "--color", "never"] + options)
    out, err = capsys.readouterr()
    assert code == 0, (target, options, err)
    return out


def assert_described(text):
    """Each ``rt.<name>`` in ``text``'s code has a legend line with a description."""
    names = explain.helpers_in(text)
    for name in names:
        m = re.search(r"^#   rt\.%s: (.+)$" % re.escape(name), text, re.M)
        assert m and m.group(1) != "(not described)", (name, text[-2000:])
    return set(names)


def test_every_public_runtime_helper_has_a_description():
    names = explain.public_helpers()
    assert {"unbroadcast", "sum_seed", "spare", "UNDEFINED", "ShapeOf"} <= set(names)
    assert "np" not in names and "prod" not in names     # imported, not the runtime's own
    for name in names:
        text = explain.describe(name)
        assert text and len(text) > 10 and "\n" not in text, name


def test_every_helper_named_in_s2sad_is_a_public_runtime_helper():
    """Emit templates and codegen write ``rt.<name>`` as text: each must exist."""
    public = set(explain.public_helpers())
    for path in glob.glob(os.path.join(ROOT, "s2sad", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            for name in re.findall(r"\brt\.([A-Za-z_]\w*)", f.read()):
                assert name in public, (path, name)


def test_explain_describes_the_helpers_of_the_samples(capsys):
    seen = set()
    for target, options in SAMPLES:
        seen |= assert_described(explained(capsys, target, options))
    assert len(seen) >= 5, seen


def test_explain_describes_the_helpers_of_a_convolutional_network(capsys, tmp_path):
    path = tmp_path / "convnet.py"
    path.write_text(NN)
    seen = set()
    for options in ([], ["--get-by-list"], ["--mode", "forward"]):
        seen |= assert_described(explained(capsys, str(path) + "::Net", options))
    assert {"nn_conv2d_backprop_input", "nn_max_pool_grad"} <= seen, seen


@pytest.mark.parametrize("seed", SEEDS)
def test_explain_describes_the_helpers_of_generated_programs(capsys, tmp_path, seed):
    program = program_gen.generate(seed)
    path = program_gen.write_program(program, tmp_path)
    target = path + ("::Net" if program.kind == "cell" else "::f")
    for options in ([], ["--mode", "forward"], ["--order", "2"]):
        code = cli.main(["dump", target, "--explain", "--color", "never"] + options)
        out, err = capsys.readouterr()
        if code != 0:   # an input dump cannot pass (an int, a list): reported, not here
            assert code in (1, 2) and "error" in err, err
            continue
        assert_described(out)
