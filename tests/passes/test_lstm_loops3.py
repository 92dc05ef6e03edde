"""An LSTM's backward step, with less Python per step.

``batch_popped`` reads every batched value's row in one ``group[len(stack)]``
call (``rt.row_group``) under ``if batched:``, and keeps the loop's own
ops in the ``else`` branch, taken where ``rt.stack_rows`` finds that
stacking does not pay (rows too large for blocks of enough rows, or rows
that do not stack); ``rt.getitem_grad_concat`` decides once per slice bounds
and shape whether the gate slices tile the axis.

Each program is compared with the code without those passes and with float64
central differences, on carried values that broadcast in the first iteration
(``h0`` of shape ``[H]`` or ``[1, H]`` against a batch), slices that do not
tile, loops of 0, 1 and 2 iterations, float32 and float64.
"""
import numpy as np
import pytest

import s2sad
from s2sad import runtime as rt
from s2sad.opt import pipeline

from gradcheck import numeric_grad
from slice_adjoints import summed_getitem_grads
from sources import load_source

SOURCE = """
def lstm(W, U, b, xs, h0, c0):
    H = h0.shape[-1]
    h = h0
    c = c0
    for t in range(xs.shape[0]):
        z = xs[t] @ W + h @ U + b
        i = 1 / (1 + np.exp(-z[:, :H]))
        f = 1 / (1 + np.exp(-z[:, H:2 * H]))
        g = np.tanh(z[:, 2 * H:3 * H])
        o = 1 / (1 + np.exp(-z[:, 3 * H:]))
        c = f * c + i * g
        h = o * np.tanh(c)
    return np.sum(h * h)


def lstm_gap(W, U, b, xs, h0, c0):
    # z has 4 * H + 1 columns; the gates skip column H: the slices do not tile
    H = h0.shape[-1]
    h = h0
    c = c0
    for t in range(xs.shape[0]):
        z = xs[t] @ W + h @ U + b
        i = 1 / (1 + np.exp(-z[:, :H]))
        f = 1 / (1 + np.exp(-z[:, H + 1:2 * H + 1]))
        g = np.tanh(z[:, 2 * H + 1:3 * H + 1])
        o = 1 / (1 + np.exp(-z[:, 3 * H + 1:]))
        c = f * c + i * g
        h = o * np.tanh(c)
    return np.sum(h * h)
"""

PASSES = frozenset({"batch_popped", "concat_slice_grads"})
WRT = (0, 1, 2, 4, 5)


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("lstm3"), SOURCE, "lstm_loops3_src")


def _data(steps, batch, hid, h_shape, dtype, extra=0, seed=0):
    rng = np.random.default_rng(seed)
    inp = 3
    W = rng.standard_normal((inp, 4 * hid + extra)) * 0.5
    U = rng.standard_normal((hid, 4 * hid + extra)) * 0.5
    b = rng.standard_normal(4 * hid + extra) * 0.1
    xs = rng.standard_normal((steps, batch, inp))
    h0 = rng.standard_normal(h_shape) * 0.5
    c0 = rng.standard_normal(h_shape) * 0.5
    return tuple(a.astype(dtype) for a in (W, U, b, xs, h0, c0))


def _grads(fn, args, disabled=frozenset()):
    with pipeline.options(disabled_passes=disabled):
        g = s2sad.grad(fn, grad_position=WRT)
        return g(*args), s2sad.get_source(g)


@pytest.mark.parametrize("name,extra", [("lstm", 0), ("lstm_gap", 1)])
@pytest.mark.parametrize("h_shape", [(3,), (1, 3), (4, 3)])
@pytest.mark.parametrize("steps", [0, 1, 2, 5])
def test_float64_against_the_unoptimised_code_and_differences(mod, name, extra, h_shape,
                                                              steps):
    fn = getattr(mod, name)
    args = _data(steps, 4, 3, h_shape, np.float64, extra)
    got, src = _grads(fn, args)
    want, _ = _grads(fn, args, PASSES)
    for a, b, i in zip(got, want, WRT):
        assert a.shape == args[i].shape and a.dtype == np.float64
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, numeric_grad(fn, args, i), rtol=1e-6, atol=1e-8)
    assert "if batched:" in src and "popped_rows, batched = rt.row_group(" in src


@pytest.mark.parametrize("h_shape", [(8,), (1, 8), (16, 8)])
@pytest.mark.parametrize("steps", [1, 2, 40])
def test_float32_against_the_unoptimised_code(mod, h_shape, steps):
    args = _data(steps, 16, 8, h_shape, np.float32)
    got, _ = _grads(mod.lstm, args)
    want, _ = _grads(mod.lstm, args, PASSES)
    for a, b, i in zip(got, want, WRT):
        assert a.dtype == np.float32 and a.shape == args[i].shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    if steps == 2:      # float32 rounding: ~1e-6 relative
        args64 = tuple(a.astype(np.float64) for a in args)
        for a, i in zip(got, WRT):
            np.testing.assert_allclose(a, numeric_grad(mod.lstm, args64, i),
                                       rtol=2e-4, atol=2e-5)


