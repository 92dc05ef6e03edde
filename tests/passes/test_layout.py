"""Transposed weights a loop multiplies by, copied once into row-major order
(``opt/layout.py`` ``contiguous_transposes``).

Each gradient is compared with the same gradient compiled without the pass
(the same operations on the same values: equal up to the order of BLAS's
sums) and with central differences; the copy must be made only where
nothing but matrix products read the transposed value.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor

from gradcheck import numeric_grad
from sources import load_source

SOURCE = """
def linear_rnn(W, U, xs, h):
    # PyTorch's F.linear form, x @ w.T, with the transposes before the loop
    W_t, U_t = W.T, U.T
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ W_t + h @ U_t)
    return np.sum(h * h)


def kept_transpose(W, xs, h):
    # W.T is read elementwise too: it stays the view it is
    W_t = W.T
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W_t + xs[t])
    return np.sum(h * h) + np.sum(W_t * W_t)


def straight_line(W, x):
    # no loop: one product pays nothing back
    return np.sum(np.tanh(x @ W.T))


def left_operand(W, xs, h):
    W_t = W.T
    for t in range(xs.shape[0]):
        h = np.tanh(W_t @ h + xs[t])
    return np.sum(h)
"""

NO_LAYOUT = {"disabled_passes": {"contiguous_transposes"}}


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("layout"), SOURCE, "layout_src")


def _compare(fn, args, positions):
    got = s2sad.grad(fn, grad_position=positions)(*args)
    with s2sad.options(**NO_LAYOUT):
        want = s2sad.grad(fn, grad_position=positions)(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    for k, p in enumerate(positions):
        np.testing.assert_allclose(got[k], numeric_grad(fn, args, p), rtol=1e-6, atol=1e-8)
    return got


def _source(fn, args, **options):
    with s2sad.options(**options):
        g = ops.GradOperation(get_all=True)(fn)
        g(*args)
        return s2sad.get_source(g, *args)


def _rnn_args(rng, steps=4, batch=3, inp=5, hid=6):
    return (rng.standard_normal((hid, inp)) / 3, rng.standard_normal((hid, hid)) / 3,
            rng.standard_normal((steps, batch, inp)), rng.standard_normal((batch, hid)) / 2)


def test_a_loops_transposed_weights_are_copied_once_and_the_gradient_kept(src):
    args = _rnn_args(np.random.default_rng(1))
    _compare(src.linear_rnn, args, (0, 1))
    code = _source(src.linear_rnn, args)
    assert "W.T.copy()" in code and "U.T.copy()" in code, code
    loop = code.split("for ")[1]
    assert ".copy()" not in loop
    assert ".T.copy()" not in _source(src.linear_rnn, args, **NO_LAYOUT)


@pytest.mark.parametrize("name", ["kept_transpose", "straight_line", "left_operand"])
def test_other_transposes_stay_views(src, name):
    rng = np.random.default_rng(2)
    W, _, xs, h = _rnn_args(rng, hid=5, inp=5)
    args = {"kept_transpose": (W, xs, h), "straight_line": (W, xs[0]),
            "left_operand": (W, xs[:, 0], h[0])}[name]
    fn = getattr(src, name)
    assert ".copy()" not in _source(fn, args)
    _compare(fn, args, (0,))


def test_nn_lstm_multiplies_by_row_major_copies():
    rng = np.random.default_rng(3)
    lstm = nn.LSTM(4, 5)
    for p in lstm.trainable_params():
        p.set_data(Tensor(rng.standard_normal(p.shape) / 3))

    class Loss(nn.Cell):
        def __init__(self):
            super().__init__()
            self.lstm = lstm

        def construct(self, xs):
            _, (h, _) = self.lstm(xs)
            return ops.sum(h * h)

    net, xs = Loss(), Tensor(rng.standard_normal((6, 3, 4)))
    params = net.trainable_params()
    grad = ops.GradOperation(get_by_list=True)(net, s2sad.ParameterTuple(params))
    got = grad(xs)
    assert ".T.copy()" in s2sad.get_source(grad, xs)
    with s2sad.options(**NO_LAYOUT):
        want = ops.GradOperation(get_by_list=True)(Loss(), s2sad.ParameterTuple(params))(xs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-12, atol=1e-14)
    # central differences of the loss in each weight
    eps = 1e-6
    for p, g in zip(params, got):
        base = p.asnumpy().copy()
        d = rng.standard_normal(base.shape)
        p.set_data(Tensor(base + eps * d))
        up = net(xs).asnumpy()
        p.set_data(Tensor(base - eps * d))
        down = net(xs).asnumpy()
        p.set_data(Tensor(base))
        np.testing.assert_allclose(np.sum(g.asnumpy() * d), (up - down) / (2 * eps),
                                   rtol=1e-6, atol=1e-8)
