"""bprop and JVP rules for the linear-algebra primitives (``linalg_ops``).

Each rule is written with primitives (solves, batched products, triangle
masks), so it differentiates again: second order needs no rule of its own, and
Taylor mode takes the nested reverse-mode path for all of them.

Cholesky and Eigh read one triangle of their input, as LAPACK does.  Their
rules see the symmetric matrix ``S = m + m^T`` with ``m = mask(x)`` (the read
triangle, diagonal halved) and map a symmetric cotangent ``G`` of ``S`` back
with the adjoint ``mask(G + G^T)``.
"""
from ...ir.primitive import complex_mode
from ..operations import array_ops as A
from ..operations import elementwise_ops as E
from ..operations import fft_ops as F
from ..operations import linalg_ops as L
from ..operations import math_ops as M
from .grad_array_ops import get_jvp_linear3
from .grad_base import bprop_getters, jvp_getters

bmm_nn = M.BatchMatMul(False, False)
bmm_nt = M.BatchMatMul(False, True)
bmm_tn = M.BatchMatMul(True, False)
unbroadcast = A.Unbroadcast()
zeros_like = A.ZerosLike()
expand_dims = A.ExpandDims()
swap = A.SwapAxes(-1, -2)
reduce_sum = M.ReduceSum(False)
expand_matrix = A.ExpandReduced(False)
inverse_transpose = M.MatrixInverse(adjoint=True)
gap_quotient = L.GapQuotient()
quotient = L.GapQuotient(offdiagonal=False)
solve = L.MatrixSolve()
solve_transposed = L.MatrixSolve(adjoint=True)
lower_half = L.TriangleMask(False, 0.5)
lower = L.TriangleMask(False, 1.0)
strictly_lower = L.TriangleMask(False, 0.0)
qr_check = L.QrCheck()
eye_like = L.EyeLike()
real = E.Real()
conj = E.Conj()
real_like = F.FFTFit(())      # re(ct) where its ``like`` (the input) is real
MASKS = {"L": lower_half, "U": L.TriangleMask(True, 0.5)}


# ------------------------------------------------------------------ solve
@bprop_getters.register(L.MatrixSolve)
def get_bprop_matrix_solve(self):
    adjoint = self.adjoint
    other = L.MatrixSolve(not adjoint)

    def bprop(a, b, out, dout):
        db = other(a, dout)
        if adjoint:
            da = -bmm_nt(out, db)
        else:
            da = -bmm_nt(db, out)
        return unbroadcast(da, a), unbroadcast(db, b)
    return bprop


@jvp_getters.register(L.MatrixSolve)
def get_jvp_matrix_solve(self):
    adjoint = self.adjoint

    def jvp(a, b, out, ta, tb):
        rhs = tb
        if ta is not None:
            if adjoint:
                ta_out = bmm_tn(ta, out)
            else:
                ta_out = bmm_nn(ta, out)
            rhs = -ta_out if tb is None else tb - ta_out
        if rhs is None:
            return None
        return self(a, rhs)
    return jvp


@bprop_getters.register(L.SolveColumn)
@bprop_getters.register(L.SolveUncolumn)
def get_bprop_solve_column(self):
    # each is the other's adjoint (they add or drop the same size-1 axis)
    if isinstance(self, L.SolveColumn):
        adjoint = L.SolveUncolumn()
    else:
        adjoint = L.SolveColumn()

    def bprop(y, a, b, out, dout):
        return adjoint(dout, a, b), zeros_like(a), zeros_like(b)
    return bprop


jvp_getters.register(L.SolveColumn)(get_jvp_linear3)
jvp_getters.register(L.SolveUncolumn)(get_jvp_linear3)


# ------------------------------------------------------------ determinants
@bprop_getters.register(L.SlogDet)
def get_bprop_slogdet(self):
    def bprop(x, out, dout):
        return (expand_matrix(dout[1], x, (-2, -1)) * inverse_transpose(x),)
    return bprop


@jvp_getters.register(L.SlogDet)
def get_jvp_slogdet(self):
    def jvp(x, out, tx):
        return None, reduce_sum(inverse_transpose(x) * tx, (-2, -1))
    return jvp


