"""Recursion whose depth is decided at run time: a real call of generated functions.

Each program recurses on a tensor (a counter held in an array, a condition
on data), so inlining while compiling could never stop; the gradient is
compared with central finite differences in float64 and, where there is
one, a closed form, at several depths with one compile.
"""
import math

import numpy as np
import pytest

import s2sad
from s2sad import driver as G
from s2sad import nn
from gradcheck import numeric_grad


def doubling(x, n):
    return x if n <= 0 else doubling(x * 2, n - 1)


def fact(n):
    return 1.0 if n <= 1 else n * fact(n - 1)


def until_large(x):
    """Recursion until a condition on the data."""
    return x if np.sum(x * x) > 100 else until_large(x * 1.5 + np.sin(x))


def even(x, n):
    return x if n <= 0 else odd(np.sin(x), n - 1)


def odd(x, n):
    return x * 2.0 if n <= 0 else even(x * x, n - 1)


def power_sum(x, w, n):
    """Two results, read by the caller; ``w`` is differentiated too."""
    if n <= 0:
        return x, x * 0.0
    y, acc = power_sum(np.tanh(x * w), w, n - 1)
    return y, acc + np.sum(x)


def with_compile_time_depth(x, n=3):
    """Recursion that stops at a depth known while compiling: still inlined."""
    return x if n == 0 else with_compile_time_depth(np.sin(x), n - 1)


@pytest.fixture
def compiles(monkeypatch):
    """The compiles of gradients and forward-mode derivatives made during the test."""
    done = []
    for name in ("compile_grad", "compile_jvp"):
        real = getattr(G, name)

        def counted(*args, _real=real, **kwargs):
            done.append(1)
            return _real(*args, **kwargs)
        monkeypatch.setattr(G, name, counted)
    return done


def _fd(fn, args, i):
    return numeric_grad(lambda *a: np.sum(fn(*a)), args, i)


def test_depth_from_a_tensor_argument_one_compile(compiles):
    g = s2sad.grad(doubling)
    x = np.array([0.5, -1.0, 2.0])
    for n in (0, 1, 4, 9):
        np.testing.assert_allclose(g(x, np.array(float(n))), np.full(3, 2.0 ** n), rtol=1e-12)
        np.testing.assert_allclose(g(x, np.array(float(n))), _fd(doubling, (x, float(n)), 0),
                                   rtol=1e-6)
    assert len(compiles) == 1
    source = s2sad.get_source(g)
    # a real call of generated functions, not an unrolled trace of one depth
    assert "def doubling_rec_fwd(x, n):" in source and "def doubling_rec_bwd(" in source
    assert ".fwd(" in source and ".bwd(*residual" in source


def test_factorial_on_a_tensor_against_its_closed_form(compiles):
    g = s2sad.grad(fact)
    for k in (1, 2, 3, 6):
        n = float(k) + 0.25      # fact(n) = n (n-1) ... down to the first value <= 1
        factors = [n - j for j in range(k)]
        expected = sum(math.prod(factors[:j] + factors[j + 1:]) for j in range(k))
        assert float(fact(np.array(n))) == pytest.approx(math.prod(factors))
        np.testing.assert_allclose(g(np.array(n)), expected, rtol=1e-12)
        np.testing.assert_allclose(g(np.array(n)), _fd(fact, (np.array(n),), 0), rtol=1e-6)
    assert len(compiles) == 1


def test_recursion_until_a_condition_on_data(compiles):
    g = s2sad.grad(until_large)
    for x in (np.array([0.3, 0.2]), np.array([1.0, -2.0]), np.array([4.0, 9.0])):
        np.testing.assert_allclose(g(x), _fd(until_large, (x,), 0), rtol=1e-6, atol=1e-9)
    assert len(compiles) == 1


def test_mutual_recursion():
    g = s2sad.grad(even)
    x = np.array([0.4, 0.7])
    for n in (0, 1, 2, 5):
        np.testing.assert_allclose(g(x, np.array(n)), _fd(even, (x, np.array(n)), 0),
                                   rtol=1e-6, atol=1e-9)


