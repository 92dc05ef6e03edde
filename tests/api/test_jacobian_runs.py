"""How many times ``hessian``, ``jacfwd`` and ``jacrev`` run the function per call.

``hessian`` checks that the function returns one element inside its compiled
code: the check used to run the function eagerly on every call before the
compiled Hessian (a whole forward pass more), and is dropped where the output
is known to be 0-d (a loss ending in a full sum or mean).  A function that
draws random numbers is run once per call where the program splits into
values and tangents (straight-line code), so every column comes from the same
draw; where a Jacobian would run it once per element, it is refused instead of
mixing draws.
"""
import numpy as np
import pytest

import s2sad

from test_second_order_fast import logreg as logistic, logreg_hessian as logistic_hessian


def printing(x):
    print("forward")
    return np.sum(np.sin(x) * x)


def vector_or_sum(x):
    y = np.sin(x)
    return y if x[0] > 0 else np.sum(y)


def test_a_loss_known_to_be_0d_is_not_checked_and_the_hessian_is_exact():
    rng = np.random.default_rng(0)
    w, X = rng.standard_normal(4) * 0.1, rng.standard_normal((20, 4))
    y = np.sign(rng.standard_normal(20))
    H = s2sad.hessian(logistic)
    np.testing.assert_allclose(H(w, X, y), logistic_hessian(w, X, y), rtol=1e-10, atol=1e-12)
    assert "check_scalar_output" not in s2sad.get_source(H, w, X, y)


def test_the_function_runs_once_per_call(capsys):
    x = np.array([0.3, -1.2, 2.0])
    H = s2sad.hessian(printing)
    for _ in range(3):
        h = H(x)
    assert capsys.readouterr().out.count("forward") == 3
    # d2/dx2 (x sin x) = 2 cos x - x sin x, on the diagonal
    np.testing.assert_allclose(h, np.diag(2 * np.cos(x) - x * np.sin(x)), rtol=1e-12)


def test_an_output_decided_at_run_time_is_checked_at_run_time():
    H = s2sad.hessian(vector_or_sum)
    x = -np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(H(x), np.diag(-np.sin(x)), rtol=1e-12)
    assert "rt.check_scalar_output(" in s2sad.get_source(H, x)
    with pytest.raises(ValueError, match=r"For 'hessian', the function must return a scalar, "
                                         r"but its output has shape \[3\].*'jacrev'"):
        H(-x)


@pytest.mark.parametrize("fn, found", [
    (lambda x: np.sin(x), r"has shape \[3\]"),
    (lambda x: (np.sum(x), np.sum(x * x)), "is a tuple of 2 outputs"),
    (lambda x: 2.0, None)], ids=["vector", "tuple", "constant"])
def test_what_is_not_one_element_is_refused(fn, found):
    if found is None:       # a constant: a zero Hessian, as eagerly before
        np.testing.assert_array_equal(s2sad.hessian(fn)(np.ones(3)), np.zeros((3, 3)))
        return
    with pytest.raises(ValueError, match="must return a scalar, but its output " + found):
        s2sad.hessian(fn)(np.ones(3))


def scaled_squares(x, rng):
    return np.sum(x ** 2) * rng.random()


def scaled_in_a_loop(x, rng):
    s = rng.random()
    y = x
    for _ in range(x.shape[0]):
        y = y * s
    return np.sum(y)


def test_straight_line_code_draws_once_per_call():
    x = np.array([0.5, -1.0, 2.0])
    rng, same = np.random.default_rng(5), np.random.default_rng(5)
    H = s2sad.hessian(scaled_squares)
    J = s2sad.jacfwd(s2sad.grad(scaled_squares))
    for _ in range(3):
        np.testing.assert_allclose(H(x, rng), 2 * same.random() * np.eye(3), rtol=1e-14)
        np.testing.assert_allclose(J(x, rng), 2 * same.random() * np.eye(3), rtol=1e-14)


@pytest.mark.parametrize("transform, fn", [
    (s2sad.hessian, scaled_in_a_loop),
    (lambda f: s2sad.jacrev(lambda x, rng: x * f(x, rng)), scaled_squares)],
    ids=["hessian-loop", "jacrev"])
def test_a_jacobian_that_would_mix_draws_is_refused(transform, fn):
    with pytest.raises(ValueError, match="draws random numbers.*once per (input|output) "
                                         "element.*pass the numbers in"):
        transform(fn)(np.ones(3), np.random.default_rng(0))
