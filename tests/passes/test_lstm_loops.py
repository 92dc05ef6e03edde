"""An LSTM's backward loop: gate adjoints concatenated.

``concat_slice_grads`` turns the adjoint of ``z`` read through slices that
tile one axis (the gates ``z[:, :H]``, ``z[:, H:2 * H]``, ...) into one
``rt.getitem_grad_concat``, which checks when the code runs that the slices
tile the axis and otherwise adds into a zero buffer as before.

Each program is compiled with and without those passes: the results must
agree (the same terms, summed in another order at most) and match central
finite differences in float64.
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
    H = h0.shape[1]
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


def gates_by_width(W, xs, h, k):
    # slices of a width given by the caller: they tile z's columns only when k == H
    H = h.shape[1]
    for t in range(xs.shape[0]):
        z = xs[t] @ W
        i = np.tanh(z[:, :k])
        f = np.sin(z[:, k:2 * k])
        h = h * f[:, :1] + np.sum(i) * 0.1
    return np.sum(h * h)


def overlapping_gates(W, xs, h):
    H = h.shape[1]
    for t in range(xs.shape[0]):
        z = xs[t] @ W
        i = np.tanh(z[:, :H + 1])
        f = np.sin(z[:, H:])
        h = h * f[:, 1:] + i[:, :H] * 0.5
    return np.sum(h * h)


def constant_gates(W, xs, h):
    for t in range(xs.shape[0]):
        z = xs[t] @ W
        h = np.tanh(z[:, 0:2]) * h + np.cos(z[:, 2:4]) * np.sin(z[:, 4:])
    return np.sum(h * h)


def broadcast_gate(W, xs, h):
    # the first gate is read as a (1, H) row: its adjoint is summed back, not broadcast
    H = h.shape[1]
    for t in range(xs.shape[0]):
        z = xs[t] @ W
        h = np.tanh(z[:1, :H]) * h + np.sin(z[:, H:])
    return np.sum(h * h)
"""

PASSES = {"concat_slice_grads", "sum_matmul_grads"}


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("lstm"), SOURCE, "lstm_loops_src")


def _grads(fn, args, wrt, disabled=frozenset()):
    with pipeline.options(disabled_passes=disabled):
        g = s2sad.grad(fn, grad_position=wrt)
        got = g(*args)
        return (got if isinstance(got, tuple) else (got,)), s2sad.get_source(g)


def _check(fn, args, wrt, fd=True, rtol=1e-12):
    """Gradients with the passes, without them, and (float64) central differences."""
    got, src = _grads(fn, args, wrt)
    want, src0 = _grads(fn, args, wrt, frozenset(PASSES))
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2)
    if fd:
        for a, i in zip(got, wrt):
            np.testing.assert_allclose(a, numeric_grad(fn, args, i), rtol=1e-6, atol=1e-8)
    assert "getitem_grad_concat" not in src0
    return got, src


def _lstm_args(rng, steps, batch, inp, hid, dtype=np.float64):
    s = 1 / np.sqrt(hid)
    return tuple(a.astype(dtype) for a in (
        rng.standard_normal((inp, 4 * hid)) * s, rng.standard_normal((hid, 4 * hid)) * s,
        rng.standard_normal(4 * hid) * s, rng.standard_normal((steps, batch, inp)),
        rng.standard_normal((batch, hid)) * 0.5, rng.standard_normal((batch, hid)) * 0.5))


@pytest.mark.parametrize("sizes", [(4, 2, 3, 5), (3, 1, 2, 1), (1, 3, 4, 2), (6, 16, 8, 16)])
def test_lstm_cell_matches_unoptimised_and_differences(mod, sizes):
    args = _lstm_args(np.random.default_rng(sum(sizes)), *sizes)
    _, src = _check(mod.lstm, args, (0, 1, 2, 3, 4, 5), fd=sizes[-1] < 16)
    assert src.count("rt.getitem_grad_concat(") == 1
    assert "getitem_grad_into(" not in src and "getitem_grad_zeros(" not in src


