"""User primitives written as MindSpore code writes them.

``PrimitiveWithInfer`` / ``PrimitiveWithCheck`` subclasses with
``@prim_attr_register`` on ``__init__``, ``init_prim_io_names`` and
``add_prim_attr``, ``infer_*`` methods that s2sad accepts and does not need,
an ``emit`` saying how the primitive is computed, and a bprop registered
through ``mindspore.ops._grad.grad_base.bprop_getters``.  Gradients are
checked against closed forms and central finite differences.
"""
import numpy as np
import pytest

import s2sad
import s2sad as mindspore
from mindspore import nn, ops, Tensor  # noqa: E402
from mindspore.ops import PrimitiveWithInfer, PrimitiveWithCheck, prim_attr_register  # noqa: E402
from mindspore.ops import primitive as ms_primitive  # noqa: E402
from mindspore.ops._grad.grad_base import bprop_getters  # noqa: E402
from mindspore.ops import composite as C  # noqa: E402

from gradcheck import numeric_grad

X = np.array([0.5, -1.25, 2.0])


class ScaledCube(PrimitiveWithInfer):
    """alpha * x ** 3 + beta."""

    @prim_attr_register
    def __init__(self, alpha=1.0, beta=0.0):
        self.init_prim_io_names(inputs=["x"], outputs=["y"])
        self.add_prim_attr("kind", "cube")

    def infer_shape(self, x_shape):
        return x_shape

    def infer_dtype(self, x_dtype):
        return x_dtype

    def emit(self, x):
        return "%r * %s ** 3 + %r" % (self.alpha, x, self.beta)


@bprop_getters.register(ScaledCube)
def get_bprop_scaled_cube(self):
    mul = ops.Mul()

    def bprop(x, out, dout):
        return (mul(dout, 3.0 * self.alpha * x * x),)
    return bprop


class Net(nn.Cell):
    def __init__(self, alpha):
        super().__init__()
        self.op = ScaledCube(alpha)

    def construct(self, x):
        return self.op(ops.sin(x))


def test_prim_attr_register_records_the_arguments_defaults_included():
    op = ScaledCube(2.0)
    assert (op.alpha, op.beta, op.kind) == (2.0, 0.0, "cube")
    assert op.attrs == {"alpha": 2.0, "beta": 0.0, "kind": "cube",
                        "input_names": ["x"], "output_names": ["y"]}
    assert op.name == "ScaledCube"
    assert ScaledCube(2.0) == ScaledCube(alpha=2.0, beta=0.0)
    assert ScaledCube(2.0) != ScaledCube(3.0)           # the attributes are its identity
    assert ms_primitive.PrimitiveWithInfer is PrimitiveWithInfer
    assert ms_primitive.prim_attr_register is prim_attr_register


def test_eager_call_runs_emit():
    out = ScaledCube(2.0, beta=1.0)(Tensor(X))
    np.testing.assert_allclose(out.asnumpy(), 2.0 * X ** 3 + 1.0)


@pytest.mark.parametrize("alpha", [1.0, -0.5])
def test_gradient_uses_the_registered_bprop(alpha):
    net = Net(alpha)
    g = ops.GradOperation()(net)(Tensor(X))
    np.testing.assert_allclose(g.asnumpy(), 3 * alpha * np.sin(X) ** 2 * np.cos(X), rtol=1e-12)
    fd = numeric_grad(lambda x: np.sum(alpha * np.sin(x) ** 3), [X], 0)
    np.testing.assert_allclose(g.asnumpy(), fd, rtol=1e-6, atol=1e-8)


def test_attributes_are_part_of_the_compile_cache_key():
    # the same Cell class with another attribute value must not reuse the code
    grad = C.GradOperation()
    g1 = grad(Net(1.0))(Tensor(X)).asnumpy()
    g2 = grad(Net(2.0))(Tensor(X)).asnumpy()
    np.testing.assert_allclose(g2, 2.0 * g1, rtol=1e-12)


