"""What a call of a gradient function does besides running generated code.

The fast path of argument specs matches the full walk; a cache hit compiles
nothing; a call leaves no reference cycle; a weight asked for by a Cell
follows the Cell's attribute; compiling pauses the cyclic collector.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad import driver as G
from s2sad.driver import compile as driver_compile, specs

from passes_common import G_leaves, load_programs


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_programs(tmp_path_factory)


# ------------------------------------------------------------ calling layers
def test_argument_specs_fast_path_matches_the_full_walk():
    from s2sad import Tensor, Parameter
    values = [np.ones(2), np.float32(1.5), np.float64(2.0), 3, 2.5, True, None, "s",
              (1, (True, 2.0)), [np.ones(1), 4], Tensor(np.ones(2)),
              Parameter(Tensor(np.ones(2)), name="p"), s2sad.mutable(1.0),
              s2sad.mutable((1.0, 2.0)), np.ones(3).view(np.ndarray)]
    for v in values:
        assert G.arg_spec(v) == specs._arg_spec_slow(v), v
    # True and 1 compile differently (constants are keyed by type and value)
    assert G.arg_spec((True, 0)) != G.arg_spec((1, 0))
    assert G.arg_spec(1.0) != G.arg_spec(1)


def test_grad_cache_hit_compiles_nothing(mod):
    x = np.random.default_rng(6).standard_normal(5)
    G.cache.clear()
    g = s2sad.grad(mod.chain)
    g(x)
    n = len(G.cache)
    for _ in range(3):
        g(x)
    assert len(G.cache) == n
    g(x.astype(np.float32))                      # same structure: same code
    assert len(G.cache) == n
    g(np.float64(0.3))                           # a NumPy scalar is another structure
    assert len(G.cache) == n + 1


def test_a_call_leaves_no_reference_cycle(mod):
    """Gradients freed by reference counting, at once: a cycle through them kept
    (a)'s 800 KB gradient alive until the next collection, so each call wrote a
    fresh buffer (1.8x the hand-written gradient instead of 1.2x)."""
    import gc
    from s2sad import Tensor
    x = np.linspace(0.1, 1, 4)
    calls = [(s2sad.grad(mod.chain), (x,)),
             (s2sad.grad(mod.seeded_matmul, grad_position=(0, 1)), (np.eye(4), x)),
             (ops.GradOperation(get_all=True)(mod.seeded_matmul), (Tensor(np.eye(4)), (x))),
             (s2sad.value_and_grad(mod.chain), (x,))]
    for g, args in calls:
        # twice: collecting may free what earlier tests compiled, and the next cache
        # lookup then drops their dead entries, whose code is cyclic (not this call's)
        for _ in range(2):
            g(*args)
            gc.collect()
        gc.disable()
        try:
            g(*args)
            assert gc.collect() == 0, g
        finally:
            gc.enable()


def test_weight_paths_follow_a_moved_parameter():
    from s2sad import nn, Parameter, Tensor

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.array([1.0, 2.0])), name="w")

        def construct(self, x):
            return (self.w * x).sum()

    net = Net()
    g = ops.GradOperation(get_by_list=True)(net, [net.w])
    x = np.array([3.0, 4.0])
    np.testing.assert_allclose(G_leaves(g(Tensor(x)))[0], x)
    assert g._last_paths == (("w",),)
    w = net.w
    net.w = Parameter(Tensor(np.array([5.0, 6.0])), name="w2")
    # the weight asked for is no longer held by the Cell: a zero gradient would be
    # silently wrong for what the user meant, so it is an error (docs/semantics.md)
    with pytest.raises(ValueError, match="no longer held"):
        g(Tensor(x))
    net.w = w
    np.testing.assert_allclose(G_leaves(g(Tensor(x)))[0], x)
    assert g._last_paths == (("w",),)


# ---------------------------------------------------------------- compile time
def test_compiling_pauses_the_collector_and_resumes_it(mod):
    import gc
    seen = []
    real = driver_compile.reverse

    def spy(*a, **k):
        seen.append(gc.isenabled())
        return real(*a, **k)

    x = np.linspace(0.1, 1, 4)
    G.cache.clear()
    try:
        driver_compile.reverse = spy
        assert gc.isenabled()
        ops.GradOperation()(ops.GradOperation()(mod.chain))(x)     # nested compiles
        assert seen and not any(seen)
        assert gc.isenabled()
        gc.disable()            # a program that manages the collector itself keeps its choice
        G.cache.clear()
        ops.GradOperation()(mod.chain)(x)
        assert not gc.isenabled()
    finally:
        gc.enable()
        driver_compile.reverse = real
        G.cache.clear()
