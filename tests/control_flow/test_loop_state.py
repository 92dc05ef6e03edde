"""What a loop carries: values a branch leaves unchanged, tuples, the D2L example,
GradOperation flags with a loop.

Every gradient is compared with an independent value: a float64 central
finite difference of the original function run eagerly (``gradcheck``), or a
closed form.  Nothing is compared with s2sad itself.
"""
import itertools

import numpy as np
import pytest

from s2sad import nn, ops, Tensor, Parameter, ParameterTuple

from gradcheck import check_vjp, numeric_grad, weighted_sum
from cf_common import V, code_lines, forward_source, grad_of


# A branch of an 'if' inside a loop that yields a loop-carried value unchanged
# ('r = x', 'return s', 'r = s; break'): the adjoint of the 'if' overwrites the
# carried adjoint with zeros before the branch reads it.
def f_if_assigns_input_in_loop(x):
    r = x * 3.0
    for i in range(2):
        if x.sum() > 0:
            r = x
    return r


def f_return_carried_in_for(x):
    s = x
    for i in range(5):
        s = s * 1.5
        if s.sum() > 2:
            return s
    return s


def f_return_carried_in_while(x):
    s = x
    while s.sum() < 10:
        s = s * 1.5
        if s.sum() > 2:
            return s
    return s


def f_break_keeps_carried(x):
    s = x
    r = x
    for i in range(5):
        s = s * 1.5
        if s.sum() > 2:
            r = s
            break
    return r * s


def f_branch_copies_carried(x):
    s = x
    r = x * 0
    for i in range(4):
        s = s * 1.5
        if s.sum() > 2:
            r = s
        else:
            r = r + s
    return r


def grow_until(s):
    for j in range(5):
        s = s * 1.5
        if s.sum() > 2:
            return s
    return s


def f_helper_returning_from_loop(x):
    s = x
    for i in range(3):
        s = grow_until(s) - x
    return s


@pytest.mark.parametrize("fn", [f_if_assigns_input_in_loop, f_return_carried_in_for,
                                f_return_carried_in_while, f_break_keeps_carried,
                                f_branch_copies_carried, f_helper_returning_from_loop],
                         ids=["r_eq_x", "return_for", "return_while", "break", "else_branch",
                              "helper_return"])
def test_branch_yields_carried_value_in_loop(fn):
    check_vjp(fn, (V,))


def test_branch_yields_carried_value_closed_form():
    # r = x on both iterations: dr/dx = 1
    np.testing.assert_allclose(grad_of(f_if_assigns_input_in_loop)(V), np.ones(3), rtol=1e-14)


# ======================================================= loop-carried tuples
def f_fibonacci(x, y):
    a, b = x, y
    for i in range(5):
        a, b = b, a + b * x
    return a * b


def f_fibonacci_while(x, y):
    a, b = x, y
    while b.sum() < 50:
        a, b = b, a + b
    return a * b


def f_carried_tuple_value(x):
    pair = (x, x * 0)
    k = 0
    for i in range(4):
        pair = (pair[1] + x, pair[0] * 0.5)
        k = k + 1
    return pair[0] * pair[1] * k


@pytest.mark.parametrize("fn,args", [(f_fibonacci, (V, V + 1)), (f_fibonacci_while, (V, V + 1)),
                                     (f_carried_tuple_value, (V,))],
                         ids=["fib_for", "fib_while", "tuple_value"])
def test_loop_carried_tuples(fn, args):
    check_vjp(fn, args)


def test_fibonacci_closed_form():
    # from (x, y) = (1, 2) elementwise, 'a, b = b, a + b' runs 5 times (b.sum() goes
    # 9, 15, 24, 39, 63): then a = 3x + 5y = 13, b = 5x + 8y = 21 and out = a * b
    x, y = np.ones(3), np.full(3, 2.0)
    dx, dy = grad_of(f_fibonacci_while, get_all=True)(x, y)
    a, b = 3 * 1.0 + 5 * 2.0, 5 * 1.0 + 8 * 2.0
    np.testing.assert_allclose(dx, 3 * b + 5 * a, rtol=1e-14)
    np.testing.assert_allclose(dy, 5 * b + 8 * a, rtol=1e-14)


# =========================================================== the D2L example
def d2l(a):
    b = a * 2
    while np.linalg.norm(b) < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


