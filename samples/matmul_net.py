"""The MatMul network with a Parameter from MindSpore's GradOperation tutorial.

Run ``python samples/matmul_net.py`` to differentiate it with respect to both
inputs and its Parameter ``z``, with an explicit sens of 0.1, and to print the
adjoint s2sad generated.  ``s2sad dump samples/matmul_net.py::Net --get-all
--get-by-list --sens-param`` prints the same source.
"""
import numpy as np

import s2sad
from s2sad import nn, ops, Tensor, Parameter, ParameterTuple


class Net(nn.Cell):
    def __init__(self):
        super(Net, self).__init__()
        self.matmul = ops.MatMul()
        self.z = Parameter(Tensor(np.array([1.0], np.float32)), name='z')

    def construct(self, x, y):
        x = x * self.z
        out = self.matmul(x, y)
        return out


def _fmt(name, t):
    """One ``name shape = [values]`` line: readable, and easy for tests to parse."""
    a = t.asnumpy()
    values = ", ".join(str(np.float32(v)) for v in np.ravel(a))
    return "%-3s %-7s = [%s]" % (name, list(a.shape), values)


if __name__ == "__main__":
    x = Tensor(np.array([[0.5, 0.6, 0.4], [1.2, 1.3, 1.1]], dtype=np.float32))
    y = Tensor(np.array([[0.01, 0.3, 1.1], [0.1, 0.2, 1.3], [2.1, 1.2, 3.3]], dtype=np.float32))
    sens = Tensor(np.full((2, 3), 0.1, np.float32))

    net = Net()
    params = ParameterTuple(net.trainable_params())
    grad_op = ops.GradOperation(get_all=True, get_by_list=True, sens_param=True)
    grad_fn = grad_op(net, params)
    (dx, dy), (dz,) = grad_fn(x, y, sens)

    print("GradOperation(get_all=True, get_by_list=True, sens_param=True), sens = 0.1:")
    print(_fmt("dx", dx))
    print(_fmt("dy", dy))
    print(_fmt("dz", dz))
    print()
    print("generated adjoint:")
    print(s2sad.get_source(grad_fn))
