"""``self.param = value`` and ``ops.assign`` inside ``construct``, as MindSpore's graph mode runs them.

Assigning to a Parameter attribute means ``ops.assign(self.param, value)``:
later reads in the same call see the new value, the Parameter holds it after
the call (eagerly, under ``jit`` and inside a gradient), and gradients flow
through the assigned value.  Gradients are checked against central finite
differences of the same function written without assignment (the
Parameter's value an explicit argument).
"""
import numpy as np
import pytest

import s2sad
import s2sad as mindspore
from mindspore import nn, ops, Parameter, Tensor  # noqa: E402

from gradcheck import numeric_grad

W0 = np.array([1.0, 2.0, -0.5])
X = np.array([0.5, -1.25, 2.0])


def reference(x, w):
    """What ``Scaled.construct`` computes, without assignment: (value, new w)."""
    y = w * x
    w1 = np.sin(w) * 2.0 + x
    return np.sum(w1 * y * x), w1


class Scaled(nn.Cell):
    """Reads ``w``, assigns it, reads it again: the backward sweep needs both values."""

    def __init__(self, style="attribute"):
        super().__init__()
        self.w = Parameter(Tensor(W0.copy()), name="w")
        self.style = style
        self.assign = ops.Assign()

    def construct(self, x):
        y = self.w * x
        if self.style == "attribute":
            self.w = ops.sin(self.w) * 2.0 + x
        elif self.style == "primitive":
            self.assign(self.w, ops.sin(self.w) * 2.0 + x)
        else:
            ops.assign(self.w, ops.sin(self.w) * 2.0 + x)
        return (self.w * y * x).sum()


STYLES = ["attribute", "primitive", "functional"]


def _fd(f, args, i):
    return numeric_grad(lambda *a: f(*a), args, i)


@pytest.mark.parametrize("style", STYLES)
def test_eager_call_keeps_the_parameter_and_stores_the_value(style):
    net = Scaled(style)
    p = net.w
    out = net(Tensor(X))
    value, w1 = reference(X, W0)
    np.testing.assert_allclose(float(out.asnumpy()), value, rtol=1e-12)
    assert net.w is p and isinstance(net.w, Parameter)
    np.testing.assert_allclose(p.asnumpy(), w1, rtol=1e-12)
    assert list(net.get_parameters()) == [p]


def test_eager_assignment_copies_the_value():
    class Keep(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(W0.copy()), name="w")

        def construct(self, x):
            self.w = x
            return self.w

    net, x = Keep(), Tensor(X.copy())
    net(x)
    net.w.asnumpy()[...] = 0.0          # an in-place update of the Parameter
    np.testing.assert_array_equal(x.asnumpy(), X)


@pytest.mark.parametrize("style", STYLES)
def test_jit_writes_the_parameter_on_every_call(style):
    net = Scaled(style)
    f = s2sad.jit(lambda x: net(x))
    w = W0
    for _ in range(3):
        value, w1 = reference(X, w)
        np.testing.assert_allclose(float(np.asarray(f(Tensor(X)))), value, rtol=1e-12)
        np.testing.assert_allclose(net.w.asnumpy(), w1, rtol=1e-12)
        w = w1


@pytest.mark.parametrize("style", STYLES)
def test_gradient_matches_finite_differences_and_the_parameter_is_written(style):
    net = Scaled(style)
    grad = ops.GradOperation(get_all=True, get_by_list=True)(net, net.trainable_params())
    w = W0
    for _ in range(2):      # the second call starts from the value the first one stored
        (dx,), (dw,) = grad(Tensor(X))
        np.testing.assert_allclose(dx.asnumpy(), _fd(lambda x: reference(x, w)[0], [X], 0),
                                   rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dw.asnumpy(), _fd(lambda w: reference(X, w)[0], [w], 0),
                                   rtol=1e-6, atol=1e-8)
        w = reference(X, w)[1]
        np.testing.assert_allclose(net.w.asnumpy(), w, rtol=1e-12)


def test_second_order_through_the_assigned_value():
    net = Scaled()
    dx = ops.GradOperation()(net)
    ddx = ops.GradOperation()(lambda x: dx(x).sum())
    # the inner gradient as a function of x, for the w the outer call starts from
    first = lambda x, w: _fd(lambda x: reference(x, w)[0], [x], 0)  # noqa: E731
    w = net.w.asnumpy().copy()
    got = ddx(Tensor(X)).asnumpy()
    expected = numeric_grad(lambda x: np.sum(first(x, w)), [X], 0, eps=1e-4)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


class Inner(nn.Cell):
    def __init__(self):
        super().__init__()
        self.state = Parameter(Tensor(np.zeros(3)), name="state", requires_grad=False)

    def construct(self, x):
        self.state += x          # augmented assignment writes the Parameter too
        return self.state


class Outer(nn.Cell):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def construct(self, x):
        a = self.inner(x)
        return a * self.inner.state * x     # read through the parent: the new value


def test_sub_cell_assignment_is_seen_by_the_parent():
    net = Outer()
    grad = ops.GradOperation()(net)
    g = grad(Tensor(X))
    np.testing.assert_allclose(g.asnumpy(), 3 * X ** 2, rtol=1e-12)   # d/dx x*x*x
    np.testing.assert_allclose(net.inner.state.asnumpy(), X)
    grad(Tensor(X))
    np.testing.assert_allclose(net.inner.state.asnumpy(), 2 * X)


class Broadcast(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((2, 3), np.float32)), name="w")

    def construct(self, x):
        self.w = 0.5
        return self.w * x


def test_a_number_is_broadcast_to_the_parameters_shape_and_dtype():
    net = Broadcast()
    out = s2sad.jit(lambda x: net(x))(Tensor(np.ones(3, np.float32)))
    np.testing.assert_array_equal(np.asarray(out), np.full((2, 3), 0.5))
    assert net.w.asnumpy().dtype == np.float32
    np.testing.assert_array_equal(net.w.asnumpy(), np.full((2, 3), 0.5))


class Counter(nn.Cell):
    def __init__(self):
        super().__init__()
        self.count = 0

    def construct(self, x):
        self.count = self.count + 1
        return x * 2.0


class InBranch(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(W0.copy()), name="w")

    def construct(self, x):
        if x.sum() > 0:
            self.w = x
        return self.w * x


def test_assigning_a_plain_attribute_is_a_compile_error_naming_the_line():
    with pytest.raises(s2sad.errors.CompileError,
                       match="(?s)'count'.*holds a value of type int; only a Parameter attribute.*hint:") as e:
        ops.GradOperation()(Counter())(Tensor(X))
    assert "self.count = self.count + 1" in str(e.value)


def test_assigning_inside_a_runtime_branch_is_a_compile_error():
    net = InBranch()
    with pytest.raises(s2sad.errors.CompileError,
                       match="(?s)outside runtime branches and loops.*hint:") as e:
        ops.GradOperation()(net)(Tensor(X))
    assert "self.w = x" in str(e.value)
    np.testing.assert_array_equal(net.w.asnumpy(), W0)


def test_assign_needs_a_parameter_in_compiled_code():
    def f(x):
        return ops.assign(x, x * 2.0)
    with pytest.raises(s2sad.errors.CompileError, match="first argument must be one"):
        ops.GradOperation()(f)(Tensor(X))
