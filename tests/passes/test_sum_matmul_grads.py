"""The matmul gradients of a loop are summed in batches (``sum_matmul_grads``,
``rt.matmul_grad_sum``).

Results are compared with the unoptimised pipeline and with the sum of the
per-step gradients written in NumPy.
"""
import re

import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad import runtime as rt

from gradcheck import numeric_grad
from passes_common import both, assert_same


# ------------------------------------------------ matmul gradients of a loop
def _rnn_args(rng, *shapes):
    return tuple(rng.standard_normal(s) * 0.4 for s in shapes)


@pytest.mark.parametrize("name, shapes, wrt, adds", [
    # W @ h on vectors: outer(d, h) per step (grad of the left operand)
    ("rnn", [(5, 5), (7, 5), (5,)], (0,), ["add_grad_a"]),
    # h @ W, xs[t] @ U on a batch of 3: h.T @ d per step (grad of the right operand)
    ("batched_rnn", [(4, 4), (2, 4), (6, 3, 2), (3, 4)], (0, 1), ["add_grad_b", "add_grad_b"]),
    # W @ H on matrices, and W also read by a slice: d @ H.T plus a plain addition
    ("rnn_columns", [(4, 4), (6, 4, 2), (4, 2)], (0,), ["add_grad_a", ".add("]),
    # MindSpore's MatMul(transpose_b=True) on a batch of 2: its rule's MatMul products
    ("ms_rnn", [(4, 4), (5, 2, 4), (2, 4)], (0,), ["add_matmul(", "True"]),
    # a backward loop inside a backward loop
    ("nested_rnn", [(3, 3), (4, 3), (3,)], (0,), ["add_grad_a"]),
])
def test_loop_matmul_gradients_are_summed_in_batches(mod, name, shapes, wrt, adds):
    fn = getattr(mod, name)
    args = _rnn_args(np.random.default_rng(11), *shapes)
    make = lambda: ops.GradOperation(get_all=True)(fn)      # noqa: E731
    got, src, want, src0 = both(make, args)
    assert_same(got, want)
    for i in wrt:
        # central differences in float64: truncation ~eps^2 * f''' ~ 1e-12, rounding ~1e-10
        np.testing.assert_allclose(got[i], numeric_grad(fn, args, i), rtol=1e-6, atol=1e-8)
    assert "rt.math_matmul_grad_sum(" in src and ".total()" in src
    for a in adds:
        assert a in src
    assert "math_matmul_grad_sum" not in src0
    # no matmul gradient is added on its own any more (the outer loop of
    # nested_rnn still adds the inner loop's total into its own accumulator)
    added = re.compile(r"rt\.accumulate_at\(\w+, Ellipsis, mat_mul")
    assert added.search(src0) and not added.search(src)


def test_loop_gradient_of_a_weight_not_in_a_product_is_left_alone(mod):
    # xs's accumulator gets slices (xs[t]), never a matmul gradient: nothing to batch
    args = _rnn_args(np.random.default_rng(12), (5, 5), (7, 5), (5,))
    g = ops.GradOperation(get_all=True)(mod.rnn)
    got = g(*args)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(got[1], numeric_grad(mod.rnn, args, 1), rtol=1e-6, atol=1e-8)
    src = s2sad.get_source(g, *args)
    assert "rt.accumulate_at(d_xs" in src and src.count("math_matmul_grad_sum") == 1


def _terms(rng, kind, x_shape, y_shape, n, dtype):
    """``n`` random ``(d, x, y)`` for the gradient of ``x @ y`` of the given side."""
    out = np.matmul(np.empty(x_shape), np.empty(y_shape)).shape
    return [tuple(rng.standard_normal(s).astype(dtype) for s in (out, x_shape, y_shape))
            for _ in range(n)]


@pytest.mark.parametrize("kind, x_shape, y_shape", [
    ("a", (4, 3), (3,)), ("a", (4, 3), (3, 5)), ("a", (3,), (3, 5)), ("a", (2, 4, 3), (3, 5)),
    ("a", (4, 3), (2, 3, 5)),
    ("b", (3,), (3, 5)), ("b", (4, 3), (3, 5)), ("b", (4, 3), (3,)), ("b", (2, 4, 3), (3, 5)),
])
@pytest.mark.parametrize("batch", [None, 40])
def test_matmul_grad_sum_is_the_sum_of_the_gradients(monkeypatch, kind, x_shape, y_shape, batch):
    from s2sad.runtime import rt_math
    if batch is not None:               # flush every few terms, not only at the end
        monkeypatch.setattr(rt_math, "_BATCH", batch)
    rng = np.random.default_rng(13)
    grad = rt.math_matmul_grad_a if kind == "a" else rt.math_matmul_grad_b
    like = np.zeros(x_shape if kind == "a" else y_shape)
    s = rt.math_matmul_grad_sum(like)
    want = np.zeros_like(like)
    terms = _terms(rng, kind, x_shape, y_shape, 9, np.float64)
    terms += _terms(rng, kind, x_shape, y_shape, 3, np.float32)    # a second batch key
    for k, (d, x, y) in enumerate(terms):
        if k % 4 == 3:                  # interleaved plain contributions
            plain = rng.standard_normal(like.shape)
            s.add(Ellipsis, plain)
            want += plain
        (s.add_grad_a if kind == "a" else s.add_grad_b)(d, x, y)
        want += grad(d, x, y)
    # the same terms summed in another order; the three float32 terms are
    # summed in float32 by the batched matmul (eps 1.2e-7, a few terms of
    # the largest element's size), the float64 ones to float64 rounding
    got = s.total()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.abs(want).max())


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_grad_sum_of_matmul_products(monkeypatch, ta, tb):
    from s2sad.runtime import rt_math
    monkeypatch.setattr(rt_math, "_BATCH", 100)         # a flush every few terms
    rng = np.random.default_rng(15)
    s = rt.math_matmul_grad_sum(np.zeros((3, 4)))
    want = np.zeros((3, 4))
    for _ in range(7):
        a = rng.standard_normal((2, 3) if ta else (3, 2))
        b = rng.standard_normal((4, 2) if tb else (2, 4))
        s.add_matmul(a, b, ta, tb)
        want += (a.T if ta else a) @ (b.T if tb else b)
    # float64 terms summed in another order: rounding only
    np.testing.assert_allclose(s.total(), want, rtol=1e-12, atol=1e-12)


