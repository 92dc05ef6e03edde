"""Stack slots nothing reads are not pushed (``prune_stack_slots``), and dead values are released.

Results are compared with the unoptimised pipeline; ``del`` lines and the
peak memory they save are checked in the generated code.
"""
import tracemalloc

import numpy as np

import s2sad
from s2sad import ops
from s2sad import driver as G

from gradcheck import numeric_grad
from sources import load_source
from passes_common import unoptimised, both, assert_same, reads_name


# ---------------------------------------------------------------- stack slots
def test_unread_stack_slots_are_not_pushed(mod):
    rng = np.random.default_rng(9)
    args = (rng.standard_normal((4, 4)) * 0.5, rng.standard_normal((5, 4)),
            rng.standard_normal(4))
    got, src, want, src0 = both(lambda: ops.GradOperation()(mod.rnn), args)
    assert_same(got, want)
    np.testing.assert_allclose(got, numeric_grad(mod.rnn, args, 0), rtol=1e-6, atol=1e-8)
    # only W is differentiated: the shape of xs[t] is pushed for nothing without the pass
    assert "rt.ShapeOf(get_item_xs)" in src0
    assert "ShapeOf(get_item_xs)" not in src and "shape_get_item_xs" not in src
    got_all, _, want_all, _ = both(lambda: ops.GradOperation(get_all=True)(
        mod.rnn), args)
    assert_same(got_all, want_all)


# ------------------------------------------------------------ releasing names
def test_a_running_statistic_no_output_reads_gets_no_adjoint(mod):
    rng = np.random.default_rng(25)
    args = (rng.standard_normal(4), rng.standard_normal(3))
    g = s2sad.grad(mod.running_statistic, grad_position=(0, 1), has_aux=True)
    (gx, gw), _ = g(*args)
    first = lambda x, w: mod.running_statistic(x, w)[0]      # noqa: E731
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(gx, numeric_grad(first, args, 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gw, numeric_grad(first, args, 1), rtol=1e-6, atol=1e-9)
    src = s2sad.get_source(g)
    assert "d_total" not in src and "shape_total" not in src, src


def test_a_carried_value_feeding_another_keeps_its_adjoint(mod):
    # a is never returned, but h reads it: its adjoint slot must stay
    rng = np.random.default_rng(26)
    args = (rng.standard_normal(4), rng.standard_normal(5))
    got = ops.GradOperation(get_all=True)(mod.feeds_back)(*args)
    for i in range(2):
        # central differences in float64 (step 1e-6): ~1e-9 relative error at most
        np.testing.assert_allclose(got[i], numeric_grad(mod.feeds_back, args, i),
                                   rtol=1e-6, atol=1e-9)


def test_dead_temporaries_are_deleted(mod):
    x = np.random.default_rng(4).standard_normal(40)
    got, src, want, src0 = both(lambda: ops.GradOperation()(mod.chain), (x,))
    assert_same(got, want)
    assert "del " not in src0
    dels = [line.strip() for line in src.splitlines() if line.strip().startswith("del ")]
    assert dels
    body = src.splitlines()
    for k, line in enumerate(body):
        if line.strip().startswith("del "):
            for name in line.strip()[4:].split(", "):
                # a deleted name is never read again (it may be assigned again)
                later = [ln for ln in body[k + 1:] if not ln.strip().startswith("#")]
                reads = [ln for ln in later if reads_name(ln, name)]
                assert not reads, (name, reads, src)
                assert name != "x"               # parameters are never deleted
    # scalars are not worth a line
    assert not any("reduce_sum" in d for d in dels)


def test_release_lowers_peak_memory(mod):
    x = np.random.default_rng(5).standard_normal(200_000)

    def peak(g):
        g(x)
        tracemalloc.start()
        try:
            g(x)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    G.cache.clear()
    fast = peak(ops.GradOperation()(mod.chain))
    with unoptimised():
        slow = peak(ops.GradOperation()(mod.chain))
    # without releases every one of ~14 temporaries of 1.6 MB is alive at return
    assert fast < 0.6 * slow, (fast, slow)


def test_release_inside_control_flow(tmp_path):
    m = load_source(tmp_path, """
        def f(x, n):
            y = np.sin(x)
            z = y * y
            if np.sum(x) > 0:
                w = z * 2.0
            else:
                w = np.cos(z)
            i = 0
            while i < n.shape[0]:
                w = np.tanh(w) + y
                i = i + 1
            return np.sum(w * z)
    """, "perf_release_cf")
    for x in (np.linspace(0.1, 1, 5), np.linspace(-1, -0.1, 5)):
        args = (x, np.zeros(3))
        got, src, want, src0 = both(lambda: ops.GradOperation()(m.f), args)
        assert_same(got, want)
        np.testing.assert_allclose(got, numeric_grad(m.f, args, 0), rtol=1e-6, atol=1e-8)
        assert "del " in src
