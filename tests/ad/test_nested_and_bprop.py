"""Gradient functions called inside differentiated code, and Cells with their own bprop.

Nested gradients are compared with central differences of the outer function
run eagerly (its inner gradient is then an eager first-order call) and with
closed forms; custom bprops with closed forms of what the bprop computes.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops
from s2sad.errors import CompileError
from s2sad.ops import GradOperation
from s2sad.tensor import Parameter, ParameterTuple, Tensor

from gradcheck import numeric_grad

X = np.float64(0.5)
V = np.array([0.3, -0.7, 1.1])


def f2(x, y):
    return np.sin(x) * y ** 2


def f3(x, c, y):
    return np.sin(x) * c ** 2 * np.cos(y)


# ---------------------------------------------------- item: nested constants
Y = np.float64(3.0)
C = np.float64(1.5)
T = Tensor(np.array([2.0, -1.0, 0.5]))
dfy = s2sad.grad(f2, 1)


def w_scalar_global(x):
    return dfy(x, Y)


def test_nested_grad_position_of_numpy_scalar_global():
    got = s2sad.grad(w_scalar_global)(X)
    assert np.isclose(got, 2 * np.cos(X) * Y)          # d/dx (2 sin(x) Y)
    assert np.isclose(got, numeric_grad(w_scalar_global, [X], 0))


def w_get_all_middle(x, y):
    gx, gc, gy = GradOperation(get_all=True)(f3)(x, C, y)
    return gx * gc + gy


def test_nested_get_all_keeps_a_constant_in_the_middle():
    y = np.float64(-0.4)
    gx, gy = GradOperation(get_all=True)(w_get_all_middle)(X, y)
    # gx * gc + gy = 2 c^3 cos(x) sin(x) cos(y)^2 - sin(x) c^2 sin(y)
    assert np.isclose(gx, 2 * C ** 3 * np.cos(2 * X) * np.cos(y) ** 2
                      - np.cos(X) * C ** 2 * np.sin(y))
    assert np.isclose(gx, numeric_grad(w_get_all_middle, [X, y], 0))
    assert np.isclose(gy, numeric_grad(w_get_all_middle, [X, y], 1))


dfp = s2sad.grad(f3, (1, 2))


def w_positions(x):
    gc, gy = dfp(x, C, Y)
    return gc * gy


def test_nested_grad_position_tuple_of_constants():
    got = s2sad.grad(w_positions)(X)
    # gc * gy = -2 c^3 sin(x)^2 cos(y) sin(y)
    assert np.isclose(got, -4 * C ** 3 * np.sin(X) * np.cos(X) * np.cos(Y) * np.sin(Y))
    assert np.isclose(got, numeric_grad(w_positions, [X], 0))


def fv(x, t):
    return (np.sin(x) * t ** 2).sum()


dft = s2sad.grad(fv, 1)


def w_tensor_global(x):
    return (dft(x, T) * x).sum()


def test_nested_grad_of_a_tensor_global():
    got = s2sad.grad(w_tensor_global)(Tensor(V)).asnumpy()
    t = T.asnumpy()
    # dft = 2 sin(x) t, so the sum's derivative is 2 t (cos(x) x + sin(x))
    assert np.allclose(got, 2 * t * (np.cos(V) * V + np.sin(V)))
    assert np.allclose(got, numeric_grad(w_tensor_global, [Tensor(V)], 0), atol=1e-6)


def w_python_number(x):
    return dfy(x, 3.0)


def test_nested_grad_position_of_a_python_number_raises():
    # eagerly, every gradient asked for is of a constant: () with a warning, as MindSpore
    with pytest.warns(UserWarning, match="mutable"):
        assert s2sad.grad(f2)(3.0, X) == ()
    # inlined, the () would become the program's value: an error at the user's call
    with pytest.raises(CompileError) as info:
        s2sad.grad(w_python_number)(X)
    message = str(info.value)
    assert "grad_position 1 refers to a float" in message
    assert "test_nested_and_bprop.py" in message and "return dfy(x, 3.0)" in message


def w_gradop_python_first(x):
    return GradOperation()(f2)(2.0, x)


def w_gradop_all_constants(x):
    return x * 2.0 if GradOperation()(f2)(2.0, 3.0) == () else x


def test_nested_gradoperation_refuses_a_constant_first_input_as_eagerly():
    # GradOperation()'s result is the first input's gradient: a constant there is an
    # error eagerly and inlined alike, never the next input's gradient in its place
    with pytest.raises(TypeError, match="first input") as eager:
        GradOperation()(f2)(2.0, X)
    with pytest.raises(CompileError) as inlined:
        s2sad.grad(w_gradop_python_first)(X)
    assert str(eager.value) in str(inlined.value)
    assert "return GradOperation()(f2)(2.0, x)" in str(inlined.value)
    assert np.isclose(s2sad.grad(w_gradop_all_constants)(X), 2.0)


# ------------------------------------------------ item: bprop's out and dout
class Nested(nn.Cell):
    """Returns (a, (b, c)); its bprop reads out and dout with that nesting."""

    def construct(self, x):
        return x * 2.0, (np.sin(x), x * x)

    def bprop(self, x, out, dout):
        a, (b, c) = out
        da, (db, dc) = dout
        # written with out: b = sin(x), c = x * x, a = 2 x
        return (da * a / x + db * np.cos(x) + dc * 2.0 * np.sqrt(c),)


class UsesNested(nn.Cell):
    def __init__(self):
        super().__init__()
        self.inner = Nested()

    def construct(self, x):
        a, (b, c) = self.inner(x)
        return (a * b + c).sum()


def test_bprop_out_and_dout_keep_the_nesting():
    x = np.array([0.3, 0.7, 1.1])
    got = GradOperation()(UsesNested())(Tensor(x)).asnumpy()
    # da = b, db = a, dc = 1
    assert np.allclose(got, np.sin(x) * 2.0 + 2.0 * x * np.cos(x) + 2.0 * x)


def test_bprop_sees_a_nested_sens():
    x = np.array([0.3, 0.7, 1.1])
    sa, sb, sc = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 2.0]), np.array([0.3, 0.2, 0.1])
    got = GradOperation(sens_param=True)(Nested())(
        Tensor(x), (Tensor(sa), (Tensor(sb), Tensor(sc)))).asnumpy()
    assert np.allclose(got, 2.0 * sa + np.cos(x) * sb + 2.0 * x * sc)


class Single(nn.Cell):
    def construct(self, x):
        return np.exp(x)

    def bprop(self, x, out, dout):
        return (dout * out,)


def test_bprop_single_output_is_bare():
    x = np.array([0.3, -0.7])
    got = GradOperation()(Single())(Tensor(x)).asnumpy()
    assert np.allclose(got, np.exp(x))


# --------------------------------------------- item: bprop reading self attrs
class Scaled(nn.Cell):
    """sin(x) * scale, its bprop reading the scale again (a Tensor or a Parameter)."""

    def __init__(self, scale, parameter):
        super().__init__()
        self.scale = Parameter(Tensor(scale), name="scale") if parameter else Tensor(scale)

    def construct(self, x):
        return np.sin(x) * self.scale

    def bprop(self, x, out, dout):
        return (dout * np.cos(x) * self.scale,)


class SquaredSum(nn.Cell):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def construct(self, x):
        return (self.inner(x) ** 2).sum()


@pytest.mark.parametrize("parameter", [False, True])
def test_bprop_reads_a_tensor_attribute_at_each_call(parameter):
    x = np.array([0.3, 0.7, 1.1])
    net = Scaled(np.array([2.0, 3.0, 4.0]), parameter)
    grad = GradOperation()(net)
    assert np.allclose(grad(Tensor(x)).asnumpy(), np.cos(x) * [2.0, 3.0, 4.0])
    if parameter:
        net.scale.set_data(Tensor(np.array([5.0, 6.0, 7.0])))
    else:
        net.scale = Tensor(np.array([5.0, 6.0, 7.0]))
    assert np.allclose(grad(Tensor(x)).asnumpy(), np.cos(x) * [5.0, 6.0, 7.0])
    outer = SquaredSum(net)
    assert np.allclose(GradOperation()(outer)(Tensor(x)).asnumpy(),
                       2 * np.sin(x) * np.cos(x) * np.array([5.0, 6.0, 7.0]) ** 2)


@pytest.mark.parametrize("parameter", [False, True])
def test_bprop_reading_an_attribute_differentiated_again(parameter):
    x = np.array([0.3, 0.7, 1.1])
    s = np.array([2.0, 3.0, 4.0])
    net = Scaled(s, parameter)
    second = GradOperation()(GradOperation()(net))
    assert np.allclose(second(Tensor(x)).asnumpy(), -np.sin(x) * s)
    outer = SquaredSum(net)

    def h(x):
        return (GradOperation()(outer)(x) * x).sum()
    # GradOperation()(outer) = s^2 sin(2x), so h' = s^2 (2 x cos(2x) + sin(2x))
    got = s2sad.grad(h)(Tensor(x)).asnumpy()
    assert np.allclose(got, s ** 2 * (2 * x * np.cos(2 * x) + np.sin(2 * x)))


# ------------------------------------------------ item: bprop return arity
class TwoInputs(nn.Cell):
    def construct(self, x, y):
        return x * y


class ReturnsBare(TwoInputs):
    def bprop(self, x, y, out, dout):
        return dout * y


class ReturnsOne(TwoInputs):
    def bprop(self, x, y, out, dout):
        return (dout * y,)


@pytest.mark.parametrize("cls, got, line", [
    (ReturnsBare, "a single value, not a tuple", "return dout * y"),
    (ReturnsOne, "1", "return (dout * y,)")])
def test_bprop_wrong_arity_names_the_users_bprop(cls, got, line):
    with pytest.raises(CompileError) as info:
        GradOperation(get_all=True)(cls())(Tensor(V), Tensor(V))
    message = str(info.value)
    assert "in %s.bprop" % cls.__name__ in message and line in message
    assert ("For user defined method 'bprop' of net '%s', the number of return values "
            "(gradients) should be equal to the number of input arguments except 'out' and "
            "'dout', which is: 2, but got: %s." % (cls.__name__, got)) in message
    assert "(dx, dy)" in message


class ScaledOnlyInBprop(nn.Cell):
    """The bprop reads an attribute construct does not read."""

    def __init__(self, parameter):
        super().__init__()
        k = np.array([2.0, 3.0, 4.0])
        self.k = Parameter(Tensor(k), name="k") if parameter else Tensor(k)

    def construct(self, x):
        return x * 1.0

    def bprop(self, x, out, dout):
        return (dout * self.k * x,)


@pytest.mark.parametrize("parameter", [False, True])
def test_bprop_reads_an_attribute_construct_does_not(parameter):
    x = np.array([0.3, 0.7, 1.1])
    k = np.array([2.0, 3.0, 4.0])
    net = ScaledOnlyInBprop(parameter)
    assert np.allclose(GradOperation()(net)(Tensor(x)).asnumpy(), k * x)
    sens = np.array([1.0, -2.0, 0.5])
    got = GradOperation(sens_param=True)(net)(Tensor(x), Tensor(sens)).asnumpy()
    assert np.allclose(got, sens * k * x)
    assert np.allclose(GradOperation()(GradOperation()(net))(Tensor(x)).asnumpy(), k)


# ------------------------------- GradOperation applied to Parameters in construct
class _CubedWeights(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([2.0, 3.0])), name="w")

    def construct(self, x):
        return (self.w ** 3 * x * x).sum()


class _WeightGradInside(nn.Cell):
    """``grad_op(self.net, self.params)(x)`` inside ``construct``, as MindSpore's tests write it."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.params = ParameterTuple(net.trainable_params())
        self.grad_op = ops.GradOperation(get_by_list=True)

    def construct(self, x):
        return self.grad_op(self.net, self.params)(x)[0]