def test_lstm_cell_float32_at_benchmark_sizes(mod):
    # the benchmark's shapes, in float32
    args = _lstm_args(np.random.default_rng(0), 50, 16, 32, 64, np.float32)
    got, _ = _check(mod.lstm, args, (0, 1, 2), fd=False, rtol=2e-4)
    assert all(g.dtype == np.float32 for g in got)


def test_gates_whose_widths_do_not_tile_fall_back(mod):
    rng = np.random.default_rng(3)
    W, xs, h = rng.standard_normal((3, 8)) * 0.5, rng.standard_normal((4, 2, 3)), \
        rng.standard_normal((2, 4)) * 0.5
    for k in (4, 3, 5):         # tiling, a gap at the end, overlapping past the end
        got, src = _check(lambda W, xs, h: mod.gates_by_width(W, xs, h, k), (W, xs, h),
                          (0, 1, 2))
        assert "rt.getitem_grad_concat(" in src


def test_overlapping_and_broadcast_gates(mod):
    rng = np.random.default_rng(4)
    W, xs, h = rng.standard_normal((3, 8)) * 0.5, rng.standard_normal((3, 2, 3)), \
        rng.standard_normal((2, 4)) * 0.5
    W9 = rng.standard_normal((3, 9)) * 0.5     # gates of 5 columns, one shared
    _, src = _check(mod.overlapping_gates, (W9, xs, h), (0, 1, 2))
    assert "rt.getitem_grad_concat(" in src     # H is known only when the code runs
    _check(mod.broadcast_gate, (W, xs, h), (0, 1, 2))


def test_constant_slices_are_checked_while_compiling(mod):
    rng = np.random.default_rng(5)
    W, xs, h = rng.standard_normal((3, 6)) * 0.5, rng.standard_normal((3, 2, 3)), \
        rng.standard_normal((2, 2)) * 0.5
    _, src = _check(mod.constant_gates, (W, xs, h), (0, 1, 2))
    assert src.count("rt.getitem_grad_concat(") == 1


def test_second_order_through_the_gates(mod):
    args = _lstm_args(np.random.default_rng(6), 3, 2, 2, 2)
    h = s2sad.hessian(mod.lstm)(*args)
    with pipeline.options(disabled_passes=PASSES):
        h0 = s2sad.hessian(mod.lstm)(*args)
    np.testing.assert_allclose(h, h0, rtol=1e-10, atol=1e-12)
    g = s2sad.grad(mod.lstm)
    fd = np.stack([numeric_grad(lambda *a: g(*a).ravel()[k], args, 0)
                   for k in range(args[0].size)])
    np.testing.assert_allclose(h.reshape(fd.shape), fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("bounds, axis", [
    ([(None, 2), (2, 5), (5, None)], 1),            # tiles, in order
    ([(5, None), (2, 5), (None, 2)], 1),            # tiles, reversed (as adjoints come)
    ([(2, 5), (5, None), (None, 2)], 1),            # tiles, in any order
    ([(None, 3), (3, 3), (3, None)], 1),            # an empty slice
    ([(-4, -1), (-1, None), (None, -4)], 0),        # negative bounds
    ([(None, 2), (2, 9), (9, 100)], 0),             # bounds past the end
    ([(None, 2), (3, None)], 1),                    # a gap: zeros there
    ([(None, 3), (2, None)], 1),                    # an overlap: added up
    ([(None, 4), (4, 2), (2, None)], 1),            # a backwards (empty) slice, overlap
    ([(None, 7, 2), (1, 7, 2)], 1),                 # steps
])
def test_concat_helper_equals_the_sum_of_slice_adjoints(bounds, axis):
    rng = np.random.default_rng(len(bounds) + axis)
    x_shape = (7, 7)
    slices = [slice(*b) for b in bounds]
    lead = (slice(None),) * axis
    base = np.empty(x_shape)
    parts = tuple(rng.standard_normal(base[lead + (s,)].shape) for s in slices)
    got = rt.getitem_grad_concat(rt.ShapeOf(base), axis, tuple(slices), parts)
    np.testing.assert_array_equal(got, summed_getitem_grads(x_shape, slices, parts, axis))


def test_concat_helper_broadcasts_dtypes_and_libraries_as_the_sum():
    base = np.empty((3, 6), np.float32)
    # a part broadcast into its region, and mixed dtypes: the buffer, as before
    parts = (np.ones((1, 2), np.float32), np.arange(12.0).reshape(3, 4))
    slices = (slice(None, 2), slice(2, None))
    got = rt.getitem_grad_concat(base, 1, slices, parts)
    want = summed_getitem_grads(base.shape, slices, parts, 1)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    parts = (np.ones((3, 2), np.float32), np.ones((3, 4), np.float32))
    got = rt.getitem_grad_concat(base, 1, slices, parts)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, np.ones((3, 6)))
    # integer slice bounds of NumPy's types, and an integer index: as the sum
    slices = (slice(np.int64(0), np.int64(2)), slice(np.int64(2), None))
    got = rt.getitem_grad_concat(base, 1, slices, parts)
    np.testing.assert_array_equal(got, np.ones((3, 6)))
    got = rt.getitem_grad_concat(base, 1, (1, slice(2, None)), (np.ones(3), parts[1]))
    np.testing.assert_array_equal(got, summed_getitem_grads(base.shape, (1, slice(2, None)),
                                               (np.ones(3), parts[1]), 1))


