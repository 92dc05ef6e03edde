"""Dive into Deep Learning's control-flow example, differentiated by s2sad.

``f`` doubles ``b`` in a ``while`` loop until its norm reaches 1000, then
takes one of two branches on the sign of its sum.  However many times the loop
runs and whichever branch is taken, ``f(a) = k * a`` for a constant ``k`` that
depends on ``a``, so the gradient of ``f(a)`` (summed over its elements: the
default sens of ones) is ``k = f(a) / a`` elementwise -- D2L's check
``a.grad == d / a``.  Run ``python samples/d2l_control_flow.py``.
"""
import numpy as np

import s2sad
from s2sad import ops, Tensor


def f(a):
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


grad_f = ops.GradOperation()(f)


def check(name, a):
    """Print d = f(a), its gradient and d / a; return whether they agree."""
    d = f(a)
    grad = grad_f(a)
    ratio = d / a
    same = bool(np.allclose(grad.asnumpy(), ratio.asnumpy(), rtol=1e-6, atol=0))
    print("== %s a, shape %s ==" % (name, list(a.shape)))
    print("a       =", np.array2string(a.asnumpy(), precision=4).replace("\n", ""))
    print("grad    =", np.array2string(grad.asnumpy()).replace("\n", ""))
    print("d / a   =", np.array2string(ratio.asnumpy()).replace("\n", ""))
    print("grad == d / a:", same)
    print()
    return same


def main():
    rng = np.random.default_rng(0)
    cases = [
        ("scalar", Tensor(np.float32(0.6))),
        ("negative scalar", Tensor(np.float32(-0.3))),      # takes the else branch
        ("vector", Tensor(rng.standard_normal(4).astype(np.float32))),
        ("matrix", Tensor(rng.standard_normal((3, 2)).astype(np.float32))),
    ]
    ok = all([check(name, a) for name, a in cases])
    print("generated gradient source:")
    print(s2sad.get_source(grad_f))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
