"""return inside loops (tuples returned from for and while loops), and lists built
after a conditional return.

Every gradient is compared with float64 central finite differences of the
function run eagerly (``check_grads`` also compares reverse with forward
mode), or with a closed form; the refused constructs are checked against the
documented error.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.errors import CompileError

V = np.array([0.5, -0.3, 0.7])


# ------------------------------------------------ returns inside loops
def tuple_return_in_for(x):
    for i in range(4):
        x = np.sin(x) * 1.3
        if x.sum() < 0.3:
            return x * 3.0, x * 2.0
    return x, x


def tuple_return_in_nested_loops(x):
    i = 0
    while i < 3:
        i = i + 1
        for j in range(2):
            x = np.cos(x) * 1.2
            if x.sum() > 3.2:
                return (x, (x * 2.0, x))
    return (x, (x, np.sin(x)))


def return_reads_loop_variable(x):
    s = x[0] * 1.0
    for i in range(3):
        s = np.sin(s) * x[i]
        if s.sum() > 0.1:
            return s
    return s


def break_after_conditional_return(x):
    s = x * 1.0
    for i in range(5):
        if s.sum() > 3.0:
            return s
        s = np.sin(s) + x
        if s.sum() > 1.2:
            break
    return s * 2.0


def return_from_enumerate(m):
    acc = m[0] * 0.0
    for k, row in enumerate(m):
        acc = acc + row * (k + 1.0)
        if acc.sum() > 1.5:
            return acc, row
    return acc, acc


@pytest.mark.parametrize("fn", [tuple_return_in_for, tuple_return_in_nested_loops,
                                break_after_conditional_return])
def test_return_inside_a_loop(fn):
    # the scales take the early return on some inputs and run to the end on others
    for x in (V, -V, 0.2 * V, 3.0 * V, 5.0 * V):
        s2sad.check_grads(fn, (x,))


def test_return_inside_a_for_loop_reading_its_variable():
    m = np.array([[0.5, -0.3], [0.8, 0.4], [-0.6, 0.7]])
    for x in (m, -m, 0.1 * m):
        s2sad.check_grads(return_reads_loop_variable, (x,))
        s2sad.check_grads(return_from_enumerate, (x,))


def test_tuple_return_inside_while_takes_both_exits():
    """Closed form: returns (3x, 2x) at i == 2, else (x, x); the sum's gradient is 5 or 2."""
    assert tuple(ops.GradOperation()(early_tuple)(V, 2)) == pytest.approx((5.0,) * 3)
    assert tuple(ops.GradOperation()(early_tuple)(V, 7)) == pytest.approx((2.0,) * 3)


def early_tuple(x, k):
    i = 0
    while i < 3:
        i = i + 1
        if i == k:
            return x * 3.0, x * 2.0
    return x, x


def mismatched_returns(x):
    for i in range(3):
        if x.sum() > i:
            return x, x
    return x


def test_returns_of_different_structure_stay_an_error():
    with pytest.raises(CompileError, match="variable 'retval' is a tuple of a different length"):
        ops.GradOperation()(mismatched_returns)(V)


# ------------------------------------------- lists after a conditional return
def list_after_return(x):
    if x.sum() > 100.0:
        return x
    acc = []
    for k in range(3):
        acc.append(x * (k + 1.0))
    return np.stack(acc) * np.sin(x)


def list_after_return_in_loop(x):
    s = x * 1.0
    for i in range(3):
        if s.sum() > 2.0:
            return s
        parts = []
        for k in range(2):
            parts.append(np.sin(s) * (k + 1.0))
        s = parts[0] + parts[1]
    return s


@pytest.mark.parametrize("fn", [list_after_return, list_after_return_in_loop])
def test_list_built_after_a_conditional_return(fn):
    for x in (V, 3.0 * V):
        s2sad.check_grads(fn, (x,))
