"""Star unpacking: ``a, *rest = ...`` gives the starred name a list of what the
others leave, as Python does.

Every gradient is compared with float64 central finite differences of the
function run eagerly (``check_grads`` also compares reverse with forward
mode), or with a closed form; the refused constructs are checked against the
documented error.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.errors import CompileError

V = np.array([0.5, -0.3, 0.7])


# ------------------------------------------------------------- star unpacking
def star_first(x):
    a, *rest = (x, x * 2.0, np.sin(x))
    return a * rest[0] * rest[1] + len(rest)


def star_last(x):
    *init, last = [x, np.cos(x), x * 3.0]
    return init[0] * init[1] * last


def star_middle(x):
    a, *mid, b = (x, np.sin(x), np.cos(x), x * 2.0)
    total = a + b
    for m in mid:
        total = total * m
    return total


def star_empty(x):
    a, *rest, b = (x, np.sin(x))
    return a * b + len(rest)


def star_in_loop(x):
    s = x * 1.0
    for i in range(3):
        a, *rest = (np.sin(s), s, x)
        s = a * rest[0] + rest[1]
    return s


def star_too_few(x):
    a, *rest, b = (x,)
    return a


@pytest.mark.parametrize("fn", [star_first, star_last, star_middle, star_empty, star_in_loop])
def test_star_unpacking(fn):
    s2sad.check_grads(fn, (V,))


def test_star_unpacking_needs_enough_values():
    with pytest.raises(CompileError, match="not enough values to unpack \\(expected at least 2, "
                                           "got 1\\)"):
        ops.GradOperation()(star_too_few)(V)