def test_weight_gradient_inside_construct_differentiated_again():
    """d/dx and d/dw of the inner d/dw = 3 w^2 x^2: closed forms and finite differences."""
    net = _CubedWeights()
    outer = _WeightGradInside(net)
    x = np.array([1.0, 2.0])
    w = net.w.asnumpy().copy()
    np.testing.assert_allclose(outer(Tensor(x)).asnumpy(), 3 * w ** 2 * x ** 2, rtol=1e-14)
    dx = ops.GradOperation()(outer)(Tensor(x))
    np.testing.assert_allclose(np.asarray(dx), 6 * w ** 2 * x, rtol=1e-14)
    (dw,) = ops.GradOperation(get_by_list=True)(outer, ParameterTuple(net.trainable_params()))(
        Tensor(x))
    np.testing.assert_allclose(dw.asnumpy(), 6 * w * x ** 2, rtol=1e-14)

    def inner_sum(wv):
        return float(np.sum(3 * wv ** 2 * x ** 2))
    np.testing.assert_allclose(dw.asnumpy(), numeric_grad(inner_sum, (w,), 0), rtol=1e-7)


def test_grad_operation_inside_construct_refuses_computed_weights():
    class Computed(nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.grad_op = ops.GradOperation(get_by_list=True)

        def construct(self, x):
            return self.grad_op(self.net, (x * 2,))(x)

    with pytest.raises(CompileError, match="Parameters of the Cell count as known"):
        ops.GradOperation()(Computed(_CubedWeights()))(Tensor(np.array([1.0, 2.0])))