# --------------------------------------------------------- factorisations
@bprop_getters.register(L.Cholesky)
def get_bprop_cholesky(self):
    def bprop(x, out, dout):
        # S_bar = L^-T lower_half(L^T dout) L^-1
        left = solve_transposed(out, lower_half(bmm_tn(out, dout)))
        s = swap(solve_transposed(out, swap(left)))
        return (lower_half(s + swap(s)),)
    return bprop


@jvp_getters.register(L.Cholesky)
def get_jvp_cholesky(self):
    def jvp(x, out, tx):
        m = lower_half(tx)
        # dL = L lower_half(L^-1 dS L^-T), dS = m + m^T
        left = solve(out, m + swap(m))
        return bmm_nn(out, lower_half(swap(solve(out, swap(left)))))
    return jvp


def eigen_coupling(x, w):
    """``F * x`` with ``F[..., i, j] = 1 / (w_j - w_i)`` off the diagonal, 0 on it."""
    return gap_quotient(x, expand_dims(w, -2) - expand_dims(w, -1))


def adjoint(x):
    """``x^H``: the conjugate transpose in complex mode, the transpose otherwise."""
    return conj(swap(x)) if complex_mode() else swap(x)


def matmul_hn(a, b):
    """``a^H b`` (``a^T b`` for real programs, one primitive)."""
    return bmm_nn(adjoint(a), b) if complex_mode() else bmm_tn(a, b)


def matmul_nh(a, b):
    """``a b^H`` (``a b^T`` for real programs, one primitive)."""
    return bmm_nn(a, adjoint(b)) if complex_mode() else bmm_nt(a, b)


def diagonal_matrix(x, like):
    """The diagonal matrices of the vectors ``x``, shaped like the square ``like``."""
    return expand_dims(x, -1) * eye_like(like)


def real_part(x):
    """``re(x)`` in complex mode (a real value's cotangent or a phase-free tangent)."""
    return real(x) if complex_mode() else x


def input_cotangent(ct, x):
    """``ct``, or in complex mode its real part where the input ``x`` is real (JAX's
    convention, decided at run time: the IR has no dtypes)."""
    return real_like(ct, x) if complex_mode() else ct


def conj_part(x):
    """``conj(x)`` in complex mode: a rule written for gradients (``conj`` of JAX's
    cotangents, paired by the Hermitian product) maps cotangents through it."""
    return conj(x) if complex_mode() else x


@bprop_getters.register(L.Eigh)
def get_bprop_eigh(self):
    mask = MASKS[self.UPLO]

    def bprop(x, out, dout):
        w, v = out
        dw, dv = dout
        dv = conj_part(dv)
        inner = bmm_nn(v, eigen_coupling(matmul_hn(v, dv), w)) \
            + v * expand_dims(real_part(dw), -2)
        s = matmul_nh(inner, v)
        return (input_cotangent(conj_part(mask(s + adjoint(s))), x),)
    return bprop


@jvp_getters.register(L.Eigh)
def get_jvp_eigh(self):
    mask = MASKS[self.UPLO]

    def jvp(x, out, tx):
        w, v = out
        m = mask(tx)
        sv = bmm_nn(m + adjoint(m), v)
        tw = real_part(reduce_sum(conj_part(v) * sv, -2))
        tv = bmm_nn(v, eigen_coupling(matmul_hn(v, sv), w))
        return tw, tv
    return jvp


def squared_gaps(s):
    """``s_j^2 - s_i^2`` at ``[..., i, j]``."""
    s2 = s * s
    return expand_dims(s2, -2) - expand_dims(s2, -1)


def phase_term(skew, s_row):
    """``diag(skew) / (2 s)`` as diagonal matrices: the complex SVD's tangent (and
    cotangent) of the phase shared by ``u_i`` and ``v_i``, put into ``u`` alone."""
    return quotient(skew * eye_like(skew), s_row + s_row)


