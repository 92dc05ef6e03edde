"""Functional forms of the contraction family: ``np.einsum`` and the diagonal functions.

Python logic here looks only at compile-time constants (subscripts, offsets,
axes); ranks known only at run time are read inside primitives.
"""
import numpy as np

from ..operations import array_ops as A
from ..operations import contract_ops as C
from ..operations import elementwise_ops as E
from ..operations import math_ops as M

_reshape = A.Reshape()
from ...runtime import constexpr
from ...ir.primitive import complex_mode
from .math_func import _unsupported


@constexpr
def _interleaved_subscripts(specs):
    """``[0, 1], [1, 2], [0, 2]`` (NumPy's interleaved einsum) as ``'ab,bc->ac'``."""
    def term(spec):
        out = ""
        for s in spec:
            if s is Ellipsis:
                out += "..."
            elif isinstance(s, int) and 0 <= s < len(C._LETTERS):
                out += C._LETTERS[s]
            else:
                raise ValueError("einsum: interleaved subscripts must be ints in [0, 52) or "
                                 "Ellipsis, got %r" % (s,))
        return out
    return ",".join(term(s) for s in specs[0]) + \
        ("" if specs[1] is None else "->" + term(specs[1]))


def einsum(*operands, optimize=False):
    """``np.einsum(subscripts, *operands)`` or the interleaved ``np.einsum(a, [0, 1], ...)``."""
    if isinstance(operands[0], str):
        return C.Einsum(operands[0], optimize)(*operands[1:])
    arrays = operands[0::2]
    specs = operands[1::2]
    output = None
    if len(operands) % 2 == 1:
        arrays = arrays[:-1]
        output = operands[-1]
    return C.Einsum(_interleaved_subscripts((specs, output)), optimize)(*arrays)


def _np_einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    _unsupported("np.einsum", "out", out)
    _unsupported("np.einsum", "dtype", dtype)
    return einsum(*operands, optimize=optimize)


# -------------------------------------------------- products built on einsum
_ravel_shape = (-1,)
#: the Levi-Civita symbol: ``cross(a, b)_i = eps_ijk a_j b_k``; int8 so that it
#: keeps the operands' dtype (float32 stays float32, as in ``np.cross``)
_LEVI_CIVITA = np.zeros((3, 3, 3), np.int8)
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    _LEVI_CIVITA[_i, _j, _k], _LEVI_CIVITA[_i, _k, _j] = 1, -1
_cross3 = C.Einsum("ijk,...j,...k->...i")
_vdot = C.Einsum("i,i->")
_conj = E.Conj()
_kron = C.Kron()


def vdot(a, b):
    """``np.vdot``: the dot product of the flattened operands, the first conjugated
    (in a program with complex inputs; a real program's code has no conjugate)."""
    if complex_mode():
        a = _conj(a)
    return _vdot(_reshape(a, _ravel_shape), _reshape(b, _ravel_shape))


def kron(a, b):
    """``np.kron``: the Kronecker product (block ``i`` of the result is ``a[i] * b``)."""
    return _kron(a, b)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``np.cross`` of 3-vectors along ``axisa``/``axisb`` (or ``axis``), broadcast."""
    if axis is not None:
        axisa, axisb, axisc = axis, axis, axis
    out = _cross3(_LEVI_CIVITA, _to_last(a, axisa), _to_last(b, axisb))
    if axisc == -1:
        return out
    return A.MoveAxis(-1, axisc)(out)


def _to_last(x, axis):
    if axis == -1:
        return x
    return A.MoveAxis(axis, -1)(x)


# ------------------------------------------------------------- diagonals
_sum_last = M.ReduceSum(False)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """``np.diagonal``: the diagonal of axes ``axis1``/``axis2`` as a new last axis (a copy)."""
    return C.Diagonal(offset, axis1, axis2)(a)


def trace(a, offset=0, axis1=0, axis2=1):
    """``np.trace``: the sum of ``diagonal(a, offset, axis1, axis2)``."""
    return _sum_last(C.Diagonal(offset, axis1, axis2)(a), -1)


def diag(v, k=0):
    """``np.diag``: a 1-D ``v`` on diagonal ``k`` of a matrix, or a matrix's diagonal ``k``."""
    return C.Diag(k)(v)


def diagflat(v, k=0):
    """``np.diagflat``: the flattened ``v`` on diagonal ``k`` of a matrix."""
    return C.Diag(k)(_reshape(v, (-1,)))


def tril(m, k=0):
    """``np.tril``: zeros above diagonal ``k`` of the last two axes."""
    return C.Tri(k, False)(m)


def triu(m, k=0):
    """``np.triu``: zeros below diagonal ``k`` of the last two axes."""
    return C.Tri(k, True)(m)


def _np_trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _unsupported("np.trace", "dtype", dtype)
    _unsupported("np.trace", "out", out)
    return trace(a, offset, axis1, axis2)


NUMPY = {
    np.einsum: _np_einsum, np.diagonal: diagonal, np.trace: _np_trace, np.diag: diag,
    np.diagflat: diagflat, np.tril: tril, np.triu: triu, np.vdot: vdot, np.cross: cross,
    np.kron: kron,
}
TENSOR_METHODS = {"diagonal": diagonal, "trace": _np_trace}

__all__ = ["einsum", "vdot", "kron", "cross", "diagonal", "trace", "diag", "diagflat", "tril",
           "triu"]
