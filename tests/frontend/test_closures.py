"""Functions, closures, sub-Cells and custom bprops (issue 5), against finite differences.

Each program is plain Python in this file (s2sad reads its source); Cells are
checked for every GradOperation flag combination with ``program_gen.check_flags``
(inputs and Parameters against element-wise central differences), functions
with ``check_vjp`` and, at second order, with ``check_grads(order=2)`` in both
modes.
"""
import functools

import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, Parameter, ParameterTuple
from s2sad.ops import GradOperation
from s2sad.ops._grad import bprop_getters
from s2sad.ops.primitive import Primitive

import closure_helpers as helpers
from closure_helpers import scaled_sin
from gradcheck import check_vjp, numeric_grad
from program_gen import check_flags

X = np.array([0.3, -0.4, 0.5])
Y = np.array([0.2, 0.7, -0.1])


def params(*values):
    return [Parameter(Tensor(np.array(v, np.float64)), name="p%d" % i)
            for i, v in enumerate(values)]


# ------------------------------------------------------------ calls
def poly(x, a, b=0.5, *, c=2.0):
    return a * x * x + b * x + c


def takes_star(*xs):
    total = xs[0] * 0.0
    for t in xs:
        total = total + np.sin(t)
    return total


def f_calls(x, y):
    u = poly(x, 3.0)                       # positional and default
    v = poly(y, a=0.5, c=1.0, b=x)         # keywords, a tensor by keyword
    w = takes_star(x, y, u)                # *args of tensors
    return scaled_sin(u * v) + helpers.scaled_sin(w, scale=0.5)   # another module


def factorial(n, x):
    if n <= 1:
        return x
    return x * factorial(n - 1, np.sin(x))


def is_even(n, x):
    if n == 0:
        return x
    return is_odd(n - 1, np.cos(x))


def is_odd(n, x):
    if n == 0:
        return x * 2.0
    return is_even(n - 1, np.sin(x))


def f_recursion(x):
    return factorial(4, x) + is_even(5, x)


# ------------------------------------------------------------ closures
def f_nested_def(x, y):
    s = np.sin(y)

    def inner(t, k=2.0):
        return t * s + k * x               # captures a local and an argument

    g = lambda t: inner(t) * y             # a lambda capturing a closure
    return g(x) + inner(y, k=0.5)


def f_closure_as_argument(x, y):
    return helpers.apply(lambda t: np.tanh(t * y), x) + helpers.apply(np.cos, y)


def make_scaler(a):
    def scaler(t):
        return t * a
    return scaler


def f_returned_closures(x, y):
    up = make_scaler(y)                    # returned, called later
    affine = helpers.make_affine(x)
    pair = (up, affine)                    # stored in a tuple
    return pair[0](x) + pair[1](y) + up(affine(x))


def f_partial(x, y):
    p = functools.partial(poly, a=y)
    q = functools.partial(scaled_sin, scale=3.0)
    return p(x) + q(y)


def f_builtins(x, y):
    xs = [x, y, x * y]
    out = x * 0.0
    for i, (a, b) in enumerate(zip(xs, map(np.sin, xs))):
        out = out + a * b * (i + 1)
    n = len(xs)
    if isinstance(n, int) and min(n, 5) == 3 and max(1, 2) == 2:
        out = out + sum(tuple(t * t for t in xs))
    squares = [xs[k] * xs[k] for k in range(3) if k != 1]
    return out + np.stack(squares).sum(axis=0) + list(range(3))[2] * x


def f_append_in_loop(x, y):
    parts = []
    h = x
    for i in range(4):
        h = np.tanh(h * y + i)
        parts.append(h)
    return np.stack(parts).sum(axis=0) + sum(parts)


FUNCTIONS = [f_calls, f_recursion, f_nested_def, f_closure_as_argument, f_returned_closures,
             f_partial, f_builtins, f_append_in_loop]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_first_order(fn):
    nargs = fn.__code__.co_argcount
    check_vjp(fn, (X, Y)[:nargs])


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_second_order(fn):
    nargs = fn.__code__.co_argcount
    s2sad.check_grads(fn, (X, Y)[:nargs], order=2, modes=("rev", "fwd"))


def test_recursion_closed_form():
    # factorial(2, x) = x * sin(x)
    g = GradOperation()(lambda_free_factorial_2)(X)
    np.testing.assert_allclose(g, np.sin(X) + X * np.cos(X), rtol=1e-12)


def lambda_free_factorial_2(x):
    return factorial(2, x)


# ------------------------------------------------------------ Cells
class Scale(nn.Cell):
    def __init__(self, v):
        super().__init__()
        self.w = Parameter(Tensor(np.array(v)), name="w")

    def construct(self, x):
        return x * self.w


