"""Runtime helpers of the contraction family: einsum adjoints and diagonals.

``einsum_expand`` is the adjoint of an einsum's reduction of one operand;
``diagonal_grad`` and ``diag_grad`` are the adjoints of ``np.diagonal`` and
``np.diag``.  Each writes into a zero array through a diagonal *view*
(``np.einsum('ii->i', out)`` and ``np.diagonal`` of a writeable array give
one), so no index arithmetic is repeated here.
"""
import numpy as np

from .rt_math import _shape as shape_of

__all__ = ["einsum_expand", "diagonal_grad", "diag_grad", "kron_grad_a", "kron_grad_b"]


def _letters(term):
    return term.replace("...", "")


def _fit_ellipsis(g, n_labels, ell_shape):
    """Sum (or prepare to broadcast) ``g``'s leading ellipsis axes to ``ell_shape``."""
    n_ell = g.ndim - n_labels
    extra = n_ell - len(ell_shape)
    if extra > 0:
        g = np.add.reduce(g, axis=tuple(range(extra)))
        n_ell = len(ell_shape)
    elif extra < 0:
        g = g.reshape((1,) * -extra + g.shape)
        n_ell = len(ell_shape)
    summed = tuple(i for i in range(n_ell) if g.shape[i] != 1 and ell_shape[i] == 1)
    return np.add.reduce(g, axis=summed, keepdims=True) if summed else g


def _target_sizes(target, shape):
    """{letter: size} of the labelled axes of ``target`` and the ellipsis's shape."""
    head, _, tail = target.partition("...")
    n_ell = len(shape) - len(head) - len(tail)
    sizes = dict(zip(head, shape[:len(head)]))
    sizes.update(zip(tail, shape[len(shape) - len(tail):]))
    return sizes, tuple(shape[len(head):len(head) + n_ell])


def einsum_expand(g, like, source, target):
    """``g`` (indices ``source``) as an array shaped like ``like`` (indices ``target``).

    Where ``target`` repeats an index the value sits on that diagonal (zero
    off it); indices of ``target`` missing from ``source`` broadcast; axes
    broadcasting had matched (a 1 in ``like``, more in ``g``) are summed.
    """
    shape = tuple(shape_of(like))
    g = np.asarray(g)
    labels = _letters(source)
    if source != "..." + labels:
        g = np.einsum(source + "->..." + labels, g)
    sizes, ell_shape = _target_sizes(target, shape)
    g = _fit_ellipsis(g, len(labels), ell_shape)
    lead = g.ndim - len(labels)
    summed = tuple(lead + i for i, c in enumerate(labels) if g.shape[lead + i] != 1
                   and sizes[c] == 1)
    if summed:
        g = np.add.reduce(g, axis=summed, keepdims=True)
    unique = "".join(c for i, c in enumerate(_letters(target)) if c not in _letters(target)[:i])
    kept = "".join(c for c in unique if c in labels)
    if kept != labels:
        g = np.einsum("..." + labels + "->..." + kept, g)
    g = g.reshape(g.shape[:lead] + tuple(g.shape[lead + kept.index(c)] if c in kept else 1
                                         for c in unique))
    out = np.zeros(shape, dtype=g.dtype)
    if not shape:
        out[()] = g.reshape(())
        return out
    view = np.einsum(target + "->..." + unique, out)
    view[...] = g
    return out


def diagonal_grad(d, x, offset, axis1, axis2):
    """Zeros shaped like ``x`` with ``d`` on the diagonal ``np.diagonal`` reads."""
    d = np.asarray(d)
    out = np.zeros(shape_of(x), dtype=d.dtype)
    view = np.diagonal(out, offset, axis1, axis2)
    view.flags.writeable = True     # a view of our own fresh array: safe to write
    view[...] = d
    return out


def diag_grad(d, v, k):
    """The adjoint of ``np.diag(v, k)``: the diagonal of ``d`` (1-D ``v``) or ``d`` on it."""
    if len(shape_of(v)) == 1:
        return np.diagonal(d, k).copy()
    return diagonal_grad(d, v, k, 0, 1)


def _kron_blocks(d, a_shape, b_shape):
    """``d = kron(a, b)`` seen as ``(a0, b0, a1, b1, ...)``, and the padded shapes of a and b."""
    n = max(len(a_shape), len(b_shape))
    ap = (1,) * (n - len(a_shape)) + tuple(a_shape)
    bp = (1,) * (n - len(b_shape)) + tuple(b_shape)
    return np.reshape(d, [m for pair in zip(ap, bp) for m in pair]), ap, bp


def kron_grad_a(d, a, b):
    """The gradient of ``np.kron(a, b)`` w.r.t. ``a`` (``a`` may be a ``ShapeOf``)."""
    b = np.asarray(b)
    a_shape = shape_of(a)
    blocks, ap, bp = _kron_blocks(d, a_shape, b.shape)
    n = len(ap)
    g = np.tensordot(blocks, b.reshape(bp), axes=(list(range(1, 2 * n, 2)), list(range(n))))
    return g.reshape(a_shape)


def kron_grad_b(d, a, b):
    """The gradient of ``np.kron(a, b)`` w.r.t. ``b`` (``b`` may be a ``ShapeOf``)."""
    a = np.asarray(a)
    b_shape = shape_of(b)
    blocks, ap, bp = _kron_blocks(d, a.shape, b_shape)
    n = len(ap)
    g = np.tensordot(a.reshape(ap), blocks, axes=(list(range(n)), list(range(0, 2 * n, 2))))
    return g.reshape(b_shape)
