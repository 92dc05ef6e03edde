"""Functional forms of the linear-algebra primitives, and the ``np.linalg``
functions that map to them.

Python logic here only looks at compile-time constants (``UPLO``, ``upper``,
``mode``, the power ``n``); whether a right-hand side is a vector, and the
shapes tensorinv and tensorsolve reshape to, are runtime shapes, computed
inside primitives.  ``np.linalg.inv``, ``det`` and ``norm`` live with the
math family (``norm`` calls ``singular_value_norm`` for its 2, -2 and 'nuc').
"""
import numpy as np

from ...ir.primitive import complex_mode
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
_matmul = M.BatchMatMul(False, False)
_reshape = A.Reshape()


@constexpr
def _check_uplo(fn, UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError("%s: UPLO must be 'L' or 'U', got %r" % (fn, UPLO))
    return UPLO


@constexpr
def _check_hermitian(fn, hermitian):
    if hermitian:
        raise ValueError("%s: hermitian=True is not supported by s2sad; drop it (the "
                         "general routine gives the same result for a Hermitian input, "
                         "singular vectors up to their signs)" % (fn,))
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
    _check_hermitian("svd", hermitian)
    if not compute_uv:
        return L.Svd(False)(a)[1]
    return L.Svd(full_matrices)(a)


@constexpr
def _check_qr_mode(mode):
    if mode not in ("reduced", "r"):
        raise ValueError("qr: mode=%r is not supported by s2sad; use mode='reduced' (the "
                         "default) or 'r'" % (mode,))
    return mode


def qr(a, mode="reduced"):
    """``(q, r)`` of each matrix (``mode='r'``: ``r`` alone); differentiable for square
    and tall matrices."""
    if _check_qr_mode(mode) == "r":
        return L.Qr()(a)[1]
    return L.Qr()(a)


def pinv(a, rcond=None, hermitian=False):
    """The pseudo-inverse of each matrix (``rcond``: NumPy's cut-off, relative to the
    largest singular value)."""
    _check_hermitian("pinv", hermitian)
    return L.Pinv(rcond)(a)


def _power(a, n):
    """``a`` to the constant power ``n >= 1`` by repeated squaring."""
    if n == 1:
        return a
    half = _power(a, n // 2)
    square = _matmul(half, half)
    if n % 2 == 1:
        return _matmul(square, a)
    return square


def matrix_power(a, n):
    """``a`` multiplied by itself ``n`` times (an int; 0: identities, negative: powers of
    the inverse), for each matrix of a stack."""
    n = _check_power(n)
    if n == 0:
        return L.EyeLike()(a)
    if n < 0:
        return _power(M.MatrixInverse()(a), -n)
    return _power(a, n)


@constexpr
def _check_power(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError("matrix_power: the exponent n must be an int, got %r" % (n,))
    return int(n)


@constexpr
def _check_ind(ind):
    if isinstance(ind, bool) or not isinstance(ind, int) or ind <= 0:
        raise ValueError("tensorinv: ind must be a positive int, got %r" % (ind,))
    return ind


def tensorinv(a, ind=2):
    """The inverse of ``a`` read as a matrix: its first ``ind`` axes against the rest."""
    square = _reshape(a, L.TensorShape("inv_in", _check_ind(ind))(a))
    return _reshape(M.MatrixInverse()(square), L.TensorShape("inv_out", ind)(a))


@constexpr
def _to_end(axes):
    """Destinations moving ``axes`` to the end in their order, as ``np.linalg.tensorsolve``."""
    axes = tuple(axes)
    return tuple(range(-len(axes), 0))


def tensorsolve(a, b, axes=None):
    """``x`` with ``tensordot(a, x, x.ndim) == b`` (``axes``: of ``a``, moved to the end first)."""
    if axes is not None:
        a = A.MoveAxis(axes, _to_end(axes))(a)
    matrix = _reshape(a, L.TensorShape("solve_in")(a, b))
    x = _solve(matrix, _reshape(b, (-1, 1)))
    return _reshape(x, L.TensorShape("solve_out")(a, b))


def eig(a):
    """``(w, v)``: eigenvalues and unit eigenvectors of each square matrix (complex in
    general, even for a real ``a``: its derivatives compile in complex mode)."""
    return L.Eig()(a)


def eigvals(a):
    """The eigenvalues of each square matrix (``eig``'s first output)."""
    return L.Eig()(a)[0]


def singular_value_norm(x, ord, dims, keepdim):
    """The matrix norms of the singular values over axes ``dims``: 2 (the largest),
    -2 (the smallest) and 'nuc' (their sum)."""
    s = L.Svd(False)(A.MoveAxis(dims, (-2, -1))(x))[1]
    if ord in (2, -2) and complex_mode():
        # ReduceMax has no complex rule: the singular values are sorted, descending
        value = A.GetItem()(s, (Ellipsis, 0 if ord == 2 else -1))
    elif ord == 2:
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
    np.linalg.qr: qr, np.linalg.pinv: pinv, np.linalg.matrix_power: matrix_power,
    np.linalg.tensorinv: tensorinv, np.linalg.tensorsolve: tensorsolve,
    np.linalg.eig: eig, np.linalg.eigvals: eigvals,
}

__all__ = ["solve", "slogdet", "cholesky", "eigh", "eigvalsh", "svd", "qr", "pinv",
           "matrix_power", "tensorinv", "tensorsolve", "eig", "eigvals"]
