"""Unpacking a run-time array, and ``Unstack`` without ``num``, inside compiled code.

Model-zoo attention blocks split a fused projection with ``q, k, v =
P.Unstack(axis=0)(qkv)``; compiled code is shape-polymorphic, so the slices
are the rows of ``qkv`` with the axis moved first, and the count the
assignment names is checked when the code runs.  Gradients are checked
against float64 central differences.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor
from s2sad.ops import operations as P

from gradcheck import numeric_grad

RNG = np.random.default_rng(7)


def split_rows(x):
    a, b, c = x
    return np.sum(np.sin(a) * b + c ** 2)


def test_an_array_unpacks_into_its_rows_with_a_gradient():
    x = RNG.standard_normal((3, 4))
    g = s2sad.grad(split_rows)(x)
    np.testing.assert_allclose(g, numeric_grad(split_rows, (x,), 0), rtol=1e-6, atol=1e-8)
    _, t = s2sad.jvp(split_rows, (x,), (np.ones_like(x),))
    assert t == pytest.approx(np.sum(numeric_grad(split_rows, (x,), 0)), rel=1e-6)


def test_a_wrong_row_count_raises_when_the_code_runs():
    s2sad.grad(split_rows)(RNG.standard_normal((3, 2)))
    with pytest.raises(ValueError, match="size of axis 0 is 4, but 'num' is 3"):
        s2sad.grad(split_rows)(RNG.standard_normal((4, 2)))


class FusedHeads(nn.Cell):
    """A fused q/k/v projection split by ``Unstack`` along axis 2, without ``num``."""

    def __init__(self):
        super().__init__()
        self.unstack = P.Unstack(axis=2)
        self.matmul = P.BatchMatMul(transpose_b=True)

    def construct(self, qkv):
        q, k, v = self.unstack(qkv)
        scores = ops.softmax(self.matmul(q, k), axis=-1)
        return ops.sum(ops.matmul(scores, v) ** 2)


def test_unstack_without_num_compiles_and_differentiates():
    net = FusedHeads()
    qkv = RNG.standard_normal((2, 4, 3, 5))
    eager = float(net(Tensor(qkv)).asnumpy())
    g = ops.GradOperation()(net)(Tensor(qkv)).asnumpy()

    def loss(a):
        return float(net(Tensor(a)).asnumpy())
    np.testing.assert_allclose(g, numeric_grad(loss, (qkv,), 0), rtol=1e-5, atol=1e-8)
    assert float(s2sad.jit(net.construct)(Tensor(qkv)).asnumpy()) == pytest.approx(eager)
