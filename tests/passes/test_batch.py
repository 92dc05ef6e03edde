"""A backward loop's work on popped values runs once over their stacked rows
(``opt/batch.py``, ``rt.stack_rows``).

Gradients are compared with central differences and with the pipeline
without the pass; each way ``rt.stack_rows`` can answer (stacked at once, a
block at a time, row by row) is reached and compared with the loop's own
values, types and dtypes.
"""
import re

import numpy as np
import pytest

import s2sad
from s2sad import driver as G
from s2sad.opt import pipeline
from s2sad import ops
from s2sad.runtime import rt_rows
from s2sad.runtime.rt_rows import Rows, stack_rows

from gradcheck import numeric_grad
from sources import load_source

SOURCE = """
def rnn(W, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h)


def tanh_cos(W, U, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t]) * np.cos(U @ h)
    return np.sum(h * h)


def decay(x, w):
    for t in range(w.shape[0]):
        x = np.tanh(x) * w[t]
    return np.sum(x)


def two_loops(W, xs, h):
    # long names: the stacked values are named after their ops, "mul_rows", twice
    for t in range(xs.shape[0]):
        first_state = np.tanh(W @ h + xs[t])
        h = first_state
    for t in range(xs.shape[0]):
        second_state = np.tanh(W @ h + xs[t] * 0.5)
        h = second_state
    return np.sum(h)


def grows(x, steps):
    for t in range(steps.shape[0]):
        x = np.tanh(np.concatenate((x, x[:1] * 0.5)))
    return np.sum(x)
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("batch"), SOURCE, "batch_src")


def without_pass(make, args):
    """The gradient at ``args`` compiled without ``batch_popped``, and its source."""
    with pipeline.options(disabled_passes={"batch_popped"}):
        g = make()
        out = g(*args)
        src = s2sad.get_source(g)
    return out, src


def check(fn, args, wrt=0):
    """Gradient with the pass == without it (to the last bits), and == central differences."""
    G.cache.clear()
    g = ops.GradOperation()(fn)
    got = g(*args)
    src = s2sad.get_source(g)
    want, src0 = without_pass(lambda: ops.GradOperation()(fn), args)
    # the same elementwise ops on the same values; NumPy's vectorised tanh/exp
    # may round the last bit differently with an array's length
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
    # central differences in float64: truncation and cancellation ~1e-9
    np.testing.assert_allclose(got, numeric_grad(fn, args, wrt), rtol=1e-6, atol=1e-8)
    return src, src0


def test_rnn_rows_are_computed_before_the_loop(mod, answers):
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((6, 6)) * 0.4, rng.standard_normal((30, 6)) * 0.5,
            rng.standard_normal(6) * 0.1)
    src, src0 = check(mod.rnn, args)
    loop0 = src0[src0.index("for i in reversed"):]
    loop = src[src.index("for i in reversed"):]
    before = src[:src.index("for i in reversed")]
    # tanh's 1 - h*h ran in the loop; now once over all rows, the loop reading its
    # row (or, where ``rt.row_group`` finds batching does not pay, the loop's own ops)
    assert "rt.stack_rows(" not in src0 and re.search(r"= 1 - mul_h_\d+\n", loop0)
    assert re.search(r"sub_mul_h_\d+_rows = 1 - mul_h_\d+_rows\n", before)
    assert re.search(r"popped_rows, batched = rt.row_group\(sub_mul_h_\d+_rows\)\n", before)
    assert re.search(r"if batched:\n +sub_mul_h_\d+ = popped_rows\[len\(stack\)\]\n"
                     r" +else:\n", loop)
    assert "rt.stack_rows(stack, 1)" in before
    assert answers == ["array"]


def test_two_loops_name_their_rows_apart(mod, answers):
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((4, 4)) * 0.4, rng.standard_normal((6, 4)) * 0.5,
            rng.standard_normal(4) * 0.1)
    src, _ = check(mod.two_loops, args)
    assert answers == ["array", "array"]
    groups = dict(re.findall(r"(\w+), \w+ = rt\.row_group\((\w+)\)", src))
    reads = [(row, groups[group]) for row, group in
             re.findall(r"(\w+) = (\w+)\[len\(stack\w*\)\]", src)]
    assert len(groups) == 2 and len(reads) == 2
    assert len({r[0] for r in reads} | {r[1] for r in reads}) == 4
    for row, rows in reads:       # each row named as its stacked value, less "_rows"
        stem = re.sub(r"_rows(_\d+)?$", "", rows)
        assert stem != rows and re.fullmatch(re.escape(stem) + r"(_\d+)?", row), (row, rows)


def test_two_popped_values(mod, answers):
    rng = np.random.default_rng(1)
    args = (rng.standard_normal((5, 5)) * 0.4, rng.standard_normal((5, 5)) * 0.4,
            rng.standard_normal((12, 5)) * 0.5, rng.standard_normal(5) * 0.1)
    src, _ = check(mod.tanh_cos, args)
    assert "rt.stack_rows(stack, (" in src        # several slots, one call
    assert answers == ["array", "array"]


def test_block_at_a_time_and_row_by_row(mod, answers):
    # 300 rows of 200: too many elements to stack at once, so rows are stacked a
    # block at a time (blocks of 19 rows)
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(200) * 0.5, rng.uniform(0.5, 1.5, (300, 1))
    assert 300 * 200 > rt_rows._SMALL and 300 * 20 <= rt_rows._SMALL
    assert 200 <= rt_rows._BLOCKED_ROW_SIZE and 300 // 16 >= rt_rows._MIN_BLOCK_ROWS
    check(mod.decay, (x[:20], w))          # few elements in all: at once
    assert answers == ["array"]
    G.cache.clear()
    got = ops.GradOperation()(mod.decay)(x, w)
    assert answers[-1] == "blocks"
    want, _ = without_pass(lambda: ops.GradOperation()(mod.decay), (x, w))
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
    # rows larger than _ROW_SIZE run row by row: the loop's very calls
    big = rng.standard_normal(rt_rows._ROW_SIZE + 1) * 0.5
    G.cache.clear()
    got = ops.GradOperation()(mod.decay)(big, w[:3])
    assert answers[-1] == "rows"
    want, _ = without_pass(lambda: ops.GradOperation()(mod.decay), (big, w[:3]))
    np.testing.assert_array_equal(got, want)


def test_mixed_dtypes_keep_the_loops_dtypes(mod, answers):
    # x float32, w float64: the first tanh is float32, the others float64, so
    # the rows do not stack and each keeps its own dtype
    x = np.linspace(-1, 1, 7).astype(np.float32)
    w = np.full((4, 1), 0.8)
    G.cache.clear()
    got = ops.GradOperation()(mod.decay)(x, w)
    assert answers == ["rows"]
    want, _ = without_pass(lambda: ops.GradOperation()(mod.decay), (x, w))
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    # float32 rounding of the first tanh's derivative: ~1e-7 relative
    np.testing.assert_allclose(got, numeric_grad(mod.decay, (x.astype(np.float64), w), 0),
                               rtol=1e-5, atol=1e-6)


def test_rows_whose_shape_changes(mod, answers):
    x = np.array([0.3, -0.2])
    G.cache.clear()
    got = ops.GradOperation()(mod.grows)(x, np.zeros(3))
    assert answers == ["rows"]
    want, _ = without_pass(lambda: ops.GradOperation()(mod.grows), (x, np.zeros(3)))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, numeric_grad(mod.grows, (x, np.zeros(3)), 0),
                               rtol=1e-6, atol=1e-8)


def test_zero_iterations(mod):
    # no rows at all: nothing is stacked, the loop never reads; d sum(x) = ones
    x = np.linspace(-1, 1, 4)
    np.testing.assert_array_equal(ops.GradOperation()(mod.decay)(x, np.ones((0, 1))),
                                  np.ones(4))


# ------------------------------------------------------------------ runtime
def _loop(entries, expr, k):
    return expr(entries[k])


def _rows_cases():
    rng = np.random.default_rng(3)
    vec = [rng.standard_normal(5) for _ in range(7)]
    return {
        "stacked at once": (vec, np.ndarray),
        "a block at a time": ([rng.standard_normal(300) for _ in range(250)], Rows),
        "python floats": ([0.5, -1.5, 2.0], Rows),
        "numpy scalars": ([np.float32(0.5), np.float32(2.0)], Rows),
        "shapes differ": ([np.ones(2), np.ones(3) * 0.5], Rows),
        "dtypes differ": ([np.ones(3, np.float32), np.ones(3) * 0.5], Rows),
        "empty": ([], Rows),
    }


@pytest.mark.parametrize("case", sorted(_rows_cases()))
def test_stack_rows_gives_the_loops_values(case):
    entries, kind = _rows_cases()[case]
    rows = stack_rows(entries, None)
    assert isinstance(rows, kind)
    w = np.float32(0.75)
    exprs = [lambda r: 1 - r * r, lambda r: np.tanh(r) / 3, lambda r: -r + w,
             lambda r: w * np.exp(-r) - r / 2.5]
    for expr in exprs:
        out = expr(rows)
        for k in reversed(range(len(entries))):      # the backward loop's order
            want = expr(entries[k])
            got = out[k]
            assert type(got) is type(want)
            assert np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_allclose(got, want, rtol=1e-15)


def test_stack_rows_of_slots_and_a_higher_rank_operand():
    rng = np.random.default_rng(4)
    stack = [(rng.standard_normal(3), i, rng.standard_normal(3)) for i in range(4)]
    a, b = stack_rows(stack, (0, 2))
    assert isinstance(a, np.ndarray) and a.shape == (4, 3)
    np.testing.assert_array_equal(b[2], stack[2][2])
    # an operand of rank 2 would broadcast across the rows: row by row instead
    M = rng.standard_normal((2, 3))
    a = stack_rows(stack, 0, M)
    assert isinstance(a, Rows)
    np.testing.assert_array_equal((a * M)[1], stack[1][0] * M)