class ClosureNet(nn.Cell):
    """Parameters read only inside a closure, a lambda, a sub-Cell, a helper in a loop."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.unused = params([0.5, -0.2, 0.3], 0.7, [0.1, 0.2, 0.3],
                                                     [1.0, 2.0, 3.0])
        self.sub = Scale([0.4, 0.9, -0.6])
        self.layers = nn.CellList([Scale([1.1, 0.8, 0.5]), Scale([0.3, -0.7, 1.2])])
        self.seq = nn.SequentialCell([Scale([0.9, 0.9, 0.9]), nn.Tanh()])

    def helper(self, t):
        return np.sin(t * self.c)

    def construct(self, x, y):
        def by_a(t):
            return t * self.a
        by_b = lambda t: np.cos(t * self.b)
        h = by_a(x) + by_b(y)
        for i in range(2):
            h = h + self.helper(h)
        for layer in self.layers:
            h = layer(h)
        return self.seq(self.sub(h)) + h


def test_cell_every_flag_combination():
    net = ClosureNet()
    check_flags(net, (Tensor(X), Tensor(Y)), np.random.default_rng(0))


def test_parameter_read_only_in_a_closure_and_an_unused_parameter():
    net = ClosureNet()
    weights = ParameterTuple(net.trainable_params())
    grads = GradOperation(get_by_list=True)(net, weights)(Tensor(X), Tensor(Y))
    names = [p.name for p in weights]
    g = dict(zip(names, grads))
    np.testing.assert_array_equal(g["p3"].asnumpy(), np.zeros(3))     # unused: zeros
    for name, p in zip(names, weights):
        def loss(v, p=p):
            old = p.asnumpy().copy()
            p.set_data(Tensor(v))
            try:
                return np.sum(net(Tensor(X), Tensor(Y)).asnumpy())
            finally:
                p.set_data(Tensor(old))
        want = numeric_grad(loss, (p.asnumpy().copy(),), 0)
        np.testing.assert_allclose(g[name].asnumpy(), want, rtol=1e-6, atol=1e-9)


def test_cell_second_order():
    net = ClosureNet()
    s2sad.check_grads(net, (Tensor(X), Tensor(Y)), order=2, modes=("rev", "fwd"))


# ------------------------------------------------------------ custom bprop
class ClippedSquare(nn.Cell):
    """x^2 forward, a custom (deliberately different) gradient: 3 * x * dout."""

    def construct(self, x):
        return x * x

    def bprop(self, x, out, dout):
        return (3.0 * x * dout,)


class UsesCustom(nn.Cell):
    def __init__(self):
        super().__init__()
        self.sq = ClippedSquare()

    def construct(self, x):
        return self.sq(np.sin(x)) + ops.stop_gradient(x * x) + ops.depend(x, x * 2.0)


def test_custom_bprop_replaces_differentiation():
    g = GradOperation()(UsesCustom())(Tensor(X)).asnumpy()
    # d/dx of sq(sin x) by the rule: 3 sin(x) cos(x); stop_gradient: 0; depend(x, .): 1
    np.testing.assert_allclose(g, 3.0 * np.sin(X) * np.cos(X) + 1.0, rtol=1e-12)


def custom_first(x):
    return GradOperation()(ClippedSquare())(x)


def test_custom_bprop_is_differentiable_again():
    # the rule's own code, 3 * x * dout with dout = 1, has derivative 3
    g = GradOperation()(custom_first)(Tensor(X)).asnumpy()
    np.testing.assert_allclose(g, np.full(3, 3.0), rtol=1e-12)


class WrongSignature(nn.Cell):
    def construct(self, x):
        return x * 2.0

    def bprop(self, x, dout):
        return (dout,)


def test_custom_bprop_wrong_signature_gives_mindspores_message():
    with pytest.raises(Exception, match="The params of function 'bprop' of Primitive or Cell "
                                        "requires the forward inputs as well as the 'out' and "
                                        "'dout'"):
        GradOperation()(WrongSignature())(Tensor(X))


class Cube(Primitive):
    """A user primitive with a registered rule."""

    def __init__(self):
        super().__init__()

    def emit(self, x):
        return "(%s) ** 3" % x

    def __call__(self, x):
        return np.asarray(getattr(x, "_data", x)) ** 3


@bprop_getters.register(Cube)
def get_bprop_cube(self):
    def bprop(x, out, dout):
        return (3.0 * x * x * dout,)
    return bprop


cube = Cube()


def f_user_primitive(x):
    return cube(np.sin(x))


def test_user_registered_bprop():
    g = GradOperation()(f_user_primitive)(X)
    np.testing.assert_allclose(g, 3.0 * np.sin(X) ** 2 * np.cos(X), rtol=1e-12)


# ------------------------------------------------------------ no source
def f_calls_builtin_without_rule(x):
    return np.sin(x) + _no_source(x)


_no_source = eval("lambda t: t * 2.0")


def test_callable_without_source_is_a_compile_error_naming_it():
    with pytest.raises(s2sad.errors.NoGradientRuleError) as e:
        GradOperation()(f_calls_builtin_without_rule)(X)
    text = str(e.value)
    assert "test_closures.py" in text and "_no_source" in text and "bprop" in text


def halve_until_small(x):
    if x.sum() > 0.1:
        return halve_until_small(x * 0.5)
    return x


def test_recursion_on_a_runtime_condition_runs_at_run_time():
    x = np.array([0.8, 0.4])        # halved four times: sum 0.075
    np.testing.assert_allclose(GradOperation()(halve_until_small)(x), [0.0625, 0.0625])


def halve_n_times(x, n=300):
    return halve_n_times(x * 0.5, n - 1) if n > 0 else x


def test_recursion_too_deep_while_compiling_is_refused_at_the_users_call():
    with pytest.raises(s2sad.CompileError) as e:
        GradOperation()(halve_n_times)(X)
    text = str(e.value)
    assert text.startswith('File "%s", line' % __file__) and \
        "return halve_n_times(x * 0.5, n - 1) if n > 0 else x" in text, text
    assert "nest deeper than 200 levels while inlining 'halve_n_times'" in text
    assert "write it as a loop" in text
