"""Shapes read as values inside differentiated code: ``b, n, c = x.shape`` and friends.

Compiled code stays shape-polymorphic: a shape is a run-time tuple, unpacked
into as many names as the assignment has (checked when the code runs),
sliced, concatenated with known tuples and used as sizes in ``reshape``.
Every gradient is checked against central finite differences.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, Parameter

from gradcheck import numeric_grad

RNG = np.random.default_rng(7)


def attention_scores(x, w):
    b, n, c = x.shape
    heads = 2
    q = (x @ w).reshape(b, n, heads, c // heads).transpose(0, 2, 1, 3)
    s = q @ q.transpose(0, 1, 3, 2) / np.sqrt(x.shape[-1] // heads)
    return np.tanh(s).reshape(x.shape[:1] + (-1,)).sum()


def attention_scores_numpy(x, w):
    b, n, c = x.shape
    q = (x @ w).reshape(b, n, 2, c // 2).transpose(0, 2, 1, 3)
    s = q @ q.transpose(0, 1, 3, 2) / np.sqrt(c // 2)
    return float(np.tanh(s).sum())


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 5, 6)])
def test_attention_with_shape_arithmetic_matches_finite_differences(shape):
    """One compiled program serves both shapes: the sizes are read at run time."""
    x, w = RNG.standard_normal(shape), RNG.standard_normal((shape[-1], shape[-1]))
    dx, dw = s2sad.grad(attention_scores, grad_position=(0, 1))(x, w)
    np.testing.assert_allclose(dx, numeric_grad(attention_scores_numpy, (x, w), 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dw, numeric_grad(attention_scores_numpy, (x, w), 1),
                               rtol=1e-6, atol=1e-8)


def test_the_generated_code_unpacks_the_shape_once_and_keeps_names():
    x, w = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((4, 4))
    src = s2sad.get_source(s2sad.grad(attention_scores), x, w)
    assert "b, n, c = rt.array_unpack(shape_x, 3)" in src
    assert "floor_div_c = c // 2" in src


class Heads(nn.Cell):
    """A model-zoo style Cell: sizes from ``ops.shape`` and ``x.shape``."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(RNG.standard_normal((4, 4))), name="w")

    def construct(self, x):
        b = ops.shape(x)[0]
        n, c = x.shape[1], x.shape[-1]
        y = ops.reshape(ops.matmul(x, self.w), (b, n, 2, c // 2))
        return (ops.transpose(y, (0, 2, 1, 3)) ** 2).sum()


def test_a_cell_reading_sizes_gets_weight_and_input_gradients():
    net = Heads()
    x = RNG.standard_normal((2, 3, 4))
    w = net.w.asnumpy().copy()

    def loss(xv, wv):
        return float(((xv @ wv) ** 2).sum())
    dx = ops.GradOperation()(net)(Tensor(x))
    (dw,) = ops.GradOperation(get_by_list=True)(net, net.trainable_params())(Tensor(x))
    np.testing.assert_allclose(np.asarray(dx), numeric_grad(loss, (x, w), 0), rtol=1e-6)
    np.testing.assert_allclose(dw.asnumpy(), numeric_grad(loss, (x, w), 1), rtol=1e-6)


def flatten_by_batch(x):
    b = x.shape[0]
    return (x.reshape(b, -1) ** 2).sum() * b


def test_reshape_method_takes_sizes_known_only_at_run_time():
    x = RNG.standard_normal((2, 3, 2))
    np.testing.assert_allclose(s2sad.grad(flatten_by_batch)(x), 2 * x * 2, rtol=1e-15)


def unpacks_two(x):
    rows, cols = x.shape
    return (x * rows).sum() + cols


def test_unpacking_a_shape_of_another_length_fails_clearly_at_run_time():
    g = s2sad.grad(unpacks_two)
    np.testing.assert_allclose(g(np.ones((3, 2))), np.full((3, 2), 3.0))
    with pytest.raises(ValueError, match="cannot unpack 3 values into 2 names"):
        g(np.ones((3, 2, 1)))


def unpacks_an_array(x):
    a, b = x           # its rows; the length is checked when the code runs
    return (a * b).sum()


def test_unpacking_an_array_reads_its_rows_and_checks_the_count_at_run_time():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(s2sad.grad(unpacks_an_array)(x), x[::-1])
    with pytest.raises(ValueError, match="size of axis 0 is 3, but 'num' is 2"):
        s2sad.grad(unpacks_an_array)(np.ones((3, 3)))


def loops_over_rows(x):
    b, c = x.shape
    total = 0.0
    for i in range(b):
        total = total + (x[i] ** 2).sum()
    if c > 2:
        total = total * 2
    return total


@pytest.mark.parametrize("shape, factor", [((2, 3), 4.0), ((3, 2), 2.0)])
def test_a_loop_and_a_branch_on_sizes_run_at_run_time(shape, factor):
    x = RNG.standard_normal(shape)
    np.testing.assert_allclose(s2sad.grad(loops_over_rows)(x), factor * x, rtol=1e-15)
