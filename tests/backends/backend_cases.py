"""The program catalogue run on another array library, compared with NumPy's run.

NumPy's gradients of every entry are checked against finite differences by
``tests/programs/test_catalogue.py``; here the same entries take arrays of
another library, and their gradients must be that library's arrays, of the
inputs' dtype, equal to NumPy's to rounding.
"""
import numpy as np

from catalogue import ENTRIES

import s2sad

#: entries whose program reads NumPy data of its own (a Cell's Parameters)
READS_NUMPY = {"small_net"}
PROGRAMS = [e for e in ENTRIES if e.name not in READS_NUMPY]
IDS = [e.name for e in PROGRAMS]


def numpy_and_other(entry, convert, seed=0):
    """(NumPy's gradients, the other library's) of ``entry`` for every input."""
    args = entry.make_args(np.random.default_rng(seed))
    positions = tuple(range(len(args)))
    expected = s2sad.grad(entry.fn, grad_position=positions)(*args)
    got = s2sad.grad(entry.fn, grad_position=positions)(*map(convert, args))
    return args, expected, got


def assert_same_gradients(args, expected, got, array_type, to_numpy):
    assert len(got) == len(expected)
    for a, e, g in zip(args, expected, got):
        assert isinstance(g, array_type), type(g)
        assert tuple(g.shape) == a.shape
        np.testing.assert_allclose(to_numpy(g), e, rtol=1e-12, atol=1e-12)
