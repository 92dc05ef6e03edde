"""``x[i] = v`` writes into ``x`` when no one else can see the old array.

Compiled code is functional: ``out_1 = rt.array_setitem(out_1, i, h)`` is a
copy of ``out_1`` with one row changed, and the adjoint's ``d_out[i] = 0`` is
another, so a loop filling rows costs the square of its length.  Codegen
writes such a line as ``rt.array_setitem_in_place(...) if rt.spare(out_1) else
rt.array_setitem(...)`` when the old name is rebound there (or dies there at
the top level); ``rt.spare`` refuses any array someone else holds.

Checked here: the values are exactly those of the copying form (``rt.spare``
forced to say no) and of NumPy run eagerly, the gradients equal finite
differences, the caller's arrays are never written, and the number of copies
per call does not grow with the number of steps (copies counted, not timed).
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad import runtime as rt
from gradcheck import check_vjp, numeric_grad

G = np.linspace(0.0, 1.0, 12).reshape(4, 3)     # a global array programs write into


# ------------------------------------------------------------------ programs
def rows(x, w):
    out = np.zeros((x.shape[0], x.shape[1]))
    h = np.zeros(x.shape[1])
    for t in range(x.shape[0]):
        h = np.tanh(x[t] + h @ w)
        out[t] = h
    return np.sum(out ** 2)


def columns_2d(x, w):
    out = np.ones((x.shape[1], x.shape[0] + 1))
    for t in range(x.shape[0]):
        out[1:, t] = np.sin(x[t, 1:] * w[0, 0])
        out[0, t:t + 2] = x[t, 0]
    return np.sum(out * out[::-1])


def int_array_index(x, w):
    out = np.zeros((x.shape[0] + 2, x.shape[1]))
    for t in range(x.shape[0]):
        out[np.array([t, t + 2, t])] = np.stack([x[t] * w[0], x[t] @ w, np.cos(x[t])])
    return np.sum(out ** 3)


def pushed_value(x, w):
    out = np.zeros((x.shape[0], x.shape[1]))
    s = 0.0
    for t in range(x.shape[0]):
        out[t] = np.sin(x[t] @ w)
        s = s + np.sum(out * x[t, 0])     # the new array, kept for the backward sweep
    return s


def read_after(x, w):
    out = np.zeros((x.shape[0] + 1, x.shape[1]))
    h = x[0]
    for t in range(x.shape[0]):
        out[t + 1] = np.tanh(h @ w)
        h = out[t + 1] + out[t]               # a view of the array just written
    return np.sum(h ** 2) + np.sum(out)


def nested(x, w):
    out = np.zeros(x.shape)
    for t in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[t, j] = np.sin(x[t, j] + np.sum(out[t]) * w[j, j])
    return np.sum(out ** 2)


def on_argument(x, w):
    for t in range(x.shape[0]):
        x[t] = np.tanh(x[t] @ w)
    return np.sum(x * x)


def on_global(x, w):
    out = G
    for t in range(x.shape[0]):
        out[t % 4] = np.tanh(x[t] @ w)
    return np.sum(out ** 2)


def on_view(x, w):
    n = x.shape[0] - 1
    out = x[1:]                                 # a view of the caller's array
    for t in range(n):
        out[t] = np.tanh(out[t] @ w)
    return np.sum(out ** 2)


def top_level(x, w):
    out = np.zeros((3, x.shape[1]))
    out[0] = x[0]
    out[1] = np.sin(x[1])
    out[2] = x[2] @ w
    return np.sum(out ** 2)


def while_rows(x, w):
    out = np.zeros(x.shape)
    t = 0
    while t < x.shape[0]:
        out[t] = np.cos(x[t] @ w)
        t = t + 1
    return np.sum(out * x)


PROGRAMS = [rows, columns_2d, int_array_index, pushed_value, read_after, nested,
            on_argument, on_global, on_view, top_level, while_rows]


def inputs(seed, steps=5, width=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((steps, width)), 0.5 * rng.standard_normal((width, width))


class Counted:
    """Counts the copying and the in-place item writes of compiled code."""

    def __init__(self, monkeypatch):
        self.copies = self.in_place = 0
        copy, into = rt.array_setitem, rt.array_setitem_in_place

        def counted_copy(*a):
            self.copies += 1
            return copy(*a)

        def counted_into(*a):
            self.in_place += 1
            return into(*a)
        monkeypatch.setattr(rt, "array_setitem", counted_copy)
        monkeypatch.setattr(rt, "array_setitem_in_place", counted_into)


def eager(fn, x, w):
    """``fn`` run by NumPy on copies (it writes into them), the global put back after."""
    keep = G.copy()
    try:
        return fn(x.copy(), w.copy())
    finally:
        G[...] = keep


def grads(fn, x, w):
    return ops.GradOperation(get_all=True)(fn)(x, w)


# ------------------------------------------------------------------ values
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_values_as_the_copying_form_and_numpy(fn, seed, monkeypatch):
    x, w = inputs(seed)
    keep_x, keep_w, keep_g = x.copy(), w.copy(), G.copy()
    got = grads(fn, x, w)
    forward = s2sad.jit(fn)(x, w)
    # the caller's arrays and the global are never written
    for a, b in ((x, keep_x), (w, keep_w), (G, keep_g)):
        np.testing.assert_array_equal(a, b)
    assert forward == pytest.approx(eager(fn, x, w), rel=1e-12)
    monkeypatch.setattr(rt, "spare", lambda buf, *others: False)
    copying = grads(fn, x, w)
    for a, b in zip(got, copying):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_gradients_equal_finite_differences(fn):
    x, w = inputs(3)
    keep = G.copy()
    got = grads(fn, x, w)
    for i, g in enumerate(got):
        fd = numeric_grad(lambda x, w: eager(fn, x, w), (x, w), i)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(G, keep)


def test_vjp_and_second_order_of_the_row_filling_loop():
    x, w = inputs(4)
    check_vjp(rows, (x, w))
    # forward-over-reverse against finite differences of the gradient
    first = ops.GradOperation(get_all=True)(rows)
    direction = np.random.default_rng(5).standard_normal(x.shape)
    _, hvp = s2sad.jvp(lambda x: first(x, w)[0], (x,), (direction,))
    eps = 1e-5
    fd = (first(x + eps * direction, w)[0] - first(x - eps * direction, w)[0]) / (2 * eps)
    np.testing.assert_allclose(hvp, fd, rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------ copies
def counts(fn, monkeypatch, steps):
    """(copies, writes in place) of the second call of ``fn``'s gradient."""
    g = ops.GradOperation(get_all=True)(fn)
    x, w = inputs(6, steps)
    g(x, w)
    counter = Counted(monkeypatch)
    g(x, w)
    monkeypatch.undo()
    return counter.copies, counter.in_place


