"""Second-order programs (forward over reverse, ``hessian``) without needless work.

Each result is compared with an independent value: a closed form (the
R-operator of an MLP, a logistic regression's Hessian) and central
differences in float64 of a hand-written gradient; and with the same
program compiled without the shortcut (its pass turned off), which may
differ only by rounding.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.api.vjp_jvp import jvp_compiled
from s2sad.opt import pipeline

from gradcheck import fd_directional

RNG = np.random.default_rng(2929)


def without(*passes):
    return pipeline.options(disabled_passes=set(passes))


# ------------------------------------------------------------------ the MLP
def mlp_loss(W1, b1, W2, b2, x, Y):
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / x.shape[0]


def mlp_grad_hand(W1, b1, W2, b2, x, Y):
    """The W1 gradient, written out."""
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return x.T @ ((((p - Y) / x.shape[0]) @ W2.T) * (1 - h * h))


def mlp_hvp_hand(W1, b1, W2, b2, x, Y, V):
    """The R-operator: the W1 gradient's derivative along ``V``."""
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    dh = ((p - Y) / x.shape[0]) @ W2.T
    Rh = (1 - h * h) * (x @ V)
    Rz = Rh @ W2
    Rp = p * (Rz - (p * Rz).sum(axis=1, keepdims=True))
    return x.T @ (((Rp / x.shape[0]) @ W2.T) * (1 - h * h) - 2 * h * Rh * dh)


def mlp_data(n=7, din=5, hid=4, k=3):
    Y = np.eye(k)[RNG.integers(0, k, n)]
    return (RNG.standard_normal((din, hid)), 0.1 * RNG.standard_normal(hid),
            RNG.standard_normal((hid, k)), 0.1 * RNG.standard_normal(k),
            RNG.standard_normal((n, din)), Y, RNG.standard_normal((din, hid)))


def hvp(W1, b1, W2, b2, x, Y, V):
    g = s2sad.grad(mlp_loss)
    return s2sad.jvp(lambda w: g(w, b1, W2, b2, x, Y), W1, V)


@pytest.mark.parametrize("seed", range(3))
def test_mlp_hvp_matches_the_r_op_and_differences(seed):
    global RNG
    RNG = np.random.default_rng(seed)
    args = mlp_data()
    W1, rest, V = args[0], args[1:6], args[6]
    g, hv = hvp(*args)
    np.testing.assert_allclose(g, mlp_grad_hand(*args[:6]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hv, mlp_hvp_hand(*args), rtol=1e-9, atol=1e-11)
    fd = fd_directional(lambda w: mlp_grad_hand(w, *rest), W1, V)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)
    with without("constant_shifts"):
        g0, hv0 = hvp(*args)
    np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(hv, hv0, rtol=1e-12, atol=1e-14)


def _hvp_source(args):
    W1, b1, W2, b2, x, Y, V = args
    g = s2sad.grad(mlp_loss)
    fn = lambda w: g(w, b1, W2, b2, x, Y)   # noqa: E731
    s2sad.jvp(fn, W1, V)
    return jvp_compiled(fn, (W1,), (V,))[0].source


def test_the_stabilising_max_has_no_tangent_in_forward_over_reverse():
    """The gradient program is free of the max as the loss is: its reverse mode
    stopped the max, and forward mode over it must not spend the max's rule
    (the tie mask ``z == max`` and its count) on a tangent that cancels."""
    args = mlp_data()
    assert " == " not in _hvp_source(args)
    with without("constant_shifts"):
        assert " == " in _hvp_source(args)


# --------------------------------------------------------- stop_gradient
def stopped_square(x):
    return np.sum(x * ops.stop_gradient(x)) + np.sum(x ** 3)


def test_stop_gradient_blocks_the_second_derivative_too():
    """``grad`` of ``sum(x * stop_gradient(x))`` is ``stop_gradient(x)``, whose own
    derivative is zero: only ``sum(x**3)`` has a Hessian, ``diag(6 x)``."""
    x = RNG.standard_normal(4)
    expect = np.diag(6 * x)
    np.testing.assert_allclose(s2sad.hessian(stopped_square)(x), expect, rtol=1e-12)
    t = RNG.standard_normal(4)
    np.testing.assert_allclose(s2sad.jvp(s2sad.grad(stopped_square), x, t)[1], expect @ t,
                               rtol=1e-12)
    gg = s2sad.grad(lambda u: np.sum(s2sad.grad(stopped_square)(u) * t))(x)
    np.testing.assert_allclose(gg, expect @ t, rtol=1e-12)
    # the first derivative is unchanged: the stopped factor is a constant
    np.testing.assert_allclose(s2sad.grad(stopped_square)(x), x + 3 * x ** 2, rtol=1e-12)


# ------------------------------------------------------------- fallbacks
def max_not_a_shift(W1, x):
    """The max is read apart from the shift: its gradient is real."""
    z = np.tanh(x @ W1)
    m = np.max(z, axis=1, keepdims=True)
    z = z - m
    return np.sum(np.log(np.sum(np.exp(z), axis=1, keepdims=True))) + np.sum(m * m)


def max_not_a_shift_grad(W1, x):
    """Its W1 gradient by hand (no ties on random data)."""
    z = np.tanh(x @ W1)
    m = z.max(axis=1, keepdims=True)
    e = np.exp(z - m)
    p = e / e.sum(axis=1, keepdims=True)
    dz = p + (z == m) * (2 * m - 1)     # lse(z - m) + m^2 = lse(z) - m + m^2
    return x.T @ (dz * (1 - z * z))


def test_a_max_that_is_not_only_a_shift_keeps_its_tangent():
    W1, x, V = RNG.standard_normal((5, 4)), RNG.standard_normal((6, 5)), \
        RNG.standard_normal((5, 4))
    g = s2sad.grad(max_not_a_shift)
    out, hv = s2sad.jvp(lambda w: g(w, x), W1, V)
    np.testing.assert_allclose(out, max_not_a_shift_grad(W1, x), rtol=1e-10, atol=1e-12)
    fd = fd_directional(lambda w: max_not_a_shift_grad(w, x), W1, V)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)
    with without("constant_shifts"):
        _, hv0 = s2sad.jvp(lambda w: g(w, x), W1, V)
    np.testing.assert_allclose(hv, hv0, rtol=1e-12, atol=1e-14)


def test_forward_over_reverse_writes_a_call_and_its_tangents_as_one_function():
    """The backward ops of ``mlp_loss``'s gradient and their tangents belong to one
    call: one function for its forward side, one for its backward side, not a
    small function per run of each (15 functions called in turn)."""
    src = _hvp_source(mlp_data())
    assert src.count("\ndef ") + src.startswith("def ") <= 3, src
