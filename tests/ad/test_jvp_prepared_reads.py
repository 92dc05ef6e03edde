"""The prepared ``jvp``/``hvp`` path checks the guards and reads what the code takes
from globals and closures in one compiled function (``GuardSet.compile_reading``).

It must read exactly what the general path reads (``RuntimeInputs.read``), never a
value from an earlier call, and refuse a call whenever ``check`` would.
Results are compared with the general path's and with closed forms.
"""
import numpy as np

import s2sad
from s2sad.api import vjp_jvp

RNG = np.random.default_rng(4417)

SHIFT = RNG.standard_normal(3)                 # a global array, read on every call
SCALE = s2sad.Parameter(s2sad.Tensor(np.array([0.5, 2.0, -1.0])), name="scale")  # its array
CONFIG = {"power": 3}                          # read whole while compiling: guarded
FACTOR = 2.0                                   # a constant baked in: guarded


def shifted(x):
    return FACTOR * np.sum((x + SHIFT) ** CONFIG["power"] * SCALE)


def shifted_jvp(x, v):
    """The closed form of ``jvp(shifted)`` along ``v``."""
    p, s = CONFIG["power"], SCALE.asnumpy()
    return FACTOR * np.sum(p * (x + SHIFT) ** (p - 1) * s * v)


def _path(fn):
    return vjp_jvp._prepared[False].paths.get(fn.__code__)


def test_compiled_reads_are_the_general_reads():
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    s2sad.jvp(shifted, x, v)
    fast = _path(shifted)
    entry = fast.entry
    read = fast.read(None, shifted)
    general = entry.inputs.read(None, shifted)
    assert entry.check(None, shifted)
    assert len(read) == len(general) == 2
    assert all(a is b for a, b in zip(read, general))
    assert any(a is SHIFT for a in read)
    assert any(a is SCALE.asnumpy() for a in read)      # the Parameter's array


def test_a_rebound_global_array_is_read_on_the_next_call():
    global SHIFT
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    s2sad.jvp(shifted, x, v)
    old = SHIFT
    try:
        SHIFT = RNG.standard_normal(3)
        assert _path(shifted).extra(shifted, (x,), (v,)) is not None     # still served
        _, t = s2sad.jvp(shifted, x, v)
        np.testing.assert_allclose(t, shifted_jvp(x, v), rtol=1e-12)
    finally:
        SHIFT = old


def test_new_data_of_a_global_parameter_is_read_on_the_next_call():
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    s2sad.jvp(shifted, x, v)
    old = SCALE.asnumpy().copy()
    try:
        SCALE.set_data(s2sad.Tensor(np.array([3.0, -0.25, 1.5])))
        _, t = s2sad.jvp(shifted, x, v)
        np.testing.assert_allclose(t, shifted_jvp(x, v), rtol=1e-12)
    finally:
        SCALE.set_data(s2sad.Tensor(old))


def test_a_changed_guard_refuses_the_path_and_recompiles():
    global FACTOR
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    s2sad.jvp(shifted, x, v)
    fast = _path(shifted)
    try:
        FACTOR = -1.5
        assert fast.read(None, shifted) is None
        assert not fast.entry.check(None, shifted)
        _, t = s2sad.jvp(shifted, x, v)
        np.testing.assert_allclose(t, shifted_jvp(x, v), rtol=1e-12)
        CONFIG["power"] = 2
        _, t = s2sad.jvp(shifted, x, v)
        np.testing.assert_allclose(t, shifted_jvp(x, v), rtol=1e-12)
    finally:
        FACTOR = 2.0
        CONFIG["power"] = 3
    _, t = s2sad.jvp(shifted, x, v)
    np.testing.assert_allclose(t, shifted_jvp(x, v), rtol=1e-12)


def _loss(w, x, y):
    return np.sum((np.tanh(x @ w) - y) ** 2)


def test_hvp_of_new_closures_reads_each_calls_arrays():
    """A new lambda per call, each over other data: every call reads its own arrays."""
    w, v = RNG.standard_normal((4, 2)), RNG.standard_normal((4, 2))
    for _ in range(4):
        x, y = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 2))
        hv = s2sad.hvp(lambda w_: _loss(w_, x, y), w, v)
        eps = 1e-6
        g = s2sad.grad(_loss)
        fd = (g(w + eps * v, x, y) - g(w - eps * v, x, y)) / (2 * eps)
        np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-8)
