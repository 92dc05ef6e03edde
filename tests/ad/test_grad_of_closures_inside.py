"""``grad``/``value_and_grad``/``vjp`` of a lambda or nested def made inside a
differentiated function, capturing its runtime values (meta-learning inner
steps).  Each derivative is checked against central finite differences of the
outer function run eagerly (where the inner gradient is an ordinary eager call)."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError
from gradcheck import numeric_grad

R = np.random.RandomState(0)
W = R.randn(3)
X = R.randn(4, 3)


def _check(fn, args, i=0, rtol=1e-6, atol=1e-7):
    """``s2sad.grad(fn, i)`` equals finite differences of ``fn`` (run eagerly)."""
    np.testing.assert_allclose(s2sad.grad(fn, i)(*args), numeric_grad(fn, args, i),
                               rtol=rtol, atol=atol)


def enclosing_scope(x):
    inner = lambda y: x * y      # noqa: E731
    return x * s2sad.grad(inner)(np.float64(2.0))


def maml(w, x):
    inner = lambda p: np.sum(np.tanh(x @ p) ** 2)      # noqa: E731
    w2 = w - 0.1 * s2sad.grad(inner)(w)
    return np.sum(np.tanh(x @ w2) ** 2)


def test_enclosing_scope_ref_gradient_is_2x():
    x = np.float64(1.7)
    np.testing.assert_allclose(s2sad.grad(enclosing_scope)(x), 2 * x)
    _check(enclosing_scope, (x,))


def at_python_float(x):
    return x * s2sad.grad(lambda y: x * y ** 2)(2.0)


def test_python_float_input_is_differentiated_at_its_value():
    # the inner gradient is 4x: the outer function is 4x^2 (eagerly, a Python float
    # is a constant with no gradient, so there is no eager run to compare with)
    x = np.float64(1.3)
    np.testing.assert_allclose(s2sad.grad(at_python_float)(x), 8 * x)


def test_maml_step_both_inputs():
    _check(maml, (W, X), 0)
    _check(maml, (W, X), 1)


def nested_def_two_captured(w, a, b):
    def inner(p):
        return np.sum(np.sin(a * p) * b)
    g = s2sad.grad(inner)(w)
    return np.sum(g * w ** 2)


def test_nested_def_capturing_two_values():
    args = (W, R.randn(3), R.randn(3))
    for i in range(3):
        _check(nested_def_two_captured, args, i)


def tuple_positions(w, x):
    def inner(p, q, c):
        return np.sum(np.tanh(c @ p) * (c @ q))
    gp, gq = s2sad.grad(inner, (0, 1))(w, w * 2.0, x)
    return np.sum(gp * gq) + np.sum(x * x) * np.sum(gp)


def test_grad_position_tuple():
    _check(tuple_positions, (W, X), 0)
    _check(tuple_positions, (W, X), 1)


def with_value(w, x):
    inner = lambda p: np.sum(np.cos(x @ p))     # noqa: E731
    v, g = s2sad.value_and_grad(inner)(w)
    return v * np.sum(g * w)


def test_value_and_grad_of_closure():
    _check(with_value, (W, X), 0)
    _check(with_value, (W, X), 1)


def grad_with_aux(w, x):
    def inner(p):
        h = np.tanh(x @ p)
        return np.sum(h ** 2), h
    g, (h,) = s2sad.grad(inner, has_aux=True)(w)
    return np.sum(g * g) + np.sum(h)


def value_and_grad_with_aux(w, x):
    def inner(p):
        h = np.tanh(x @ p)
        return np.sum(h ** 2), h
    (v, h), g = s2sad.value_and_grad(inner, has_aux=True)(w)
    return v * np.sum(g) + np.sum(h * h)


@pytest.mark.parametrize("fn", [grad_with_aux, value_and_grad_with_aux])
def test_has_aux(fn):
    _check(fn, (W, X), 0)
    _check(fn, (W, X), 1)


def second_order_outer(x):
    inner = lambda y: np.sin(x * y) ** 2      # noqa: E731
    return np.sin(x) * s2sad.grad(inner)(np.float64(0.7))


def test_second_order_in_the_outer_argument():
    x = np.float64(0.9)
    first = s2sad.grad(second_order_outer)
    np.testing.assert_allclose(s2sad.grad(first)(x), numeric_grad(first, (x,), 0),
                               rtol=1e-6, atol=1e-7)


def maml_vjp(w, x):
    out, vjp_fn = s2sad.vjp(lambda p: np.tanh(x @ p), w)
    (g,) = vjp_fn(np.cos(out))
    return np.sum(out) + np.sum(g * g)


def test_vjp_of_closure():
    _check(maml_vjp, (W, X), 0)
    _check(maml_vjp, (W, X), 1)


def jacrev_of_closure(w, x):
    j = s2sad.jacrev(lambda p: np.tanh(x @ p))(w)
    return np.sum(np.sin(j))


def test_jacrev_of_closure():
    _check(jacrev_of_closure, (W, X), 0)
    _check(jacrev_of_closure, (W, X), 1)


def test_calls_with_other_captured_values_get_their_own_gradient():
    g = s2sad.grad(maml)
    for scale in (1.0, -2.5):
        x = X * scale
        np.testing.assert_allclose(g(W, x), numeric_grad(maml, (W, x), 0),
                                   rtol=1e-6, atol=1e-7)


def _factory(c):
    def outer(x):
        inner = lambda y: np.sum(c * x * y ** 2)      # noqa: E731
        return np.sum(s2sad.grad(inner)(x))
    return outer


def test_functions_of_one_code_capturing_other_constants():
    x = R.randn(3)
    for c in (2.0, 3.0, 2.0):       # one code: the compiled entry is shared, the value guarded
        np.testing.assert_allclose(s2sad.grad(_factory(c))(x), 4 * c * x)


def python_int_input(x):
    return s2sad.grad(lambda y: x * y)(2)


def with_weights(x):
    return s2sad.grad(lambda y: x * y, weights=x)(x)


def with_ids(x):
    return s2sad.grad(lambda y: x * y, return_ids=True)(x)


def dict_input(x):
    return s2sad.grad(lambda p: np.sum(p["a"] * x))({"a": x})["a"]


@pytest.mark.parametrize("fn, words", [
    (dict_input, "holds a dict"),
    (python_int_input, "is a constant"),
    (with_weights, "no weights"),
    (with_ids, "does not take return_ids"),
])
def test_refused_clearly(fn, words):
    with pytest.raises(CompileError, match=words):
        s2sad.grad(fn)(np.float64(1.5))