def svd_cotangent(u, s, vh, du, ds, dvh):
    """The reduced SVD's bprop: the cotangent of ``x = u diag(s) vh``.

    Complex mode works with gradients ``conj(ct)`` (``dv = swap(dvh)`` is one),
    adds the phase term, and conjugates the result back.
    """
    du, ds = conj_part(du), real_part(ds)
    v = adjoint(vh)
    dv = swap(dvh)
    s_row = expand_dims(s, -2)
    gaps = squared_gaps(s)
    utdu = matmul_hn(u, du)
    vtdv = matmul_hn(v, dv)
    skew_u = utdu - adjoint(utdu)
    core = gap_quotient(skew_u, gaps) * s_row \
        + gap_quotient(vtdv - adjoint(vtdv), gaps) * expand_dims(s, -1)
    if complex_mode():
        core = core + phase_term(skew_u, s_row)
    left = bmm_nn(u, core) + u * expand_dims(ds, -2) + quotient(du - bmm_nn(u, utdu), s_row)
    grad = matmul_nh(left, v) + matmul_nh(u, quotient(dv - bmm_nn(v, vtdv), s_row))
    return conj_part(grad)


def svd_tangent(u, s, vh, tx):
    """The reduced SVD's JVP: the tangents ``(du, ds, dvh)`` along ``tx``."""
    v = adjoint(vh)
    s_row = expand_dims(s, -2)
    s_col = expand_dims(s, -1)
    gaps = squared_gaps(s)
    xv = bmm_nn(tx, v)
    xtu = matmul_hn(tx, u)
    p = matmul_hn(u, xv)                # u^H tx v
    pt = adjoint(p)
    du = bmm_nn(u, gap_quotient(p * s_row + pt * s_col, gaps)) \
        + quotient(xv - bmm_nn(u, p), s_row)
    if complex_mode():
        du = du + bmm_nn(u, phase_term(p - pt, s_row))
    dv = bmm_nn(v, gap_quotient(p * s_col + pt * s_row, gaps)) \
        + quotient(xtu - bmm_nn(v, pt), s_row)
    return du, real_part(reduce_sum(conj_part(u) * xv, -2)), adjoint(dv)


@bprop_getters.register(L.Svd)
def get_bprop_svd(self):
    full = self.full_matrices
    keep_columns = L.KeepLeading(-1)
    keep_rows = L.KeepLeading(-2)
    check_columns = L.KeepLeading(-1, check=True)
    check_rows = L.KeepLeading(-2, check=True)

    def bprop(x, out, dout):
        u, s, vh = out
        du, ds, dvh = dout
        if full:
            rows = expand_dims(s, -1)
            u, vh = keep_columns(u, s), keep_rows(vh, rows)
            du, dvh = check_columns(du, s), check_rows(dvh, rows)
        return (input_cotangent(svd_cotangent(u, s, vh, du, ds, dvh), x),)
    return bprop


@jvp_getters.register(L.Svd)
def get_jvp_svd(self):
    full = self.full_matrices
    keep_columns = L.KeepLeading(-1)
    keep_rows = L.KeepLeading(-2)
    nan_columns = L.PadLeading(-1, float("nan"))
    nan_rows = L.PadLeading(-2, float("nan"))

    def jvp(x, out, tx):
        u, s, vh = out
        if full:
            du, ds, dvh = svd_tangent(keep_columns(u, s), s, keep_rows(vh, expand_dims(s, -1)), tx)
            return nan_columns(du, u), ds, nan_rows(dvh, vh)
        return svd_tangent(u, s, vh, tx)
    return jvp


@bprop_getters.register(L.Eig)
def get_bprop_eig(self):
    def bprop(x, out, dout):
        w, v = out
        dw, dv = dout
        # the transpose of the JVP's norm-keeping projection, then of v (F * p)
        dv = dv - conj(v) * expand_dims(real(reduce_sum(dv * v, -2)), -2)
        dp = eigen_coupling(bmm_tn(v, dv), w) + diagonal_matrix(dw, v)
        return (input_cotangent(solve_transposed(v, bmm_nt(dp, v)), x),)    # v^-T dp v^T
    return bprop


@jvp_getters.register(L.Eig)
def get_jvp_eig(self):
    def jvp(x, out, tx):
        w, v = out
        p = solve(v, bmm_nn(tx, v))                     # v^-1 tx v
        dv = bmm_nn(v, eigen_coupling(p, w))
        # keep each eigenvector's unit norm: Re(v_i^H dv_i) = 0
        dv = dv - v * expand_dims(real(reduce_sum(conj(v) * dv, -2)), -2)
        return reduce_sum(p * eye_like(p), -1), dv
    return jvp


