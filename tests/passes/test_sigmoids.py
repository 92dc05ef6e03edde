"""A sigmoid written out, ``1 / (1 + np.exp(-z))``, is differentiated as one op
(``opt/sigmoids.py`` ``fuse_sigmoids``).

Its value must be the user's expression exactly (the same NumPy calls), its
gradients those of the op-by-op program up to rounding and central
differences, and nothing may change where the pieces are read elsewhere.
"""
import warnings

import numpy as np
import pytest

import s2sad

from gradcheck import numeric_grad
from sources import load_source

SOURCE = """
def gate(z, w):
    return np.sum(w * (1 / (1 + np.exp(-z))))


def floats_written(z):
    s = 1.0 / (1.0 + np.exp(-z))
    return np.sum(s * s)


def one_plus_on_the_right(z):
    return np.sum(np.log(1 / (np.exp(-z) + 1)))


def lstm_like(W, xs, h):
    H = h.shape[1]
    for t in range(xs.shape[0]):
        z = xs[t] @ W
        i = 1 / (1 + np.exp(-z[:, :H]))
        o = 1 / (1 + np.exp(-z[:, H:]))
        h = o * np.tanh(i * h)
    return np.sum(h * h)


def exp_read_again(z):
    e = np.exp(-z)
    return np.sum(1 / (1 + e) * e)


def other_constant(z):
    return np.sum(2 / (1 + np.exp(-z)))
"""

NO_FUSION = {"disabled_passes": {"fuse_sigmoids"}}
FUSED = "1 / (1 + xp.exp(-"


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("sigmoids"), SOURCE, "sigmoids_src")


def _grad_and_source(fn, args, **options):
    with s2sad.options(**options):
        g = s2sad.ops.GradOperation(get_all=True)(fn)
        return g(*args), s2sad.get_source(g, *args)


def _rng_args(name, rng):
    z = rng.standard_normal((3, 4)) * 3
    return {"gate": (z, rng.standard_normal((3, 4))),
            "lstm_like": (rng.standard_normal((5, 6)) / 2, rng.standard_normal((4, 2, 5)),
                          rng.standard_normal((2, 3)) / 2)}.get(name, (z,))


@pytest.mark.parametrize("name", ["gate", "floats_written", "one_plus_on_the_right",
                                  "lstm_like"])
def test_a_written_sigmoid_is_one_op_with_the_same_gradient(src, name):
    fn = getattr(src, name)
    args = _rng_args(name, np.random.default_rng(7))
    got, code = _grad_and_source(fn, args)
    want, code0 = _grad_and_source(fn, args, **NO_FUSION)
    assert "xp.exp(-" in code and "xp.exp(neg" not in code, code
    assert "xp.exp(neg" in code0
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, numeric_grad(fn, args, k), rtol=1e-6, atol=1e-8)


def test_the_value_is_the_users_expression_exactly(src):
    z = np.random.default_rng(8).standard_normal(50) * 10
    value, _ = s2sad.value_and_grad(src.floats_written)(z)
    assert value == src.floats_written(z)
    assert "1.0 / (1.0 + xp.exp(-" in _grad_and_source(src.floats_written, (z,))[1]


def test_overflow_warns_as_numpy_does_and_the_gradient_is_zero_there(src):
    z = np.array([-800.0, -1.0, 0.0, 2.0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        eager = src.floats_written(z)
    assert any("overflow" in str(w.message) for w in seen)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        value, (g,) = s2sad.value_and_grad(src.floats_written, grad_position=(0,))(z)
    assert any("overflow" in str(w.message) for w in seen)
    assert value == eager
    s = 1 / (1 + np.exp(-z[1:]))
    # d/dz sum(s^2) = 2 s^2 (1 - s); op by op it was 0 * inf = NaN at z = -800
    np.testing.assert_allclose(g, np.concatenate([[0.0], 2 * s * s * (1 - s)]), rtol=1e-14)


@pytest.mark.parametrize("name", ["exp_read_again", "other_constant"])
def test_other_expressions_are_left_as_written(src, name):
    fn = getattr(src, name)
    args = _rng_args(name, np.random.default_rng(9))
    got, code = _grad_and_source(fn, args)
    assert "xp.exp(neg" in code, code
    np.testing.assert_allclose(got[0], numeric_grad(fn, args, 0), rtol=1e-6, atol=1e-8)


def test_second_derivatives_of_a_written_sigmoid(src):
    z = np.linspace(-3, 3, 5)
    h = s2sad.hessian(src.floats_written)(z)
    s = 1 / (1 + np.exp(-z))
    d2 = 2 * (2 * s * (1 - s) ** 2 * s - s * s * s * (1 - s))    # d/dz of 2 s^2 (1 - s)
    np.testing.assert_allclose(h, np.diag(d2), rtol=1e-10, atol=1e-12)
    _, t = s2sad.jvp(s2sad.grad(src.floats_written), z, np.ones_like(z))
    np.testing.assert_allclose(t, d2, rtol=1e-10, atol=1e-12)
