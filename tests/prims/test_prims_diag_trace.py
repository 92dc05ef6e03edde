"""``np.trace``, ``np.diagonal``/``x.diagonal()``, ``np.diag`` (both directions),
``np.diagflat``, ``np.tril``/``np.triu`` (the ``Diagonal``, ``DiagonalGrad``,
``Diag``, ``DiagGrad`` and ``Tri`` primitives): reverse and forward mode against
float64 central finite differences, second order, values and dtypes as NumPy's.
"""
import numpy as np
import pytest

import s2sad
from s2sad.ops import GradOperation

from gradcheck import check_jvp, check_vjp


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


#: (name, function, input shape): each NumPy spelling with its arguments
CASES = [
    ("trace", lambda x: np.trace(x), (3, 3)),
    ("trace-offset", lambda x: np.trace(x, 1), (3, 4)),
    ("trace-negative-offset", lambda x: np.trace(x, -1), (4, 3)),
    ("trace-axes", lambda x: np.trace(x, 0, 1, 2), (2, 3, 3)),
    ("trace-method", lambda x: x.trace(), (3, 3)),
    ("diagonal", lambda x: np.diagonal(x), (3, 4)),
    ("diagonal-offset", lambda x: np.diagonal(x, -1), (4, 3)),
    ("diagonal-axes", lambda x: np.diagonal(x, 1, 2, 0), (3, 2, 4)),
    ("diagonal-method", lambda x: x.diagonal(1), (3, 3)),
    ("diagonal-method-axes", lambda x: x.diagonal(0, -2, -1), (2, 3, 3)),
    ("diag-vector", lambda v: np.diag(v), (3,)),
    ("diag-vector-k", lambda v: np.diag(v, 2), (3,)),
    ("diag-vector-negative-k", lambda v: np.diag(v, -1), (3,)),
    ("diag-matrix", lambda m: np.diag(m), (3, 4)),
    ("diag-matrix-k", lambda m: np.diag(m, 1), (3, 4)),
    ("diag-matrix-negative-k", lambda m: np.diag(m, -2), (4, 3)),
    ("diagflat", lambda v: np.diagflat(v), (2, 2)),
    ("diagflat-k", lambda v: np.diagflat(v, -1), (3,)),
    ("tril", lambda x: np.tril(x), (3, 4)),
    ("tril-k", lambda x: np.tril(x, 1), (4, 3)),
    ("tril-batched", lambda x: np.tril(x, -1), (2, 3, 3)),
    ("tril-vector", lambda x: np.tril(x), (3,)),
    ("triu", lambda x: np.triu(x), (3, 4)),
    ("triu-k", lambda x: np.triu(x, -1), (4, 3)),
    ("triu-batched", lambda x: np.triu(x, 2), (2, 2, 4)),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name,fn,shape", CASES, ids=IDS)
def test_rules_match_finite_differences(name, fn, shape):
    x = normal(shape, 1)
    (g,) = check_vjp(fn, (x,))
    assert g.shape == x.shape
    check_jvp(fn, (x,))


@pytest.mark.parametrize("name,fn,shape", CASES, ids=IDS)
def test_values_and_dtypes_are_numpys(name, fn, shape):
    x = normal(shape, 2).astype(np.float32)
    def compiled(x):
        return fn(x)
    got, want = s2sad.jit(compiled)(x), fn(x)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)
    g = GradOperation()(lambda x: np.sum(fn(x)))(x)
    assert g.dtype == np.float32


@pytest.mark.parametrize("name,fn,shape", [c for c in CASES if c[0] in (
    "trace-offset", "diagonal-axes", "diag-vector-k", "diag-matrix-k", "tril-batched",
    "triu-k", "diagflat-k")], ids=str)
def test_second_order(name, fn, shape):
    def f(x):
        q = fn(x)
        return q * np.sin(q)
    s2sad.check_grads(f, (normal(shape, 3),), order=2, modes=("rev", "fwd"))


def test_diag_gradients_in_closed_form():
    # d/dv sum(diag(v, 1) * W) = the first superdiagonal of W; d/dm of sum(diag(m) * w) = w on it
    w = normal((4, 4), 4)
    g = GradOperation()(lambda v: np.sum(np.diag(v, 1) * w))(normal((3,), 5))
    np.testing.assert_array_equal(g, np.diagonal(w, 1))
    u = normal((3,), 6)
    g = GradOperation()(lambda m: np.sum(np.diag(m, -1) * u))(normal((4, 3), 7))
    np.testing.assert_array_equal(g, np.diag(u, -1)[:, :3])
    g = GradOperation()(lambda m: np.sum(np.tril(m, -1)))(normal((2, 3, 3), 8))
    np.testing.assert_array_equal(g, np.broadcast_to(np.tril(np.ones((3, 3)), -1), (2, 3, 3)))
