"""The samples run as scripts and print the tutorial's numbers."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOAT = re.compile(r"-?\d+\.\d*(?:[eE][+-]?\d+)?")


def run_sample(name):
    r = subprocess.run([sys.executable, os.path.join("samples", name)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def floats(text):
    return np.array([float(v) for v in FLOAT.findall(text)], np.float64)


def line_values(out, label):
    """The ``[...]`` list printed after ``label`` on its line."""
    m = re.search(r"^%s\b.*?=\s*\[(.*)\]\s*$" % re.escape(label), out, re.M)
    assert m, "no %r line in:\n%s" % (label, out)
    return floats(m.group(1))


def sections(out):
    """Section bodies of mindspore_seed.py, keyed by their heading number."""
    parts = re.split(r"^== (\d+)\..*==$", out, flags=re.M)
    return {int(num): body for num, body in zip(parts[1::2], parts[2::2])}


def closed_form():
    x = np.array([1.0, 2.0, 5.0], np.float32)
    return -np.sin(np.sin(x)) * np.cos(x)


def test_sin_cos_net():
    out = run_sample("sin_cos_net.py")
    grad = line_values(out, "gradient")
    np.testing.assert_allclose(grad, closed_form(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(grad, [-0.4028624, 0.32836998, 0.23219854], rtol=0, atol=1e-6)
    assert "def Net_construct_grad(x):" in out
    assert "xp.cos(" in out


def test_matmul_net():
    out = run_sample("matmul_net.py")
    np.testing.assert_allclose(line_values(out, "dx"), [0.141, 0.16, 0.66] * 2, atol=1e-6)
    np.testing.assert_allclose(line_values(out, "dy"),
                               [0.17] * 3 + [0.19] * 3 + [0.15] * 3, atol=1e-6)
    np.testing.assert_allclose(line_values(out, "dz"), [1.5337], atol=1e-5)
    assert "sens" in out and "def Net_construct_grad(" in out


def test_mindspore_seed():
    out = run_sample("mindspore_seed.py")
    s = sections(out)
    assert sorted(s) == list(range(1, 9)), out

    x = np.array([1.0, 2.0, 5.0], np.float32)
    forward = floats(s[1])
    np.testing.assert_allclose(forward, np.tile(np.cos(np.sin(x)), 2), atol=1e-6)
    grad = floats(s[2])
    np.testing.assert_allclose(grad, np.tile(closed_form(), 2), atol=1e-6)

    dx = [1.41, 1.6, 6.6] * 2
    dy = [1.7] * 3 + [1.9] * 3 + [1.5] * 3
    dz = [15.337]
    np.testing.assert_allclose(floats(s[3]), dx, atol=1e-5)
    np.testing.assert_allclose(floats(s[4]), dx + dy, atol=1e-5)
    np.testing.assert_allclose(floats(s[5]), dz, atol=1e-4)
    np.testing.assert_allclose(floats(s[6]), 0.1 * np.array(dx + dy + dz), atol=1e-5)

    assert ("TypeError: The parameters number of the function is 3, but the number of "
            "provided arguments is 2.") in s[7]
    assert "ValueError" in s[8] and "[3, 3]" in s[8] and "[2, 3]" in s[8]


@pytest.mark.parametrize("name", ["sin_cos_net.py", "matmul_net.py"])
def test_samples_are_dump_targets(name):
    r = subprocess.run([sys.executable, "-m", "s2sad", "dump", "samples/%s::Net" % name,
                        "--get-all"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "def Net_construct_grad(" in r.stdout
