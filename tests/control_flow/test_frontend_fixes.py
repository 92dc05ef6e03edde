"""Variants of the frontend defects random programs found (issue 9): star
unpacking, tuples carried through loops and returned from them, definedness
checks inside ``and``/``or``/``if else``, ``return`` and ``break`` inside
loops, lists after a conditional ``return``, closures and sub-Cells bound on
one path, and augmented assignment on an array another variable shares.

Every gradient is compared with float64 central finite differences of the
function run eagerly (``check_grads`` also compares reverse with forward
mode), or with a closed form; the refused constructs are checked against the
documented error.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, Parameter
from s2sad.errors import CompileError
from s2sad.backend.runtime import UndefinedVariableError

from gradcheck import numeric_grad

V = np.array([0.5, -0.3, 0.7])


def fd_grad(fn, *args):
    return numeric_grad(lambda *a: np.sum(fn(*a)), args, 0)


def assert_fd(fn, *args):
    np.testing.assert_allclose(ops.GradOperation()(fn)(*args), fd_grad(fn, *args),
                               rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------- star unpacking
def star_first(x):
    a, *rest = (x, x * 2.0, np.sin(x))
    return a * rest[0] * rest[1] + len(rest)


def star_last(x):
    *init, last = [x, np.cos(x), x * 3.0]
    return init[0] * init[1] * last


def star_middle(x):
    a, *mid, b = (x, np.sin(x), np.cos(x), x * 2.0)
    total = a + b
    for m in mid:
        total = total * m
    return total


def star_empty(x):
    a, *rest, b = (x, np.sin(x))
    return a * b + len(rest)


def star_in_loop(x):
    s = x * 1.0
    for i in range(3):
        a, *rest = (np.sin(s), s, x)
        s = a * rest[0] + rest[1]
    return s


def star_too_few(x):
    a, *rest, b = (x,)
    return a


@pytest.mark.parametrize("fn", [star_first, star_last, star_middle, star_empty, star_in_loop])
def test_star_unpacking(fn):
    s2sad.check_grads(fn, (V,))


def test_star_unpacking_needs_enough_values():
    with pytest.raises(CompileError, match="not enough values to unpack \\(expected at least 2, "
                                           "got 1\\)"):
        ops.GradOperation()(star_too_few)(V)


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


# ------------------------------------- maybe-undefined reads in expressions
def undefined_in_and(x):
    if x[0] > 0:
        v = np.sin(x)
    if x[1] > 0 and v.sum() > 10.0:
        x = x * 2.0
    return v * x


def undefined_in_or(x):
    if x[0] > 0:
        v = np.sin(x)
    if x[1] < 0 or v.sum() > 10.0:
        x = x * 2.0
    return v * x


def undefined_in_ternary(x):
    if x[0] > 0:
        v = np.sin(x)
    w = v if x[1] > 0 else x
    return v * w


def undefined_after_return(x):
    if x[2] > 5.0:
        return x
    if x[0] > 0:
        v = np.cos(x)
    w = (v * 2.0 if x[1] > 0 else x) * v
    return w + v


@pytest.mark.parametrize("fn", [undefined_in_and, undefined_in_or, undefined_in_ternary,
                                undefined_after_return])
def test_variable_read_first_inside_a_short_circuit_and_again_later(fn):
    for x in (V, np.array([0.5, 0.3, 0.2])):
        s2sad.check_grads(fn, (x,))


def test_a_path_that_never_assigned_it_raises_the_clear_error():
    x = np.array([-0.5, 0.3, 0.2])      # v is never assigned, and the 'and' reads it
    with pytest.raises(UndefinedVariableError, match="variable 'v' is used at .* line"):
        ops.GradOperation()(undefined_in_and)(x)


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


# -------------------------------------- objects bound on one path of a branch
def lambda_in_branch(x):
    if x.sum() > 0.0:
        g = lambda a: a * 2.0
        x = g(x)
    return x


def def_after_return(x):
    if x.sum() > 10.0:
        return x
    def g(a):
        return np.sin(a) * 2.0
    return g(x)


def closure_in_loop_branch(x):
    s = x * 1.0
    for i in range(3):
        if s.sum() > 0.0:
            h = lambda a: np.cos(a) * x
            s = h(s)
        s = s + 0.5
    return s


def lambda_used_after_branch(x):
    if x.sum() > 0.0:
        g = lambda a: a * 2.0
    else:
        g = lambda a: a * 3.0
    return g(x)


class Scale(nn.Cell):
    def __init__(self, w):
        super().__init__()
        self.w = Parameter(Tensor(np.array(w)), name="w")

    def construct(self, a):
        return a * self.w


class LayersInBranch(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([Scale([0.5, -0.3]), Scale([0.5, 0.3])])

    def construct(self, x):
        for i in range(2):
            if x.sum() > 0:
                for layer in self.layers:
                    x = layer(x)
            x = x + 0.25
        return x


class LayerUsedAfterBranch(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([Scale([0.5, -0.3]), Scale([0.5, 0.3])])

    def construct(self, x):
        if x.sum() > 0:
            for layer in self.layers:
                x = layer(x)
        return layer(x)


@pytest.mark.parametrize("fn", [lambda_in_branch, def_after_return, closure_in_loop_branch])
def test_object_bound_on_one_path_and_not_used_after(fn):
    for x in (V, -V):
        s2sad.check_grads(fn, (x,))


def test_cell_list_loop_in_a_branch_inside_a_loop():
    x = np.array([0.5, 0.2])
    # both iterations take the branch: x -> (x * w0 * w1 + 1/4) * w0 * w1 + 1/4
    w = np.array([0.5, -0.3]) * np.array([0.5, 0.3])
    np.testing.assert_allclose(ops.GradOperation()(LayersInBranch())(x), w * w, rtol=1e-12)


def test_reading_it_after_the_branch_is_the_error():
    with pytest.raises(CompileError, match="variable 'g' cannot differ between the paths of "
                                           "this branch") as e:
        ops.GradOperation()(lambda_used_after_branch)(V)
    assert "(it is read at line" in str(e.value)
    with pytest.raises(CompileError, match="variable 'layer' holds Scale"):
        ops.GradOperation()(LayerUsedAfterBranch())(np.array([0.5, 0.2]))


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


# --------------------------------------------- isinstance with a tuple of types
def f_isinstance_tuple(x, scale):
    if isinstance(scale, (int, float)):
        return np.sum(x * scale)
    return np.sum(x * scale * scale)


def test_isinstance_with_a_tuple_of_types():
    """Decided while compiling: a Python number is an int or float, a runtime array is not."""
    x = np.array([1.0, -2.0])
    g = ops.GradOperation()(f_isinstance_tuple)
    np.testing.assert_array_equal(g(x, 3.0), [3.0, 3.0])
    np.testing.assert_array_equal(g(x, np.array(3.0)), [9.0, 9.0])