def test_bias_gradient_summed_before_its_reduction(mod):
    args = _lstm_args(np.random.default_rng(8), 5, 3, 2, 4)
    _, src = _check(mod.lstm, args, (0, 1, 2))
    assert ".add_unbroadcast(d_z" in src and "rt.unbroadcast(d_z_1, b)" not in src
    # a loop without matmul gradients to batch keeps its accumulation as it was
    _, src = _check(mod.lstm, args, (2,))
    assert "add_unbroadcast" not in src and "rt.accumulate_at(" in src


def test_unbroadcast_terms_summed_then_reduced():
    rng = np.random.default_rng(9)
    b = np.zeros((1, 4), np.float32)
    acc = rt.math_matmul_grad_sum(b)
    terms = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3)] \
        + [rng.standard_normal((5, 1, 4)).astype(np.float32),     # another shape: reduced
           rng.standard_normal((2, 4))]                           # another dtype
    kept = [np.copy(t) for t in terms]
    for t in terms:
        acc.add_unbroadcast(t, b)
    got = acc.total()
    want = sum(rt.unbroadcast(np.asarray(t, np.float64), b) for t in terms)
    assert got.dtype == np.float32 and got.shape == (1, 4)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for t, k in zip(terms, kept):
        np.testing.assert_array_equal(t, k)     # the terms are left alone
    # an integer input's accumulator is widened, as ``add`` does
    acc = rt.math_matmul_grad_sum(np.zeros(3, np.int64))
    acc.add_unbroadcast(np.ones((2, 3)), np.zeros(3, np.int64))
    acc.add_unbroadcast(np.ones((2, 3)), np.zeros(3, np.int64))
    np.testing.assert_array_equal(acc.total(), [4.0, 4.0, 4.0])
    # a 0-d term of a 0-d value (a scalar bias) is added at once
    acc = rt.math_matmul_grad_sum(np.float64(0.0))
    acc.add_unbroadcast(np.float64(1.5), np.float64(0.0))
    acc.add_unbroadcast(np.ones(3), np.float64(0.0))
    assert acc.total() == 4.5


def test_loop_invariant_slices_are_made_once(mod):
    args = _lstm_args(np.random.default_rng(10), 4, 2, 3, 3)
    got, src = _check(mod.lstm, args, (0, 1, 2))
    made = [line for line in src.splitlines() if "= slice(" in line]
    assert len(made) == 4 and all(not line.startswith(" " * 8) for line in made)   # not in a loop
    push = [line for line in src.splitlines() if "stack.append" in line]
    assert push and "make_slice" not in push[0]
    want, _ = _grads(mod.lstm, args, (0, 1, 2), frozenset({"hoist_invariants"}))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
