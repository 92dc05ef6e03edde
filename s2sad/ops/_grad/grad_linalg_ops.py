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
solve = L.MatrixSolve()
solve_transposed = L.MatrixSolve(adjoint=True)
lower_half = L.TriangleMask(False, 0.5)
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
        return self(dout, gap), -self(dout * out, gap)
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