def test_lstm_sized_rows_run_the_loops_own_ops(mod, answers):
    # [16, 64] float32 rows over 50 steps: blocks of 4 rows, which cost more than
    # they save, so the rows are not stacked and the loop runs its own ops: the
    # very code without batch_popped, to the bit
    args = _data(50, 16, 64, (16, 64), np.float32, seed=3)
    got, src = _grads(mod.lstm, args)
    assert answers and set(answers) == {"rows"}
    want, _ = _grads(mod.lstm, args, frozenset({"batch_popped"}))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    # small rows over the same steps still stack, all at once
    del answers[:]
    args = _data(50, 2, 4, (2, 4), np.float32, seed=3)
    got, _ = _grads(mod.lstm, args)
    assert set(answers) == {"array"}


def _rows_like(kind, n, rng):
    """A column of ``n`` rows and an expression of it, as ``stack_rows`` returns them."""
    shape = {"array": (3,), "blocks": (40,), "rows": (5000,)}[kind]
    stack = [(rng.standard_normal(shape),) for _ in range(n)]
    col = rt.stack_rows(stack, (0,))[0]
    return stack, [col, 1 + col * col, np.exp(-col)]


@pytest.mark.parametrize("kind,n", [("array", 70), ("array", 1), ("blocks", 500),
                                    ("rows", 3)])
def test_row_group_reads_what_each_value_would(kind, n):
    rng = np.random.default_rng(4)
    stack, values = _rows_like(kind, n, rng)
    assert kind == ("array" if isinstance(values[0], np.ndarray)
                    else "blocks" if values[0].stacked else "rows")
    group, pays = rt.row_group(*values)
    if kind == "rows":      # computed one at a time: the loop's own ops do better
        assert group is None and pays is False
        return
    single, pays_too = rt.row_group(values[1])     # one value: read as it is
    assert pays is pays_too is True and single is values[1]
    for k in reversed(range(n)):
        x = stack[k][0]
        row, square, decay = group[k]
        np.testing.assert_array_equal(row, x)
        np.testing.assert_allclose(square, 1 + x * x, rtol=1e-15)
        np.testing.assert_allclose(decay, np.exp(-x), rtol=1e-15)
        np.testing.assert_allclose(single[k], 1 + x * x, rtol=1e-15)


def test_concat_plan_is_made_once_per_bounds_and_shape():
    rng = np.random.default_rng(5)
    rt._CONCAT_PLANS.clear()
    slices = (slice(np.int64(-2), None), slice(1, -2), slice(None, True))
    parts = (rng.standard_normal((3, 2)), rng.standard_normal((3, 3)),
             rng.standard_normal((3, 1)))
    for _ in range(2):
        np.testing.assert_array_equal(rt.getitem_grad_concat(np.empty((3, 6)), 1, slices, parts),
                                      summed_getitem_grads((3, 6), slices, parts, 1))
    assert len(rt._CONCAT_PLANS) == 1
    # the cached plan, then parts that do not fit it: broadcast, another dtype
    for other in ((parts[0], parts[1], np.ones((1, 1))),
                  (parts[0], parts[1].astype(np.float32), parts[2])):
        got = rt.getitem_grad_concat(np.empty((3, 6)), 1, slices, other)
        want = summed_getitem_grads((3, 6), slices, other, 1)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    # another axis length under the same bounds: its own plan (not a tiling)
    wide = (parts[0], parts[1], parts[2])
    longer = (parts[0], np.ones((3, 4)), parts[2])
    got = rt.getitem_grad_concat(np.empty((3, 7)), 1, slices, longer)
    np.testing.assert_array_equal(got, summed_getitem_grads((3, 7), slices, longer, 1))
    assert len(rt._CONCAT_PLANS) == 2
    # the same slice objects on the first shape again, and on another axis
    np.testing.assert_array_equal(rt.getitem_grad_concat(np.empty((3, 6)), 1, slices, wide),
                                  summed_getitem_grads((3, 6), slices, wide, 1))
    tall = tuple(p.T for p in wide)
    np.testing.assert_array_equal(rt.getitem_grad_concat(np.empty((6, 3)), 0, slices, tall),
                                  summed_getitem_grads((6, 3), slices, tall, 0))
    # bounds that do not hash (0-d arrays): worked out each time, not cached
    zero_d = (slice(np.array(4), None), slice(np.array(1), np.array(4)), slice(None, 1))
    np.testing.assert_array_equal(rt.getitem_grad_concat(np.empty((3, 6)), 1, zero_d, wide),
                                  summed_getitem_grads((3, 6), zero_d, wide, 1))
    assert len(rt._CONCAT_PLANS) == 3
