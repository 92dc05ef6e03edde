"""Augmented and item assignment on an array another variable shares: refused when
the sharer is read afterwards, since NumPy writes in place.

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


# ------------------------------------------ augmented assignment and aliasing
def alias_dead_afterwards(x):
    v = x
    v -= np.cos(x)
    return v * 2.0


def alias_rebound_first(x):
    v = x * 1.0
    w = v
    w = np.sin(w)
    v *= 3.0
    return v + w


def alias_of_argument_read_by_caller(x):
    y = scale_in_place(x)
    return y * x


def scale_in_place(a):
    a *= 2.0
    return a


def alias_in_tuple(x):
    v = np.cos(x)
    t = (v, x)
    v += 1.0
    return t[0] * x


def alias_reshaped(x):
    v = np.cos(x)
    r = v.reshape((1, 3))
    v -= 1.0
    return r * x


def alias_into_loop(x):
    v = x
    for i in range(2):
        v += np.sin(v)
    return v * x


def test_augmented_assignment_on_an_array_nothing_else_reads():
    s2sad.check_grads(alias_dead_afterwards, (V,))
    s2sad.check_grads(alias_rebound_first, (V,))


@pytest.mark.parametrize("fn, shared", [(alias_of_argument_read_by_caller, "x"),
                                        (alias_in_tuple, "t"), (alias_reshaped, "r"),
                                        (alias_into_loop, "x")])
def test_augmented_assignment_on_a_shared_array_read_later_is_refused(fn, shared):
    with pytest.raises(CompileError, match="changes in place the array '\\w+' shares with '%s', "
                                           "which is read afterwards" % shared):
        ops.GradOperation()(fn)(V.copy())


def item_write_on_alias(x):
    t = x
    t[0] = 5.0
    return x * t


def item_augassign_through_view(x):
    v = np.cos(x)
    t = v[::-1]
    v[1] += 2.0
    return t * x


def item_write_reading_alias_before(x):
    t = x * 1.0
    u = t
    t[0] = u[1] * 2.0
    return t


def item_write_on_a_new_array(x):
    t = x
    t = t * 1.0
    t[0] = np.sin(x[1])
    return x * t


@pytest.mark.parametrize("fn, name, shared", [(item_write_on_alias, "t", "x"),
                                              (item_augassign_through_view, "v", "t")])
def test_item_write_on_a_shared_array_read_later_is_refused(fn, name, shared):
    with pytest.raises(CompileError, match="'%s\\[...\\] = ...' changes in place the array '%s' "
                                           "shares with '%s'" % (name, name, shared)):
        ops.GradOperation()(fn)(V.copy())


@pytest.mark.parametrize("fn", [item_write_reading_alias_before, item_write_on_a_new_array])
def test_item_write_when_nothing_sharing_the_array_is_read_later(fn):
    s2sad.check_grads(fn, (V,))


def view_made_in_loop(x):
    v = np.cos(x)
    for i in range(2):
        t = v[::-1]
    v *= 2.0
    return t * x


def test_a_view_made_inside_a_loop_is_followed_out_of_it():
    with pytest.raises(CompileError, match="'v \\*= ...' changes in place the array 'v' shares "
                                           "with 't'"):
        ops.GradOperation()(view_made_in_loop)(V)


def rebound_each_iteration(x):
    for i in range(3):
        y = x * 2.0         # a new array each iteration: its read below is this one's
        x = scale_in_place(y)
    return np.sum(x * x)


def read_next_iteration(x):
    y = x * 2.0
    for i in range(2):
        w = y + 1.0         # the second time, the array scaled in place below
        x = scale_in_place(y)
    return w * x


def test_a_loop_that_rebinds_the_sharer_first_writes_in_place():
    """Each iteration binds ``y`` before reading it, so the later iterations' reads
    are not of the array written in place (autograd's fluidsim example)."""
    s2sad.check_grads(rebound_each_iteration, (V,))
    with pytest.raises(CompileError, match="'a \\*= ...' changes in place the array 'a' shares "
                                           "with 'y'"):
        ops.GradOperation()(read_next_iteration)(V.copy())
