"""Loop-invariant elementwise ops move before their loop (``opt/hoist.py``), and
what a loop's stack keeps.

Gradients are compared with central differences and with the pipeline
without the pass; the generated code is checked for what moved and what
stayed.
"""
import re

import numpy as np
import pytest

import s2sad
from s2sad import ops

from gradcheck import numeric_grad
from passes_common import both, assert_same
from sources import load_source

SOURCE = """
def accumulate(x, w):
    acc = x * 0
    for t in range(w.shape[0]):
        acc = acc + np.sin(x) * w[t]
    return np.sum(acc * acc)


def grow(x, a):
    b = a * 1.0
    while np.sum(b * b) < 50:
        b = b + np.exp(x) * 0.5
    return np.sum(b * x)


def nested(x, w):
    acc = x * 0
    for s in range(2):
        for t in range(w.shape[0]):
            acc = acc * 0.5 + np.tanh(x) * w[t]
    return np.sum(acc)


def stays(x, y, w):
    acc = x * 0
    for t in range(w.shape[0]):
        if w[t] > 0:
            acc = acc + np.cos(y)
        acc = acc + (x * y) * w[t] + np.sin(acc)
    return np.sum(acc)
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("hoist"), SOURCE, "hoist_src")


def _loop_lines(src):
    """The generated lines inside any loop (indented deeper than the function body)."""
    return [ln.strip() for ln in src.splitlines() if re.match(r" {8}\S", ln)]


def _check(mod, name, args):
    fn = getattr(mod, name)
    make = lambda: ops.GradOperation(get_all=True)(fn)      # noqa: E731
    got, src, want, src0 = both(make, args)
    assert_same(got, want)
    for i in range(len(args)):
        # central differences in float64 (step 1e-6): ~1e-9 relative error at most
        np.testing.assert_allclose(got[i], numeric_grad(fn, args, i), rtol=1e-6, atol=1e-8)
    return src, src0


def test_invariant_is_computed_once_and_not_pushed(mod):
    rng = np.random.default_rng(21)
    src, src0 = _check(mod, "accumulate", (rng.standard_normal(4),
                                                        rng.standard_normal(5)))
    inner = _loop_lines(src)
    assert "sin_x = xp.sin(x)" in src and "sin_x = xp.sin(x)" not in inner
    assert "cos_x = xp.cos(x)" in src and "cos_x = xp.cos(x)" not in inner
    pushes_sin = lambda lines: any("append(" in ln and re.search(r"\bsin_x\b", ln)  # noqa: E731
                                   for ln in lines)
    assert not pushes_sin(inner)
    # without the pass: computed, pushed and differentiated on every iteration
    assert "sin_x = xp.sin(x)" in _loop_lines(src0)
    assert pushes_sin(_loop_lines(src0))


def test_zero_iterations(mod):
    x = np.array([0.3, -1.2, 2.0])
    src, _ = _check(mod, "accumulate", (x, np.zeros(0)))
    assert "sin_x = xp.sin(x)" not in _loop_lines(src)


def test_while_body(mod):
    rng = np.random.default_rng(22)
    src, src0 = _check(mod, "grow", (rng.uniform(0, 1, 3), rng.uniform(0, 1, 3)))
    assert "exp_x = xp.exp(x)" in src and "exp_x = xp.exp(x)" not in _loop_lines(src)
    # an op reading only a hoisted value moves too
    assert "mul_exp_x = exp_x * 0.5" in src and "mul_exp_x = exp_x * 0.5" not in _loop_lines(src)
    assert "exp_x = xp.exp(x)" in _loop_lines(src0)


def test_out_of_two_loops(mod):
    rng = np.random.default_rng(23)
    src, src0 = _check(mod, "nested", (rng.standard_normal(3),
                                                    rng.standard_normal(4)))
    assert "tanh_x = xp.tanh(x)" in src
    assert not any(ln.startswith("tanh_x =") for ln in _loop_lines(src))


def test_what_stays_in_the_loop(mod):
    rng = np.random.default_rng(24)
    args = (rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(6))
    src, src0 = _check(mod, "stays", args)
    inner = _loop_lines(src)
    # a branch's op (it may never run), a product of two values (it could fail
    # on their shapes), and whatever reads the loop's own values
    assert any(ln.startswith("cos_y = xp.cos(y)") for ln in
               [l.strip() for l in src.splitlines() if re.match(r" {12}\S", l)])
    assert "mul_x = x * y" in inner
    assert any(re.match(r"sin_\w+ = xp\.sin\(acc", ln) for ln in inner)


def test_loop_index_and_shape_only_carried_values_are_not_pushed(mod):
    rng = np.random.default_rng(19)
    args = (rng.standard_normal(4), rng.standard_normal(5))
    g = ops.GradOperation(get_all=True)(mod.accumulate)
    got = g(*args)
    for i in range(2):
        # central differences in float64 (step 1e-6): ~1e-9 relative error at most
        np.testing.assert_allclose(got[i], numeric_grad(mod.accumulate, args, i),
                                   rtol=1e-6, atol=1e-9)
    # specialised to the shapes of args, the shape acc is read for is known: not pushed
    assert "ShapeOf" not in s2sad.get_source(g, *args)
    with s2sad.options(disabled_passes={"static_shapes"}):
        src = s2sad.get_source(g, *args)
    # the backward for binds the index itself; acc is read only for its shape
    pushed = re.search(r"stack\.append\(\((.*)\)\)", src).group(1).split(", ")
    popped = re.search(r"\n *(.*) = stack\.pop\(\)", src).group(1).split(", ")
    assert pushed == popped and "shape_acc_1" in pushed, src
    assert "i" not in pushed and "acc_1" not in pushed, src
    assert "for i in reversed(" in src
