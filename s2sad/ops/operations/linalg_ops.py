"""Linear algebra on stacks of matrices: solve, log-determinant, Cholesky, eigh, eig.

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
    complex_ok = True   # holomorphic: its rules hold for complex values as written
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
    """``(w, v)``: ascending eigenvalues and orthonormal eigenvectors of a symmetric (or
    complex Hermitian) matrix.

    Only the triangle named by ``UPLO`` is read (and, for a complex matrix, only
    the real part of its diagonal).  The eigenvectors' gradient needs distinct
    eigenvalues: for a pair of exactly equal ones it is +-inf unless the function
    ignores how their eigenvectors mix (see docs/numpy-coverage.md).  The complex
    rules (``v^H`` for ``v^T``) fix each eigenvector's phase by ``Im(v^H dv) = 0``.
    """
    taylor = "nested"   # no series rule written
    complex_ok = True
    num_outputs = 2
    formula = ("dx = triangle_half(S + S^T), "
               "S = v (diag(dw) + F * (v^T dv)) v^T, F_ij = 1 / (w_j - w_i); "
               "complex x: ^H for ^T, in gradients conj(ct)")
    nondifferentiable = "equal eigenvalues, for a function of how their eigenvectors mix"

    def __init__(self, UPLO="L"):
        if UPLO not in ("L", "U"):
            raise ValueError("eigh: UPLO must be 'L' or 'U', got %r" % (UPLO,))
        super().__init__(UPLO=UPLO)

    def emit(self, x):
        return "xp.linalg.eigh(%s, UPLO=%s)" % (x, constexpr(self.UPLO))


class Svd(Primitive):
    """``(u, s, vh)`` with ``x = u diag(s) vh``, singular values descending.

    ``full_matrices`` completes ``u`` and ``vh`` to square orthogonal matrices;
    their extra columns (rows) are any basis of a complement, so a gradient
    through them raises ``ValueError`` and their tangents are NaN.  The
    singular vectors' gradient needs distinct, non-zero singular values.  For a
    complex ``x`` each pair ``(u_i, v_i)`` is fixed only up to a common phase: the
    rules put the phase's tangent into ``u`` (``Im(u_i^H du_i) = Im(p_ii) / s_i``,
    ``p = u^H dx v``, and ``Im(v_i^H dv_i) = 0``), which a function of ``u_i v_i^H``
    or of ``|u|`` does not see.
    """
    taylor = "nested"   # no series rule written
    complex_ok = True
    num_outputs = 3
    formula = ("dx = u [F*(u^T du - du^T u) s + diag(ds) + s F*(v^T dv - dv^T v)] v^T "
               "+ (I - u u^T) du s^-1 v^T + u s^-1 dv^T (I - v v^T), F_ij = 1 / (s_j^2 - s_i^2); "
               "complex x: ^H for ^T, in gradients conj(ct), plus the phase term "
               "u diag(i Im(u^H du)_ii / s_i) v^H")
    nondifferentiable = "equal or zero singular values, for a function of the singular vectors"

    def __init__(self, full_matrices=False):
        super().__init__(full_matrices=bool(full_matrices))

    def emit(self, x):
        return "xp.linalg.svd(%s, full_matrices=%r)" % (x, self.full_matrices)


class Eig(Primitive):
    """``(w, v)``: eigenvalues and unit-norm eigenvectors of a general square matrix
    (``np.linalg.eig``), complex even for most real matrices.

    A real program using it compiles its derivatives in complex mode
    (``complex_result``).  Each eigenvector's phase is NumPy's arbitrary choice:
    the rules keep its norm (``Re(v^H dv) = 0``) and nothing else of it, so only
    functions that ignore the phases (``|v|``, the eigenvalues) have a gradient
    that means something.  Needs distinct eigenvalues and a diagonalisable ``x``.
    """
    taylor = "nested"   # no series rule written
    complex_ok = True
    complex_result = True
    num_outputs = 2
    formula = ("dx = v^-T (diag(dw) + F * (v^T g)) v^T, g = dv - conj(v) re(diag(v^T dv)), "
               "F_ij = 1 / (w_j - w_i)")
    nondifferentiable = "equal eigenvalues, or x not diagonalisable"

    def emit(self, x):
        return "tuple(xp.linalg.eig(%s))" % x


class Qr(Primitive):
    """``(q, r)``: the reduced QR factorisation ``x = q r`` of each matrix (``q`` with
    orthonormal columns, ``r`` upper triangular).

    Differentiable for square and tall ``x`` of full column rank; the rules of
    a wide ``x`` raise ``ValueError`` (through ``QrCheck``).
    """
    taylor = "nested"   # no series rule written
    num_outputs = 2
    formula = "dx = (dq + q copyltu(r dr^T - dq^T q)) r^-T"
    nondifferentiable = "x wide or of deficient column rank"

    def emit(self, x):
        return "xp.linalg.qr(%s)" % x


class QrCheck(Primitive):
    """``r`` itself, once checked to be square (the QR rules' precondition: a tall or
    square input); raises ``ValueError`` for a wide input's ``r``."""
    linearity = "linear"
    formula = "dr = dout"

    def emit(self, r):
        return "rt.linalg_qr_check(%s)" % r


