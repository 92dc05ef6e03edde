"""break, continue and return inside loops and branches, nested loops included.

Every gradient is compared with an independent value: a float64 central
finite difference of the original function run eagerly (``gradcheck``), or a
closed form.  Nothing is compared with s2sad itself.
"""
import numpy as np
import pytest

from s2sad import nn, ops, Tensor, Parameter, ParameterTuple

from gradcheck import check_vjp
from cf_common import M, V, code_lines, forward_source, grad_of
from test_branches import fd_cell


# ==================================================== break / continue / return
def f_break(x):
    s = x
    for i in range(10):
        s = s * 1.5
        if s.sum() > 5:
            break
        s = s + x
    return s


def f_continue_const(x):
    s = x
    for i in range(6):
        if i % 2 == 0:
            continue
        s = s * x
    return s


def f_continue_runtime(x):
    s = x
    for i in range(6):
        s = s + 0.3
        if s.sum() < 2:
            continue
        s = np.sin(s) * x
    return s


def f_while_continue(x):
    s = x
    i = 0
    while i < 6:
        i = i + 1
        if s.sum() > 3:
            s = s * 0.5
            continue
        s = s * x + 0.1
    return s


def f_while_break(x):
    s = x
    i = 0
    while i < 100:
        s = s * 1.3
        i = i + 1
        if s.sum() > 10:
            break
    return s


def f_while_true_break_counter(x):
    k = 0
    s = x
    while True:
        s = s * 1.1 + x
        k = k + 1
        if k >= 4:
            break
    return s


def f_inner_break(x):
    s = x
    for i in range(3):
        for j in range(10):
            s = s * 1.1
            if s.sum() > 2 * (i + 1):
                break
        s = s + x
    return s


def f_return_in_for(x):
    s = x
    for i in range(10):
        s = s * 1.5
        if s.sum() > 5:
            return s * x
    return s


def f_return_in_while(x):
    s = x
    while s.sum() < 10:
        s = s * 2
        if s.sum() > 7:
            return s * x
    return s


def f_several_returns(x):
    if x.sum() > 1:
        return x * x
    if x.sum() > 0:
        return np.sin(x)
    return x * 3


def f_return_in_loop_in_branch(x):
    if x.sum() > 0:
        for i in range(5):
            x = x * 1.5
            if x.sum() > 3:
                return x * x
    else:
        x = x * 3
    return np.sin(x)


def f_return_in_unrolled_loop(x, y):
    for t in (x, y, x * y):
        if t.sum() > 1:
            return t * t
    return x


def f_break_in_runtime_range(x):
    s = x[0]
    for i in range(1, x.shape[0]):
        s = s * x[i]
        if s.sum() < 0.05:
            break
    return s


def f_break_negative_constant_step(x):
    s = x[0]
    for i in range(x.shape[0] - 1, -1, -1):
        s = s * x[i]
        if s.sum() < 0.05:
            break
    return s


def f_break_negative_runtime_step(x):
    s = x[0]
    for i in range(x.shape[0] - 1, -1, -x.shape[1]):
        s = s * x[i]
        if s.sum() > 100:
            break
    return s


EXIT_CASES = [
    ("break_early", f_break, (V,)),
    ("break_never", f_break, (V * 0.001,)),
    ("continue_const", f_continue_const, (V,)),
    ("continue_runtime", f_continue_runtime, (V,)),
    ("while_continue", f_while_continue, (V,)),
    ("while_break", f_while_break, (V,)),
    ("while_true_break_counter", f_while_true_break_counter, (V,)),
    ("inner_break", f_inner_break, (V,)),
    ("return_in_for_taken", f_return_in_for, (V,)),
    ("return_in_for_not_taken", f_return_in_for, (V * 0.01,)),
    ("return_in_while_taken", f_return_in_while, (V,)),
    ("return_in_while_not_taken", f_return_in_while, (V * 3,)),
    ("several_returns_1", f_several_returns, (V,)),
    ("several_returns_2", f_several_returns, (V * 0.1,)),
    ("several_returns_3", f_several_returns, (-V,)),
    ("return_in_loop_in_branch_a", f_return_in_loop_in_branch, (V,)),
    ("return_in_loop_in_branch_b", f_return_in_loop_in_branch, (V * 0.01,)),
    ("return_in_loop_in_branch_c", f_return_in_loop_in_branch, (-V,)),
    ("return_in_unrolled_loop_a", f_return_in_unrolled_loop, (V * 0.1, V * 3)),
    ("return_in_unrolled_loop_b", f_return_in_unrolled_loop, (V * 0.1, V * 0.1)),
    ("break_in_runtime_range", f_break_in_runtime_range, (M,)),
    ("break_negative_constant_step", f_break_negative_constant_step, (M,)),
]


