"""Fault behaviour: NaN/inf, errors raised inside generated code, bad rules, threads."""
import importlib.util
import linecache
import re
import sys
import textwrap
import threading
import traceback

import numpy as np
import pytest

import s2sad
from s2sad import ops, Tensor
from s2sad import driver as G
from s2sad.runtime import userlines
from s2sad.errors import RuleError
from s2sad.ops._grad import bprop_getters


def load_source(tmp_path, source, name):
    path = tmp_path / (name + ".py")
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ================================================================ NaN and inf
FAULTS = """
import numpy as np


def log_at_zero(x):
    return np.log(x)


def sqrt_at_zero(x):
    return np.sqrt(x)


def x_log_x(x):
    return x * np.log(x)


def reciprocal(x):
    return 1.0 / x


def exp_overflow(x):
    return np.exp(x)


def zero_times_inf(x, y):
    return x * y


def sin_of_nan(x):
    return np.sin(x) * x


def branch_on_nan(x):
    if x.sum() > 0:
        return x * x
    return np.cos(x)


def loop_with_inf(x):
    s = x * 1.0
    for i in range(3):
        s = s * x
    return s
"""

# (function, arguments, the closed-form gradient of sum(f) evaluated with NumPy,
#  written as the chain rule evaluates it so IEEE special values match)
INF, NAN = np.inf, np.nan


def _cases():
    x0 = np.array([0.0, 1.0, 2.0])
    return [
        ("log_at_zero", (x0,), lambda x: (1.0 / x,)),
        ("sqrt_at_zero", (x0,), lambda x: (0.5 / np.sqrt(x),)),
        ("x_log_x", (x0,), lambda x: (np.log(x) + x * (1.0 / x),)),
        ("reciprocal", (x0,), lambda x: (-1.0 / (x * x),)),
        ("exp_overflow", (np.array([1.0, 800.0]),), lambda x: (np.exp(x),)),
        ("zero_times_inf", (np.array([0.0, 2.0]), np.array([INF, 3.0])),
         lambda x, y: (y, x)),
        ("sin_of_nan", (np.array([NAN, 1.0]),), lambda x: (np.cos(x) * x + np.sin(x),)),
        ("branch_on_nan", (np.array([NAN, 1.0]),), lambda x: (-np.sin(x),)),
        ("loop_with_inf", (np.array([INF, 1.0, 0.0]),), lambda x: (4 * x ** 3,)),
    ]


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("faults"), FAULTS, "fault_programs")