def test_matmul_grad_sum_of_a_transposed_weight_accumulates_in_c_order(monkeypatch):
    """``h @ w.T`` with ``w.T`` made once before a loop: the sum is shaped like the
    transposed (Fortran-ordered) view but kept in C order, as the products are."""
    from s2sad.runtime import rt_math
    rng = np.random.default_rng(16)
    w = rng.standard_normal((12, 5))
    for batch in (1 << 16, 100):            # terms added at once; kept and flushed
        monkeypatch.setattr(rt_math, "_BATCH", batch)
        s = rt.math_matmul_grad_sum(w.T)
        assert s.acc.flags.c_contiguous and s.acc.shape == (5, 12)
        want = np.zeros((5, 12))
        for _ in range(6):
            d, h = rng.standard_normal((3, 12)), rng.standard_normal((3, 5))
            s.add_grad_b(d, h, w.T)
            want += rt.math_matmul_grad_b(d, h, w.T)
        np.testing.assert_allclose(s.total(), want, rtol=1e-12, atol=1e-12)


def test_matmul_grad_sum_adds_large_terms_at_once(monkeypatch):
    from s2sad.runtime import rt_math
    monkeypatch.setattr(rt_math, "_BATCH", 256)
    rng = np.random.default_rng(14)
    s = rt.math_matmul_grad_sum(np.zeros((6, 5)))
    d, x, y = rng.standard_normal(6), np.zeros((6, 5)), rng.standard_normal(5)
    s.add_grad_a(d, x, y)                           # 11 elements: kept for later
    assert s.size == 11 and len(s.rows[0]) == len(s.rows[1]) == 1
    big = rng.standard_normal((6, 4)), rng.standard_normal((5, 4))
    s.add_grad_a(big[0], x, big[1])                 # 44 > 256 / 16: multiplied now
    assert s.size == 11
    # float64 terms summed by one product instead of two: rounding only
    np.testing.assert_allclose(s.total(), np.outer(d, y) + big[0] @ big[1].T, rtol=1e-12)
    assert s.size == 0 and not any(s.rows) and not any(s.blocks)


def test_matmul_grad_sum_of_strided_and_mixed_rows(monkeypatch):
    """Rows that are column views (no contiguous bytes to join), and 1-D terms mixed
    with 2-D ones and with another dtype, each against the per-term gradients."""
    from s2sad.runtime import rt_math
    monkeypatch.setattr(rt_math, "_BATCH", 200)         # several flushes
    rng = np.random.default_rng(16)
    s = rt.math_matmul_grad_sum(np.zeros((3, 4)))
    D, H = rng.standard_normal((3, 30)), rng.standard_normal((4, 30))
    want = np.zeros((3, 4))
    for t in range(30):
        d, h = D[:, t], H[:, t]                          # strided views
        if t % 5 == 4:
            d, h = d.astype(np.float32), h.astype(np.float32)
        if t % 7 == 6:
            d, h = D[:, t:t + 2], H[:, t:t + 2]          # a 2-D term: d @ h.T
        s.add_grad_a(d, np.zeros((3, 4)), h)
        want += rt.math_matmul_grad_a(d, np.zeros((3, 4)), h)
    # float64 sums in another order, and float32 products for every fifth term
    np.testing.assert_allclose(s.total(), want, rtol=0, atol=1e-6 * np.abs(want).max())


# ------------------------------------------------------------ np.dot in a loop
def dot_rnn(W, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(np.dot(W, h) + xs[t])
    return np.sum(h)


def dot_stacked_loop(s, xs, h):
    # a 0-D and a 3-D np.dot: no matmul, their gradients are added at once
    for t in range(xs.shape[0]):
        h = np.tanh(np.dot(s, h) + np.sum(np.dot(h, xs[t]), axis=0))
    return np.sum(h)


@pytest.mark.parametrize("fn, shapes, batched", [
    (dot_rnn, [(5, 5), (7, 5), (5,)], True),
    (dot_stacked_loop, [(), (3, 2, 2, 2), (2,)], False),
])
def test_loop_dot_gradients_are_batched_where_dot_is_a_matmul(fn, shapes, batched):
    args = _rnn_args(np.random.default_rng(13), *shapes)
    make = lambda: ops.GradOperation(get_all=True)(fn)      # noqa: E731
    got, src, want, src0 = both(make, args)
    assert_same(got, want)
    for i in range(len(args)):
        np.testing.assert_allclose(got[i], numeric_grad(fn, args, i), rtol=1e-6, atol=1e-8)
    assert ("add_dot_grad_a" in src) == batched
