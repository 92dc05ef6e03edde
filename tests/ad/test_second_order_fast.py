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
from mlp_second_order import mlp_loss, mlp_grad_hand, mlp_hvp_hand

RNG = np.random.default_rng(2929)


def without(*passes):
    return pipeline.options(disabled_passes=set(passes))


# ------------------------------------------------------------------ the MLP
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


# ------------------------------------------- tangent chains as one product
def logreg(w, X, y):
    m = y * (X @ w)
    return np.mean(np.log(1 + np.exp(-m))) + 0.005 * np.sum(w * w)


def logreg_hessian(w, X, y):
    s = 1 / (1 + np.exp(-y * (X @ w)))
    return (X.T * (s * (1 - s) / X.shape[0])) @ X + 0.01 * np.eye(w.size)


def fd_jacobian(f, x):
    cols = [fd_directional(f, x, e.reshape(x.shape)) for e in np.eye(x.size)]
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(f(x)) + x.shape)


def test_logreg_hessian_is_one_product_per_basis_tangent():
    w, X = 0.3 * RNG.standard_normal(6), RNG.standard_normal((40, 6))
    y = np.sign(RNG.standard_normal(40))
    h = s2sad.hessian(logreg)(w, X, y)
    np.testing.assert_allclose(h, logreg_hessian(w, X, y), rtol=1e-10, atol=1e-13)
    with without("fold_tangent_chains"):
        h0 = s2sad.hessian(logreg)(w, X, y)
    np.testing.assert_allclose(h, h0, rtol=1e-12, atol=1e-15)
    src = s2sad.get_source(s2sad.hessian(logreg), w, X, y)
    batched = src[src.index("def logreg_grad_jvp_tangents_batched"):]
    # the two matrix products, X @ t_w times y then times one coefficient (y, a
    # parameter, may be a Python number: its broadcast is not folded), the
    # penalty's product and the sum: eight ops, where op by op they were nineteen
    assert sum(" = " in line and "#" not in line for line in batched.splitlines()) <= 8, batched


def chain(x):
    return np.tanh(x) * np.exp(-x) / (1 + x * x) - np.sin(x) * x


def masks(x):
    """Two terms of one tangent scaled by boolean masks: merged they would be an ``or``."""
    return x * (x > 0) + x * (x > 0.5) - x * (x < -0.5)


def broadcast_rows(x):
    a = np.arange(1.0, 4.0).reshape(3, 1)
    return np.sum(np.exp(x) * a - x / a, axis=0) * np.cos(x)


def scaled_sum(x):
    return np.sum(-(x * 2.0) / 3.0 + x * np.exp(x)) * x


@pytest.mark.parametrize("fn, shape", [(chain, (5,)), (masks, (7,)), (broadcast_rows, (4,)),
                                        (scaled_sum, (3,))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_folded_jacobians_match_unfolded_and_differences(fn, shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    j = s2sad.jacfwd(fn)(x)
    with without("fold_tangent_chains"):
        j0 = s2sad.jacfwd(fn)(x)
    assert j.dtype == j0.dtype
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(j, j0, rtol=tol, atol=tol)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(s2sad.jacfwd(fn)(x64), fd_jacobian(fn, x64), rtol=1e-6, atol=1e-8)


def test_folded_hessians_of_elementwise_programs():
    for fn in (chain, broadcast_rows, scaled_sum):
        x = RNG.standard_normal(4)
        g = s2sad.grad(lambda u: np.sum(fn(u)))
        h = s2sad.hessian(lambda u: np.sum(fn(u)))(x)
        with without("fold_tangent_chains"):
            h0 = s2sad.hessian(lambda u: np.sum(fn(u)))(x)
        np.testing.assert_allclose(h, h0, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(h, fd_jacobian(g, x), rtol=1e-6, atol=1e-8)


def test_mask_coefficients_are_not_merged():
    x = np.array([-1.0, -0.2, 0.3, 0.8, 2.0])
    expect = np.diag((x > 0).astype(float) + (x > 0.5) - (x < -0.5))
    np.testing.assert_array_equal(s2sad.jacfwd(masks)(x), expect)


def looped(x):
    """A loop: the tangent program is not straight-line, so nothing is folded."""
    for _ in range(3):
        x = np.tanh(x) * 1.5 - x / 4
    return np.sum(x * x)


def test_a_loop_is_left_alone_and_still_right():
    x = RNG.standard_normal(4)
    g = s2sad.grad(looped)
    h = s2sad.hessian(looped)(x)
    with without("fold_tangent_chains"):
        h0 = s2sad.hessian(looped)(x)
    np.testing.assert_allclose(h, h0, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(h, fd_jacobian(g, x), rtol=1e-6, atol=1e-8)
