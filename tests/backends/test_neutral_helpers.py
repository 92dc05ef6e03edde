"""Primitives whose runtime helpers other libraries gained late: ``np.dot`` of every
rank, ``np.cumsum``, ``logsumexp``, ``erf``/``erfc``, norms, and the activations
ReLU6, LeakyReLU, ELU and GeLU.

Each program's gradient on PyTorch and JAX arrays equals NumPy's, which equals
central finite differences.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from gradcheck import numeric_grad

pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")


def dot_matrix(x, w):
    return np.sum(np.tanh(np.dot(x, w)))


def dot_vector(x, v):
    return np.sum(np.dot(x, v) ** 2)


def dot_batched(x, w):
    return np.sum(np.sin(np.dot(x, w)))


def dot_inner(u, v):
    return np.dot(u, v) * np.dot(u, u)


def cumulative(x, w):
    return np.sum(np.cumsum(x * w, axis=1) ** 2) + np.sum(np.cumsum(x, axis=0) * w)


def log_sum_exp(x, w):
    return np.sum(ops.logsumexp(x * w, 1) ** 2) + ops.logsumexp(x, (0, 1))


def error_functions(x, w):
    return np.sum(ops.erf(x) * w + ops.erfc(x * w))


def norms(x, w):
    return np.linalg.norm(x * w) + np.sum(x) * np.linalg.norm(w)


def activations(x, w):
    y = ops.relu6(4 * x) + ops.leaky_relu(x, 0.3) + ops.elu(x * w, 0.7)
    return np.sum(y * ops.gelu(x) + ops.gelu(w, approximate="tanh"))


RNG = np.random.default_rng(3)
CASES = {
    dot_matrix: (RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))),
    dot_vector: (RNG.standard_normal((3, 4)), RNG.standard_normal(4)),
    dot_batched: (RNG.standard_normal((2, 3, 4)), RNG.standard_normal((5, 4, 2))),
    dot_inner: (RNG.standard_normal(4), RNG.standard_normal(4)),
    cumulative: (RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))),
    log_sum_exp: (RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))),
    error_functions: (RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))),
    norms: (RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))),
    activations: (RNG.standard_normal((3, 4)) * 2, RNG.standard_normal((3, 4))),
}


def _libraries():
    out = []
    try:
        import torch
        out.append(pytest.param(("torch", torch.from_numpy, lambda t: t.numpy()), id="torch"))
    except ImportError:
        out.append(pytest.param(None, id="torch", marks=pytest.mark.skip(
            reason="PyTorch is not installed (pip install -e '.[torch]')")))
    try:
        import jax
        out.append(pytest.param(("jax", jax.numpy.asarray, np.asarray), id="jax"))
    except ImportError:
        out.append(pytest.param(None, id="jax", marks=pytest.mark.skip(
            reason="JAX is not installed (pip install -e '.[jax]')")))
    return out


@pytest.mark.parametrize("library", _libraries())
@pytest.mark.parametrize("fn", list(CASES), ids=[f.__name__ for f in CASES])
def test_gradient_on_other_library_equals_numpys_and_finite_differences(fn, library):
    name = library[0]
    if name == "jax":
        import jax
        with jax.enable_x64(True):      # float64, as NumPy's
            _check(fn, library)
    else:
        _check(fn, library)


def _check(fn, library):
    name, convert, to_numpy = library
    args = CASES[fn]
    expected = s2sad.grad(fn, grad_position=(0, 1))(*args)
    for k, e in enumerate(expected):
        np.testing.assert_allclose(e, numeric_grad(fn, args, k), rtol=1e-6, atol=1e-8)
    got = s2sad.grad(fn, grad_position=(0, 1))(*map(convert, args))
    for a, e, g in zip(args, expected, got):
        assert type(g).__module__.partition(".")[0] in (name, "jaxlib"), type(g)
        assert tuple(g.shape) == a.shape
        np.testing.assert_allclose(to_numpy(g), e, rtol=1e-10, atol=1e-12)