@pytest.mark.parametrize("name,args,closed", _cases(), ids=[c[0] for c in _cases()])
def test_nan_and_inf_propagate_as_numpy_does(name, args, closed, faults):
    fn = getattr(faults, name)
    with np.errstate(all="ignore"):
        want = closed(*args)
        got = ops.GradOperation(get_all=True)(fn)(*args)
        value_numpy = fn(*args)
        # the forward value computed by generated code is NumPy's too
        value, t = s2sad.jvp(fn, args, tuple(np.ones_like(a) for a in args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        # NaN where NumPy gives NaN, the same infinities, equal finite values
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(g[~np.isnan(g)], w[~np.isnan(w)])
    np.testing.assert_array_equal(value, value_numpy)     # NaN-aware
    assert np.shape(t) == np.shape(value_numpy)


def test_log_at_zero_value_and_gradient(faults):
    """log(0) is -inf with gradient inf; 0 * inf is nan."""
    with np.errstate(all="ignore"):
        g = ops.GradOperation()(faults.log_at_zero)(np.array([0.0]))
        assert faults.log_at_zero(np.array([0.0]))[0] == -INF
        assert g[0] == INF
        gx, gy = ops.GradOperation(get_all=True)(faults.zero_times_inf)(
            np.array([0.0]), np.array([INF]))
        assert gx[0] == INF and gy[0] == 0.0
        # sens of zero on an infinite local derivative: 0 * inf is nan, as in NumPy
        g0 = ops.GradOperation(sens_param=True)(faults.log_at_zero)(np.array([0.0]),
                                                                 np.array([0.0]))
        assert np.isnan(g0[0]) and np.isnan(np.float64(0.0) * INF)


def test_nan_in_sens_propagates(faults):
    with np.errstate(all="ignore"):
        g = ops.GradOperation(sens_param=True)(faults.sin_of_nan)(
            np.array([0.5, 1.0]), np.array([NAN, 1.0]))
    assert np.isnan(g[0]) and np.isfinite(g[1])


# ============================================== errors raised by generated code
SHAPES = """
import numpy as np


def f(x, y):
    z = np.sin(x)
    return z @ y
"""


def _failing_call(tmp_path):
    m = load_source(tmp_path, SHAPES, "fault_shapes")
    g = ops.GradOperation(get_all=True)(m.f)
    g(np.ones((2, 3)), np.ones((3, 2)))           # compiles
    with pytest.raises(ValueError) as info:
        g(np.ones((2, 3)), np.ones((2, 2)))       # NumPy refuses inside the generated code
    return m, g, info


def test_traceback_shows_generated_lines(tmp_path):
    m, g, info = _failing_call(tmp_path)
    text = _printed(info.value)
    frames = traceback.extract_tb(info.value.__traceback__)
    gen = [f for f in frames if f.filename.startswith("<s2sad ")]
    assert gen, text
    # linecache knows the generated source: the frame shows the failing generated line
    assert "z @ y" in gen[-1].line and gen[-1].line in text
    assert gen[-1].line in s2sad.get_source(g)
    # the line just above it in the registered source names the user's line
    lines = linecache.getlines(gen[-1].filename)
    above = [ln.strip() for ln in lines[:gen[-1].lineno - 1] if ln.strip().startswith("# line")]
    assert above and above[-1] == "# line 7: return z @ y", above


def _printed(exc):
    """The traceback Python prints for ``exc`` (the three-argument form runs on 3.9)."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def test_traceback_names_the_users_line(tmp_path):
    m, g, info = _failing_call(tmp_path)
    text = _printed(info.value)
    # a note under the error names the user's file and line, and shows it
    assert 'in differentiated code: File "%s", line 7' % m.__file__ in text, text
    assert text.rstrip().endswith("return z @ y"), text
    assert text.count("in differentiated code") == 1, text


@pytest.fixture
def without_add_note(monkeypatch):
    """Generated code raising as on Python 3.9/3.10, which have no ``add_note``."""
    monkeypatch.setattr(userlines, "_HAS_NOTES", False)


def test_without_add_note_the_message_names_the_users_line(tmp_path, without_add_note):
    m, g, info = _failing_call(tmp_path)
    note = 'in differentiated code: File "%s", line 7\n    return z @ y' % m.__file__
    message = str(info.value)
    assert message.startswith("matmul: ") and message.endswith("\n" + note), message
    assert not hasattr(info.value, "__notes__") and info.value.__cause__ is None
    text = _printed(info.value)
    assert text.rstrip().endswith("return z @ y") and text.count(note) == 1, text


ASSERTS = """
import numpy as np


def f(x):
    assert np.all(x > 0)
    return np.sum(x * x)
"""


def test_without_add_note_an_error_without_message_gets_one(tmp_path, without_add_note):
    m = load_source(tmp_path, ASSERTS, "fault_asserts")
    with pytest.raises(AssertionError) as info:
        ops.GradOperation()(m.f)(np.array([1.0, -1.0]))
    note = 'in differentiated code: File "%s", line 6\n    assert np.all(x > 0)' % m.__file__
    assert info.value.args == (note,) and info.value.__cause__ is None
    assert _printed(info.value).rstrip().endswith("AssertionError: " + note)


def _raised_in_handler():
    try:
        try:
            raise OSError("disk")
        except OSError:
            raise KeyError("k")
    except KeyError as e:
        return e


def test_without_add_note_a_formatted_message_gets_a_cause(without_add_note):
    """KeyError prints its argument quoted: the text is a UserLine above it, chain kept."""
    exc = _raised_in_handler()
    note = 'in differentiated code: File "m.py", line 3\n    y = d[k]'
    userlines._add_note(exc, note)
    userlines._add_note(exc, note)                            # once only
    assert str(exc) == "'k'" and exc.args == ("k",)
    cause = exc.__cause__
    assert isinstance(cause, userlines.UserLine) and cause.args == (note,)
    assert isinstance(cause.__context__, OSError) and not cause.__suppress_context__
    assert cause.__cause__ is None
    text = _printed(exc)
    assert text.count("UserLine: " + note) == 1, text
    assert text.index("UserLine: " + note) < text.index("KeyError: 'k'"), text
    if traceback.TracebackException.__init__.__module__ == "traceback":
        # (exceptiongroup's backport, which pytest imports on 3.9/3.10, replaces this
        # printer with one that follows only the cause of an exception that has both)
        assert text.index("OSError: disk") < text.index("UserLine: "), text


def test_without_add_note_a_note_is_added_once(without_add_note):
    exc = ValueError("bad shape")
    userlines._add_note(exc, "in differentiated code: line 3")
    userlines._add_note(exc, "in differentiated code: line 3")
    userlines._add_note(exc, "in differentiated code: line 9")
    assert exc.args == ("bad shape\nin differentiated code: line 3\n"
                        "in differentiated code: line 9",)


# ===================================================== user-registered rules
RULES = """
import numpy as np
from s2sad import nn, ops
from s2sad.ops.primitive import Primitive


class Cube(Primitive):
    def emit(self, x):
        return "%s ** 3" % x


cube = Cube()


def f(x):
    return cube(x) * 2.0


def get_bprop_two_gradients(self):
    def bprop(x, out, dout):
        return (dout * x * x * 3, dout)
    return bprop


def get_bprop_not_a_tuple(self):
    def bprop(x, out, dout):
        return dout * x * x * 3
    return bprop


def get_bprop_scalar_gradient(self):
    def bprop(x, out, dout):
        return (ops.reduce_sum(dout * x * x * 3, ()),)
    return bprop


def get_bprop_sliced_gradient(self):
    def bprop(x, out, dout):
        return ((dout * x * x * 3)[0:1],)
    return bprop


def get_bprop_right(self):
    def bprop(x, out, dout):
        return (dout * x * x * 3,)
    return bprop


class Twice(nn.Cell):
    def construct(self, x):
        return x * 2.0

    def bprop(self, x, out, dout):
        return (ops.reduce_sum(dout, ()),)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.twice = Twice()

    def construct(self, x):
        return self.twice(x) * x
"""


@pytest.fixture
def rules(tmp_path):
    m = load_source(tmp_path, RULES, "fault_rules")
    yield m
    bprop_getters.pop(m.Cube, None)
    G.cache.clear()


def _with_rule(m, getter):
    bprop_getters.pop(m.Cube, None)
    bprop_getters.register(m.Cube)(getter)
    G.cache.clear()
    return ops.GradOperation()(m.f)


@pytest.mark.parametrize("getter,count", [("get_bprop_two_gradients", "2 gradients"),
                                          ("get_bprop_not_a_tuple", "a non-tuple")])
def test_rule_with_wrong_number_of_gradients(rules, getter, count):
    g = _with_rule(rules, getattr(rules, getter))
    with pytest.raises(RuleError) as info:
        g(np.array([0.5, 1.0, 2.0]))
    assert getter in str(info.value) and "Cube" in str(info.value)
    assert count in str(info.value)


@pytest.mark.parametrize("getter,shape", [("get_bprop_scalar_gradient", "[]"),
                                          ("get_bprop_sliced_gradient", "[1]")])
def test_rule_with_wrong_gradient_shape(rules, getter, shape):
    """Detected when the generated code runs, with the rule and both shapes named."""
    g = _with_rule(rules, getattr(rules, getter))
    with pytest.raises(RuleError) as info:
        g(np.array([0.5, 1.0, 2.0]))
    msg = str(info.value)
    assert getter in msg and "shape %s" % shape in msg and "[3]" in msg


def test_right_rule_after_wrong_ones(rules):
    g = _with_rule(rules, rules.get_bprop_right)
    np.testing.assert_allclose(g(np.array([0.5, 1.0, 2.0])), 6 * np.array([0.25, 1.0, 4.0]))


def test_cell_bprop_with_wrong_gradient_shape(rules):
    with pytest.raises(RuleError) as info:
        ops.GradOperation()(rules.Net())(np.array([0.5, 1.0, 2.0]))
    assert "Twice.bprop" in str(info.value)


# ============================================================== concurrency
THREADED = """
import numpy as np


def f(x, y):
    s = x * 1.0
    i = 0
    while i < 4:
        i = i + 1
        if s.sum() > 0:
            s = np.sin(s) * y
        else:
            s = np.cos(s) + y
    return (s * x).sum()
"""


def test_eight_threads_compile_once_and_agree(tmp_path):
    m = load_source(tmp_path, THREADED, "fault_threads")
    G.cache.clear()
    g = ops.GradOperation(get_all=True)(m.f)
    x = np.array([0.3, -0.2, 0.5])
    y = np.array([0.7, 0.1, -0.4])
    barrier = threading.Barrier(8)
    results, errors = [None] * 8, []

    def work(k):
        try:
            barrier.wait()
            results[k] = g(x, y)
        except Exception as e:      # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(G.cache) == 1
    for r in results[1:]:
        for a, b in zip(r, results[0]):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(results[0][0], g(x, y)[0])
    assert len(G.cache) == 1
