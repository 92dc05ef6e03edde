"""Loops that read a weight transposed (``x @ w.T``, ``w.T @ h``, as ``nn.LSTM`` does).

``sum_matmul_grads`` gives the accumulator of such a weight a
``MatMulGradSum`` too: the term ``MatMulGradA/B(d, x, y).T`` is added as
``add_grad_a_t``/``add_grad_b_t``, which keep the operands the other way
round (``d.T @ x`` for ``(x.T @ d).T``), and the bias next to it is summed
and reduced once.  ``drop_dead_carried`` drops the values a loop carries
that nothing reads (the layer's output sequence, when a loss reads only the
final state).  Each program is compared with the code without the pass and
with float64 central differences.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, runtime as rt
from s2sad.opt import pipeline

from gradcheck import numeric_grad
from slice_adjoints import summed_getitem_grads
from sources import load_source

SOURCE = """
def rnn_wt(Wx, Wh, b, xs, h):
    # x @ w.T with 2-D rows: MatMulGradB(...).T
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx.T + h @ Wh.T + b)
    return np.sum(h * h)


def rnn_vec(Wx, Wh, xs, h):
    # w.T @ h with vectors: MatMulGradA(...).T, outer products
    for t in range(xs.shape[0]):
        h = np.tanh(Wx.T @ xs[t] + Wh.T @ h)
    return np.sum(h * h)


def fills_unread_output(W, xs, h):
    # ``out`` and ``n`` are carried but never read after the loop: dropped;
    # ``a`` only feeds ``h``, which is read: kept
    out = np.zeros((xs.shape[0],) + h.shape)
    n = 0
    a = h * 0.5
    for t in range(xs.shape[0]):
        a = np.sin(a) + xs[t]
        h = np.tanh(h @ W + a)
        out[t] = h
        n = n + 1
    return np.sum(h * h)


def reads_output(W, xs, h):
    out = np.zeros((xs.shape[0],) + h.shape)
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t])
        out[t] = h
    return np.sum(out * out)


def rnn_batched(Wh, xs, h):
    # 3-D h: the term is not a 2-D product, it is added at once (transposed)
    for t in range(xs.shape[0]):
        h = np.tanh(h @ Wh.T + xs[t])
    return np.sum(h * h)
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("lstm2"), SOURCE, "lstm_loops2_src")


def _grads(fn, args, wrt, disabled=frozenset()):
    with pipeline.options(disabled_passes=disabled):
        g = s2sad.grad(fn, grad_position=wrt)
        got = g(*args)
        return (got if isinstance(got, tuple) else (got,)), s2sad.get_source(g)


def _check(fn, args, wrt, rtol=1e-12):
    got, src = _grads(fn, args, wrt)
    want, src0 = _grads(fn, args, wrt, frozenset({"sum_matmul_grads"}))
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2)
    for a, i in zip(got, wrt):
        np.testing.assert_allclose(a, numeric_grad(fn, args, i), rtol=1e-5, atol=1e-6)
    assert "_t(" not in src0
    return src


@pytest.mark.parametrize("steps,batch,inp,hid", [(5, 3, 2, 4), (3, 1, 4, 2), (4, 40, 30, 20)])
def test_transposed_weights_of_rows(mod, steps, batch, inp, hid):
    # small terms are batched, (40, 30)/(40, 20) rows are added at once
    rng = np.random.default_rng(steps + batch)
    args = (rng.standard_normal((hid, inp)) * 0.5, rng.standard_normal((hid, hid)) * 0.5,
            rng.standard_normal(hid) * 0.5, rng.standard_normal((steps, batch, inp)),
            rng.standard_normal((batch, hid)) * 0.5)
    src = _check(mod.rnn_wt, args, (0, 1, 2, 3, 4))
    assert src.count(".add_grad_b_t(") == 2 and ".add_unbroadcast(" in src
    assert ".T\n" not in src.split("# -- backward sweep --")[1]


def test_transposed_weights_of_vectors(mod):
    rng = np.random.default_rng(1)
    args = (rng.standard_normal((3, 4)) * 0.5, rng.standard_normal((4, 4)) * 0.5,
            rng.standard_normal((5, 3)), rng.standard_normal(4) * 0.5)
    src = _check(mod.rnn_vec, args, (0, 1, 2, 3))
    assert src.count(".add_grad_a_t(") == 2


def test_transposed_weight_of_a_batch_of_matrices(mod):
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((3, 3)) * 0.5, rng.standard_normal((4, 2, 5, 3)),
            rng.standard_normal((2, 5, 3)) * 0.5)
    src = _check(mod.rnn_batched, args, (0, 1, 2))
    assert ".add_grad_b_t(" in src


