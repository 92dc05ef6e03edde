"""A compile leaves no cyclic garbage behind.

Compiling runs with the cyclic collector paused (``grad._without_gc``), so a
reference cycle made while compiling -- typically a nested function that
calls itself, closing over a table as large as the program -- keeps what it
reaches alive until the collector next runs: memory the later phases cannot
reuse.  Each compile here runs with the collector off; collecting afterwards
must find nothing.  Gradients are checked too, so a rewrite of a pass that
broke it would not pass for tidiness alone.
"""
import gc

import numpy as np
import pytest

from s2sad import ops

from gradcheck import numeric_grad
from sources import load_source
import program_gen as pg

SOURCE = """
def straight(x, y):
    a = np.sin(x) * y
    b = np.tanh(a + x)
    c = -np.cos(b) * a
    return np.sum(-(-c) + b * y)


def helper(h, w):
    return np.tanh(h * w) + h


def looped(x, w, n):
    h = x
    i = 0
    while i < n:
        h = helper(h, w)
        if np.sum(h) > 0:
            h = h - 0.5 * np.sin(h)
        i = i + 1
    for t in range(2):
        h = -np.cos(h) * w
    return np.sum(h * h)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.linspace(0.5, 1.0, 4)), name="w")

    def step(self, h):
        return np.tanh(h * self.w)

    def construct(self, x):
        h = self.step(x)
        h = self.step(h + x)
        return np.sum(h * h)
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("garbage"), SOURCE, "compile_garbage_src")


def _garbage_of(call):
    """(result of ``call()``, objects the collector then finds unreachable)."""
    pg.clear_caches()
    gc.collect()
    gc.disable()
    try:
        out = call()
        found = gc.collect()
    finally:
        gc.enable()
    return out, found


X = np.linspace(-0.9, 0.8, 4)
Y = np.linspace(0.3, 1.1, 4)


def test_first_and_second_order_compiles_leave_no_garbage(mod):
    for fn, args in ((mod.straight, (X, Y)), (mod.looped, (X, Y, 3))):
        grads, found = _garbage_of(lambda: ops.GradOperation(get_all=True)(fn)(*args))
        assert found == 0, (fn.__name__, found)
        for i in range(2):
            # tolerance: central differences in float64, step 1e-6
            np.testing.assert_allclose(grads[i], numeric_grad(fn, args, i),
                                       rtol=1e-6, atol=1e-8)
    second = ops.GradOperation()(ops.GradOperation()(mod.straight))
    _, found = _garbage_of(lambda: second(X, Y))
    assert found == 0


def test_cell_with_outlined_calls_leaves_no_garbage(mod):
    net = mod.Net()
    (dx,), found = _garbage_of(lambda: ops.GradOperation(get_all=True)(net)(X))
    assert found == 0
    # tolerance: central differences in float64, step 1e-6
    np.testing.assert_allclose(dx, numeric_grad(lambda x: net(x).asnumpy(), (X,), 0),
                               rtol=1e-6, atol=1e-8)
    source = ops.GradOperation(get_all=True)(net).compiled(X).source
    assert "def step" in source         # the calls were outlined
