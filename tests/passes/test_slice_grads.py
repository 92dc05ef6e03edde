"""Slice adjoints of one array added into one buffer (``sum_slice_grads``).

Each program is compiled with and without the pass: the results must agree
(the pass only changes where the additions happen) and match central finite
differences in float64.  Random programs read one array through many
indices: overlapping slices, steps, negative bounds, integer indices, integer
arrays naming a position twice, adjoints broadcast into their region.
"""
import re

import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad import driver as G
from s2sad.opt import pipeline

from gradcheck import numeric_grad
from sources import load_source


FIXED = """
def four_slices(x):
    a = x[0:3]
    b = x[2:5]
    c = x[::2]
    d = x[-1]
    return np.sum(np.sin(a) * b) + np.sum(c * c) + d * d


def gates(W, xs, h):
    H = h.shape[1]
    for t in range(xs.shape[0]):
        z = xs[t] @ W + h @ W[:H]
        i = np.tanh(z[:, :H])
        f = np.sin(z[:, H:2 * H])
        o = np.cos(z[:, 2 * H:])
        h = f * h + i * o
    return np.sum(h * h)


def slices_and_whole(x):
    return np.sum(x[1:4] * x[2:5]) + np.sum(x * x) + np.sum(np.exp(x[::-2]))


def mixed_dtypes(x, y):
    return np.sum(x[0:2] * y) + np.sum(np.sin(x[1:3])) + np.sum(x[[0, 0, 2]] * 2.0)
"""

#: indices of a (6, 5) array, and whether the part read keeps all 5 columns
INDICES = [("0:3", True), ("2:5", True), ("-4:-1", True), ("::2", True), ("5:0:-2", True),
           ("1", True), ("-1", True), ("[0, 2, 2]", True), (":, 1:4", False),
           (":, -2", False), ("1:5:2, ::-1", False), ("-2, 3", False), ("..., 0:5:3", False),
           ("[1, 1, 4], :2", False)]

#: terms a part ``S`` enters the loss by; ``{w}`` needs all 5 columns (broadcast ``y``)
TERMS = ["np.sum(np.sin({s}) * {s})", "np.sum({s}) * 1.5", "np.sum(np.tanh({s} * 0.7))",
         "np.sum(np.cos({s}) * y)"]


def _random_source(rng, n_programs):
    out = []
    for k in range(n_programs):
        lines = ["def p%d(x, y):" % k, "    t = 0.0"]
        for _ in range(int(rng.integers(3, 9))):
            index, full = INDICES[rng.integers(len(INDICES))]
            terms = TERMS if full else TERMS[:-1]
            term = terms[rng.integers(len(terms))]
            lines.append("    t = t + " + term.format(s="x[%s]" % index))
        lines.append("    return t")
        out.append("\n".join(lines))
    return "\n\n\n".join(out) + "\n"


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    rng = np.random.default_rng(2024)
    source = FIXED + "\n\n" + _random_source(rng, 12)
    return load_source(tmp_path_factory.mktemp("slices"), source, "slice_grads_src")


def _both(fn, args):
    """(optimised gradients, source, gradients without the pass, its source)."""
    G.cache.clear()
    g = ops.GradOperation(get_all=True)(fn)
    got = g(*args)
    src = s2sad.get_source(g)
    with pipeline.options(disabled_passes={"sum_slice_grads"}):
        g0 = ops.GradOperation(get_all=True)(fn)
        want = g0(*args)
        src0 = s2sad.get_source(g0)
    return got, src, want, src0


def _check(fn, args, wrt, rtol=1e-12):
    kept = [a.copy() for a in args]
    got, src, want, src0 = _both(fn, args)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2)
    for a, k in zip(args, kept):
        np.testing.assert_array_equal(a, k)       # the inputs are left alone
    for i in wrt:
        # central differences in float64: truncation ~eps^2 * f''' ~ 1e-12, rounding ~1e-10
        np.testing.assert_allclose(got[i], numeric_grad(fn, args, i), rtol=1e-6, atol=1e-8)
    assert "getitem_grad_zeros" not in src0
    return got, src, src0


@pytest.mark.parametrize("k", range(12))
def test_random_programs_of_many_slices(mod, k):
    rng = np.random.default_rng(k)
    args = (rng.standard_normal((6, 5)), rng.standard_normal(5))
    got, src, src0 = _check(getattr(mod, "p%d" % k), args, (0, 1))
    # every program reads x at least three times: one buffer takes the slices' adjoints
    assert src.count("rt.getitem_grad_zeros(") == 1
    assert src0.count("rt.getitem_grad(") >= 2
    # a second call gets a fresh buffer, not the first call's result added into
    again = ops.GradOperation(get_all=True)(getattr(mod, "p%d" % k))(*args)
    np.testing.assert_array_equal(again[0], got[0])


def test_four_slices_allocate_one_buffer(mod):
    x = np.random.default_rng(1).standard_normal(6)
    _, src, src0 = _check(mod.four_slices, (x,), (0,))
    assert src0.count("rt.getitem_grad(") == 4
    assert src.count("rt.getitem_grad_zeros(") == 1
    assert src.count("rt.getitem_grad_into(") == 4
    allocations = re.findall(r"rt\.getitem_grad\(|rt\.getitem_grad_zeros\(|xp\.zeros", src)
    assert allocations == ["rt.getitem_grad_zeros("]


