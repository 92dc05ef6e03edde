"""Linear algebra on stacks of matrices: solve, log-determinant, Cholesky, eigh.

Every primitive works on the last two axes and broadcasts (or maps) over the
leading ones, as ``numpy.linalg`` does.  Each class carries ``formula`` (its
derivative, one line) and ``nondifferentiable``; both feed the generated
documentation of the primitives.  The rules (``ops/_grad/grad_linalg_ops.py``)
are written with primitives, so they differentiate again.
"""
from ...ir.primitive import Primitive, constexpr


def _mT(x, adjoint):
    """``x``, or its transpose in the last two axes when ``adjoint``."""
    return "xp.swapaxes(%s, -1, -2)" % x if adjoint else x


# ------------------------------------------------------------------ solve
class MatrixSolve(Primitive):
    """``solve(a, b)`` for matrix right-hand sides ``b`` (``...,n,k``), batch axes broadcast.

    With ``adjoint`` it solves with the transpose of ``a`` (the bprop's system).
    """
    taylor = "nested"   # no series rule written
    formula = "db = solve(a^T, dout); da = -db @ out^T"
    nondifferentiable = "singular a"

    def __init__(self, adjoint=False):
        super().__init__(adjoint=bool(adjoint))

    def emit(self, a, b):
        return "xp.linalg.solve(%s, %s)" % (_mT(a, self.adjoint), b)


class SolveColumn(Primitive):
    """``y`` with a trailing size-1 axis when ``b`` is a vector right-hand side for ``a``.

    NumPy's rule decides (NumPy 2: ``b`` is 1-D; NumPy 1: ``b.ndim == a.ndim - 1``),
    at run time since compiled code is shape-polymorphic.
    """
    linearity = "linear"
    shape_only_inputs = (1, 2)
    formula = "dy = uncolumn(dout, a, b)"

    def emit(self, y, a, b):
        return "rt.linalg_column(%s, %s, %s)" % (y, a, b)


class SolveUncolumn(Primitive):
    """``y`` without its trailing size-1 axis when ``b`` is a vector right-hand side for ``a``."""
    linearity = "linear"
    shape_only_inputs = (1, 2)
    formula = "dy = column(dout, a, b)"

    def emit(self, y, a, b):
        return "rt.linalg_uncolumn(%s, %s, %s)" % (y, a, b)


# ------------------------------------------------------------ determinants
class SlogDet(Primitive):
    """``(sign, log|det|)`` of each square matrix; the sign carries no gradient."""
    taylor = "nested"   # no series rule written
    num_outputs = 2
    formula = "dx = dlogabsdet * inv(x)^T"
    nondifferentiable = "singular x"

    def emit(self, x):
        return "xp.linalg.slogdet(%s)" % x


# --------------------------------------------------------- factorisations
class Cholesky(Primitive):
    """The lower Cholesky factor ``L`` (``x = L L^T``), read from the lower triangle of ``x``.

    Like NumPy, only the lower triangle of ``x`` is read, so the gradient is
    zero on the strict upper triangle (see docs/numpy-coverage.md).
    """
    taylor = "nested"   # no series rule written
    formula = "dx = tril_half(S + S^T), S = L^-T tril_half(L^T dout) L^-1"
    nondifferentiable = "x not positive definite"

    def emit(self, x):
        return "xp.linalg.cholesky(%s)" % x


class Eigh(Primitive):
    """``(w, v)``: ascending eigenvalues and orthonormal eigenvectors of a symmetric matrix.

    Only the triangle named by ``UPLO`` is read.  The eigenvectors' gradient
    needs distinct eigenvalues: for a pair of exactly equal ones it is +-inf
    unless the function ignores how their eigenvectors mix (see
    docs/numpy-coverage.md).
    """
    taylor = "nested"   # no series rule written
    num_outputs = 2
    formula = ("dx = triangle_half(S + S^T), "
               "S = v (diag(dw) + F * (v^T dv)) v^T, F_ij = 1 / (w_j - w_i)")
    nondifferentiable = "equal eigenvalues, for a function of how their eigenvectors mix"

    def __init__(self, UPLO="L"):
        if UPLO not in ("L", "U"):
            raise ValueError("eigh: UPLO must be 'L' or 'U', got %r" % (UPLO,))
        super().__init__(UPLO=UPLO)

    def emit(self, x):
        return "xp.linalg.eigh(%s, UPLO=%s)" % (x, constexpr(self.UPLO))


# ------------------------------------------------------------- rule helpers
class TriangleMask(Primitive):
    """One triangle of each matrix (strictly below the diagonal, or above it when
    ``upper``) with the diagonal times ``diagonal``; zeros elsewhere.

    An entrywise scaling, hence its own adjoint: the rules of Cholesky and Eigh
    use it to map tangents of the read triangle to symmetric ones and back.
    """
    linearity = "linear"
    formula = "dx = mask(dout)"

    def __init__(self, upper=False, diagonal=1.0):
        super().__init__(upper=bool(upper), diagonal=float(diagonal))

    def emit(self, x):
        return "rt.linalg_triangle(%s, %r, %s)" % (x, self.upper, constexpr(self.diagonal))


class GapQuotient(Primitive):
    """``x / gap`` off the diagonal of each matrix, 0 on it and where ``x`` is exactly 0.

    The eigenvector rules' coupling ``F * x`` with ``F_ij = 1 / (w_j - w_i)``:
    where two eigenvalues are equal a zero ``x`` (a function that does not
    depend on how their eigenvectors mix) gives 0, any other gives +-inf, so
    an undefined gradient shows rather than being silently wrong.
    """
    taylor = "nested"   # no series rule written
    formula = "dx = quotient(dout, gap); dgap = -quotient(dout * out, gap)"
    nondifferentiable = "gap = 0 off the diagonal"

    def emit(self, x, gap):
        return "rt.linalg_gap_quotient(%s, %s)" % (x, gap)


__all__ = [_n for _n, _v in list(globals().items())
           if isinstance(_v, type) and issubclass(_v, Primitive) and _v is not Primitive
           and not _n.startswith("_")]
