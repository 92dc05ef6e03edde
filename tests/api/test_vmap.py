"""``s2sad.vmap``: a function of one example over a batch, against a loop written by hand."""
import numpy as np
import pytest

import s2sad
from s2sad import Tensor

RNG = np.random.default_rng(11)


def cube_sum(w):
    return (w ** 3).sum()


def test_per_example_gradients_equal_one_gradient_per_row():
    xs = RNG.standard_normal((4, 3))
    got = s2sad.vmap(s2sad.grad(cube_sum))(xs)
    np.testing.assert_allclose(got, 3 * xs ** 2, rtol=1e-15)


def scaled(a, b):
    return a * b, a.sum()


def test_in_axes_none_and_tuple_outputs_with_out_axes():
    a, b = RNG.standard_normal((2, 5)), RNG.standard_normal(2)
    prod, total = s2sad.vmap(scaled, in_axes=(1, None), out_axes=(1, 0))(a, b)
    np.testing.assert_array_equal(prod, a * b[:, None])
    np.testing.assert_array_equal(total, a.sum(axis=0))


def test_tensors_in_give_tensors_out():
    out = s2sad.vmap(lambda t: t * 2)(Tensor(np.ones((3, 2), np.float32)))
    assert isinstance(out, Tensor) and out.shape == (3, 2)


def test_misuse_names_the_argument():
    with pytest.raises(ValueError, match="one size"):
        s2sad.vmap(scaled)(np.ones((2, 3)), np.ones(3))
    with pytest.raises(ValueError, match="'in_axes' has 1 items but there are 2 inputs"):
        s2sad.vmap(scaled, in_axes=(0,))(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="at least one input must be mapped"):
        s2sad.vmap(scaled, in_axes=None)(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="'fn' must be a function or a Cell"):
        s2sad.vmap(3)


def squared_error(w, batch):
    x, y = batch
    return np.sum((x @ w - y) ** 2)


def dense_loss(params, x):
    (W, b), = params
    return np.sum(np.tanh(x @ W + b))


def test_a_pytree_input_is_mapped_leaf_by_leaf():
    """A batch ``(x, y)`` mapped over axis 0 (JAX's per-example gradients of
    differentially private SGD): row i of every leaf goes to call i."""
    w = RNG.standard_normal(3)
    xs, ys = RNG.standard_normal((4, 3)), RNG.standard_normal(4)
    got = s2sad.vmap(s2sad.grad(squared_error), (None, 0))(w, (xs, ys))
    np.testing.assert_allclose(got, 2 * (xs @ w - ys)[:, None] * xs, rtol=1e-13)
    got = s2sad.vmap(lambda d: d["x"] * d["s"])({"x": xs, "s": ys})
    np.testing.assert_allclose(got, xs * ys[:, None], rtol=1e-15)


def test_a_pytree_output_is_stacked_leaf_by_leaf():
    W, b = RNG.standard_normal((3, 2)), RNG.standard_normal(2)
    xs = RNG.standard_normal((4, 3))
    (gW, gb), = s2sad.vmap(s2sad.grad(dense_loss), (None, 0))([(W, b)], xs)
    d = 1 - np.tanh(xs @ W + b) ** 2            # [4, 2]: the gradient of row i's sum
    np.testing.assert_allclose(gb, d, rtol=1e-13)
    np.testing.assert_allclose(gW, xs[:, :, None] * d[:, None, :], rtol=1e-13)
    with pytest.raises(TypeError, match="input 0 is mapped over axis 0, so it must be a "
                                        "Tensor or a pytree of them, but got str"):
        s2sad.vmap(len)(("ab", np.ones(2)))
