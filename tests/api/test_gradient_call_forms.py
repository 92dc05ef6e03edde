"""Keyword arguments to gradient functions: ``grad(f)(x, y=2.0)``.

As in autograd and JAX, keywords name arguments that are not
differentiated; they are placed where the function's signature puts them.
A keyword naming a differentiated argument is refused (pass it positionally).
"""
import numpy as np
import pytest

import s2sad
from gradcheck import numeric_grad

X = np.array([0.4, -1.3, 2.2])


def scaled(x, y=1.0, z=3.0):
    return np.sum(np.sin(x) * y * z)


def with_aux(x, y=1.0):
    return np.sum(x ** 2) * y, y


def test_grad_with_a_keyword_matches_finite_differences():
    got = s2sad.grad(scaled)(X, z=2.0)
    assert np.allclose(got, numeric_grad(lambda x: scaled(x, 1.0, 2.0), (X,), 0))
    assert np.allclose(got, 2.0 * np.cos(X))


def test_keywords_and_positional_mix():
    assert np.allclose(s2sad.grad(scaled)(X, 0.5, z=4.0), 2.0 * np.cos(X))
    assert np.allclose(s2sad.grad(scaled)(X, y=0.5), 1.5 * np.cos(X))


def test_value_and_grad_and_aux_take_keywords():
    value, g = s2sad.value_and_grad(scaled)(X, y=5.0)
    assert np.isclose(value, scaled(X, 5.0))
    assert np.allclose(g, 15.0 * np.cos(X))
    g, aux = s2sad.grad(with_aux, has_aux=True)(X, y=3.0)
    assert np.allclose(g, 6.0 * X)
    assert aux == s2sad.grad(with_aux, has_aux=True)(X, 3.0)[1]


def test_several_positions_with_a_keyword():
    gx, gy = s2sad.grad(scaled, (0, 1))(X, np.float64(0.5), z=2.0)
    assert np.allclose(gx, np.cos(X))
    assert np.isclose(gy, 2.0 * np.sum(np.sin(X)))


def test_keyword_for_a_differentiated_argument_is_refused():
    with pytest.raises(TypeError, match="'y' is differentiated.*positionally"):
        s2sad.grad(scaled, 1)(X, y=np.float64(2.0))


def test_unknown_keyword_is_refused():
    with pytest.raises(TypeError, match="gradient of 'scaled' called with keyword.*'w'"):
        s2sad.grad(scaled)(X, w=2.0)


def keyword_only(x, *, y=1.0):
    return np.sum(x * y)


def test_keyword_only_parameter_is_refused_clearly():
    with pytest.raises(TypeError, match="'y' is not a positional parameter"):
        s2sad.grad(keyword_only)(X, y=2.0)


def test_grad_of_grad_takes_keywords():
    # d2/dx2 sum(sin(x) * y * z) = -sin(x) * y * z
    got = s2sad.grad(lambda x, y=1.0, z=3.0: np.sum(s2sad.grad(scaled)(x, y, z)))(X, z=2.0)
    assert np.allclose(got, -2.0 * np.sin(X))
    chained = s2sad.grad(s2sad.grad(lambda x, y=1.0: np.sum(np.sin(x)) * y))
    assert np.isclose(chained(np.float64(0.3), y=2.0), -2.0 * np.sin(0.3))


SCALED_GRAD = s2sad.grad(scaled)


def grad_called_with_a_keyword_inside(x):
    return np.sum(SCALED_GRAD(x, z=2.0) * x)


def forwarding(fn):
    """autograd-style wrapper: keywords passed on through ``**kwargs``."""
    g = s2sad.grad(fn)

    def gradfun(*args, **kwargs):
        return g(*args, **kwargs)
    return gradfun


FORWARDED = forwarding(scaled)


def forwarded_with_a_keyword_inside(x):
    return np.sum(FORWARDED(x, y=0.5) * x)


@pytest.mark.parametrize("fn, scale", [(grad_called_with_a_keyword_inside, 2.0),
                                       (forwarded_with_a_keyword_inside, 1.5)])
def test_a_gradient_function_called_with_keywords_inside_differentiated_code(fn, scale):
    # d/dx sum(scale * cos(x) * x) = scale * (cos(x) - x sin(x))
    want = scale * (np.cos(X) - X * np.sin(X))
    np.testing.assert_allclose(s2sad.grad(fn)(X), want, rtol=1e-12)
    np.testing.assert_allclose(s2sad.grad(fn)(X), numeric_grad(fn, (X,), 0), rtol=1e-6)


def nested_kwargs_parameter(x):
    def inner(a, **options):
        return scaled(a, **options) + options["z"]
    return inner(x, z=4.0)


def test_a_nested_function_with_a_kwargs_parameter():
    np.testing.assert_allclose(s2sad.grad(nested_kwargs_parameter)(X), 4.0 * np.cos(X))
