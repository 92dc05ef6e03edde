"""PaddlePaddle's higher-order differentiation example, on s2sad.

Paddle computes the first three derivatives of tanh at 1.0 with
``paddle.grad(..., create_graph=True)``, printing ``[0.41997433]``,
``[-0.6397]`` and ``[0.6216267]``.  Here each derivative is a function that
applies ``ops.GradOperation`` to the previous one: s2sad differentiates the
gradient's own generated code again.  The second part is forward mode:
``s2sad.jvp`` of ``func(x) = (x + x, x * x, tanh(x))``, one tangent per output.

Run ``python samples/paddle_higher_order.py``.
"""
import numpy as np

import s2sad
from s2sad import ops, Tensor

grad_op = ops.GradOperation()


def f(x):
    return ops.tanh(x)


def df(x):
    return grad_op(f)(x)


def ddf(x):
    return grad_op(df)(x)


def dddf(x):
    return grad_op(ddf)(x)


def func(x):
    return x + x, x * x, ops.tanh(x)


def closed_forms(x):
    """tanh', tanh'' and tanh''' at x (t = tanh x): 1 - t^2, -2t(1 - t^2), (6t^2 - 2)(1 - t^2)."""
    t = np.tanh(x)
    return 1 - t * t, -2 * t * (1 - t * t), (6 * t * t - 2) * (1 - t * t)


def main():
    x = Tensor(np.array([1.0], np.float32))
    print("== reverse mode: derivatives of tanh at 1.0 ==")
    first, second, third = df(x), ddf(x), dddf(x)
    print("first  =", first)
    print("second =", second)
    print("third  =", third)
    print("closed forms (float64) =", ", ".join("%.7f" % v[0]
                                                 for v in closed_forms(np.array([1.0]))))
    print()
    print("generated code of the second derivative (the gradient of df):")
    grad_df = grad_op(df)
    grad_df(x)
    print(s2sad.get_source(grad_df))

    print("== forward mode: jvp of func(x) = (x + x, x * x, tanh(x)) ==")
    x = Tensor(np.array([1.0, 2.0], np.float32))
    v = Tensor(np.ones(2, np.float32))
    outputs, tangents = s2sad.jvp(func, x, v)
    for name, out, tangent in zip(("x + x", "x * x", "tanh(x)"), outputs, tangents):
        print("%-8s value = %-26s tangent = %s" % (name, out, tangent))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