class Pinv(Primitive):
    """The Moore-Penrose pseudo-inverse of each matrix (singular values below
    ``rcond`` times the largest are taken as 0), as ``np.linalg.pinv``."""
    taylor = "nested"   # no series rule written
    formula = ("dx = -p^T dout p^T + (I - x p) dout^T p p^T + p^T p dout^T (I - p x), "
               "p = pinv(x)")
    nondifferentiable = "where the rank changes (a singular value crossing the cut-off)"

    def __init__(self, rcond=None):
        super().__init__(rcond=None if rcond is None else float(rcond))

    def emit(self, x):
        if self.rcond is None:
            return "xp.linalg.pinv(%s)" % x
        return "xp.linalg.pinv(%s, rcond=%s)" % (x, constexpr(self.rcond))


class EyeLike(Primitive):
    """Identity matrices with the shape and dtype of ``x`` (``matrix_power(x, 0)``)."""
    differentiable = False
    formula = "no gradient"

    def emit(self, x):
        return "rt.linalg_eye_like(%s)" % x


class TensorShape(Primitive):
    """The run-time shapes ``tensorinv`` and ``tensorsolve`` reshape with (no gradient).

    ``kind``: ``'inv_in'`` / ``'inv_out'`` (of ``a``, with ``ind``), ``'solve_in'`` /
    ``'solve_out'`` (of ``a`` with ``b``'s rank).
    """
    differentiable = False
    small_result = True
    shape_only_inputs = (0, 1)
    formula = "no gradient"

    def __init__(self, kind, ind=0):
        super().__init__(kind=kind, ind=int(ind))

    def emit(self, a, b="None"):
        return "rt.linalg_tensor_shape(%s, %s, %r, %d)" % (a, b, self.kind, self.ind)


# ------------------------------------------------------------- rule helpers
class TriangleMask(Primitive):
    """One triangle of each matrix (strictly below the diagonal, or above it when
    ``upper``) with the diagonal times ``diagonal``; zeros elsewhere.

    An entrywise scaling, hence its own adjoint: the rules of Cholesky and Eigh
    use it to map tangents of the read triangle to symmetric ones and back.
    """
    linearity = "linear"
    complex_ok = True   # linear (or holomorphic): the rules hold as written
    formula = "dx = mask(dout)"

    def __init__(self, upper=False, diagonal=1.0):
        super().__init__(upper=bool(upper), diagonal=float(diagonal))

    def emit(self, x):
        return "rt.linalg_triangle(%s, %r, %s)" % (x, self.upper, constexpr(self.diagonal))


class GapQuotient(Primitive):
    """``x / gap`` (broadcasting), 0 where ``x`` is exactly 0 and, when ``offdiagonal``,
    on the diagonal of each matrix.

    The eigenvector rules' coupling ``F * x`` with ``F_ij = 1 / (w_j - w_i)``,
    and the SVD rules' division by singular values: where a gap is 0 a zero
    ``x`` (a function that does not depend on how the equal eigenvalues'
    eigenvectors mix) gives 0, any other gives +-inf, so an undefined gradient
    shows rather than being silently wrong.
    """
    taylor = "nested"   # no series rule written
    complex_ok = True   # linear (or holomorphic): the rules hold as written
    formula = "dx = quotient(dout, gap); dgap = -quotient(dout * out, gap)"
    nondifferentiable = "gap = 0 (off the diagonal)"

    def __init__(self, offdiagonal=True):
        super().__init__(offdiagonal=bool(offdiagonal))

    def emit(self, x, gap):
        return "rt.linalg_gap_quotient(%s, %s, %r)" % (x, gap, self.offdiagonal)


class KeepLeading(Primitive):
    """The first ``like.shape[axis]`` entries of ``x`` along ``axis``: the columns (or
    rows) of a full SVD's ``u`` (``vh``) that the reduced one has.

    With ``check`` (for cotangents) it raises ``ValueError`` when an entry it
    drops is not 0: a gradient through the extra columns is not defined.
    """
    linearity = "linear"
    complex_ok = True   # linear (or holomorphic): the rules hold as written
    shape_only_inputs = (1,)
    formula = "dx = pad_leading(dout, x)"

    def __init__(self, axis=-1, check=False):
        super().__init__(axis=int(axis), check=bool(check))

    def emit(self, x, like):
        return "rt.linalg_keep_leading(%s, %s, %d, %r)" % (x, like, self.axis, self.check)


class PadLeading(Primitive):
    """``x`` padded along ``axis`` to the size of ``like`` with ``fill`` (KeepLeading's adjoint
    with 0; NaN marks the tangents of a full SVD's extra columns, which are not defined)."""
    linearity = "linear"
    complex_ok = True   # linear (or holomorphic): the rules hold as written
    shape_only_inputs = (1,)
    formula = "dx = keep_leading(dout, x)"

    def __init__(self, axis=-1, fill=0.0):
        super().__init__(axis=int(axis), fill=float(fill))

    def emit(self, x, like):
        return "rt.linalg_pad_leading(%s, %s, %d, %s)" % (x, like, self.axis,
                                                          constexpr(self.fill))


__all__ = [_n for _n, _v in list(globals().items())
           if isinstance(_v, type) and issubclass(_v, Primitive) and _v is not Primitive
           and not _n.startswith("_")]