@pytest.mark.parametrize("a", [
    np.float64(0.7), np.float64(-0.7), np.array([0.3, -0.1, 0.5]),
    np.array([[0.3, -0.1], [0.5, 0.2]]), -np.array([[0.3, -0.1], [0.5, 0.2]])],
    ids=["scalar", "scalar_neg", "vector", "matrix", "matrix_neg"])
def test_d2l_gradient_is_d_over_a(a):
    d = grad_of(d2l)(a)
    assert type(d) is type(a)
    np.testing.assert_allclose(d, d2l(a) / a, rtol=1e-12)
    if np.sum(a) < 0:   # the else branch: 100 * 2**k
        assert np.all(np.asarray(d) > 100)


def test_d2l_source_keeps_while_and_if():
    fwd = code_lines(forward_source(grad_of(d2l), V))
    assert any(line.startswith("while ") for line in fwd), fwd
    assert any(line.startswith("if ") for line in fwd), fwd


# ============================================ GradOperation flags with a loop
class LoopNet(nn.Cell):
    """``w`` is read only inside the loop body, ``b`` only in the ``then`` branch."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([0.5, -0.3, 0.8])), name='w')
        self.b = Parameter(Tensor(np.array([1.0, 2.0, -1.0])), name='b')

    def construct(self, x, y):
        h = x
        for i in range(3):
            h = np.tanh(h * self.w + y)
        if h.sum() > 0:
            out = h * self.b
        else:
            out = h * 2.0
        return out


LOOP_INPUTS = {
    "branch_taken": (np.array([0.3, 0.1, -0.2]), np.array([0.1, 0.2, 0.3])),
    "branch_not_taken": (np.array([0.3, 0.1, -0.2]), -np.array([0.5, 0.6, 0.7])),
}
FLAGS = list(itertools.product([False, True], [False, True], [False, True]))


def fd_loop_net(x, y, sens):
    net = LoopNet()
    w0, b0 = net.w.asnumpy().copy(), net.b.asnumpy().copy()

    def loss(x_, y_, w_, b_):
        net.w.set_data(np.asarray(w_, np.float64))
        net.b.set_data(np.asarray(b_, np.float64))
        return weighted_sum(net(x_, y_), sens)

    return [numeric_grad(loss, [x, y, w0, b0], i) for i in range(4)]


@pytest.mark.parametrize("case", list(LOOP_INPUTS))
@pytest.mark.parametrize("get_all,get_by_list,sens_param", FLAGS,
                         ids=["all=%d-list=%d-sens=%d" % f for f in FLAGS])
def test_grad_operation_flags_loop_and_branch(get_all, get_by_list, sens_param, case):
    x, y = LOOP_INPUTS[case]
    net = LoopNet()
    sens = np.array([0.7, -1.3, 0.4]) if sens_param else np.ones(3)
    op = ops.GradOperation(get_all=get_all, get_by_list=get_by_list, sens_param=sens_param)
    fn = op(net, ParameterTuple(net.trainable_params())) if get_by_list else op(net)
    result = fn(x, y, sens) if sens_param else fn(x, y)
    dx, dy, dw, db = fd_loop_net(x, y, sens)
    h = x
    for _ in range(3):
        h = np.tanh(h * net.w.asnumpy() + y)
    assert (np.sum(h) > 0) == (case == "branch_taken")

    def check_input(got, expected):
        assert type(got) is np.ndarray and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)

    def check_weights(ws):
        assert type(ws) is tuple and len(ws) == 2
        assert all(type(g) is Tensor for g in ws)
        np.testing.assert_allclose(ws[0].asnumpy(), dw, rtol=1e-6, atol=1e-6)
        assert ws[1].shape == (3,)
        if case == "branch_not_taken":
            # the Parameter of the branch not taken: exactly zeros of its shape
            np.testing.assert_array_equal(ws[1].asnumpy(), np.zeros(3))
        else:
            np.testing.assert_allclose(ws[1].asnumpy(), db, rtol=1e-6, atol=1e-6)
            assert np.all(np.abs(db) > 1e-3)

    if get_all and get_by_list:
        assert type(result) is tuple and len(result) == 2
        assert type(result[0]) is tuple and len(result[0]) == 2
        check_input(result[0][0], dx)
        check_input(result[0][1], dy)
        check_weights(result[1])
    elif get_all:
        assert type(result) is tuple and len(result) == 2
        check_input(result[0], dx)
        check_input(result[1], dy)
    elif get_by_list:
        check_weights(result)
    else:
        check_input(result, dx)
