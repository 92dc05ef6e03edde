"""``dict(...)``, ``sorted`` of a dict's keys or items, and ``get`` of a dict known
while compiling, inside differentiated code: answered while compiling (keys and
sort keys are known then), the values staying runtime values.  Gradients against
closed forms and float64 central differences, to second order.
"""
import operator

import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError

A = np.array([0.3, 1.2])
B = np.array([0.7, -0.4, 2.0])


def rebuilt(keys, values):
    return dict(zip(keys, values))


def from_pairs(a, b):
    d = rebuilt(("x", "y"), (a, b[:2]))
    return np.sum(np.sin(d["x"]) * d["y"]) + np.sum(d.get("z", a) ** 2)


def from_keywords(a, b):
    d = dict(dict(x=a, y=b[1:] * 2.0), w=a)
    return np.sum(d["x"] * d["y"] * d["w"])


@pytest.mark.parametrize("fn", [from_pairs, from_keywords])
def test_dict_built_from_runtime_values(fn):
    s2sad.check_grads(fn, (A, B), order=2)


SCALES = {"item_1": 3.0}


def get_with_a_runtime_default(x):
    return SCALES.get("item_1", x) * x + SCALES.get("other", x) ** 2


def test_get_of_a_known_dict_with_a_runtime_default():
    x = np.float64(0.8)
    assert np.isclose(s2sad.grad(get_with_a_runtime_default)(x), 3.0 + 2 * x)


def weighted_by_sorted_order(d):
    total = 0.0
    for i, (k, v) in enumerate(sorted(d.items(), key=operator.itemgetter(0))):
        total = total + np.sum(np.sin(v)) * (i + 1.0)
    for i, k in enumerate(sorted(d, reverse=True)):
        total = total + np.sum(d[k] ** 2) * i
    return total


def test_sorted_items_and_keys_of_a_dict_argument():
    d = {"b": A, "a": B}
    g = s2sad.grad(weighted_by_sorted_order)(d)
    # sorted items: a first (weight 1), b second (2); reversed keys: b (0), a (1)
    np.testing.assert_allclose(g["a"], np.cos(B) + 2 * B)
    np.testing.assert_allclose(g["b"], 2 * np.cos(A))


def dict_of_a_runtime_value(a):
    return dict(a)


def test_dict_of_a_runtime_value_is_refused_clearly():
    with pytest.raises(CompileError, match="dict\\(\\) of a value known only at run time"):
        s2sad.grad(lambda a: np.sum(dict_of_a_runtime_value(a)["x"]))(A)


def test_check_grads_differentiates_a_python_float_argument():
    # a Python number is a constant elsewhere; check_grads is asked to check it
    s2sad.check_grads(lambda x, y: np.sin(x) * y, (A, 2.0), order=2)
