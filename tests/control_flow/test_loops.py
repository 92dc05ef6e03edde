"""Loops: while, for over ranges, tensors, tuples, enumerate and zip.

Every gradient is compared with an independent value: a float64 central
finite difference of the original function run eagerly (``gradcheck``), or a
closed form.  Nothing is compared with s2sad itself.
"""
import numpy as np
import pytest

from s2sad import Tensor

from gradcheck import check_vjp, numeric_grad
from cf_common import M, V, grad_of


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
