"""Peak memory of loop gradients: what the stack and the backward loop keep.

A loop's forward sweep pushes, per iteration, what its backward sweep reads;
the stack is full when the backward loop starts, so that is where the peak
is.  Three things kept more than that: values one exact op recomputes from
other pushed values (``ir/stacks.py`` ``recompute_popped``: a sigmoid pushed
``e``, ``1 + e`` and ``1 / (1 + e)``), the stacked rows of ``batch_popped``
computed for every iteration at once beside the stack (``rt.stack_rows``
now computes a block of a fraction of the rows at a time, and lets go of a
block no one reads again), and the last iteration's temporaries of a loop
body, left bound through the whole backward sweep (codegen now ``del``\\ s
them at the end of each iteration).

Peaks are tracemalloc's, as a ratio to the size of one value per iteration:
deterministic, not timings.  Results must be the same bits as without the
pass and the ``del`` lines, and match central differences.
"""
import gc
import tracemalloc

import numpy as np
import pytest

import s2sad
from s2sad import driver as G
from s2sad import ops
from s2sad.opt import pipeline
from s2sad.runtime.rt_rows import stack_rows

from gradcheck import numeric_grad
from program_gen import generate, load, target_of, clear_caches
from sources import load_source

SOURCE = """
def sigmoid_loop(x, steps):
    for t in range(steps.shape[0]):
        x = 1 / (1 + np.exp(-x)) - 0.5 * x
    return np.sum(x * x)


def gates(W, xs, h, c):
    for t in range(xs.shape[0]):
        z = W @ h + xs[t]
        i = 1 / (1 + np.exp(-z))
        c = i * c + (1 - i) * np.tanh(z)
        h = np.tanh(c) * i
    return np.sum(h * h) + np.sum(c)


def nested(x, n, m):
    for s in range(n.shape[0]):
        for t in range(m.shape[0]):
            e = np.exp(-x)
            x = 1 / (1 + e) + x * 0.5
        x = x * x / (1 + x * x)
    return np.sum(x)


def branchy(x, steps):
    for t in range(steps.shape[0]):
        e = np.exp(-x * steps[t])
        q = 1 + e
        if steps[t] > 0:
            x = x / q
        else:
            x = -x * q / (2 + e)
    return np.sum(x * x)


def wide_body(x, steps):
    for t in range(steps.shape[0]):
        x = np.tanh(np.sin(x) * 0.5 + np.cos(x) * 0.25 + 0.1)
    return np.sum(x)
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("loopmem"), SOURCE, "loop_memory_src")


def before():
    """The pipeline as it was: no recomputed pops, no ``del`` in loop bodies."""
    return pipeline.options(disabled_passes={"recompute_popped"}, release=False)


def grads(fn, args, n):
    G.cache.clear()
    return ops.GradOperation(get_all=True)(fn)(*args)[:n]


def _args(mod):
    rng = np.random.default_rng(3)
    steps = np.array([1.0, -1.0, 0.5, 2.0, -0.5, 1.0])
    return {
        "sigmoid_loop": ((rng.standard_normal(7), np.zeros(9)), 1),
        "gates": ((rng.standard_normal((4, 4)) * 0.5, rng.standard_normal((6, 4)) * 0.5,
                   rng.standard_normal(4) * 0.1, rng.standard_normal(4) * 0.1), 4),
        "nested": ((rng.standard_normal(5), np.zeros(3), np.zeros(4)), 1),
        "branchy": ((rng.standard_normal(5) * 0.5, steps), 1),
        "wide_body": ((rng.standard_normal(6), np.zeros(5)), 1),
    }


@pytest.mark.parametrize("name", ["sigmoid_loop", "gates", "nested", "branchy", "wide_body"])
def test_same_bits_as_before_and_central_differences(mod, name):
    fn = getattr(mod, name)
    args, n = _args(mod)[name]
    got = grads(fn, args, n)
    with before():
        want = grads(fn, args, n)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    for k in range(n):
        np.testing.assert_allclose(got[k], numeric_grad(fn, args, k), rtol=1e-6, atol=1e-8)


def test_exact_ops_recomputed_after_the_pop(mod):
    args, _ = _args(mod)["sigmoid_loop"]
    G.cache.clear()
    src = s2sad.get_source(ops.GradOperation()(mod.sigmoid_loop), *args)
    push = next(line for line in src.splitlines() if ".append(" in line)
    # exp(-x) alone is pushed (x's adjoint reads no x); 1 + e and 1 / (1 + e) are not
    assert push.strip().startswith("stack.append(exp_neg") and "," not in push, push


@pytest.mark.parametrize("seed", range(60))
def test_random_loop_programs_same_bits(seed, tmp_path):
    program = generate(seed)
    if not program.has_loop:
        pytest.skip("seed %d makes a program without a runtime loop: the passes under test "
                    "change nothing there (the seeds with loops are checked)" % seed)
    module = load(program, tmp_path)
    target = target_of(program, module)
    args = program.make_args()
    try:
        G.cache.clear()
        got = ops.GradOperation(get_all=True)(target)(*args)
        with before():
            G.cache.clear()
            want = ops.GradOperation(get_all=True)(target)(*args)
    finally:
        clear_caches()
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(getattr(a, "_data", a)),
                                      np.asarray(getattr(b, "_data", b)))


def peak_of(g, args):
    g(*args)
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        g(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_sigmoid_loop_keeps_one_array_per_iteration(mod):
    # the backward sweep reads one array per step, e = exp(-x) (x's adjoint
    # reads no x): 1 unit.  Before, e, 1 + e and 1 / (1 + e) were pushed and
    # the rows of 1 + e, 1 / (1 + e) were computed for all steps before the
    # backward loop began: 3.07 units.  Now 1.28
    n, m = 200, 2000
    x = np.random.default_rng(0).standard_normal(m)
    args = (x, np.zeros(n))
    g = ops.GradOperation()(mod.sigmoid_loop)
    ratio = peak_of(g, args) / (n * m * 8)
    assert ratio < 1.6, ratio


def test_gates_loop_peak_near_what_the_backward_reads(mod):
    # an LSTM-like gate: the backward reads, per step, h, c, exp(-z), tanh(z)
    # and tanh(c) (5 units, a hand-written gradient keeps as many).  Before:
    # 11.7 units (exp(-z), 1 + exp(-z) and the gate pushed, rows of all steps
    # beside the stack); now 6.9
    n, m = 100, 256
    rng = np.random.default_rng(1)
    args = (rng.standard_normal((m, m)) * 0.05, rng.standard_normal((n, m)) * 0.5,
            rng.standard_normal(m) * 0.1, rng.standard_normal(m) * 0.1)
    g = ops.GradOperation()(mod.gates)
    ratio = (peak_of(g, args) - m * m * 8) / (n * m * 8)     # less W's gradient
    assert ratio < 8, ratio


def test_last_iteration_temporaries_released(mod):
    # 4 steps of 200,000 elements: the stack holds 5 distinct arrays (x of
    # each step and the last tanh).  The last forward iteration's sin, cos,
    # products and sums (6 arrays), left bound, stayed alive through the
    # backward loop: 21.0 arrays at the peak before, 14.0 now
    n, m = 4, 200_000
    x = np.random.default_rng(2).standard_normal(m)
    args = (x, np.zeros(n))
    g = ops.GradOperation()(mod.wide_body)
    ratio = peak_of(g, args) / (m * 8)
    assert ratio < 16, ratio
    G.cache.clear()
    src = s2sad.get_source(g, *args)
    body = src.split("for i in range(")[1].split("# -- backward sweep --")[0]
    assert "del sin_x_1, mul_sin_x_1, cos_x_1" in body


def test_rows_let_go_of_values_read_once():
    stack = [(np.full(3, float(k)),) for k in range(40 * 1000 // 3)]
    col = stack_rows(stack, 0)
    a = 1 + col
    b = 1 / a
    assert np.array_equal(b[len(stack) - 1], 1 / (1 + stack[-1][0]))
    # the column and 1 + col were read only to make b: their block is gone
    assert col.value is None and a.value is None and b.value is not None
    # a block of rows is at most a fraction of the loop's rows
    assert len(b.value) <= -(-len(stack) // 8)
    # a value read again is computed again, the same
    assert np.array_equal(a[5], 1 + stack[5][0]) and np.array_equal(b[5], 1 / (1 + stack[5][0]))


def _pushes_its_trip_count(x):
    v = x * 1.0
    for i in range(x.shape[0]):
        for r in x:
            v = v + 0.1 * np.sin(r) * v
    return np.sum(v)


def test_a_top_level_value_popped_back_in_a_loop_is_released_once():
    """The inner loop's trip count (a top-level value) is pushed by the forward loop
    and popped back into itself by the backward one: the backward body must not
    ``del`` it (the top level does; a second ``del`` raised UnboundLocalError)."""
    x = np.array([[0.3, -0.2], [0.5, 0.1]])
    g = s2sad.grad(_pushes_its_trip_count)(x)
    np.testing.assert_allclose(g, numeric_grad(_pushes_its_trip_count, (x,), 0), rtol=1e-6)