def test_second_order_through_the_rule():
    grad = ops.GradOperation()
    net = Net(1.0)
    d2 = grad(lambda x: grad(net)(x).sum())(Tensor(X)).asnumpy()
    first = lambda x: 3 * np.sin(x) ** 2 * np.cos(x)  # noqa: E731
    np.testing.assert_allclose(d2, numeric_grad(lambda x: np.sum(first(x)), [X], 0),
                               rtol=1e-6, atol=1e-8)


class Shifted(PrimitiveWithCheck):
    """x + shift, with MindSpore's check methods and a base __init__ called by name."""

    @prim_attr_register
    def __init__(self, shift):
        super().__init__("Shifted")

    def check_shape(self, x_shape):
        pass

    def emit(self, x):
        return "%s + %r" % (x, self.shift)


@bprop_getters.register("Shifted")      # registered by name, as MindSpore allows
def get_bprop_shifted(self):
    def bprop(x, out, dout):
        return (dout,)
    return bprop


def test_primitive_with_check_and_a_rule_registered_by_name():
    op = Shifted(0.25)
    assert op.shift == 0.25 and op.attrs == {"shift": 0.25}
    f = lambda x: op(x * x)  # noqa: E731
    np.testing.assert_allclose(np.asarray(s2sad.jit(f)(Tensor(X))), X * X + 0.25)
    np.testing.assert_allclose(ops.GradOperation()(f)(Tensor(X)).asnumpy(), 2 * X)


class Doubled(ops.Primitive):
    """A plain Primitive subclass may use @prim_attr_register too."""

    @prim_attr_register
    def __init__(self, factor=2.0):
        pass

    def emit(self, x):
        return "%s * %r" % (x, self.factor)


@bprop_getters.register(Doubled)
def get_bprop_doubled(self):
    def bprop(x, out, dout):
        return (dout * self.factor,)
    return bprop


def test_prim_attr_register_on_a_plain_primitive():
    op = Doubled()
    assert op.factor == 2.0 and op.attrs == {"factor": 2.0}
    g = ops.GradOperation()(lambda x: op(x * x).sum())(Tensor(X))
    np.testing.assert_allclose(g.asnumpy(), 4.0 * X, rtol=1e-12)


class NoCode(PrimitiveWithInfer):
    @prim_attr_register
    def __init__(self):
        pass

    def infer_shape(self, x_shape):
        return x_shape


def test_a_primitive_without_emit_is_an_error_naming_the_class():
    op = NoCode()
    with pytest.raises(s2sad.errors.CompileError,
                       match="(?s)NoCode has no code template.*emit\\(self, \\*inputs\\)") as e:
        ops.GradOperation()(lambda x: op(x))(Tensor(X))
    assert "op(x)" in str(e.value)
    with pytest.raises(NotImplementedError, match="NoCode has no code template"):
        op(Tensor(X))


class NamedActivation(PrimitiveWithInfer):
    """A primitive whose name, given to ``PrimitiveWithInfer``, picks what it computes:
    ``Identity`` passes its input through, anything else is ``tanh``."""

    def __init__(self, kind):
        super().__init__(kind)

    def emit(self, x):
        return x if self.name == "Identity" else "xp.tanh(%s)" % x


@bprop_getters.register(NamedActivation)
def get_bprop_named_activation(self):
    through = self.name == "Identity"

    def bprop(x, out, dout):
        return (dout,) if through else (dout * (1 - out * out),)
    return bprop


def test_instances_told_apart_by_their_name_are_not_merged():
    """An identity instance and a tanh instance of one class in one program: the
    simplifier's pass-through test is asked of each (a user's primitive may keep
    its state outside its attributes), so the tanh is not dropped as an identity."""
    identity, tanh = NamedActivation("Identity"), NamedActivation("Tanh")

    def f(x):
        return ops.sum(tanh(identity(x) * 2.0)) + ops.sum(identity(x))

    g = ops.GradOperation()(f)(Tensor(X)).asnumpy()
    np.testing.assert_allclose(g, 2.0 * (1 - np.tanh(2.0 * X) ** 2) + 1.0, rtol=1e-12)
    fd = numeric_grad(lambda x: np.sum(np.tanh(2.0 * x)) + np.sum(x), [X], 0)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
