"""Tuples carried through loops: assigned in the body, read before a later
iteration assigns them; a real change of structure stays an error.

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
from gradcheck import assert_fd

V = np.array([0.5, -0.3, 0.7])


# --------------------------------------------------------- tuples in loops
def tuple_in_while(x):
    s = x * 1.0
    i = 0
    while i < 3:
        t = (np.sin(s), x * 2.0)
        s = t[0] * t[1]
        i = i + 1
    return s + t[0]


def tuple_read_before_assigned(x, n):
    s = x * 1.0
    for i in range(n):
        if i > 0:
            s = s + t[0] * t[1]
        t = (np.cos(s), s)
    return s


def tuple_per_branch(x):
    s = x * 1.0
    for i in range(4):
        if s.sum() > 0.5:
            t = (s, x)
        else:
            t = (x, s * 2.0)
        s = np.sin(t[0]) * t[1]
    return s


def nested_tuple_in_loop(x):
    s = x * 1.0
    for i in range(2):
        t = ((s, x), x * 3.0)
        s = t[0][0] * t[0][1] + t[1]
    return s


def tuple_from_call_in_loop(x):
    s = x
    for r in x:
        pair = split(s, r)
        s = pair[0] + pair[1]
    return s


def split(a, r):
    return np.sin(a) * r, np.cos(a)


@pytest.mark.parametrize("fn", [tuple_in_while, tuple_per_branch, nested_tuple_in_loop,
                                tuple_from_call_in_loop])
def test_tuple_assigned_in_loop_body(fn):
    for x in (V, -V, 2.0 * V):
        s2sad.check_grads(fn, (x,))


@pytest.mark.parametrize("n", [0, 1, 3])
def test_tuple_read_before_it_is_assigned_in_a_later_iteration(n):
    assert_fd(tuple_read_before_assigned, V, n)


def tuple_after_tensor(x):
    t = x
    for i in range(3):
        t = (t, x)
    return x


def tuple_grows(x):
    t = ()
    for i in range(3):
        t = t + (x,)
    return x


@pytest.mark.parametrize("fn", [tuple_after_tensor, tuple_grows])
def test_a_real_structure_change_in_a_loop_stays_an_error(fn):
    with pytest.raises(CompileError, match="variable 't' changes structure inside the loop"):
        ops.GradOperation()(fn)(V)
