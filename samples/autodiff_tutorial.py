"""The steps of MindSpore's automatic-differentiation tutorial, run with s2sad.

A one-layer logistic model: first as a function of its weights (gradients
with respect to chosen positions, an auxiliary output, ``stop_gradient``),
then as an ``nn.Cell`` whose Parameters ``value_and_grad`` differentiates.
Each gradient is printed next to its closed form,
``d loss / d z = (sigmoid(z) - y) / n`` pushed back through ``z = x @ w + b``.
Written in MindSpore's style: only the first import line differs.
"""
import numpy as np

import s2sad as mindspore
from mindspore import nn, ops, Tensor, Parameter

rng = np.random.default_rng(0)
x = ops.ones(5, mindspore.float32)                       # input
y = ops.zeros(3, mindspore.float32)                      # expected output
w = Parameter(Tensor(rng.standard_normal((5, 3)), mindspore.float32), name="w")
b = Parameter(Tensor(rng.standard_normal(3), mindspore.float32), name="b")


def function(x, y, w, b):
    z = ops.matmul(x, w) + b
    loss = ops.binary_cross_entropy_with_logits(z, y, ops.ones_like(z), ops.ones_like(z))
    return loss


def closed_form(x, y, w, b):
    """``(d loss/d w, d loss/d b)`` of the mean binary cross-entropy, by hand."""
    x, y, w, b = (np.asarray(v.asnumpy(), np.float64) for v in (x, y, w, b))
    dz = (1 / (1 + np.exp(-(x @ w + b))) - y) / y.size
    return np.outer(x, dz), dz


def function_with_logits(x, y, w, b):
    z = ops.matmul(x, w) + b
    loss = ops.binary_cross_entropy_with_logits(z, y, ops.ones_like(z), ops.ones_like(z))
    return loss, z


def function_stop_gradient(x, y, w, b):
    z = ops.matmul(x, w) + b
    loss = ops.binary_cross_entropy_with_logits(z, y, ops.ones_like(z), ops.ones_like(z))
    return loss, ops.stop_gradient(z)


class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = w
        self.b = b

    def construct(self, x):
        return ops.matmul(x, self.w) + self.b


def main():
    dw_want, db_want = closed_form(x, y, w, b)

    grad_fn = mindspore.grad(function, (2, 3))           # gradients of w and b
    dw, db = grad_fn(x, y, w, b)
    print("d loss / d w:\n", dw)
    print("d loss / d b:", db)
    print("largest difference from the closed form: %.2e" % max(
        np.abs(dw.asnumpy() - dw_want).max(), np.abs(db.asnumpy() - db_want).max()))

    # an auxiliary output: only the first output is differentiated
    grads, (z,) = mindspore.grad(function_with_logits, (2, 3), has_aux=True)(x, y, w, b)
    print("with has_aux, the same gradients:", np.allclose(grads[0].asnumpy(), dw.asnumpy()))
    # stop_gradient: the second output adds nothing to the gradient
    grads = mindspore.grad(function_stop_gradient, (2, 3))(x, y, w, b)
    print("with stop_gradient, the same gradients:",
          np.allclose(grads[1].asnumpy(), db.asnumpy()))

    model = Network()
    loss_fn = nn.BCEWithLogitsLoss()

    def forward_fn(x, y):
        z = model(x)
        return loss_fn(z, y)

    grad_fn = mindspore.value_and_grad(forward_fn, None, weights=model.trainable_params())
    loss, (dw_net, db_net) = grad_fn(x, y)
    print("network loss: %.6f" % float(loss.asnumpy()))
    print("network gradients equal the function's:",
          np.allclose(dw_net.asnumpy(), dw.asnumpy()) and
          np.allclose(db_net.asnumpy(), db.asnumpy()))
    print(mindspore.get_source(grad_fn, x, y))


if __name__ == "__main__":
    main()
