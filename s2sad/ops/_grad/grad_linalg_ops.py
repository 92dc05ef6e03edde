"""bprop and JVP rules for the linear-algebra primitives (``linalg_ops``).

Each rule is written with primitives (solves, batched products, triangle
masks), so it differentiates again: second order needs no rule of its own, and
Taylor mode takes the nested reverse-mode path for all of them.

Cholesky and Eigh read one triangle of their input, as LAPACK does.  Their
rules see the symmetric matrix ``S = m + m^T`` with ``m = mask(x)`` (the read
triangle, diagonal halved) and map a symmetric cotangent ``G`` of ``S`` back
with the adjoint ``mask(G + G^T)``.
"""
from ..operations import array_ops as A
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


@bprop_getters.register(L.Eigh)
def get_bprop_eigh(self):
    mask = MASKS[self.UPLO]

    def bprop(x, out, dout):
        w, v = out
        dw, dv = dout
        inner = bmm_nn(v, eigen_coupling(bmm_tn(v, dv), w)) + v * expand_dims(dw, -2)
        s = bmm_nt(inner, v)
        return (mask(s + swap(s)),)
    return bprop


@jvp_getters.register(L.Eigh)
def get_jvp_eigh(self):
    mask = MASKS[self.UPLO]

    def jvp(x, out, tx):
        w, v = out
        m = mask(tx)
        sv = bmm_nn(m + swap(m), v)
        tw = reduce_sum(v * sv, -2)
        tv = bmm_nn(v, eigen_coupling(bmm_tn(v, sv), w))
        return tw, tv
    return jvp


def squared_gaps(s):
    """``s_j^2 - s_i^2`` at ``[..., i, j]``."""
    s2 = s * s
    return expand_dims(s2, -2) - expand_dims(s2, -1)


def svd_cotangent(u, s, vh, du, ds, dvh):
    """The reduced SVD's bprop: the cotangent of ``x = u diag(s) vh``."""
    v = swap(vh)
    dv = swap(dvh)
    s_row = expand_dims(s, -2)
    gaps = squared_gaps(s)
    utdu = bmm_tn(u, du)
    vtdv = bmm_tn(v, dv)
    core = gap_quotient(utdu - swap(utdu), gaps) * s_row \
        + gap_quotient(vtdv - swap(vtdv), gaps) * expand_dims(s, -1)
    left = bmm_nn(u, core) + u * expand_dims(ds, -2) + quotient(du - bmm_nn(u, utdu), s_row)
    return bmm_nt(left, v) + bmm_nt(u, quotient(dv - bmm_nn(v, vtdv), s_row))


def svd_tangent(u, s, vh, tx):
    """The reduced SVD's JVP: the tangents ``(du, ds, dvh)`` along ``tx``."""
    v = swap(vh)
    s_row = expand_dims(s, -2)
    s_col = expand_dims(s, -1)
    gaps = squared_gaps(s)
    xv = bmm_nn(tx, v)
    xtu = bmm_tn(tx, u)
    p = bmm_tn(u, xv)                   # u^T tx v
    pt = swap(p)
    du = bmm_nn(u, gap_quotient(p * s_row + pt * s_col, gaps)) \
        + quotient(xv - bmm_nn(u, p), s_row)
    dv = bmm_nn(v, gap_quotient(p * s_col + pt * s_row, gaps)) \
        + quotient(xtu - bmm_nn(v, pt), s_row)
    return du, reduce_sum(u * xv, -2), swap(dv)


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
            return (svd_cotangent(keep_columns(u, s), s, keep_rows(vh, rows),
                                  check_columns(du, s), ds, check_rows(dvh, rows)),)
        return (svd_cotangent(u, s, vh, du, ds, dvh),)
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