@pytest.mark.parametrize("fn", [rows, columns_2d, int_array_index, while_rows],
                         ids=lambda f: f.__name__)
def test_copies_per_call_do_not_grow_with_the_steps(fn, monkeypatch):
    few, _ = counts(fn, monkeypatch, 4)
    many, written = counts(fn, monkeypatch, 40)
    assert many == few, (few, many)     # the first iteration of each loop copies, no more
    assert written >= 2 * 40 - 2, written


def test_nested_loops_zero_the_adjoint_in_place(monkeypatch):
    """The forward reads ``out[t]`` (a view, kept by its name) so it copies each step;
    the adjoint's zeroing writes in place from its second step."""
    copies, written = counts(nested, monkeypatch, 10)
    assert written == 10 * 3 - 1 and copies == 10 * 3 + 1, (copies, written)


def test_one_array_is_reused_across_the_steps():
    """The identity of the loop's array: one buffer from the second step on."""
    seen = []
    into = rt.array_setitem_in_place

    def spy(x, index, value):
        seen.append(x.ctypes.data)
        return into(x, index, value)
    rt.array_setitem_in_place = spy
    try:
        x, w = inputs(7, 30)
        s2sad.jit(rows)(x, w)
    finally:
        rt.array_setitem_in_place = into
    assert len(seen) == 29 and len(set(seen)) == 1, (len(seen), len(set(seen)))


def test_arrays_others_hold_are_copied_every_step(monkeypatch):
    """A pushed array, an argument's first step, a view: ``rt.spare`` says no."""
    g = ops.GradOperation(get_all=True)(pushed_value)
    x, w = inputs(8, 10)
    g(x, w)
    counter = Counted(monkeypatch)
    g(x, w)
    # the forward's array is kept for the backward sweep each step: copied each step
    assert counter.copies >= 10, (counter.copies, counter.in_place)


def test_top_level_writes_reuse_a_fresh_array(monkeypatch):
    x, w = inputs(9)
    f = s2sad.jit(top_level)
    f(x, w)
    counter = Counted(monkeypatch)
    assert f(x, w) == pytest.approx(top_level(x, w), rel=1e-12)
    assert (counter.copies, counter.in_place) == (0, 3)


def test_shown_source_keeps_the_copying_form():
    g = ops.GradOperation(get_all=True)(rows)
    x, w = inputs(10)
    g(x, w)
    executed = g.last.executed_source
    assert "rt.array_setitem_in_place(out_1, i, h_2) if rt.spare(out_1)" in executed
    assert "rt.array_setitem_in_place(d_out_1, i, 0) if rt.spare(d_out_1)" in executed
    shown = s2sad.get_source(g, x, w)
    assert "array_setitem_in_place" not in shown and "rt.spare" not in shown
    assert "out_1 = rt.array_setitem(out_1, i, h_2)" in shown
