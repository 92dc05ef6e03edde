"""User errors point at the user's file and line; generated code is readable and stable."""
import inspect
import math
import os

import numpy as np
import pytest

import s2sad
from s2sad import nn, ops
from s2sad import driver as G
from s2sad.errors import CompileError, NoGradientRuleError, UnsupportedSyntaxError

THIS_FILE = os.path.basename(__file__)
COUNTER = 0


def marked_line(fn, marker="# <- here"):
    """The line number in this file of the line of ``fn`` carrying ``marker``."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, hits
    return hits[0]


def assert_points_at(err, fn):
    """``err`` names this file and the marked line of ``fn``, with a caret under it."""
    line = marked_line(fn)
    text = str(err)
    assert THIS_FILE in text
    assert 'line %d,' % line in text
    assert err.lineno == line
    assert os.path.basename(err.filename) == THIS_FILE
    rendered = text.splitlines()
    caret_rows = [i for i, row in enumerate(rendered) if row.strip() == "^"]
    assert caret_rows, text
    # the caret sits under the offending source line, which is printed just above it
    src_line = inspect.getsourcelines(fn)[0][line - inspect.getsourcelines(fn)[1]].strip()
    assert rendered[caret_rows[0] - 1].strip() == src_line


# ------------------------------------------------------------ unsupported syntax
class TryNet(nn.Cell):
    def construct(self, x):
        y = x * 2.0
        try:  # <- here
            y = y + 1.0
        except ValueError:
            y = y - 1.0
        return y


class WithNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.ctx = None

    def construct(self, x):
        y = ops.sin(x)
        with self.ctx:  # <- here
            y = y * 2.0
        return y


class YieldNet(nn.Cell):
    def construct(self, x):
        yield x * 2.0  # <- here


class GlobalNet(nn.Cell):
    def construct(self, x):
        global COUNTER  # <- here
        COUNTER = 1
        return x * 2.0


class WhileElseNet(nn.Cell):
    def construct(self, x):
        while x.sum() > 0:  # <- here
            x = x - 1.0
        else:
            x = x + 1.0
        return x


class ForElseNet(nn.Cell):
    def construct(self, x):
        for _ in range(3):  # <- here
            x = x * 2.0
        else:
            x = x + 1.0
        return x


@pytest.mark.parametrize("cls,what", [(TryNet, "'try'"), (WithNet, "'with'"),
                                      (YieldNet, "'yield'"), (GlobalNet, "global variable 'COUNTER'"),
                                      (WhileElseNet, "'while...else...'")],
                         ids=lambda v: getattr(v, "__name__", v))
def test_unsupported_syntax_points_at_the_line(cls, what):
    grad_fn = ops.GradOperation()(cls())
    with pytest.raises(UnsupportedSyntaxError) as info:
        grad_fn(np.ones((2, 3)))
    assert isinstance(info.value, CompileError)
    assert what in str(info.value)
    assert_points_at(info.value, cls.construct)


def test_for_else_message():
    with pytest.raises(UnsupportedSyntaxError) as info:
        ops.GradOperation()(ForElseNet())(np.ones(3))
    assert info.value.message == "The 'for...else...' statement is not supported now."
    assert "The 'for...else...' statement is not supported now." in str(info.value)
    assert_points_at(info.value, ForElseNet.construct)


def helper_with_try(x):
    try:  # <- here
        return x * 2.0
    finally:
        pass


def f_calls_helper(x):
    return helper_with_try(x) + 1.0


def test_error_in_called_helper_points_at_helper():
    with pytest.raises(UnsupportedSyntaxError) as info:
        ops.GradOperation()(f_calls_helper)(np.ones(3))
    assert_points_at(info.value, helper_with_try)


def f_tuple_index_runtime(x):
    pair = (x, 2.0 * x)
    n = x.shape[0]
    return pair[n - 3]  # <- here


def test_runtime_tuple_index_points_at_the_line():
    with pytest.raises(CompileError) as info:
        ops.GradOperation()(f_tuple_index_runtime)(np.ones(3))
    assert "known while compiling" in str(info.value)
    assert_points_at(info.value, f_tuple_index_runtime)


def f_list_index_runtime(x):
    outs = [x, 2.0 * x]
    total = 0.0
    for t in range(x.shape[0] - 1):
        total = total + np.sum(outs[t])  # <- here
    return total


def test_runtime_list_index_says_list_and_what_to_do():
    with pytest.raises(CompileError) as info:
        ops.GradOperation()(f_list_index_runtime)(np.ones(3))
    text = str(info.value)
    assert "a list index must be known while compiling" in text, text
    assert "range(len(...)) of the list" in text and "np.stack" in text, text
    assert_points_at(info.value, f_list_index_runtime)


# -------------------------------------------------------- no gradient available
def f_math_erf(x):
    return math.erf(x)  # <- here


_identity_ufunc = np.frompyfunc(float, 1, 1)


def f_frompyfunc(x):
    return _identity_ufunc(x)  # <- here


def f_spacing(x, y):
    return np.spacing(x) * y  # <- here


def f_unwrap(x):
    # NumPy's own Python code is never inlined: an unmapped NumPy function is an error
    return np.unwrap(x)  # <- here


@pytest.mark.parametrize("fn,name,nargs", [(f_math_erf, "math.erf", 1),
                                           (f_frompyfunc, "vectorized", 1),
                                           (f_spacing, "numpy.spacing", 2),
                                           (f_unwrap, "numpy.unwrap", 1)],
                         ids=["math.erf", "frompyfunc", "np.spacing", "np.unwrap"])
def test_callable_without_rule_is_named(fn, name, nargs):
    args = tuple(np.linspace(0.1, 0.9, 3) for _ in range(nargs))
    with pytest.raises(NoGradientRuleError) as info:
        ops.GradOperation()(fn)(*args)
    assert name in str(info.value)
    assert_points_at(info.value, fn)


def f_erf_on_constant(x):
    # math.erf on a value known while compiling is just evaluated
    return x * math.erf(0.5)


def test_builtin_on_constant_is_evaluated():
    x = np.array([1.0, -2.0])
    g = ops.GradOperation()(f_erf_on_constant)(x)
    np.testing.assert_allclose(g, np.full(2, math.erf(0.5)), rtol=1e-15)


# ----------------------------------------------------------------- get_source
class SinNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.sin = ops.Sin()

    def construct(self, x):
        y = self.sin(x) * x
        return y


def test_get_source_before_call_raises():
    grad_fn = ops.GradOperation()(SinNet())
    with pytest.raises(ValueError, match="not been called"):
        s2sad.get_source(grad_fn)


def test_get_source_of_non_grad_function():
    with pytest.raises(TypeError):
        s2sad.get_source(f_unwrap)


def test_generated_source_is_deterministic_and_readable():
    x = np.array([0.2, -0.4, 1.3])
    G.cache.clear()
    grad1 = ops.GradOperation()(SinNet())
    g1 = grad1(x)
    src1 = s2sad.get_source(grad1)
    first = grad1.last
    G.cache.clear()
    grad2 = ops.GradOperation()(SinNet())
    g2 = grad2(x)
    src2 = s2sad.get_source(grad2)
    assert grad2.last is not first  # really compiled a second time
    assert src1 == src2
    assert "# line " in src1
    assert "d_x" in src1
    line = marked_line(SinNet.construct, "y = self.sin(x) * x")
    assert "# line %d: y = self.sin(x) * x" % line in src1
    # and the code computes d/dx sin(x) x = cos(x) x + sin(x)
    for g in (g1, g2):
        np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-14)


def test_get_source_with_example_arguments():
    grad_fn = ops.GradOperation()(SinNet())
    src = s2sad.get_source(grad_fn, np.ones(3))
    assert "def " in src and "d_x" in src
    assert "s2sad: gradient of SinNet.construct" in src


scipy_linalg = None     # scipy.linalg, imported by the test that needs it


def f_scipy_cholesky(a):
    return np.sum(scipy_linalg.cholesky(a, lower=True))  # <- here


def test_a_library_function_without_a_rule_is_named_at_the_users_call():
    """scipy.linalg.cholesky has no rule; its source raises where s2sad cannot follow.
    The error is at the user's line, names the function, and says what to use."""
    global scipy_linalg
    scipy_linalg = pytest.importorskip("scipy.linalg")
    with pytest.raises(NoGradientRuleError) as info:
        s2sad.grad(f_scipy_cholesky)(np.array([[2.0, 0.5], [0.5, 1.0]]))
    text = str(info.value)
    assert "cannot differentiate 'scipy.linalg" in text and "cholesky" in text, text
    assert "np.linalg.cholesky" in text, text
    assert_points_at(info.value, f_scipy_cholesky)
