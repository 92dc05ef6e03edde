"""``check_grads``: reverse mode vs forward mode vs central finite differences.

The dot-product test on random directions: for an input direction ``v`` and
an output cotangent ``u``, every mode must agree on ``<u, J v>``:
finite differences give ``<u, (f(x + e v) - f(x - e v)) / 2e>``, reverse mode
``<vjp(u), v>``, forward mode ``<u, jvp(v)>``.  Inputs are promoted to
float64 so the finite differences are meaningful.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..tensor import Tensor
from .args import leaves_of
from .gradoperation import GradOperation
from .vjp_jvp import jvp
from .trees import FlatArgs, flat_function, has_trees


class GradCheckError(AssertionError):
    """Two ways of computing a derivative disagree."""


def _to64(a):
    if isinstance(a, Tensor):
        return Tensor(_real64(a._data, "an argument"))
    if isinstance(a, (np.ndarray, np.generic, complex)):
        return _real64(a, "an argument")
    if type(a) is float:    # checked, so differentiated: not a constant as elsewhere
        return np.float64(a)
    if isinstance(a, (tuple, list)):
        return type(a)(_to64(x) for x in a)
    return a


def _raw(a):
    return _real64(getattr(a, "_data", a), "an output")


def _real64(a, what):
    """``a`` in float64; a complex value is refused, never cut to its real part (the
    check would then pass whatever the imaginary parts' derivatives are)."""
    if np.iscomplexobj(a):
        raise TypeError("check_grads checks real values, but %s is complex; check the real "
                        "and imaginary parts as separate real functions" % what)
    return np.asarray(a, np.float64)



def _dot(a, b):
    return float(sum(np.sum(_raw(x) * _raw(y)) for x, y in zip(leaves_of(a), leaves_of(b))))


def _like(a, arr):
    return Tensor(arr) if isinstance(a, Tensor) else arr


def _random_like(a, rng):
    if isinstance(a, (tuple, list)):
        return type(a)(_random_like(x, rng) for x in a)
    return _like(a, rng.standard_normal(np.shape(_raw(a))))


def _axpy(x, e, v):
    if isinstance(x, (tuple, list)):
        return type(x)(_axpy(a, e, b) for a, b in zip(x, v))
    return _like(x, _raw(x) + e * _raw(v))


def _first_derivative(fn, u, w):
    """``x -> <w, vjp(fn, x)(u)>``: a function whose derivative is fn's second derivative.

    The returned function calls a gradient function, which s2sad inlines when it
    differentiates it, so checking it at first order checks ``fn`` at second.
    """
    grad_fn = GradOperation(get_all=True, sens_param=True)(fn)

    def directional_gradient(*xs):
        grads = grad_fn(*xs, u)
        return _pairing(grads, w)
    return directional_gradient


def _pairing(g, w):
    """``<g, w>`` summed over the leaves of matching tuples and lists (arguments such as
    ``[a, [b, c]]`` whose arrays have different shapes)."""
    if isinstance(g, (tuple, list)):
        total = 0.0
        for gi, wi in zip(g, w):
            total = total + _pairing(gi, wi)
        return total
    return (g * w).sum()


def check_grads(fn: Callable[..., Any], args: Sequence[Any], order: int = 1,
                modes: Sequence[str] = ("rev", "fwd"), eps: float = 1e-6, rtol: float = 1e-5,
                atol: float = 1e-7, seed: int = 0) -> float:
    """Raise ``GradCheckError`` unless every mode agrees with finite differences.

    ``fn`` is a function or Cell of runtime inputs ``args`` (Tensors or
    arrays, promoted to float64, or dicts and other pytrees of them). ``order=2`` also checks the derivative of a
    random directional gradient (reverse over reverse, forward over reverse).
    Returns the largest relative mismatch.
    """
    if order not in (1, 2):
        raise ValueError("check_grads supports order=1 or order=2")
    if has_trees(args) or has_trees((fn(*args),)):
        # dicts and other pytrees: check the function of their leaves (trees.py)
        flat = FlatArgs(tuple(args))
        return check_grads(flat_function(fn, flat.key, "leaves"), flat.leaves, order, modes,
                           eps, rtol, atol, seed)
    rng = np.random.default_rng(seed)
    args = tuple(_to64(a) for a in args)
    if order == 2:
        worst = check_grads(fn, args, 1, modes, eps, rtol, atol, seed)
        u = _random_like(fn(*args), rng)
        w = tuple(_random_like(a, rng) for a in args)
        second = _first_derivative(fn, u, w)
        return max(worst, check_grads(second, args, 1, modes, eps, rtol, atol, seed + 1))
    out = fn(*args)
    u = _random_like(out, rng)
    v = tuple(_random_like(a, rng) for a in args)
    plus = fn(*_axpy(args, eps, v))
    minus = fn(*_axpy(args, -eps, v))
    fd = (_dot(u, plus) - _dot(u, minus)) / (2 * eps)
    results = {"fd": fd}
    if "rev" in modes:
        grads = GradOperation(get_all=True, sens_param=True)(fn)(*args, u)
        results["rev"] = _dot(grads, v)
    if "fwd" in modes:
        _, t_out = jvp(fn, args, v)
        results["fwd"] = _dot(u, t_out)
    worst = 0.0
    for mode, value in results.items():
        err = abs(value - fd)
        if err > atol + rtol * abs(fd):
            raise GradCheckError(
                "%s: <u, J v> by %s is %.10g but central finite differences give %.10g "
                "(difference %.3g); all modes: %s"
                % (getattr(fn, "__name__", type(fn).__name__), mode, value, fd, err,
                   ", ".join("%s=%.10g" % kv for kv in results.items())))
        worst = max(worst, err / max(abs(fd), 1e-300))
    return worst
