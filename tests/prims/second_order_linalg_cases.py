"""The second-order cases of the linear-algebra primitives (``linalg_ops``),
each filed under the primitive it stages (``test_second_order.py``).
"""
import numpy as np

from s2sad.ops import operations as P

from second_order_cases import Case, normal, well_conditioned, wiggle

sin = P.Sin()


def spd(shape, seed):
    x = normal(shape, seed)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def distinct_symmetric(shape, seed):
    """Eigenvalues 1..n in a random orthonormal basis."""
    q, _ = np.linalg.qr(normal(shape, seed))
    return (q * np.arange(1.0, shape[-1] + 1)[..., None, :]) @ np.swapaxes(q, -1, -2)


def solve_with(prim):
    def f_solve(a, b):
        return wiggle(prim(a, b))
    return f_solve


def column_with(prim, b):
    """``y -> wiggle(prim(y, a, b))``: b's rank decides whether prim changes y."""
    a = np.eye(3)

    def f_column(y):
        return wiggle(prim(y * sin(y), a, b))
    return f_column


def f_slogdet(x):
    return wiggle(P.SlogDet()(x)[1])


def f_cholesky(x):
    return wiggle(P.Cholesky()(x))


def eigh_with(uplo):
    prim = P.Eigh(uplo)

    def f_eigh(x):
        w, v = prim(x)
        return wiggle(w)[..., None, :] + wiggle(v * v[..., :1, :])
    return f_eigh


def unary(prim):
    def f_unary(x):
        return wiggle(prim(x) * sin(x))
    return f_unary


def f_gap_quotient(x, gap):
    return wiggle(P.GapQuotient()(x * sin(x), gap))


def svd_with(full):
    prim = P.Svd(full)
    keep_columns = P.KeepLeading(-1)
    keep_rows = P.KeepLeading(-2)

    def f_svd(x):
        u, s, vh = prim(x)
        u = keep_columns(u, s)
        vh = keep_rows(vh, s[..., None])
        return wiggle(s)[..., None, :] + wiggle(u[..., :1, :] * u) \
            + wiggle(vh[..., :, :1] * vh)[..., :1, :1]
    return f_svd


def distinct_singular(shape, seed):
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(normal(shape[:-2] + (m, k), seed))
    v, _ = np.linalg.qr(normal(shape[:-2] + (n, k), seed + 1))
    return (u * np.arange(1.0, k + 1)) @ np.swapaxes(v, -1, -2)


def f_eig(x):
    """Phase-free parts of a real matrix's complex eigen-decomposition (complex mode)."""
    w, v = P.Eig()(x)
    return wiggle(P.Real()(w) + P.Imag()(w))[..., None, :] + wiggle(P.Abs()(v))


def leading_with(prim, like):
    def f_leading(x):
        return wiggle(prim(x * sin(x), like))
    return f_leading


def f_qr(x):
    q, r = P.Qr()(x)
    return wiggle(q)[..., :2, :] + wiggle(r)


def f_qr_check(r):
    return wiggle(P.QrCheck()(r * sin(r)))


def f_pinv(x):
    return wiggle(P.Pinv()(x))


def f_gap_quotient_all(x, gap):
    return wiggle(P.GapQuotient(False)(x * sin(x), gap))


LINALG = [
    Case("MatrixSolve", solve_with(P.MatrixSolve()),
         [well_conditioned((3, 3), 120), normal((3, 2), 121)]),
    Case("MatrixSolve", solve_with(P.MatrixSolve(True)),
         [well_conditioned((2, 3, 3), 122), normal((3, 1), 123)], "adjoint-batch"),
    Case("SolveColumn", column_with(P.SolveColumn(), np.ones(3)), [normal(3, 124)], "vector"),
    Case("SolveColumn", column_with(P.SolveColumn(), np.ones((3, 2))), [normal((3, 2), 125)],
         "matrix"),
    Case("SolveUncolumn", column_with(P.SolveUncolumn(), np.ones(3)), [normal((3, 1), 126)],
         "vector"),
    Case("SlogDet", f_slogdet, [well_conditioned((2, 3, 3), 127)]),
    Case("Cholesky", f_cholesky, [spd((3, 3), 128)]),
    Case("Eigh", eigh_with("L"), [distinct_symmetric((3, 3), 129)]),
    Case("Eigh", eigh_with("U"), [distinct_symmetric((2, 3, 3), 130)], "upper-batch"),
    Case("Eig", f_eig, [normal((3, 3), 149)]),
    Case("Eig", f_eig, [normal((2, 3, 3), 150)], "batch"),
    Case("TriangleMask", unary(P.TriangleMask(False, 0.5)), [normal((3, 3), 131)]),
    Case("TriangleMask", unary(P.TriangleMask(True, 1.0)), [normal((2, 3, 4), 132)], "upper"),
    Case("Svd", svd_with(False), [distinct_singular((4, 3), 135)]),
    Case("Svd", svd_with(True), [distinct_singular((2, 3, 3), 136)], "full-square"),
    Case("Svd", svd_with(True), [distinct_singular((2, 4), 137)], "full-wide"),
    Case("KeepLeading", leading_with(P.KeepLeading(-1), np.ones(2)), [normal((3, 4), 138)]),
    Case("KeepLeading", leading_with(P.KeepLeading(-2), np.ones((2, 1))),
         [normal((3, 4), 139)], "rows"),
    Case("PadLeading", leading_with(P.PadLeading(-1), np.ones(4)), [normal((3, 2), 140)]),
    Case("PadLeading", leading_with(P.PadLeading(-2), np.ones((4, 1))), [normal((2, 3), 141)],
         "rows"),
    Case("Qr", f_qr, [normal((3, 2), 144)]),
    Case("Qr", f_qr, [normal((2, 2, 2), 145)], "batch"),
    Case("QrCheck", f_qr_check, [normal((3, 3), 146)]),
    Case("Pinv", f_pinv, [normal((2, 3), 147)]),
    Case("Pinv", f_pinv, [well_conditioned((2, 3, 3), 148)], "batch"),
    Case("GapQuotient", f_gap_quotient, [normal((3, 3), 133), 1.0 + np.abs(normal((3, 3), 134))]),
    Case("GapQuotient", f_gap_quotient_all, [normal((3, 2), 142), 1.0 + np.abs(normal(2, 143))],
         "every-entry"),
]
