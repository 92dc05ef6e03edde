"""``vmap``: a function of one example applied to a batch (MindSpore's and JAX's name).

Done simply: ``fn`` runs once per slice along the mapped axes and the
results are stacked, so any function s2sad can run works, including
gradient functions (``vmap(grad(f))`` gives per-example gradients).  It is
as fast as the Python loop it is; a batching transform that compiles one
batched program is a separate piece of work.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import numpy as np

from ..tensor import Tensor

#: one axis for every argument (or output), ``None`` for "not mapped", or one per argument
Axes = Union[int, None, Sequence[Union[int, None]]]


def _per_item(axes, n, what):
    if axes is None or isinstance(axes, int):
        return [axes] * n
    axes = list(axes)
    if len(axes) != n:
        raise ValueError("For 'vmap', '%s' has %d entries but there are %d %s"
                         % (what, len(axes), n, "arguments" if what == "in_axes" else "outputs"))
    for a in axes:
        if a is not None and not isinstance(a, int):
            raise TypeError("For 'vmap', each entry of '%s' must be an int or None (nested "
                            "structures are not supported), but got %s" % (what, type(a).__name__))
    return axes


def _data(x):
    return x._data if isinstance(x, Tensor) else np.asarray(x)


def _slice(x, i, axis):
    part = np.take(_data(x), i, axis=axis)
    return Tensor(part) if isinstance(x, Tensor) else part


def _stack(parts, axis):
    out = np.stack([_data(p) for p in parts], axis=axis)
    return Tensor(out) if isinstance(parts[0], Tensor) else out


def vmap(fn: Callable[..., Any], in_axes: Axes = 0, out_axes: Axes = 0) -> Callable[..., Any]:
    """``fn`` mapped over axis ``in_axes`` of its arguments, results stacked on ``out_axes``.

    ``in_axes``: an int (every argument), ``None`` (an argument passed whole
    to every call) or one entry per argument.  ``out_axes``: the same for the
    outputs (a Tensor or array, or a tuple of them).
    """
    if not callable(fn):
        raise TypeError("For 'vmap', 'fn' must be callable, but got %s" % type(fn).__name__)

    def batched(*args):
        axes = _per_item(in_axes, len(args), "in_axes")
        sizes = {np.shape(_data(a))[ax] for a, ax in zip(args, axes) if ax is not None}
        if not sizes:
            raise ValueError("For 'vmap', 'in_axes' maps no argument: at least one must be "
                             "an int")
        if len(sizes) > 1:
            raise ValueError("For 'vmap', the mapped axes must have one size, but got sizes "
                             "%s" % sorted(sizes))
        results = [fn(*[a if ax is None else _slice(a, i, ax) for a, ax in zip(args, axes)])
                   for i in range(sizes.pop())]
        if isinstance(results[0], tuple):
            outs = _per_item(out_axes, len(results[0]), "out_axes")
            return tuple(_stack([r[k] for r in results], ax) for k, ax in enumerate(outs))
        (ax,) = _per_item(out_axes, 1, "out_axes")
        return _stack(results, ax)

    batched.__wrapped__ = fn
    return batched
