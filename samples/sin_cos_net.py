"""The sin/cos network from MindSpore's GradOperation tutorial, differentiated by s2sad.

Run ``python samples/sin_cos_net.py`` to print the gradient, the closed form it
must match, and the adjoint source s2sad generated.  ``s2sad dump
samples/sin_cos_net.py::Net`` prints the same source from the command line.
"""
import numpy as np

import s2sad
from s2sad import nn, ops, Tensor


class Net(nn.Cell):
    def __init__(self):
        super(Net, self).__init__()
        self.sin = ops.Sin()
        self.cos = ops.Cos()

    def construct(self, x):
        a = self.sin(x)
        out = self.cos(a)
        return out


def _fmt(values):
    """float32 values at their shortest exact repr, so the output is easy to read and parse."""
    return "[" + ", ".join(str(np.float32(v)) for v in np.ravel(values)) + "]"


def closed_form(x):
    """d/dx cos(sin(x)) = -sin(sin(x)) * cos(x), for checking the generated code."""
    return -np.sin(np.sin(x)) * np.cos(x)


if __name__ == "__main__":
    x = Tensor(np.array([1.0, 2.0, 5.0], np.float32))
    grad_fn = ops.GradOperation()(Net())
    dx = grad_fn(x)
    expected = closed_form(x.asnumpy())
    print("x           =", _fmt(x.asnumpy()))
    print("gradient    =", _fmt(dx.asnumpy()))
    print("closed form =", _fmt(expected))
    print("max |diff|  =", float(np.max(np.abs(dx.asnumpy() - expected))))
    print()
    print("generated adjoint:")
    print(s2sad.get_source(grad_fn))
