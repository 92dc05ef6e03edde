"""Idioms of autograd's own test suite that s2sad refused or crashed on.

Each program is checked against float64 central differences of itself run
by NumPy.
"""
import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError

from gradcheck import numeric_grad

RNG = np.random.default_rng(11)


def forwarding(f):
    """A decorator in autograd's style: keyword arguments passed on only if any."""
    def wrapper(*args, **kwargs):
        if kwargs:
            return f(*args, **kwargs)
        return f(*args)
    return wrapper


@forwarding
def decorated(x, scale=2.0):
    return np.sum(np.sin(x) * scale)


def test_truth_of_an_empty_kwargs_dict_is_known_while_compiling():
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(s2sad.grad(decorated)(x), 2.0 * np.cos(x), rtol=1e-12)


def mean_of_list(x, y):
    return np.mean([x, y * 2.0]) + np.std([x, y]) + np.linalg.norm([x, y])


@pytest.mark.parametrize("i", [0, 1])
def test_reductions_of_a_list_of_traced_scalars(i):
    args = (np.float64(0.7), np.float64(-1.3))
    g = s2sad.grad(mean_of_list, (0, 1))(*args)[i]
    assert g == pytest.approx(float(numeric_grad(mean_of_list, args, i)), rel=1e-6)


def rewrites_an_argument(*args):
    args = list(args)
    args[0] = args[0] * 3.0
    args[-1] = np.exp(args[-1])
    return np.sum(args[0] * args[1])


def test_item_assignment_on_a_list_made_from_the_arguments():
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    ga, gb = s2sad.grad(rewrites_an_argument, (0, 1))(a, b)
    np.testing.assert_allclose(ga, numeric_grad(rewrites_an_argument, (a, b), 0), rtol=1e-6)
    np.testing.assert_allclose(gb, numeric_grad(rewrites_an_argument, (a, b), 1), rtol=1e-6)


def writes_past_the_end(x):
    items = list((x, x))
    items[2] = x
    return np.sum(items[0])


def test_a_list_index_out_of_range_names_the_line():
    with pytest.raises(CompileError, match="list assignment index out of range") as err:
        s2sad.grad(writes_past_the_end)(np.ones(2))
    assert "items[2] = x" in str(err.value)
