"""MindSpore's GradOperation tutorial, written as MindSpore users write it.

Expected values are the ones printed in the tutorial.
"""
import numpy as np
import pytest

import s2sad as mindspore
# ``import s2sad`` registers itself as ``mindspore`` when MindSpore is absent,
# so the tutorial's own import lines run unchanged.
from mindspore import nn, ops, Tensor, Parameter, ParameterTuple  # noqa: E402
from mindspore import dtype as mstype  # noqa: E402
from mindspore.ops._grad.grad_base import bprop_getters  # noqa: E402,F401
import mindspore.ops.operations as P  # noqa: E402,F401


# ---------------------------------------------------------------- sin / cos
class Net(nn.Cell):
    def __init__(self):
        super(Net, self).__init__()
        self.sin = ops.Sin()
        self.cos = ops.Cos()

    def construct(self, x):
        a = self.sin(x)
        out = self.cos(a)
        return out


class GradNet(nn.Cell):
    def __init__(self, net):
        super(GradNet, self).__init__()
        self.net = net
        self.grad_op = ops.GradOperation()

    def construct(self, x):
        gradient_function = self.grad_op(self.net)
        return gradient_function(x)


SIN_X = np.array([1.0, 2.0, 5.0], dtype=np.float32)


def test_sin_cos_forward():
    out = Net()(Tensor(SIN_X))
    assert out.dtype == mstype.float32
    np.testing.assert_allclose(out.asnumpy(), [0.66636676, 0.6143003, 0.57440084], rtol=1e-6)


def test_sin_cos_gradnet():
    output = GradNet(Net())(Tensor(SIN_X))
    assert isinstance(output, Tensor) and output.dtype == mstype.float32
    assert output.shape == (3,)
    np.testing.assert_allclose(output.asnumpy(), [-0.4028624, 0.32836998, 0.23219854],
                               rtol=1e-6)


# ------------------------------------------------------------ MatMul network
class MatMulNet(nn.Cell):
    def __init__(self):
        super(MatMulNet, self).__init__()
        self.matmul = ops.MatMul()
        self.z = Parameter(Tensor(np.array([1.0], np.float32)), name='z')

    def construct(self, x, y):
        x = x * self.z
        out = self.matmul(x, y)
        return out


class GradNetWrtX(nn.Cell):
    def __init__(self, net):
        super(GradNetWrtX, self).__init__()
        self.net = net
        self.grad_op = ops.GradOperation()

    def construct(self, x, y):
        gradient_function = self.grad_op(self.net)
        return gradient_function(x, y)


class GradNetWrtXY(nn.Cell):
    def __init__(self, net):
        super(GradNetWrtXY, self).__init__()
        self.net = net
        self.grad_op = ops.GradOperation(get_all=True)

    def construct(self, x, y):
        gradient_function = self.grad_op(self.net)
        return gradient_function(x, y)


class GradNetWithWrtParams(nn.Cell):
    def __init__(self, net):
        super(GradNetWithWrtParams, self).__init__()
        self.net = net
        self.params = ParameterTuple(net.trainable_params())
        self.grad_op = ops.GradOperation(get_by_list=True)

    def construct(self, x, y):
        gradient_function = self.grad_op(self.net, self.params)
        return gradient_function(x, y)


class GradNetWrtXYWithSensParam(nn.Cell):
    def __init__(self, net):
        super(GradNetWrtXYWithSensParam, self).__init__()
        self.net = net
        self.params = ParameterTuple(net.trainable_params())
        self.grad_op = ops.GradOperation(get_all=True, get_by_list=True, sens_param=True)

    def construct(self, x, y, sens):
        gradient_function = self.grad_op(self.net, self.params)
        return gradient_function(x, y, sens)


class GradNetWrtXWithSensParam(nn.Cell):
    """The sens variant whose construct forgets to pass the sens (a user error)."""

    def __init__(self, net):
        super(GradNetWrtXWithSensParam, self).__init__()
        self.net = net
        self.grad_op = ops.GradOperation(sens_param=True)

    def construct(self, x, y):
        gradient_function = self.grad_op(self.net)
        return gradient_function(x, y)


X = Tensor(np.array([[0.5, 0.6, 0.4], [1.2, 1.3, 1.1]], dtype=np.float32))
Y = Tensor(np.array([[0.01, 0.3, 1.1], [0.1, 0.2, 1.3], [2.1, 1.2, 3.3]], dtype=np.float32))
DX = np.array([[1.41, 1.6, 6.6], [1.41, 1.6, 6.6]], np.float32)
DY = np.array([[1.7, 1.7, 1.7], [1.9, 1.9, 1.9], [1.5, 1.5, 1.5]], np.float32)


def test_matmul_forward():
    out = MatMulNet()(X, Y)
    expected = X.asnumpy().astype(np.float64) @ Y.asnumpy().astype(np.float64)
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6)


def test_grad_wrt_x():
    output = GradNetWrtX(MatMulNet())(X, Y)
    assert isinstance(output, Tensor) and output.shape == (2, 3)
    assert output.dtype == mstype.float32
    np.testing.assert_allclose(output.asnumpy(), DX, rtol=1e-6)


def test_grad_wrt_xy():
    output = GradNetWrtXY(MatMulNet())(X, Y)
    assert isinstance(output, tuple) and len(output) == 2
    np.testing.assert_allclose(output[0].asnumpy(), DX, rtol=1e-6)
    np.testing.assert_allclose(output[1].asnumpy(), DY, rtol=1e-6)
    assert repr(output).startswith("(Tensor(shape=[2, 3], dtype=Float32, value=")
    assert "Tensor(shape=[3, 3], dtype=Float32, value=" in repr(output)


def test_grad_wrt_params():
    output = GradNetWithWrtParams(MatMulNet())(X, Y)
    assert isinstance(output, tuple) and len(output) == 1
    assert isinstance(output[0], Tensor) and output[0].shape == (1,)
    assert output[0].dtype == mstype.float32
    np.testing.assert_allclose(output[0].asnumpy(), [15.337], rtol=1e-6)


def test_grad_wrt_xy_with_sens_param():
    sens = Tensor(np.full((2, 3), 0.1, np.float32))
    output = GradNetWrtXYWithSensParam(MatMulNet())(X, Y, sens)
    assert isinstance(output, tuple) and len(output) == 2
    (dx, dy), (dz,) = output
    np.testing.assert_allclose(dx.asnumpy(), 0.1 * DX, rtol=1e-6)
    np.testing.assert_allclose(dy.asnumpy(), 0.1 * DY, rtol=1e-6)
    np.testing.assert_allclose(dz.asnumpy(), [1.5337], rtol=1e-6)
    assert all(t.dtype == mstype.float32 for t in (dx, dy, dz))


# ---------------------------------------------------------- the sens mistakes
def test_sens_missing():
    with pytest.raises(TypeError) as info:
        GradNetWrtXWithSensParam(MatMulNet())(X, Y)
    assert str(info.value) == ("The parameters number of the function is 3, but the number "
                               "of provided arguments is 2.")


def test_sens_wrong_shape():
    sens = Tensor(np.full((2, 2), 0.1, np.float32))
    with pytest.raises(ValueError) as info:
        GradNetWrtXYWithSensParam(MatMulNet())(X, Y, sens)
    msg = str(info.value)
    assert "[2, 2]" in msg and "[2, 3]" in msg


def test_flag_must_be_bool():
    with pytest.raises(TypeError) as info:
        ops.GradOperation(get_all=1)
    assert str(info.value) == "For 'GradOperation', the 'get_all' should be bool, but got int"