@pytest.mark.parametrize("fn,args", [c[1:] for c in EXIT_CASES], ids=[c[0] for c in EXIT_CASES])
def test_break_continue_return(fn, args):
    check_vjp(fn, args)


def test_break_with_runtime_negative_step():
    check_vjp(f_break_negative_runtime_step, (M,))


def f_return_for_for(x):
    s = x
    for i in range(5):
        for j in range(5):
            s = s * 1.2 + x
            if s.sum() > 20:
                return s * s
    return s


def f_return_for_while(x):
    for i in range(3):
        while x.sum() < 100:
            x = x * 2
            if x.sum() > 1:
                return x
    return x


def f_return_while_for(x):
    k = 0
    while k < 3:
        k = k + 1
        for j in range(3):
            x = x * 2
            if x.sum() > 1:
                return x
    return x


@pytest.mark.parametrize("fn,x", [(f_return_for_for, V), (f_return_for_while, V * 0.1),
                                  (f_return_while_for, V * 0.1)],
                         ids=["for_for", "for_while", "while_for"])
def test_return_in_nested_loop(fn, x):
    check_vjp(fn, (x,))


def f_break_after_inner_loop(x):
    for i in range(3):
        for j in range(2):
            x = x * 2
        if x.sum() > 1:
            break
    return x


def f_while_break_after_inner_loop(x):
    while x.sum() < 100:
        for j in range(2):
            x = x * 2
        if x.sum() > 1:
            break
    return x


def f_return_after_inner_loop(x):
    for i in range(3):
        for j in range(2):
            x = x * 2
        if x.sum() > 1:
            return x * x
    return x


def f_break_in_both_loops(x):
    for i in range(3):
        if x.sum() > 100:
            break
        for j in range(2):
            x = x * 2
            if x.sum() > 5:
                break
    return x


def f_break_before_inner_loop(x):
    for i in range(3):
        if x.sum() > 1:
            break
        for j in range(2):
            x = x * 2
    return x


@pytest.mark.parametrize("fn", [
    f_break_after_inner_loop,
    f_while_break_after_inner_loop,
    f_return_after_inner_loop,
    f_break_in_both_loops,
    f_break_before_inner_loop,
], ids=["break_after_inner_for", "while_break_after_inner_for", "return_after_inner_for",
        "break_in_both", "break_before_inner"])
def test_exit_outer_loop_around_inner_loop(fn):
    check_vjp(fn, (np.array([0.03, 0.05, 0.04]),))


def test_return_in_nested_loop_not_taken():
    # the inner 'return' is never reached: the loops run to completion
    check_vjp(f_return_for_for, (V * 0.001,))


def test_break_and_return_become_while_in_source():
    for fn in (f_break, f_return_in_for):
        fwd = code_lines(forward_source(grad_of(fn), V))
        assert any(line.startswith("while ") for line in fwd), fwd


def f_iterate_computed_tensor(x):
    s = x[0] * 0
    for row in x * 2:
        s = s * 0.5 + np.sin(row)
    return s


def f_enumerate_tuple(x, y):
    s = x
    for i, t in enumerate((x, y)):
        s = s * t + i
    return s


def f_break_in_unrolled_loop(x, y):
    s = x
    for t in (x, y, x):
        s = s * t
        if s.sum() > 1:
            break
    return s


def f_continue_in_unrolled_loop(x, y):
    s = x
    for t in (x, y, x):
        if t.sum() > 1:
            continue
        s = s * t
    return s


def f_break_on_index(x, n):
    s = x
    for i in range(n):
        if i == 2:
            break
        s = s * x
    return s


