"""Runtime control flow: if/elif/else, ternaries, and/or/not, while, for, break,
continue and return, differentiated through the generated code.

Every gradient here is compared with an independent value: a float64 central
finite difference of the original function run eagerly (``gradcheck``), or a
closed form.  Nothing is compared with s2sad itself.

The regression tests near the end (nested exits, branches yielding carried
values) each reproduce a defect these tests found and that was fixed.
"""
import inspect
import itertools
import re
import sys
import time
import tracemalloc

import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, Parameter, ParameterTuple
from s2sad.backend.runtime import UndefinedVariableError

from gradcheck import check_vjp, numeric_grad, weighted_sum

V = np.array([0.3, 0.5, 0.4])
M = np.array([[0.3, 0.5], [0.4, 0.9], [1.1, 0.2], [0.7, 0.6], [0.5, 0.5]])


def grad_of(fn, **flags):
    return ops.GradOperation(**flags)(fn)


def forward_source(grad_fn, *args):
    """The forward half of the generated adjoint (before the backward sweep)."""
    src = s2sad.get_source(grad_fn, *args)
    assert "# -- backward sweep --" in src, src
    return src.split("# -- backward sweep --")[0]


def code_lines(src):
    return [line.strip() for line in src.splitlines() if not line.strip().startswith("#")]


def marked_line(fn, marker="# <- here"):
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, hits
    return hits[0]


# =================================================================== branches
def f_if_elif_else(x):
    if x.sum() > 0:
        y = x * x
    elif x.sum() > -1:
        y = np.sin(x)
    else:
        y = x * 3
    return y


def f_ternary(x):
    return x * x if x.sum() > 0 else np.sin(x)


def f_and_or(x, y):
    if x.sum() > 0 and y.sum() > 0:
        z = x * y
    elif not (x.sum() > 0) or y.sum() < -5:
        z = x + y * y
    else:
        z = np.exp(x)
    return z


def f_not(x):
    if not x.sum() > 0:
        return x * 3
    return x * x


def f_bool_value(x, y):
    c = x.sum() > 0 and y.sum() > 0
    d = x.sum() > 5 or c
    if d:
        return x * y
    return x - y


def f_shape_cond(x):
    if x.shape[0] > 2:
        return x * x
    return np.sin(x)


def f_int_arg(x, n):
    if n > 2:
        return x * x
    return np.sin(x) * n


@pytest.mark.parametrize("scale", [1.0, -0.5, -3.0], ids=["if", "elif", "else"])
def test_if_elif_else(scale):
    check_vjp(f_if_elif_else, (V * scale,))


@pytest.mark.parametrize("scale", [1.0, -1.0], ids=["then", "else"])
def test_ternary(scale):
    check_vjp(f_ternary, (V * scale,))


@pytest.mark.parametrize("sx,sy", [(1, 1), (1, -1), (-1, 1), (-1, -1)])
def test_and_or(sx, sy):
    check_vjp(f_and_or, (V * sx, (V + 0.2) * sy))


@pytest.mark.parametrize("scale", [1.0, -1.0])
def test_not(scale):
    check_vjp(f_not, (V * scale,))


@pytest.mark.parametrize("sx,sy", [(1, 1), (1, -1), (-1, 1)])
def test_and_or_as_values(sx, sy):
    check_vjp(f_bool_value, (V * sx, (V + 0.2) * sy))


def test_tensor_condition_keeps_if_in_source():
    g = grad_of(f_if_elif_else)
    fwd = code_lines(forward_source(g, V))
    assert sum(line.startswith("if ") for line in fwd) >= 2, fwd  # the if and the elif
    assert any(line == "else:" for line in fwd)


def test_shape_condition_same_grad_fn_both_shapes():
    g = grad_of(f_shape_cond)
    for x in (V, V[:2], V, np.arange(1.0, 5.0) / 4):
        np.testing.assert_allclose(g(x), numeric_grad(lambda a: np.sum(f_shape_cond(a)), (x,), 0),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [3, 1])
def test_python_int_argument_condition(n):
    check_vjp(f_int_arg, (V, n))


