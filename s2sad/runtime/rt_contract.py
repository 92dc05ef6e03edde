"""Runtime helpers of the contraction family: two-operand einsums, einsum adjoints, diagonals.

``einsum_pair`` evaluates ``np.einsum`` of two operands as one matrix
product (BLAS) by a plan made once per subscripts and shapes: NumPy's own
einsum loops over the product of all index sizes without BLAS unless asked to
``optimize``, and then plans its path again on every call.

``einsum_expand`` is the adjoint of an einsum's reduction of one operand;
``diagonal_grad`` and ``diag_grad`` are the adjoints of ``np.diagonal`` and
``np.diag``.  Each writes into a zero array through a diagonal *view*
(``np.einsum('ii->i', out)`` and ``np.diagonal`` of a writeable array give
one), so no index arithmetic is repeated here.
"""
from functools import lru_cache
from math import prod

import numpy as np

from .rt_math import _shape as shape_of

__all__ = ["einsum_pair", "einsum_expand", "diagonal_grad", "diag_grad", "kron_grad_a", "kron_grad_b"]


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


class _Side:
    """How one operand becomes a stack of matrices ``(batch, free, contracted)``.

    ``summed``: the axes only this operand has and the output lacks (summed
    first); ``perm``: a transpose (None when the axes already lie in one of
    the two orders below); ``shape``: the reshape; ``swap``: the reshape gives
    ``(batch, contracted, free)``, whose last two axes are swapped as a view.
    """

    __slots__ = ("summed", "perm", "shape", "swap")

    def __init__(self, term, sizes, batch, free, contracted, out_letters):
        self.summed = tuple(i for i, c in enumerate(term) if c not in out_letters
                            and c not in contracted)
        term = "".join(c for i, c in enumerate(term) if i not in self.summed)
        nb = prod(sizes[c] for c in batch)
        nf, nk = prod(sizes[c] for c in free), prod(sizes[c] for c in contracted)
        lead = (nb,) if batch else ()
        self.swap = term == batch + contracted + free
        self.perm = None if self.swap or term == batch + free + contracted else tuple(
            term.index(c) for c in batch + free + contracted)
        self.shape = lead + ((nk, nf) if self.swap else (nf, nk))

    def copies(self):
        return self.perm is not None

    def matrix(self, x):
        if self.summed:
            x = np.add.reduce(x, axis=self.summed)
        if self.perm is not None:
            x = x.transpose(self.perm)
        x = x.reshape(self.shape)
        return x.swapaxes(-1, -2) if self.swap else x


def _sides(ta, tb, out, sizes, contracted):
    """The two operands' plans for one order of the contracted indices, and their copies."""
    batch = "".join(c for c in out if c in ta and c in tb)
    fa = "".join(c for c in ta if c in out and c not in tb)
    fb = "".join(c for c in tb if c in out and c not in ta)
    sa = _Side(ta, sizes, batch, fa, contracted, out)
    sb = _Side(tb, sizes, batch, fb, contracted, out)
    return (sa, sb, batch, fa, fb), sa.copies() + sb.copies()


@lru_cache(maxsize=512)
def _pair_plan(subscripts, shape_a, shape_b):
    """(side of a, side of b, swapped, result shape, output transpose), or None.

    None where the matrix product does not apply as is: an ellipsis, an index
    an operand repeats (a diagonal), an index whose sizes differ (a size-1
    broadcast), or subscripts NumPy refuses (it says why): those go to NumPy's
    einsum.  ``swapped``: ``b``'s matrix is the left factor of the product.
    """
    inputs, _, out = subscripts.partition("->")
    ta, _, tb = inputs.partition(",")
    if ("." in subscripts or "->" not in subscripts or len(set(ta)) != len(ta) or len(set(tb)) != len(tb)
            or len(ta) != len(shape_a) or len(tb) != len(shape_b)
            or len(set(out)) != len(out) or not set(out) <= set(ta + tb)):
        return None
    sizes = dict(zip(ta, shape_a))
    for c, n in zip(tb, shape_b):
        if sizes.setdefault(c, n) != n:
            return None
    orders = ("".join(c for c in ta if c in tb and c not in out),
              "".join(c for c in tb if c in ta and c not in out))
    (sa, sb, batch, fa, fb), _ = min((_sides(ta, tb, out, sizes, k) for k in orders),
                                     key=lambda plan: plan[1])
    swapped = out == batch + fb + fa     # the product the other way round is in order
    got = batch + (fb + fa if swapped else fa + fb)
    perm = None if got == out else tuple(got.index(c) for c in out)
    return sa, sb, swapped, tuple(sizes[c] for c in got), perm


def einsum_pair(subscripts, a, b):
    """``np.einsum(subscripts, a, b)`` (explicit subscripts) as a matrix product.

    Float arrays only; anything the plan does not cover goes to NumPy's
    einsum.  A 0-d result is a NumPy scalar, as NumPy's einsum gives.
    """
    if (type(a) is not np.ndarray or type(b) is not np.ndarray
            or a.dtype.kind not in "fc" or b.dtype.kind not in "fc"):
        return np.einsum(subscripts, a, b)
    plan = _pair_plan(subscripts, a.shape, b.shape)
    if plan is None:
        return np.einsum(subscripts, a, b)
    side_a, side_b, swapped, shape, perm = plan
    ma, mb = side_a.matrix(a), side_b.matrix(b)
    if swapped:
        ma, mb = mb, ma
    out = np.matmul(ma, mb.swapaxes(-1, -2)).reshape(shape)
    if perm is not None:
        out = out.transpose(perm)
    return out if out.ndim else out[()]


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