@bprop_getters.register(L.Qr)
def get_bprop_qr(self):
    def bprop(x, out, dout):
        q, r = out
        dq, dr = dout
        r = qr_check(r)
        m = bmm_nt(r, dr) - bmm_tn(dq, q)
        # (dq + q copyltu(m)) r^-T, copyltu(m): m's lower triangle mirrored
        b = dq + bmm_nn(q, lower(m) + swap(strictly_lower(m)))
        return (swap(solve(r, swap(b))),)
    return bprop


@jvp_getters.register(L.Qr)
def get_jvp_qr(self):
    def jvp(x, out, tx):
        q, r = out
        r = qr_check(r)
        xr = swap(solve_transposed(r, swap(tx)))        # tx r^-1
        c = bmm_tn(q, xr)
        # dr r^-1 = c - omega, omega = the skew q^T dq taken from c's lower part
        low = strictly_lower(c)
        upper = c - low + swap(low)
        return xr - bmm_nn(q, upper), bmm_nn(upper, r)
    return jvp


@bprop_getters.register(L.Pinv)
def get_bprop_pinv(self):
    def bprop(x, out, dout):
        pt = swap(out)
        gt = swap(dout)
        inner = -bmm_nn(bmm_nn(pt, dout), pt)
        # (I - x p) dout^T p p^T + p^T p dout^T (I - p x)
        left = bmm_nn(gt - bmm_nn(x, bmm_nn(out, gt)), bmm_nt(out, out))
        right = bmm_nn(bmm_nn(pt, out), gt - bmm_nn(bmm_nn(gt, out), x))
        return (inner + left + right,)
    return bprop


@jvp_getters.register(L.Pinv)
def get_jvp_pinv(self):
    def jvp(x, out, tx):
        txt = swap(tx)
        inner = -bmm_nn(bmm_nn(out, tx), out)
        # p p^T tx^T (I - x p) + (I - p x) tx^T p^T p
        left = bmm_nn(bmm_nt(out, out), txt - bmm_nn(bmm_nn(txt, x), out))
        right = bmm_nn(txt - bmm_nn(out, bmm_nn(x, txt)), bmm_tn(out, out))
        return inner + left + right
    return jvp


@bprop_getters.register(L.QrCheck)
def get_bprop_qr_check(self):
    def bprop(r, out, dout):
        return (dout,)
    return bprop


@jvp_getters.register(L.QrCheck)
def get_jvp_qr_check(self):
    def jvp(r, out, tr):
        return tr
    return jvp


# ------------------------------------------------------------- rule helpers
@bprop_getters.register(L.TriangleMask)
def get_bprop_triangle_mask(self):
    def bprop(x, out, dout):
        return (self(dout),)
    return bprop


@jvp_getters.register(L.TriangleMask)
def get_jvp_triangle_mask(self):
    def jvp(x, out, tx):
        return self(tx)
    return jvp


@bprop_getters.register(L.GapQuotient)
def get_bprop_gap_quotient(self):
    # linear in x with its own adjoint (an entrywise scaling); d(x / gap) = -out / gap
    def bprop(x, gap, out, dout):
        return unbroadcast(self(dout, gap), x), unbroadcast(-self(dout * out, gap), gap)
    return bprop


@jvp_getters.register(L.GapQuotient)
def get_jvp_gap_quotient(self):
    def jvp(x, gap, out, tx, tgap):
        if tgap is None:
            return None if tx is None else self(tx, gap)
        if tx is None:
            return -self(out * tgap, gap)
        return self(tx - out * tgap, gap)
    return jvp


@bprop_getters.register(L.KeepLeading)
def get_bprop_keep_leading(self):
    pad = L.PadLeading(self.axis)

    def bprop(x, like, out, dout):
        return pad(dout, x), zeros_like(like)
    return bprop


@bprop_getters.register(L.PadLeading)
def get_bprop_pad_leading(self):
    keep = L.KeepLeading(self.axis)

    def bprop(x, like, out, dout):
        return keep(dout, x), zeros_like(like)
    return bprop


@jvp_getters.register(L.KeepLeading)
@jvp_getters.register(L.PadLeading)
def get_jvp_leading(self):
    def jvp(x, like, out, tx, tlike):
        return self(tx, like)
    return jvp
