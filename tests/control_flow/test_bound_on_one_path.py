"""Names bound on one path only: definedness checks inside and/or/if-else, and
closures, lambdas and sub-Cells bound in one branch.

The error is raised only where such a name is read.

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
from s2sad.runtime import UndefinedVariableError

V = np.array([0.5, -0.3, 0.7])


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