def test_several_results_and_a_second_differentiated_argument():
    def loss(x, w, n):
        y, acc = power_sum(x, w, n)
        return np.sum(y * y) + acc

    g = s2sad.grad(loss, (0, 1))
    x, w = np.array([0.3, -0.8]), np.array([1.2, 0.7])
    for n in (0, 3, 7):
        gx, gw = g(x, w, np.array(n))
        np.testing.assert_allclose(gx, _fd(loss, (x, w, np.array(n)), 0), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(gw, _fd(loss, (x, w, np.array(n)), 1), rtol=1e-6, atol=1e-9)


class Halving(nn.Cell):
    """Recursion inside a Cell: a method, and its Parameter read at every level."""

    def __init__(self):
        super().__init__()
        self.w = s2sad.Parameter(np.array([0.9, 1.1]), name="w")

    def shrink(self, x):
        return x if np.sum(np.abs(x)) < 0.5 else self.shrink(np.sin(x) * self.w * 0.7)

    def construct(self, x):
        return self.shrink(x)


def test_recursion_in_a_cell_construct_with_its_parameter():
    net = Halving()
    grad = s2sad.ops.GradOperation(get_all=True, get_by_list=True)(net, net.trainable_params())
    w0 = net.w.asnumpy().copy()

    def with_w(x, w):
        net.w.set_data(s2sad.Tensor(w))
        try:
            return net(s2sad.Tensor(x)).asnumpy()
        finally:
            net.w.set_data(s2sad.Tensor(w0))

    for x in (np.array([0.3, 0.1]), np.array([2.0, -3.0])):
        (gx,), (gw,) = grad(s2sad.Tensor(x))
        np.testing.assert_allclose(np.asarray(gx), _fd(with_w, (x, w0), 0), rtol=1e-6,
                                   atol=1e-9)
        np.testing.assert_allclose(np.asarray(gw), _fd(with_w, (x, w0), 1), rtol=1e-6,
                                   atol=1e-9)


def test_forward_mode(compiles):
    x, t = np.array([0.4, 0.7]), np.array([1.0, -0.5])
    for n in (0, 2, 6):
        out, t_out = s2sad.jvp(lambda x: even(x, np.array(n)), (x,), (t,))
        eps = 1e-6
        fd = (even(x + eps * t, n) - even(x - eps * t, n)) / (2 * eps)
        np.testing.assert_allclose(out, even(x, n), rtol=1e-12)
        np.testing.assert_allclose(t_out, fd, rtol=1e-6, atol=1e-9)
    _, t_fact = s2sad.jvp(fact, (np.array(4.5),), (np.array(1.0),))
    np.testing.assert_allclose(t_fact, _fd(fact, (np.array(4.5),), 0), rtol=1e-6)


def test_deep_recursion_runs_one_python_frame_per_level():
    g = s2sad.grad(lambda x, n: doubling(x * 0.5, n))
    np.testing.assert_allclose(g(np.array([1.0]), np.array(600.0)), [2.0 ** 599], rtol=1e-12)


def test_recursion_with_a_depth_known_while_compiling_is_still_inlined():
    g = s2sad.grad(with_compile_time_depth)
    x = np.array([0.3, 1.2])
    np.testing.assert_allclose(g(x), _fd(with_compile_time_depth, (x,), 0), rtol=1e-6)
    assert ".fwd(" not in s2sad.get_source(g)


def test_gradient_of_gradient_is_refused_at_the_users_line():
    inner = s2sad.grad(lambda x, n: np.sum(doubling(np.sin(x), n)))
    with pytest.raises(s2sad.CompileError) as e:
        s2sad.grad(lambda x, n: np.sum(inner(x, n)))(np.array([0.3]), np.array(2.0))
    text = str(e.value)
    assert text.startswith('File "%s"' % __file__), text
    assert "recursion depth is decided at run time" in text and "while loop" in text


def test_nested_def_capturing_a_differentiated_tensor():
    def outer(x, w):
        def grow(y):
            return y if np.sum(y * y) > 4 else grow(y * w + 0.1)
        return np.sum(grow(x))

    x, w = np.array([0.3, 0.2]), np.array([1.5, 1.2])
    gx, gw = s2sad.grad(outer, (0, 1))(x, w)
    np.testing.assert_allclose(gx, numeric_grad(outer, (x, w), 0), rtol=1e-6)
    np.testing.assert_allclose(gw, numeric_grad(outer, (x, w), 1), rtol=1e-6)


def test_calls_inside_runtime_loops_and_two_call_sites():
    def in_loops(x, n):
        s = x
        for _ in range(3):
            s = doubling(np.sin(s), n) * 0.3 + x
        while np.sum(s) < 10:
            s = doubling(s, n) * 0.5 + s
        return np.sum(s * doubling(x, n + 1))

    x = np.array([0.3, 0.5])
    for n in (0, 2):
        args = (x, np.array(n))
        np.testing.assert_allclose(s2sad.grad(in_loops)(*args), numeric_grad(in_loops, args, 0),
                                   rtol=1e-6)
        value, grad = s2sad.value_and_grad(in_loops)(*args)
        assert value == pytest.approx(in_loops(*args))
        np.testing.assert_allclose(s2sad.jacfwd(in_loops)(*args), grad, rtol=1e-10)
        assert s2sad.jit(in_loops)(*args) == pytest.approx(in_loops(*args))


def test_hessian_is_refused_not_zero():
    with pytest.raises(s2sad.CompileError) as e:
        s2sad.hessian(lambda x, n: np.sum(doubling(np.sin(x), n)))(np.array([0.3]),
                                                                  np.array(2.0))
    assert "recursion depth is decided at run time" in str(e.value)


class Doubling(nn.Cell):
    """``construct`` calling itself until a condition on the data."""

    def construct(self, x):
        return x if x.sum() > 10 else self.construct(x * 2)


def test_construct_calling_itself():
    grad = s2sad.ops.GradOperation()(Doubling())
    for x, times in ((np.array([1.0, 2.0]), 2), (np.array([0.01, 0.02]), 9),
                     (np.array([20.0, 1.0]), 0)):
        np.testing.assert_allclose(np.asarray(grad(s2sad.Tensor(x))), np.full(2, 2.0 ** times))
