"""Lambdas as NumPy users write them: at module level, in dicts and lists, inline in
a call, several on a line, spread over lines, and in notebook cells.

A lambda's source is found by parsing its whole file (or cell) and picking
the lambda that starts on its line: by column on Python 3.11+, by its
parameters, names and constants before.  Values against closed forms and
central finite differences.
"""
import linecache

import numpy as np
import pytest

import s2sad

from gradcheck import numeric_grad

X = np.array([0.5, -1.0, 2.0])

square_sum = lambda x: (x ** 2).sum()                                      # noqa: E731
BY_NAME = {"sin": lambda x: np.sin(x).sum(), "cos": lambda x: np.cos(x).sum()}
PAIR = [lambda v: (v * 2.0).sum(), lambda v: (v * 3.0).sum()]
SPREAD = lambda x, w=1.5: (                                                 # noqa: E731
    np.tanh(x * w)
    .sum())


def test_a_module_level_lambda_is_named_after_its_variable():
    np.testing.assert_allclose(s2sad.grad(square_sum)(X), 2 * X, rtol=1e-15)
    src = s2sad.get_source(s2sad.grad(square_sum), X)
    assert "def square_sum_grad(x):" in src and "gradient of square_sum (" in src


def test_lambdas_in_a_dict_and_a_list_are_told_apart():
    np.testing.assert_allclose(s2sad.grad(BY_NAME["sin"])(X), np.cos(X), rtol=1e-15)
    np.testing.assert_allclose(s2sad.grad(BY_NAME["cos"])(X), -np.sin(X), rtol=1e-15)
    np.testing.assert_allclose(s2sad.grad(PAIR[0])(X), np.full(3, 2.0))
    np.testing.assert_allclose(s2sad.grad(PAIR[1])(X), np.full(3, 3.0))


def test_inline_lambdas_and_two_on_one_line():
    got = s2sad.grad(lambda v: (v ** 3).sum())(X) + s2sad.grad(lambda v: (v * 5.0).sum())(X)
    np.testing.assert_allclose(got, 3 * X ** 2 + 5.0, rtol=1e-15)


def test_a_lambda_over_several_lines_with_a_default():
    want = numeric_grad(lambda x: float(np.tanh(x * 1.5).sum()), (X,), 0)
    np.testing.assert_allclose(s2sad.grad(SPREAD)(X), want, rtol=1e-7)


def test_lambdas_through_every_functional_api():
    cube = lambda x: (x ** 3).sum()                                         # noqa: E731
    np.testing.assert_allclose(s2sad.hessian(cube)(X), np.diag(6 * X), rtol=1e-14)
    np.testing.assert_allclose(s2sad.jacfwd(lambda x: np.sin(x))(X), np.diag(np.cos(X)),
                               rtol=1e-15)
    out, pull = s2sad.vjp(lambda x: x * x, X)
    np.testing.assert_allclose(pull(np.ones(3))[0], 2 * X, rtol=1e-15)
    _, tangent = s2sad.jvp(lambda x: np.exp(x), (X,), (np.ones(3),))
    np.testing.assert_allclose(tangent, np.exp(X), rtol=1e-15)


def test_a_lambda_closing_over_a_local():
    scale = np.array([1.0, 2.0, 3.0])
    g = s2sad.grad(lambda x: (scale * x * x).sum())
    np.testing.assert_allclose(g(X), 2 * scale * X, rtol=1e-15)


def test_an_error_inside_a_lambda_points_at_its_line():
    bad = lambda x: float(x.sum()) * x                                      # noqa: E731
    with pytest.raises(s2sad.CompileError) as info:
        s2sad.grad(lambda x: bad(x).sum())(X)
    assert "bad = lambda x: float(x.sum()) * x" in str(info.value)


def test_a_lambda_defined_in_a_notebook_cell():
    """IPython keeps each cell's source in linecache under a name of its own."""
    cell = "half_square = lambda x: (0.5 * x * x).sum()\n"
    name = "<ipython-input-7-0123456789ab>"
    linecache.cache[name] = (len(cell), None, cell.splitlines(True), name)
    namespace = {}
    try:
        exec(compile(cell, name, "exec"), namespace)
        np.testing.assert_allclose(s2sad.grad(namespace["half_square"])(X), X, rtol=1e-15)
    finally:
        linecache.cache.pop(name, None)


def test_a_lambda_without_source_says_so():
    namespace = {}
    exec(compile("f = lambda x: (x * x).sum()\n", "<no-such-source>", "exec"), namespace)
    with pytest.raises(s2sad.NoGradientRuleError, match="no Python source"):
        s2sad.grad(namespace["f"])(X)


def _sines(x):
    for _ in range(3):
        x = np.sin(x)
    return x


JITTED = (s2sad.jit(lambda x: _sines(x) * 2.0),)      # a module-level lambda with no name


def test_jit_of_an_unnamed_lambda_names_its_function_lambda_():
    """Its compiled forward was ``def lambda(x):``, a SyntaxError (a keyword)."""
    f = JITTED[0]
    x = np.array([0.3, 1.0])
    np.testing.assert_allclose(f(x), np.sin(np.sin(np.sin(x))) * 2.0, rtol=1e-13)
    assert "def lambda_(x):" in s2sad.get_source(f, x)
