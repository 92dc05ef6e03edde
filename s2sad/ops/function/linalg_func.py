"""Functional forms of the linear-algebra primitives, and the ``np.linalg``
functions that map to them.

Python logic here only looks at compile-time constants (``UPLO``, ``upper``);
whether a right-hand side is a vector is a runtime shape, decided inside a
primitive.  ``np.linalg.inv``, ``det`` and ``norm`` live with the math family.
"""
import numpy as np

from ..operations import array_ops as A
from ..operations import linalg_ops as L
from ..operations import math_ops as M
from ...runtime import constexpr

_solve = L.MatrixSolve()
_column = L.SolveColumn()
_uncolumn = L.SolveUncolumn()
_slogdet = L.SlogDet()
_cholesky = L.Cholesky()
_swap = A.SwapAxes(-1, -2)


@constexpr
def _check_uplo(fn, UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError("%s: UPLO must be 'L' or 'U', got %r" % (fn, UPLO))
    return UPLO


@constexpr
def _check_hermitian(hermitian):
    if hermitian:
        raise ValueError("svd: hermitian=True is not supported by s2sad; use "
                         "np.linalg.eigh for symmetric matrices")
    return None


def solve(a, b):
    """``x`` with ``a @ x == b``; ``b`` a vector or matrices, batch axes broadcast as in NumPy."""
    return _uncolumn(_solve(a, _column(b, a, b)), a, b)


def slogdet(a):
    """``(sign, log|det(a)|)`` of each matrix in the last two axes; the sign has no gradient."""
    return _slogdet(a)


def cholesky(a, upper=False):
    """The lower Cholesky factor of each matrix (read from its lower triangle), or the
    upper one (read from its upper triangle) with ``upper=True``."""
    if upper:
        return _swap(_cholesky(_swap(a)))
    return _cholesky(a)


def eigh(a, UPLO="L"):
    """``(w, v)``: ascending eigenvalues and eigenvectors of each symmetric matrix,
    read from the ``UPLO`` triangle."""
    return L.Eigh(_check_uplo("eigh", UPLO))(a)


def eigvalsh(a, UPLO="L"):
    """The ascending eigenvalues of each symmetric matrix, read from the ``UPLO`` triangle."""
    return L.Eigh(_check_uplo("eigvalsh", UPLO))(a)[0]


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``(u, s, vh)`` of each matrix (NumPy's defaults: full matrices), or ``s`` alone."""
    _check_hermitian(hermitian)
    if not compute_uv:
        return L.Svd(False)(a)[1]
    return L.Svd(full_matrices)(a)


def singular_value_norm(x, ord, dims, keepdim):
    """The matrix norms of the singular values over axes ``dims``: 2 (the largest),
    -2 (the smallest) and 'nuc' (their sum)."""
    s = L.Svd(False)(A.MoveAxis(dims, (-2, -1))(x))[1]
    if ord == 2:
        value = M.ReduceMax(False)(s, -1)
    elif ord == -2:
        value = M.ReduceMin(False)(s, -1)
    else:
        value = M.ReduceSum(False)(s, -1)
    if keepdim:
        return A.ExpandDims()(value, dims)
    return value


#: NumPy functions met in differentiated code -> the functional form to inline
NUMPY = {
    np.linalg.solve: solve, np.linalg.slogdet: slogdet, np.linalg.cholesky: cholesky,
    np.linalg.eigh: eigh, np.linalg.eigvalsh: eigvalsh, np.linalg.svd: svd,
}

__all__ = ["solve", "slogdet", "cholesky", "eigh", "eigvalsh", "svd"]