class FlagNet(nn.Cell):
    def __init__(self, flag):
        super().__init__()
        self.flag = flag
        self.w = Parameter(Tensor(np.array([0.5, -0.3, 0.8])), name='w')

    def construct(self, x):
        if self.flag:
            return x * self.w * x
        return np.sin(x) + self.w * self.w


def fd_cell(net_factory, x, w_names, sens=None):
    """FD gradients of ``sum(net(x) * sens)`` w.r.t. ``x`` and the named Parameters."""
    net = net_factory()
    params = [getattr(net, n) for n in w_names]
    vals = [np.array(p.asnumpy(), np.float64) for p in params]
    if sens is None:
        sens = np.ones_like(np.asarray(net(x)), dtype=np.float64)

    def loss(x_, *ws):
        for p, w in zip(params, ws):
            p.set_data(np.asarray(w, np.float64))
        return weighted_sum(net(x_), sens)

    args = [x] + vals
    return [numeric_grad(loss, args, i) for i in range(len(args))]


def test_cell_python_flag_two_instances():
    nets = {True: FlagNet(True), False: FlagNet(False)}
    op = ops.GradOperation(get_all=True, get_by_list=True)
    grads = {}
    # interleaved, so a cached adjoint for one instance is never reused for the other
    for flag in (True, False, True, False):
        net = nets[flag]
        (dx,), (dw,) = op(net, ParameterTuple(net.trainable_params()))(V)
        grads[flag] = (dx, dw.asnumpy())
    for flag in (True, False):
        ex, ew = fd_cell(lambda: FlagNet(flag), V, ["w"])
        np.testing.assert_allclose(grads[flag][0], ex, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(grads[flag][1], ew, rtol=1e-6, atol=1e-6)
    # closed forms too
    np.testing.assert_allclose(grads[True][0], 2 * V * nets[True].w.asnumpy(), rtol=1e-14)
    np.testing.assert_allclose(grads[False][0], np.cos(V), rtol=1e-14)


# ====================================================================== loops
def f_while_norm(x):
    b = x * 1.0
    while np.sqrt(np.sum(b * b)) < 1000:
        b = b * 2
    return b * x


def f_while_counter(x):
    s = x[0]
    i = 1
    while i < x.shape[0]:
        s = s * x[i] + np.sin(s)
        i = i + 1
    return s


def f_while_zero_iterations(x):
    s = x
    while s.sum() > 100:
        s = s * 0.5
    return s * s


def f_for_range_n(x, n):
    s = x
    for i in range(n):
        s = np.sin(s) * x + i
    return s


def f_for_range_shape(x):
    s = x[0]
    for i in range(x.shape[0]):
        s = s * x[i] + 0.1
    return s


def f_for_range_len(x):
    s = x[0]
    for i in range(len(x)):
        s = s * x[i]
    return s


def f_for_range_int_shape(x):
    s = x[0] * 0
    n = int(x.shape[0])
    for i in range(n):
        s = s + x[i] * x[i]
    return s


def f_for_range_start_stop_step(x):
    s = x[0] * 0
    for i in range(1, x.shape[0], 2):
        s = s + x[i] * x[i - 1]
    return s


def f_for_range_start_stop_step_n(x, n):
    s = x
    for i in range(1, n, 2):
        s = s * x + i
    return s


def f_for_negative_step_n(x, n):
    s = x
    for i in range(n, 0, -1):
        s = s * i + np.sin(s)
    return s


def f_for_negative_step_runtime(x):
    s = x[0]
    for i in range(x.shape[0] - 1, -1, -1):
        s = s * x[i] + 1.0
    return s


def f_for_tuple(x, y):
    s = x
    for t in (x, y, x * y):
        s = s * t
    return s


def f_for_list(x, y):
    s = x
    for t in [x, y]:
        s = s * t + 1
    return s


def f_for_tuple_argument(xs, y):
    s = y
    for t in xs:
        s = s * t
    return s


def f_for_rows(x):
    s = x[0] * 0
    for row in x:
        s = np.sin(s) + row * row
    return s


def f_enumerate(x):
    s = x[0] * 0
    for i, row in enumerate(x):
        s = s + row * i
    return s


def f_enumerate_start(x):
    s = x[0] * 0
    for i, row in enumerate(x, 2):
        s = s * 0.5 + row * i
    return s


def f_zip(x, y):
    s = x[0] * 0
    for a, b in zip(x, y):
        s = s * a + b
    return s


def f_nested_const(x):
    s = x
    for i in range(3):
        for j in range(i + 1):
            s = s * 0.9 + np.sin(s) * x
    return s


def f_nested_runtime(x):
    s = x[0]
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            s = s * x[i] + x[i] * j
    return s


def f_nested_while_in_for(x):
    s = x
    for i in range(3):
        while True:
            s = s * 1.5
            if s.sum() > 3 * (i + 1):
                break
        s = s - x
    return s


def f_loop_in_branch(x):
    if x.sum() > 0:
        s = x
        for i in range(3):
            s = s * x
    else:
        s = x
        while s.sum() > -10:
            s = s * 2 - 1
    return s


def f_branch_in_loop(x):
    s = x
    for i in range(4):
        if s.sum() > 1:
            s = s * 0.5
        else:
            s = s * x + 1
    return s


def f_ternary_in_loop(x):
    s = x
    for i in range(4):
        s = s * x if s.sum() < 2 else np.sin(s)
    return s


def f_python_float_init(x, n):
    s = 0.0
    for i in range(n):
        s = s + x * i
    return s * x


def f_python_float_init_rows(x):
    s = 0.0
    for row in x:
        s = s + np.sin(row)
    return s


LOOP_CASES = [
    ("while_norm", f_while_norm, (V,)),
    ("while_norm_neg", f_while_norm, (-V,)),
    ("while_counter_shape", f_while_counter, (V,)),
    ("while_zero_iterations", f_while_zero_iterations, (V,)),
    ("for_range_n0", f_for_range_n, (V, 0)),
    ("for_range_n1", f_for_range_n, (V, 1)),
    ("for_range_n4", f_for_range_n, (V, 4)),
    ("for_range_shape", f_for_range_shape, (V,)),
    ("for_range_len", f_for_range_len, (V,)),
    ("for_range_1_n_2_runtime_even", f_for_range_start_stop_step, (np.arange(1.0, 7.0) / 5,)),
    ("for_range_1_n_2_runtime_odd", f_for_range_start_stop_step, (np.arange(1.0, 6.0) / 5,)),
    ("for_range_1_n_2_int", f_for_range_start_stop_step_n, (V, 6)),
    ("for_range_n_0_-1_int", f_for_negative_step_n, (V, 4)),
    ("for_range_n_0_-1_runtime", f_for_negative_step_runtime, (V,)),
    ("for_tuple", f_for_tuple, (V, V + 1)),
    ("for_list", f_for_list, (V, V + 1)),
    ("for_rows", f_for_rows, (M,)),
    ("for_enumerate", f_enumerate, (M,)),
    ("for_enumerate_start", f_enumerate_start, (M,)),
    ("for_zip", f_zip, (M, M + 1)),
    ("for_zip_unequal", f_zip, (M, M[:3] + 1)),
    ("nested_const", f_nested_const, (V,)),
    ("nested_runtime", f_nested_runtime, (M,)),
    ("nested_while_in_for", f_nested_while_in_for, (V,)),
    ("loop_in_branch_then", f_loop_in_branch, (V,)),
    ("loop_in_branch_else", f_loop_in_branch, (-V,)),
    ("branch_in_loop_a", f_branch_in_loop, (V,)),
    ("branch_in_loop_b", f_branch_in_loop, (V * 4,)),
    ("ternary_in_loop", f_ternary_in_loop, (V,)),
    ("python_float_init", f_python_float_init, (V, 3)),
    ("python_float_init_rows", f_python_float_init_rows, (M,)),
    ("tensor_input", f_nested_while_in_for, (Tensor(V),)),
]


@pytest.mark.parametrize("fn,args", [c[1:] for c in LOOP_CASES], ids=[c[0] for c in LOOP_CASES])
def test_loops(fn, args):
    check_vjp(fn, args)


def test_for_range_int_of_shape():
    check_vjp(f_for_range_int_shape, (V,))


def test_for_over_tuple_argument():
    xs = (V, V + 1)
    (dxs, dy) = grad_of(f_for_tuple_argument, get_all=True)(xs, V * 2)
    # s = y * xs[0] * xs[1]: closed form
    np.testing.assert_allclose(dxs[0], V * 2 * (V + 1), rtol=1e-14)
    np.testing.assert_allclose(dxs[1], V * 2 * V, rtol=1e-14)
    np.testing.assert_allclose(dy, V * (V + 1), rtol=1e-14)


def test_same_grad_fn_different_trip_counts():
    g = grad_of(f_for_rows)
    for rows in (1, 3, 5, 2):
        x = M[:rows]
        np.testing.assert_allclose(g(x), numeric_grad(lambda a: np.sum(f_for_rows(a)), (x,), 0),
                                   rtol=1e-6, atol=1e-6)


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


# ====================================================== undefined variables
def f_defined_in_one_branch(x):
    if x.sum() > 0:
        y = x * 2
    return y * x  # <- here


def f_defined_in_loop(x, n):
    for i in range(n):
        y = x * (i + 1)
    return y + x  # <- here


def f_maybe_undefined_read_on_safe_path(x):
    if x.sum() > 0:
        y = x * 2
    if x.sum() > 0:
        z = y * x
    else:
        z = np.sin(x)
    return z


def f_never_defined(x):
    if x.sum() > 0:
        z = x
    return w_never_assigned + x  # noqa: F821


def f_defined_after_use(x):
    y = x * later_name  # noqa: F821
    later_name = x
    return y


@pytest.mark.parametrize("fn,args", [(f_defined_in_one_branch, (-V,)),
                                     (f_defined_in_loop, (V, 0))], ids=["branch", "loop"])
def test_undefined_on_taken_path_raises_naming_variable_and_line(fn, args):
    with pytest.raises(UndefinedVariableError) as info:
        grad_of(fn)(*args)
    assert type(info.value) is UndefinedVariableError
    assert isinstance(info.value, NameError)
    msg = str(info.value)
    assert "'y'" in msg, msg
    assert "line %d" % marked_line(fn) in msg, msg
    assert __file__ in msg or "test_control_flow.py" in msg, msg


@pytest.mark.parametrize("fn,args", [(f_defined_in_one_branch, (V,)),
                                     (f_defined_in_loop, (V, 2)),
                                     (f_maybe_undefined_read_on_safe_path, (V,))],
                         ids=["branch", "loop", "guarded_read"])
def test_defined_on_taken_path_gradient(fn, args):
    check_vjp(fn, args)


def test_defined_on_taken_path_closed_form():
    # y = 2x on the path taken: d(y * x)/dx = 4x; the loop: y = n x, d(y + x)/dx = n + 1
    np.testing.assert_allclose(grad_of(f_defined_in_one_branch)(V), 4 * V, rtol=1e-14)
    np.testing.assert_allclose(grad_of(f_defined_in_loop)(V, 3), np.full(3, 4.0), rtol=1e-14)
    # the guarded read is on the branch not taken: z = sin(x)
    np.testing.assert_allclose(grad_of(f_maybe_undefined_read_on_safe_path)(-V), np.cos(-V),
                               rtol=1e-14)


@pytest.mark.parametrize("fn,name", [(f_never_defined, "w_never_assigned"),
                                     (f_defined_after_use, "later_name")])
def test_never_defined_is_compile_error(fn, name):
    g = grad_of(fn)
    # compiling alone (no run) already fails
    with pytest.raises(s2sad.CompileError) as info:
        s2sad.get_source(g, V)
    assert not isinstance(info.value, NameError)
    assert "'%s'" % name in str(info.value)
    with pytest.raises(s2sad.CompileError):
        g(V)


def f_for_else(x):
    for i in range(3):
        x = x * 2
    else:
        x = x + 1
    return x


def f_while_else(x):
    while x.sum() < 3:
        x = x * 2
    else:
        x = x + 1
    return x


@pytest.mark.parametrize("fn,msg", [
    (f_for_else, "The 'for...else...' statement is not supported now."),
    (f_while_else, "The 'while...else...' statement is not supported now.")])
def test_loop_else_rejected(fn, msg):
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        grad_of(fn)(V)
    assert info.value.message == msg
    assert str(info.value).splitlines()[-1] == msg


# ================================================= generated code structure
def f_counter_loop(x):
    k = 0
    for i in range(x.shape[0]):
        k = k + 2
    return x * k


def f_inactive_tensor_loop(x):
    c = np.ones_like(x)
    for i in range(5):
        c = c + c
    return x * c


def f_inactive_while(x):
    c = np.ones_like(x)
    while c.sum() < 100:
        c = c * 2.0
    return x * c


@pytest.mark.parametrize("fn,keyword,closed", [
    (f_counter_loop, "for ", lambda x: np.full_like(x, 2.0 * x.shape[0])),
    (f_inactive_tensor_loop, "for ", lambda x: np.full_like(x, 32.0)),
    (f_inactive_while, "while ", lambda x: np.full_like(x, 64.0))])
def test_inactive_loop_pushes_nothing(fn, keyword, closed):
    g = grad_of(fn)
    np.testing.assert_allclose(g(V), closed(V), rtol=1e-14)
    src = s2sad.get_source(g)
    assert ".append(" not in src, src
    assert any(line.startswith(keyword) for line in code_lines(src)), src


@pytest.mark.parametrize("fn,args,keywords", [
    (f_for_range_n, (V, 4), ["for "]),
    (f_for_range_shape, (V,), ["for "]),
    (f_for_rows, (M,), ["for "]),
    (f_enumerate, (M,), ["for "]),
    (f_zip, (M, M), ["for "]),
    (f_while_norm, (V,), ["while "]),
    (f_branch_in_loop, (V,), ["for ", "if "]),
    (f_loop_in_branch, (V,), ["if ", "for ", "while "]),
    (f_nested_runtime, (M,), ["for "]),
], ids=["range_n", "range_shape", "rows", "enumerate", "zip", "while", "branch_in_loop",
        "loop_in_branch", "nested"])
def test_source_keeps_control_flow(fn, args, keywords):
    g = grad_of(fn)
    src = s2sad.get_source(g, *args)
    fwd = code_lines(forward_source(g, *args))
    for kw in keywords:
        assert any(line.startswith(kw) for line in fwd), (kw, src)
    # the backward sweep replays active loops in reverse, popping the stacks
    back = src.split("# -- backward sweep --")[1]
    if fn is not f_while_norm:
        assert "reversed(range(" in back, src
        assert ".pop()" in back and ".append(" in src, src
    else:
        # its backward loop only doubled the adjoint: one scaling, no stack
        assert "rt.math_scale_repeated(d_b_1, 2, n_iter, then=1.0)" in back, src
        assert "reversed(" not in back and ".append(" not in src, src


def test_loop_is_not_unrolled():
    src = forward_source(grad_of(f_for_range_n), V, 50)
    assert src.count("xp.sin(") == 1, src
    assert len([1 for line in code_lines(src) if re.match(r"for \w+ in range\(", line)]) == 1


# ======================================================== scale: no recursion
def f_long_for(x, n):
    s = x
    for i in range(n):
        s = s + x * 1e-5
    return s


def f_long_while(x):
    s = x
    i = 0
    while i < 100000:
        s = s + x * 1e-5
        i = i + 1
    return s


@pytest.mark.parametrize("fn,args", [(f_long_for, (np.array([1.0, -2.0]), 100000)),
                                     (f_long_while, (np.array([1.0, -2.0]),))],
                         ids=["for", "while"])
def test_hundred_thousand_iterations(fn, args):
    start = time.perf_counter()
    limit = sys.getrecursionlimit()
    d = grad_of(fn)(*args)
    elapsed = time.perf_counter() - start
    assert sys.getrecursionlimit() == limit
    # s = x * (1 + 1e-5 * 100000) = 2 x
    np.testing.assert_allclose(d, np.full(2, 1.0 + 1e-5 * 100000), rtol=1e-9)
    assert elapsed < 5.0, elapsed


# ============================================================== memory bound
def f_tanh_loop(h, w, x, n):
    for i in range(n):
        h = np.tanh(h * w + x)
    return h


def bptt_tanh(h, w, x, n):
    """Hand-written backprop of sum(f_tanh_loop(h, w, x, n))."""
    hs = [h]
    for _ in range(n):
        hs.append(np.tanh(hs[-1] * w + x))
    dh, dw, dx = np.ones_like(h), np.zeros_like(w), np.zeros_like(x)
    for t in range(n, 0, -1):
        da = dh * (1 - hs[t] ** 2)
        dw += da * hs[t - 1]
        dx += da
        dh = da * w
    return dh, dw, dx


def test_loop_memory_is_bounded_per_iteration():
    n, size = 1000, 1000
    rng = np.random.default_rng(0)
    h, w, x = (rng.standard_normal(size) * s for s in (0.1, 0.5, 0.1))
    g = grad_of(f_tanh_loop, get_all=True)
    g(h[:3], w[:3], x[:3], n)   # compile outside the measurement
    tracemalloc.start()
    try:
        grads = g(h, w, x, n)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    for got, expected in zip(grads, bptt_tanh(h, w, x, n)):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    # The backward pass must read one vector per iteration (h_t, from which both
    # tanh' and dw are computed): n * size * 8 bytes = 8.0 MB.  Measured peak:
    # about 16.3 MB (2.0x): per iteration the stack holds h_t and the product
    # h_{t-1} * w (kept for its shape); h_{t-1} is the previous h_t, not a copy.
    per_iteration_needed = n * size * 8
    assert peak < 3 * per_iteration_needed, (peak, per_iteration_needed)


def f_duplicate_value_in_loop(x, steps):
    # y = tanh(x) and x = tanh(x) are one value: merging them must not confuse
    # the backward loop, which pops the per-iteration values back by name
    for t in range(steps.shape[0]):
        y = np.tanh(x)
        x = np.tanh(x)
        y = np.sin(x)
    return np.sum(x)


def test_merged_duplicate_value_in_loop_body():
    x = np.linspace(-1, 1, 5)
    t1 = np.tanh(x)
    want = (1 - np.tanh(t1) ** 2) * (1 - t1 ** 2)
    got = ops.GradOperation()(f_duplicate_value_in_loop)(x, np.zeros(2))
    np.testing.assert_allclose(got, want, rtol=1e-12)


# ------------------------------------------------------------ second order
# Every program above, differentiated twice: reverse over reverse (the adjoints
# of popped values travel on companion stacks) and forward over reverse,
# against finite differences of the first derivative.  check_grads perturbs
# every argument, so a Python int argument is bound by a wrapper.
def f_for_range_n_4(x):
    return f_for_range_n(x, 4)


def f_for_range_start_stop_step_6(x):
    return f_for_range_start_stop_step_n(x, 6)


def f_for_negative_step_4(x):
    return f_for_negative_step_n(x, 4)


def f_python_float_init_3(x):
    return f_python_float_init(x, 3)


def f_break_on_index_5(x):
    return f_break_on_index(x, 5)


def f_break_on_index_1(x):
    return f_break_on_index(x, 1)


SECOND_ORDER_CASES = [
    c for c in LOOP_CASES + EXIT_CASES + MORE_CASES
    if not any(isinstance(a, (int, float)) for a in c[2])
] + [(fn.__name__, fn, (V,)) for fn in (
    f_for_range_n_4, f_for_range_start_stop_step_6, f_for_negative_step_4,
    f_python_float_init_3, f_break_on_index_5, f_break_on_index_1)]


@pytest.mark.parametrize("fn,args", [c[1:] for c in SECOND_ORDER_CASES],
                         ids=[c[0] for c in SECOND_ORDER_CASES])
def test_second_order(fn, args):
    s2sad.check_grads(fn, args, order=2, modes=("rev", "fwd"))