def test_transposed_terms_equal_the_sum_of_transposed_gradients():
    rng = np.random.default_rng(3)
    # per side, the weight's gradient shape and the (d, x, y) shapes of its terms: 2-D
    # rows of two sizes, vectors, a batch of matrices (added at once), large rows
    cases = {"b": ((6, 3), [((4, 6), (4, 3), (6, 3)), ((2, 6), (2, 3), (6, 3)),
                            ((6,), (3,), (6, 3)), ((2, 4, 6), (2, 4, 3), (6, 3)),
                            ((900, 6), (900, 3), (6, 3))]),
             "a": ((5, 3), [((3, 4), (3, 5), (5, 4)), ((3,), (3, 5), (5,)),
                            ((3, 700), (3, 5), (5, 700))])}
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-4)):
        for side, (shape, terms) in cases.items():
            acc, want = rt.math_matmul_grad_sum(np.zeros(shape, dtype)), np.zeros(shape)
            grad = rt.math_matmul_grad_a if side == "a" else rt.math_matmul_grad_b
            add = acc.add_grad_a_t if side == "a" else acc.add_grad_b_t
            for _ in range(3):
                for ds, xs, ys in terms:
                    d, x, y = (rng.standard_normal(s) for s in (ds, xs, ys))
                    want += grad(d, x, y).T
                    add(*(v.astype(dtype) for v in (d, x, y)))
            got = acc.total()
            assert got.dtype == dtype and got.shape == shape
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)


def test_unread_carried_values_are_dropped(mod):
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((3, 3)) * 0.5, rng.standard_normal((4, 2, 3)),
            rng.standard_normal((2, 3)) * 0.5)
    off = frozenset({"drop_dead_carried"})
    for fn, dropped in ((mod.fills_unread_output, True), (mod.reads_output, False)):
        got, src = _grads(fn, args, (0, 1, 2))
        want, src0 = _grads(fn, args, (0, 1, 2), off)
        for a, b, i in zip(got, want, (0, 1, 2)):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(a, numeric_grad(fn, args, i), rtol=1e-6, atol=1e-8)
        assert "rt.array_setitem" in src0
        assert ("rt.array_setitem" not in src) == dropped
        assert not dropped or "sin(" in src.split("# -- backward sweep --")[0]    # ``a`` kept


class _LSTMLoss(nn.Cell):

    def __init__(self, inp, hid):
        super().__init__()
        self.lstm = nn.LSTM(inp, hid)

    def construct(self, xs):
        _, (h, _) = self.lstm(xs)
        return ops.sum(h * h)


def test_nn_lstm_weight_gradients_are_batched():
    rng = np.random.default_rng(4)
    net = _LSTMLoss(3, 4)
    for p in net.trainable_params():
        p.set_data(s2sad.Tensor(rng.standard_normal(p.shape) * 0.5))
    xs = s2sad.Tensor(rng.standard_normal((5, 2, 3)))
    params = s2sad.ParameterTuple(net.trainable_params())
    results = []
    for disabled in (frozenset(), frozenset({"sum_matmul_grads"})):
        with pipeline.options(disabled_passes=disabled):
            grad = ops.GradOperation(get_by_list=True)(net, params)
            results.append((grad(xs), s2sad.get_source(grad, xs)))
    (got, src), (want, src0) = results
    # the layer transposes both weights before its loop and adds its biases once
    assert src.count(".add_grad_b(") == 2 and src.count(".add_unbroadcast(") == 1
    assert ".add_grad_b(" not in src0
    # the layer's output sequence, which this loss does not read, is not filled
    assert "array_setitem" not in src
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)


def test_concat_helper_falls_back_for_parts_that_do_not_fit():
    # the same slice objects (as a loop passes them every step) with parts that
    # tile, and with parts broadcast along either axis, of another dtype, of
    # another rank, on another axis length: each as the sum of the adjoints
    rng = np.random.default_rng(6)
    slices = (slice(4, None), slice(1, 4), slice(1, 1), slice(None, 1))    # one empty
    first = tuple(rng.standard_normal((3, s.indices(6)[1] - s.indices(6)[0]))
                  for s in slices[:2]) + (np.zeros((3, 0)), rng.standard_normal((3, 1)))
    calls = [((3, 6), 1, first),
             ((3, 6), 1, tuple(p * 2 for p in first)),                          # reused
             ((3, 6), 1, first[:3] + (np.ones((1, 1)),)),                        # broadcast
             ((3, 6), 1, first[:3] + (first[3].astype(np.float32),)),            # dtype
             ((3, 6), 1, (first[0], first[1][:, :1], first[2], first[3])),       # width 1
             ((3, 7), 1, (rng.standard_normal((3, 3)),) + first[1:]),            # longer axis
             ((2, 3, 6), 2, tuple(np.stack([p, p]) for p in first)),             # rank
             ((6, 3), 0, tuple(p.T for p in first))]                             # another axis
    for shape, axis, parts in calls:
        got = rt.getitem_grad_concat(rt.ShapeOf(np.empty(shape)), axis, slices, parts)
        want = summed_getitem_grads(shape, slices, parts, axis)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
