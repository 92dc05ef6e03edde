"""Shared helpers for gradient tests: finite differences and a VJP check.

Every gradient s2sad returns is compared with an independent value; here that
value is a central finite difference computed in float64 by running the
original (undifferentiated) function eagerly.
"""
import numpy as np

from s2sad.ops import GradOperation
from s2sad.tensor import Tensor

RTOL = 1e-6
ATOL = 1e-6


def as_array(value):
    """The float64 NumPy view of a Tensor, ndarray, NumPy scalar or Python number."""
    if isinstance(value, Tensor):
        value = value.asnumpy()
    return np.asarray(value, dtype=np.float64)


def _rebuild(like, arr):
    """``arr`` in the same container type as ``like`` (Tensor, ndarray or NumPy scalar)."""
    if isinstance(like, Tensor):
        return Tensor(np.array(arr, dtype=like.asnumpy().dtype))
    if isinstance(like, np.generic):
        return type(like)(arr)
    if isinstance(like, np.ndarray):
        return np.array(arr, dtype=like.dtype)
    return float(arr)


def numeric_grad(f, args, i, eps=1e-6):
    """Central differences of the scalar ``f(*args)`` with respect to ``args[i]``.

    ``args[i]`` is perturbed one element at a time in float64; the result has
    the shape of ``args[i]``.
    """
    args = list(args)
    base = as_array(args[i]).copy()
    grad = np.zeros(base.shape, dtype=np.float64)
    flat = base.reshape(-1)
    gflat = grad.reshape(-1)
    for k in range(flat.size):
        orig = flat[k]
        flat[k] = orig + eps
        args[i] = _rebuild(args[i], base)
        plus = float(as_array(f(*args)))
        flat[k] = orig - eps
        args[i] = _rebuild(args[i], base)
        minus = float(as_array(f(*args)))
        flat[k] = orig
        gflat[k] = (plus - minus) / (2 * eps)
    return grad


def _leaves(out):
    if isinstance(out, (tuple, list)):
        result = []
        for o in out:
            result.extend(_leaves(o))
        return result
    return [out]


def random_like_output(out, rng):
    """A random float64 sens mirroring ``out`` (a leaf or a tuple of leaves)."""
    if isinstance(out, (tuple, list)):
        return tuple(random_like_output(o, rng) for o in out)
    shape = np.shape(as_array(out))
    value = rng.standard_normal(shape)
    if isinstance(out, Tensor):
        return Tensor(value)
    if isinstance(out, np.generic) or shape == ():
        return np.float64(value)
    return value


def weighted_sum(out, sens):
    """``sum(out * sens)`` over every leaf of a (possibly nested) output."""
    total = 0.0
    for o, s in zip(_leaves(out), _leaves(sens)):
        total += float(np.sum(as_array(o) * as_array(s)))
    return total


def check_vjp(fn, args, sens=None, rtol=RTOL, atol=ATOL, seed=0, eps=1e-6):
    """Compare s2sad's VJP of ``fn`` at ``args`` with finite differences.

    Runs ``GradOperation(get_all=True, sens_param=True)(fn)(*args, sens)`` and
    checks each returned input gradient against central differences of
    ``sum(fn(*args) * sens)``.  Only the array-like arguments (Tensor, ndarray,
    NumPy scalar) are differentiated; Python numbers are constants.
    Returns the gradients s2sad computed.
    """
    rng = np.random.default_rng(seed)
    out = fn(*args)
    if sens is None:
        sens = random_like_output(out, rng)
    grads = GradOperation(get_all=True, sens_param=True)(fn)(*args, sens)
    assert isinstance(grads, tuple), type(grads)
    diff_idx = [i for i, a in enumerate(args)
                if isinstance(a, (Tensor, np.ndarray, np.generic))]
    assert len(grads) == len(diff_idx), (len(grads), diff_idx)

    def scalar(*a):
        return weighted_sum(fn(*a), sens)

    for g, i in zip(grads, diff_idx):
        expected = numeric_grad(scalar, args, i, eps=eps)
        got = as_array(g)
        assert got.shape == expected.shape, (i, got.shape, expected.shape)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol,
                                   err_msg="gradient of argument %d" % i)
    return grads


def check_jvp(fn, args, tangents=None, seed=1):
    """Compare ``s2sad.jvp`` with central finite differences along ``tangents``."""
    import s2sad
    rng = np.random.default_rng(seed)
    args = tuple(np.asarray(a, np.float64) for a in args)
    if tangents is None:
        tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
    _, t_out = s2sad.jvp(fn, args, tangents)
    eps = 1e-6
    plus = fn(*[a + eps * t for a, t in zip(args, tangents)])
    minus = fn(*[a - eps * t for a, t in zip(args, tangents)])
    flat = lambda s: list(s) if isinstance(s, tuple) else [s]  # noqa: E731
    for p, m, t in zip(flat(plus), flat(minus), flat(t_out)):
        np.testing.assert_allclose(np.asarray(t), (np.asarray(p) - np.asarray(m)) / (2 * eps),
                                   rtol=1e-6, atol=1e-6)


def fd_grad(fn, *args):
    """Finite-difference gradient of ``sum(fn(*args))`` with respect to the first argument."""
    return numeric_grad(lambda *a: np.sum(fn(*a)), args, 0)


def assert_fd(fn, *args):
    """``GradOperation()(fn)`` agrees with ``fd_grad`` (the first argument's gradient)."""
    np.testing.assert_allclose(GradOperation()(fn)(*args), fd_grad(fn, *args),
                               rtol=1e-6, atol=1e-8)


def fd_complex_grad(f, z, eps=1e-6):
    """``df/dx - 1j df/dy`` of a real-valued ``f`` at complex ``z`` (JAX's convention for
    ``grad``), by central differences along each element's real and imaginary direction."""
    z = np.asarray(z, dtype=complex)
    g = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[i] = eps
        dx = (f(z + e) - f(z - e)) / (2 * eps)
        dy = (f(z + 1j * e) - f(z - 1j * e)) / (2 * eps)
        g[i] = dx - 1j * dy
    return g


def fd_directional(f, z, t, eps=1e-6):
    """``(f(z + eps t) - f(z - eps t)) / (2 eps)``: the tangent a JVP along ``t`` gives."""
    return (np.asarray(f(z + eps * t)) - np.asarray(f(z - eps * t))) / (2 * eps)
