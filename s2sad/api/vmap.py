"""``vmap``: map a function over one axis of its inputs (MindSpore's ``ops.vmap``).

s2sad runs it as a loop: ``fn`` is called on each slice and the results are
stacked (inside compiled code, a run-time loop: ``staged.stage_vmap``).  That
gives MindSpore's values, not its speed; a batched program would need a
batching rule per primitive, which s2sad does not have.  As in JAX, an int
axis of an input that is a pytree (a tuple, list or dict of arrays: a batch
``(x, y)``) maps every leaf, and an output pytree (per-example gradients of
list parameters) is stacked leaf by leaf.  Nested ``in_axes`` (one axis per
leaf) are refused.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from .args import as_like, is_tensor_like, raw
from .pytree import is_node, tree_leaves, tree_map
from . import staged as S

Axes = Union[Optional[int], Sequence[Optional[int]]]


def _check_axis(api_arg, axis):
    if axis is not None and (isinstance(axis, bool) or not isinstance(axis, int)):
        raise TypeError("For 'vmap', every item of '%s' must be an int or None, but got %s"
                        % (api_arg, type(axis).__name__))


def _per_item(api_arg, axes, n):
    """``axes`` as one axis per item: an int or None applies to all ``n``."""
    if isinstance(axes, (tuple, list)):
        if len(axes) != n:
            raise ValueError("For 'vmap', '%s' has %d items but there are %d %s"
                             % (api_arg, len(axes), n,
                                "inputs" if api_arg == "in_axes" else "outputs"))
        for axis in axes:
            _check_axis(api_arg, axis)
        return tuple(axes)
    _check_axis(api_arg, axes)
    return (axes,) * n


def _batch_size(args, axes):
    sizes = set()
    for i, (arg, axis) in enumerate(zip(args, axes)):
        if axis is None:
            continue
        for leaf in tree_leaves(arg) if is_node(arg) else (arg,):
            if not is_tensor_like(leaf):
                raise TypeError("For 'vmap', input %d is mapped over axis %d, so it must be a "
                                "Tensor or a pytree of them, but got %s; map it with None, "
                                "or pass a Tensor" % (i, axis, type(leaf).__name__))
            shape = np.shape(raw(leaf))
            if not -len(shape) <= axis < len(shape):
                raise ValueError("For 'vmap', 'in_axes' %d is out of range for input %d of "
                                 "shape %s" % (axis, i, shape))
            sizes.add(shape[axis])
    if not sizes:
        raise ValueError("For 'vmap', at least one input must be mapped: 'in_axes' is all None")
    if len(sizes) > 1:
        raise ValueError("For 'vmap', the mapped axes must have one size, but got sizes %s"
                         % sorted(sizes))
    return sizes.pop()


def _slice(arg, axis, i):
    if axis is None:
        return arg
    if is_node(arg):
        return tree_map(lambda leaf: _slice(leaf, axis, i), arg)
    return as_like(arg, np.take(raw(arg), i, axis=axis))


def _stack(results, axis):
    if axis is None:
        return results[0]
    if is_node(results[0]):
        return tree_map(lambda *leaves: _stack(leaves, axis), *results)
    return as_like(results[0], np.stack([raw(r) for r in results], axis=axis))


def vmap(fn: Callable[..., Any], in_axes: Axes = 0, out_axes: Axes = 0) -> Callable[..., Any]:
    """``fn`` mapped over axis ``in_axes`` of its inputs, outputs stacked on ``out_axes``.

    ``in_axes``/``out_axes``: an int or None for every input/output, or a
    tuple with one per input/output; None leaves an input whole (the same
    for every slice) and, for an output, takes the first slice's value.
    """
    if not callable(fn):
        raise TypeError("For 'vmap', 'fn' must be a function or a Cell, but got %s"
                        % type(fn).__name__)

    def mapped(*args):
        axes = _per_item("in_axes", in_axes, len(args))
        results = [fn(*[_slice(a, ax, i) for a, ax in zip(args, axes)])
                   for i in range(_batch_size(args, axes))]
        if isinstance(results[0], tuple):
            out_ax = _per_item("out_axes", out_axes, len(results[0]))
            return tuple(_stack([r[k] for r in results], out_ax[k])
                         for k in range(len(out_ax)))
        if isinstance(out_axes, (tuple, list)):
            raise ValueError("For 'vmap', 'out_axes' is a tuple but 'fn' returns one output")
        _check_axis("out_axes", out_axes)
        return _stack(results, out_axes)

    def stage(builder, args, kwargs, loc, path):
        # every call of ``fn`` is made by the loop ``staged._vmap_loop``: through its path
        return S.stage_vmap(builder, builder.passed_by_path(fn),
                            lambda n: _per_item("in_axes", in_axes, n), out_axes, args, kwargs,
                            loc)
    mapped.__s2sad_stage__ = stage
    return mapped


def _vmap_of_closure(fn, in_axes=0, out_axes=0):
    """``vmap`` of a function made in compiled code: its staged mapped function."""
    return lambda builder, args, kwargs, loc: S.stage_vmap(
        builder, fn, lambda n: _per_item("in_axes", in_axes, n), out_axes, args, kwargs, loc)


vmap.__s2sad_stage__ = S.evaluated_inside(vmap, _vmap_of_closure)
# it only wraps ``fn`` (a bound method too: ``vmap(dist.logpdf)``), which keeps the path it
# was read through (``WholeReads.pass_by_path``)
vmap.__s2sad_wraps_fn__ = "with methods"
