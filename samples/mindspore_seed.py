"""MindSpore's GradOperation tutorial, run on s2sad.

The networks and gradient Cells below are written the way MindSpore users write
them; only the import of the framework changes.  Run
``python samples/mindspore_seed.py``: every section prints a heading and the
values the tutorial shows.
"""
import numpy as np

import s2sad as mindspore
# s2sad registers itself as ``mindspore`` (when MindSpore is not installed), so
# the tutorial's own ``from mindspore import ...`` lines run unchanged.
from mindspore import nn, ops, Tensor, Parameter, ParameterTuple  # noqa: E402
from mindspore import dtype as mstype  # noqa: E402


def heading(title):
    print()
    print("== %s ==" % title)


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


# ------------------------------------------------------------------ matmul
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
        self.grad_wrt_output = Tensor([[0.1, 0.1, 0.1], [0.1, 0.1, 0.1]], dtype=mstype.float32)

    def construct(self, x, y):
        gradient_function = self.grad_op(self.net, self.params)
        return gradient_function(x, y, self.grad_wrt_output)


def main():
    heading("1. forward of the sin/cos net vs numpy")
    x = Tensor(np.array([1.0, 2.0, 5.0], np.float32))
    net = Net()
    out = net(x)
    print(out)
    print("numpy cos(sin(x)):", np.cos(np.sin(x.asnumpy())))

    heading("2. GradNet: gradient of the sin/cos net")
    output = GradNet(net)(x)
    print(output)
    print("closed form -sin(sin(x)) * cos(x):",
          -np.sin(np.sin(x.asnumpy())) * np.cos(x.asnumpy()))

    x = Tensor([[0.5, 0.6, 0.4], [1.2, 1.3, 1.1]], dtype=mstype.float32)
    y = Tensor([[0.01, 0.3, 1.1], [0.1, 0.2, 1.3], [2.1, 1.2, 3.3]], dtype=mstype.float32)

    heading("3. GradNetWrtX: gradient with respect to the first input")
    output = GradNetWrtX(MatMulNet())(x, y)
    print(output)

    heading("4. GradNetWrtXY: get_all=True, gradients of every input")
    output = GradNetWrtXY(MatMulNet())(x, y)
    print(output)

    heading("5. GradNetWithWrtParams: get_by_list=True, gradient of the Parameter z")
    output = GradNetWithWrtParams(MatMulNet())(x, y)
    print(output)

    heading("6. GradNetWrtXYWithSensParam: sens_param=True with a sens of 0.1")
    output = GradNetWrtXYWithSensParam(MatMulNet())(x, y)
    print(output)

    grad_fn = ops.GradOperation(get_all=True, sens_param=True)(MatMulNet())

    heading("7. mistake: sens_param=True but no sens passed")
    try:
        grad_fn(x, y)
    except TypeError as e:
        print("TypeError:", e)

    heading("8. mistake: a sens whose shape is not the output's")
    try:
        grad_fn(x, y, Tensor(np.full((3, 3), 0.1, np.float32)))
    except ValueError as e:
        print("ValueError:", e)


if __name__ == "__main__":
    main()
