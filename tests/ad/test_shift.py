"""A softmax's stabilising max carries no gradient (``s2sad/ad/shift.py``).

Each gradient is checked against central differences in float64; where the
max is stopped, also against the gradient through the max (the pass turned
off), which differs only by the rounding residue the pass drops.  Where the
program is not shift-invariant the max's rule must still be there.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.opt import pipeline

from gradcheck import numeric_grad

RNG = np.random.default_rng(29)


def through_the_max():
    """Compile without skipping the adjoints of values only shifted by a constant."""
    return pipeline.options(disabled_passes={"constant_shifts"})


def _has_tie_mask(src):
    """The max's rule compares the input with the max (``x == max``); no forward here does."""
    return " == " in src


# ------------------------------------------------------- shift-invariant uses
def log_softmax_loss(z, t):
    z = z - np.max(z, axis=1, keepdims=True)
    return -np.sum((z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))) * t)


def softmax_loss(z, t):
    e = np.exp(z - np.max(z, axis=-1, keepdims=True))
    return np.sum(e / np.sum(e, axis=-1, keepdims=True) * t)


def log_softmax_all(z, t):
    z = z - np.max(z)
    return np.sum((z - np.log(np.sum(np.exp(z)))) * t)


def softmax_rows(z):
    e = np.exp(z - np.min(z, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def softmax_rows_in_a_loop(z, t, n):
    for _ in range(n):
        z = softmax_rows(z) * t     # (e of the loop body itself would be carried out of it)
    return np.sum(z)


STOPPED = [(log_softmax_loss, (5, 4)), (softmax_loss, (3, 6)), (log_softmax_all, (4, 3)),
           (softmax_rows_in_a_loop, (4, 3))]


def _args(fn, shape):
    args = (RNG.standard_normal(shape) * 3, RNG.standard_normal(shape))
    return args + (3,) if fn is softmax_rows_in_a_loop else args


@pytest.mark.parametrize("fn, shape", STOPPED, ids=lambda v: getattr(v, "__name__", ""))
def test_stopped_max_gives_the_gradient(fn, shape):
    args = _args(fn, shape)
    args[0].flat[:2] = args[0].max()    # a tie, where the max's rule would split the gradient
    g = ops.GradOperation()(fn)
    got = g(*args)
    assert not _has_tie_mask(s2sad.get_source(g)), s2sad.get_source(g)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(got, numeric_grad(fn, args, 0), rtol=1e-6, atol=1e-8)
    with through_the_max():
        g0 = ops.GradOperation()(fn)
        want = g0(*args)
        assert _has_tie_mask(s2sad.get_source(g0))
    # the dropped term is sum(d_z) spread by the mask: zero up to float64 rounding
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14 * np.abs(want).max())


def test_mlp_loss_in_float32_matches_the_hand_written_gradient():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((6, 4)).astype(np.float32)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    t = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 8)]
    g = ops.GradOperation()(lambda_free_mlp)
    got = g(W, x, t)
    assert got.dtype == np.float32 and not _has_tie_mask(s2sad.get_source(g))
    logits = x.astype(np.float64) @ W
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    # float32 products and sums of 8 x 6 terms: ~1e-6 relative
    np.testing.assert_allclose(got, x.T.astype(np.float64) @ (p - t) / 8, rtol=1e-5, atol=1e-6)


def lambda_free_mlp(W, x, t):
    return np.mean(log_softmax_loss(x @ W, t)) / 8


def test_hessian_of_softmax_cross_entropy_is_the_closed_form():
    z = RNG.standard_normal(5)
    t = np.abs(RNG.standard_normal(5))
    h = s2sad.hessian(lambda_free_ce)(z, t)
    p = np.exp(z - z.max())
    p /= p.sum()
    # d^2/dz^2 of -t . log_softmax(z) is sum(t) (diag(p) - p p^T)
    np.testing.assert_allclose(np.asarray(h), t.sum() * (np.diag(p) - np.outer(p, p)),
                               atol=1e-12)


def lambda_free_ce(z, t):
    z = z - np.max(z, axis=0, keepdims=True)
    return -np.sum((z - np.log(np.sum(np.exp(z), axis=0, keepdims=True))) * t)


@pytest.mark.parametrize("fn", [log_softmax_loss, softmax_loss], ids=lambda f: f.__name__)
def test_second_order_through_the_stopped_max(fn):
    s2sad.check_grads(fn, (RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))),
                      order=2, modes=("rev", "fwd"))


# ---------------------------------------------------- the max keeps its rule
def logsumexp_rows(z):
    m = np.max(z, axis=1, keepdims=True)       # m is read again: the result depends on it
    return np.sum(m + np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)))


def max_read_again(z):
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)))


def scaled_shift(z, t):
    d = (z - np.max(z, axis=1, keepdims=True)) * t
    return np.sum(d - np.log(np.sum(np.exp(d), axis=1, keepdims=True)))


def other_axis(z):
    z = z - np.max(z, axis=1, keepdims=True)
    return np.sum(z - np.log(np.sum(np.exp(z), axis=0, keepdims=True)))


def without_keepdims(z):
    z = z - np.max(z, axis=1)[:, None]
    return np.sum(np.exp(z) / np.sum(np.exp(z), axis=1, keepdims=True) * z)


def row_sums_without_keepdims(z):
    # z is square: e / row sums divides column j by the sum of row j
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    return np.sum(e / np.sum(e, axis=1))


def full_sum_read(z):
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    return np.sum(e) + np.sum(e / np.sum(e, axis=1, keepdims=True))


def other_operand(z, y):
    # y is 3-D: the max of z's rows varies along y's axis 1, which the softmax sums over
    d = y - np.max(z, axis=1, keepdims=True)
    return np.sum(d - np.log(np.sum(np.exp(d), axis=1, keepdims=True)))


def returns_shifted(z):
    z = z - np.max(z, axis=1, keepdims=True)
    return np.sum(z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))), z


KEPT = [logsumexp_rows, max_read_again, scaled_shift, other_axis, without_keepdims,
        row_sums_without_keepdims, full_sum_read, other_operand, returns_shifted]


def _summed(fn):
    return lambda *a: sum(np.sum(o) for o in (fn(*a) if fn is returns_shifted else (fn(*a),)))


@pytest.mark.parametrize("fn", KEPT, ids=lambda f: f.__name__)
def test_max_that_the_result_depends_on_keeps_its_gradient(fn):
    args = [RNG.standard_normal((3, 3))]
    if fn.__code__.co_argcount == 2:
        args.append(RNG.standard_normal((2, 3, 3) if fn is other_operand else (3, 3)))
    g = ops.GradOperation()(fn)
    got = g(*args)
    assert _has_tie_mask(s2sad.get_source(g)), s2sad.get_source(g)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(got, numeric_grad(_summed(fn), args, 0), rtol=1e-6, atol=1e-8)
