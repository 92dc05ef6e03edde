"""First and second derivatives at ties and kinks, in every mode, against closed forms.

Functions smooth at a tie (log-add-exp, softplus, log-sum-exp and what is
built on them) must keep their curvature there: a rule written with max and
abs would give the right slope and a second derivative of 0.  Functions with
a kink (abs, relu, max) have no derivative there; the subgradient s2sad picks
is stated in docs/semantics.md, and here it must be the same in reverse and
forward mode, with a second derivative taken from the same side.

Modes: ``grad`` (reverse), ``jacfwd`` (forward) for the slope;
``jacrev(grad)`` (reverse over reverse), ``hessian`` (forward over reverse)
and ``grad(grad)`` (reverse over reverse, seeded with ones: the Hessian's
column sums; Taylor mode where it applies) for the curvature.
"""
import math

import numpy as np
import pytest

import s2sad
from s2sad import nn, ops

LN2 = math.log(2.0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def lse_hessian(x):
    p = softmax(x)
    return np.diag(p) - np.outer(p, p)


# ------------------------------------------------- smooth at the tie point
def f_logaddexp_zero(x):
    return np.sum(np.logaddexp(0.0, x))


def f_logaddexp_pair(x):
    return np.logaddexp(x[0], x[1])


def f_logaddexp2(x):
    return np.sum(np.logaddexp2(x, 0.0))


def f_ops_logaddexp(x):
    return ops.sum(ops.logaddexp(x, ops.zeros_like(x)))


def f_softplus(x):
    return ops.sum(ops.softplus(x))


def f_logsumexp(x):
    return ops.logsumexp(x, 0)


def f_stable_lse(x):
    m = np.max(x)                       # a tie in the max that stabilises it
    return m + np.log(np.sum(np.exp(x - m)))


def f_log_softmax(x):
    return ops.log_softmax(x)[0]


LABELS = np.array([[0.2, 0.8, 0.0]])
CROSS_ENTROPY = nn.SoftmaxCrossEntropyWithLogits(reduction="sum")
BCE_LABELS = np.array([0.3, 1.0, 0.0])
BCE = nn.BCEWithLogitsLoss(reduction="sum")


def f_cross_entropy(x):
    return CROSS_ENTROPY(np.reshape(x, (1, 3)), LABELS)


def f_bce_with_logits(x):
    return BCE(x, BCE_LABELS)


S = sigmoid(np.array([0.0, 1.5, -0.7]))
S2 = 1.0 / (1.0 + 2.0 ** -np.array([0.0, 1.5, -0.7]))
AT_TIE = np.array([0.0, 1.5, -0.7])        # element 0 ties with the other operand (0)
TIED3 = np.array([0.4, 0.4, -0.9])         # the first two tie for the max
P3 = softmax(TIED3)

SMOOTH = {
    # name: (f, x, gradient, Hessian)
    "logaddexp": (f_logaddexp_zero, AT_TIE, S, np.diag(S * (1 - S))),
    "logaddexp-pair": (f_logaddexp_pair, np.array([0.3, 0.3]), np.array([0.5, 0.5]),
                       0.25 * np.array([[1.0, -1.0], [-1.0, 1.0]])),
    "logaddexp2": (f_logaddexp2, AT_TIE, S2, np.diag(LN2 * S2 * (1 - S2))),
    "ops.logaddexp": (f_ops_logaddexp, AT_TIE, S, np.diag(S * (1 - S))),
    "softplus": (f_softplus, AT_TIE, S, np.diag(S * (1 - S))),
    "logsumexp": (f_logsumexp, TIED3, P3, lse_hessian(TIED3)),
    "max-stabilised-lse": (f_stable_lse, TIED3, P3, lse_hessian(TIED3)),
    "log_softmax": (f_log_softmax, TIED3, np.eye(3)[0] - P3, -lse_hessian(TIED3)),
    "cross-entropy": (f_cross_entropy, TIED3, P3 - LABELS[0], lse_hessian(TIED3)),
    "bce-with-logits": (f_bce_with_logits, AT_TIE, S - BCE_LABELS, np.diag(S * (1 - S))),
}


# ----------------------------------------------------- kinks: subgradients
def f_abs(x):
    return np.sum(np.abs(x))


def f_relu(x):
    return ops.sum(ops.relu(x))


def f_maximum(x):
    return np.sum(np.maximum(x, 0.0))


def f_minimum(x):
    return np.sum(np.minimum(x, 0.0))


def f_max(x):
    return np.max(x)


def f_where(x):
    return np.sum(np.where(x > 0, x, 0.0))


def f_leaky_relu(x):
    return ops.sum(ops.leaky_relu(x, 0.2))


def f_relu6(x):
    return ops.sum(ops.relu6(x))


def f_elu(x):
    return ops.sum(ops.elu(x, 0.5))


KINK = np.array([0.0, 1.2, -0.5])          # element 0 sits on the kink
E = 0.5 * np.exp(-0.5)

NONSMOOTH = {
    # name: (f, x, chosen gradient, chosen second derivative (diagonal))
    "abs": (f_abs, KINK, [0.0, 1.0, -1.0], [0.0, 0.0, 0.0]),                # sign(0) = 0
    "relu": (f_relu, KINK, [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]),               # left side
    "maximum": (f_maximum, KINK, [0.5, 1.0, 0.0], [0.0, 0.0, 0.0]),         # split evenly
    "minimum": (f_minimum, KINK, [0.5, 0.0, 1.0], [0.0, 0.0, 0.0]),
    "max": (f_max, TIED3, [0.5, 0.5, 0.0], [0.0, 0.0, 0.0]),                 # split evenly
    "where": (f_where, KINK, [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]),             # the false branch
    "leaky_relu": (f_leaky_relu, KINK, [0.2, 1.0, 0.2], [0.0, 0.0, 0.0]),   # left side
    "relu6": (f_relu6, np.array([0.0, 6.0, 3.0]), [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]),
    "elu": (f_elu, KINK, [0.5, 1.0, E], [0.5, 0.0, E]),                      # left side
}


def _hessians(f, x):
    """The Hessian of ``f`` at ``x`` in every mode, by mode name."""
    return {
        "rev-over-rev": np.asarray(s2sad.jacrev(s2sad.grad(f))(x)),
        "fwd-over-rev": np.asarray(s2sad.hessian(f)(x)),
    }


def _check_modes(f, x, g, h):
    np.testing.assert_allclose(s2sad.grad(f)(x), g, rtol=1e-12, atol=1e-12,
                               err_msg="reverse gradient")
    np.testing.assert_allclose(np.asarray(s2sad.jacfwd(f)(x)), g, rtol=1e-12, atol=1e-12,
                               err_msg="forward gradient")
    for mode, got in _hessians(f, x).items():
        np.testing.assert_allclose(got, h, rtol=1e-12, atol=1e-12, err_msg=mode)
    np.testing.assert_allclose(s2sad.grad(s2sad.grad(f))(x), np.sum(h, axis=0), rtol=1e-12,
                               atol=1e-12, err_msg="grad(grad(f))")


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_smooth_at_the_tie_keeps_its_curvature(name):
    f, x, g, h = SMOOTH[name]
    _check_modes(f, x, g, h)


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_smooth_at_the_tie_matches_finite_differences(name):
    f, x, _, _ = SMOOTH[name]
    s2sad.check_grads(f, (x,), order=2)


@pytest.mark.parametrize("name", sorted(NONSMOOTH))
def test_kink_subgradient_is_the_same_in_every_mode(name):
    f, x, g, d2 = NONSMOOTH[name]
    _check_modes(f, x, np.asarray(g), np.diag(d2))


def test_logaddexp_is_one_primitive():
    """np.logaddexp stages LogAddExp, not the max and abs it would lose the curvature to."""
    ir = s2sad.get_ir(s2sad.grad(f_logaddexp_zero), AT_TIE, stage="forward")
    assert "LogAddExp" in ir and "Maximum" not in ir and "Abs" not in ir