def f_augmented_in_loop(x):
    s = x * 1.0
    for i in range(3):
        s += x * s
        s *= 0.5
    return s


def f_return_tuple_from_loop(x):
    s = x
    for i in range(5):
        s = s * 1.5
        if s.sum() > 2:
            return s, s * x
    return s, x


def f_shrinking_while(x):
    s = x
    while s.shape[0] > 1:
        s = s[1:] * s[:-1] + 0.5
    return s


def f_swap_in_branch_in_loop(x, y):
    a, b = x, y
    for i in range(3):
        if a.sum() > 0:
            a, b = b, a
        a = a * 1.5
    return a * b * b


def tuple_step(s, x):
    return np.tanh(s * x), s + x


def f_helper_returning_tuple_in_loop(x):
    a = x
    b = x * 0
    for i in range(3):
        a, b = tuple_step(a, x)
    return a * b


MORE_CASES = [
    ("iterate_computed_tensor", f_iterate_computed_tensor, (M,)),
    ("enumerate_tuple", f_enumerate_tuple, (V, V + 1)),
    ("break_in_unrolled_taken", f_break_in_unrolled_loop, (V, V + 1)),
    ("break_in_unrolled_not_taken", f_break_in_unrolled_loop, (V * 0.1, V * 0.1)),
    ("continue_in_unrolled", f_continue_in_unrolled_loop, (V, V + 1)),
    ("break_on_index_5", f_break_on_index, (V, 5)),
    ("break_on_index_1", f_break_on_index, (V, 1)),
    ("augmented_in_loop", f_augmented_in_loop, (V,)),
    ("return_tuple_from_loop_taken", f_return_tuple_from_loop, (V,)),
    ("return_tuple_from_loop_not_taken", f_return_tuple_from_loop, (V * 0.01,)),
    ("shrinking_while", f_shrinking_while, (np.array([0.3, 0.5, 0.4, 0.9]),)),
    ("swap_in_branch_in_loop", f_swap_in_branch_in_loop, (V, V + 1)),
    ("helper_returning_tuple_in_loop", f_helper_returning_tuple_in_loop, (V,)),
]


@pytest.mark.parametrize("fn,args", [c[1:] for c in MORE_CASES], ids=[c[0] for c in MORE_CASES])
def test_more_control_flow(fn, args):
    check_vjp(fn, args)


class WhileMethodNet(nn.Cell):
    """A method with a ``while`` called from a ``for`` in construct."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([0.5, -0.3, 0.8])), name='w')

    def step(self, h, x):
        while h.sum() < 3:
            h = h * 1.5 + x * self.w
        return h

    def construct(self, x):
        h = x
        for i in range(2):
            h = self.step(h, x) * 0.1
        return h


def test_loop_in_method_called_in_loop():
    net = WhileMethodNet()
    (dx,), (dw,) = ops.GradOperation(get_all=True, get_by_list=True)(
        net, ParameterTuple(net.trainable_params()))(V)
    ex, ew = fd_cell(WhileMethodNet, V, ["w"])
    np.testing.assert_allclose(dx, ex, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dw.asnumpy(), ew, rtol=1e-6, atol=1e-6)


class TripNet(nn.Cell):
    """``w`` is read only inside a loop that runs ``n`` times (``n`` a Cell attribute)."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        self.w = Parameter(Tensor(np.array([0.5, -0.3, 0.8])), name='w')

    def construct(self, x):
        for i in range(self.n):
            x = x * self.w
        return x


@pytest.mark.parametrize("n", [0, 1, 3])
def test_parameter_only_in_loop_body(n):
    net = TripNet(n)
    (dx,), (dw,) = ops.GradOperation(get_all=True, get_by_list=True)(
        net, ParameterTuple(net.trainable_params()))(V)
    w = net.w.asnumpy()
    # out = x * w**n: closed forms
    np.testing.assert_allclose(dx, w ** n, rtol=1e-14)
    assert type(dw) is Tensor and dw.shape == (3,)
    if n == 0:
        np.testing.assert_array_equal(dw.asnumpy(), np.zeros(3))
    else:
        np.testing.assert_allclose(dw.asnumpy(), n * V * w ** (n - 1), rtol=1e-14)