def test_gate_slices_in_a_loop(mod):
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((4, 12)) * 0.4, rng.standard_normal((5, 2, 4)),
            rng.standard_normal((2, 4)) * 0.5)
    _, src, _ = _check(mod.gates, args, (0, 1, 2))
    # the gates tile z's columns: one concatenation (tests/passes/test_lstm_loops.py)
    assert src.count("rt.getitem_grad_concat(") == 1 and "getitem_grad_into(" not in src
    with pipeline.options(disabled_passes={"concat_slice_grads"}):
        _, src, _ = _check(mod.gates, args, (0, 1, 2))
    assert src.count("rt.getitem_grad_zeros(") == 1 and src.count("rt.getitem_grad_into(") == 3


def test_other_terms_are_added_after_the_buffer(mod):
    x = np.random.default_rng(4).standard_normal(7)
    _, src, _ = _check(mod.slices_and_whole, (x,), (0,))
    assert src.count("rt.getitem_grad_into(") == 3


def test_dtype_of_the_buffer_is_that_of_the_sum(mod):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal(4)          # float64: the first slice's adjoint is float64
    got, src, _ = _check(mod.mixed_dtypes, (x, y), (), rtol=1e-6)
    assert "rt.getitem_grad_zeros(" in src     # the dtypes match those without it (_check)
    want = np.zeros((3, 4))
    want[0:2] += y
    want[1:3] += np.cos(x[1:3].astype(np.float64))
    np.add.at(want, [0, 0, 2], 2.0)
    np.testing.assert_allclose(got[0], want, rtol=1e-6)


def test_second_order_through_slices(mod):
    x = np.random.default_rng(6).standard_normal(6)
    h = s2sad.hessian(mod.four_slices)(x)
    with pipeline.options(disabled_passes={"sum_slice_grads"}):
        h0 = s2sad.hessian(mod.four_slices)(x)
    np.testing.assert_allclose(h, h0, rtol=1e-12, atol=1e-14)
    g = s2sad.grad(mod.four_slices)
    fd = np.stack([numeric_grad(lambda v: g(v)[i], (x,), 0) for i in range(6)])
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-7)


def test_runtime_helpers_add_into_overlapping_regions():
    from s2sad import runtime as rt
    g1, g2 = np.arange(3.0), np.ones((2, 1), np.float32)
    buf = rt.getitem_grad_zeros(np.empty((4, 3)), g1, g2)
    assert buf.dtype == np.float64
    out = rt.getitem_grad_into(buf, slice(0, 3), g1)      # g1 broadcast over rows
    out = rt.getitem_grad_into(out, slice(1, 3), g2)      # overlaps rows 1, 2
    out = rt.getitem_grad_into(out, ([3, 3], [0, 0]), 5.0)  # one position twice
    assert out is buf
    want = rt.getitem_grad(g1, buf, slice(0, 3)) + rt.getitem_grad(g2, buf, slice(1, 3)) \
        + rt.getitem_grad(5.0, buf, ([3, 3], [0, 0]))
    np.testing.assert_array_equal(out, want)


# ------------------------------------- matmul gradients of batched activations
def _summed_to(a, shape):
    a = a.sum(axis=tuple(range(a.ndim - len(shape))))
    return a.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)


@pytest.mark.parametrize("xshape, yshape, layout", [
    ((4, 5, 3), (3, 2), "c"),           # activations x[b, n, k] @ W[k, m]
    ((2, 3, 4, 3), (3, 5), "c"),        # two batch dimensions
    ((4, 5, 3), (3, 2), "t"),           # x a transposed view: the batched form
    ((4, 0, 3), (3, 2), "c"),           # no rows
    ((1, 5, 3), (5, 3, 2), "c"),        # a batch of weights: left alone
])
def test_matmul_gradients_of_batched_activations(monkeypatch, xshape, yshape, layout):
    from s2sad import runtime as rt
    from s2sad.runtime import rt_math as R
    rng = np.random.default_rng(7)
    x = rng.standard_normal(xshape)
    if layout == "t":
        x = np.ascontiguousarray(np.swapaxes(x, 0, 1)).swapaxes(0, 1)
    y = rng.standard_normal(yshape)
    d = rng.standard_normal(np.broadcast_shapes(xshape[:-2], yshape[:-2]) + (xshape[-2], yshape[-1]))
    # one product per batch element, summed over what was broadcast along the batch
    batch = d.shape[:-2]
    xb, yb = np.broadcast_to(x, batch + xshape[-2:]), np.broadcast_to(y, batch + yshape[-2:])
    dx, dy = np.zeros(xb.shape), np.zeros(yb.shape)
    for b in np.ndindex(*batch):
        dx[b] = d[b] @ yb[b].T
        dy[b] = xb[b].T @ d[b]
    dx, dy = _summed_to(dx, xshape), _summed_to(dy, yshape)
    if len(yshape) == 2 and layout == "c":
        # one 2-D product: no batched product summed over the batch
        monkeypatch.setattr(R, "_sum_to", None)
    np.testing.assert_allclose(R.math_matmul_grad_a(d, x, y), dx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(R.math_matmul_grad_b(d, x, y), dy, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(R.math_matmul_grad_a(d, rt.ShapeOf(x), y), dx, rtol=1e-12,
                               atol=1e-12)
