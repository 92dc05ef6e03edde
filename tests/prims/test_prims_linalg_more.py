"""``np.linalg`` beyond inv/det/norm: solve, slogdet, cholesky, eigh, eigvalsh.

Each function is checked in reverse mode (a random weighted sum of its
outputs) and forward mode against float64 central finite differences, at
second order with ``check_grads(order=2)``, batched over leading axes, and
against NumPy's own values.  Finite differences perturb every entry of the
input, including the triangle that cholesky and eigh do not read: their
gradient is that of NumPy's function, zero there.
"""
import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError

from gradcheck import check_jvp, check_vjp


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def well_conditioned(shape, seed):
    """Random square matrices plus 3 I: solves and determinants are tame."""
    return 0.5 * normal(shape, seed) + 3.0 * np.eye(shape[-1])


def spd(shape, seed):
    """Symmetric positive definite matrices with eigenvalues well apart from 0."""
    x = normal(shape, seed)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def distinct_symmetric(shape, seed):
    """Symmetric matrices with eigenvalues 1, 2, ..., n (gaps of 1), in a random basis."""
    n = shape[-1]
    q, _ = np.linalg.qr(normal(shape, seed))
    return (q * np.arange(1.0, n + 1)[..., None, :]) @ np.swapaxes(q, -1, -2)


def with_other_triangle(x, seed, upper=True):
    """``x`` with the triangle a symmetric routine ignores overwritten by noise."""
    n = x.shape[-1]
    noise = normal(x.shape, seed)
    mask = np.triu(np.ones((n, n)), 1) if upper else np.tril(np.ones((n, n)), -1)
    return x + 10 * mask * noise


# ====================================================================== solve
def f_solve(a, b):
    return np.linalg.solve(a, b)


SOLVE_SHAPES = [
    ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2)), ((2, 3, 3), (3,)),
    ((3, 3), (2, 3, 4)), ((2, 3, 3), (3, 1)), ((2, 1, 3, 3), (4, 3, 2)),
]


@pytest.mark.parametrize("shapes", SOLVE_SHAPES, ids=str)
def test_solve(shapes):
    a, b = well_conditioned(shapes[0], 1), normal(shapes[1], 2)
    np.testing.assert_allclose(s2sad.jit(f_solve)(a, b), np.linalg.solve(a, b), rtol=1e-12)
    grads = check_vjp(f_solve, (a, b))
    assert grads[0].shape == a.shape and grads[1].shape == b.shape
    check_jvp(f_solve, (a, b))


def test_solve_gradient_in_closed_form():
    # x = a^-1 b: d<w, x>/db = a^-T w and d<w, x>/da = -(a^-T w) x^T
    a, b, w = well_conditioned((3, 3), 3), normal(3, 4), normal(3, 5)

    def f(a, b):
        return np.sum(w * np.linalg.solve(a, b))
    ga, gb = s2sad.grad(f, (0, 1))(a, b)
    lam = np.linalg.solve(a.T, w)
    np.testing.assert_allclose(gb, lam, rtol=1e-12)
    np.testing.assert_allclose(ga, -np.outer(lam, np.linalg.solve(a, b)), rtol=1e-12)


# ==================================================================== slogdet
def f_slogdet(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return logabsdet * sign


def f_logabsdet(a):
    return np.linalg.slogdet(a)[1]


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (2, 2, 4, 4)], ids=str)
def test_slogdet(shape):
    a = normal(shape, 6) + 0.5 * np.eye(shape[-1])      # determinants of both signs
    sign, logabsdet = s2sad.jit(f_sign_and_logabsdet)(a)
    want = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, want[0])
    np.testing.assert_allclose(logabsdet, want[1], rtol=1e-13)
    for fn in (f_slogdet, f_logabsdet):
        grads = check_vjp(fn, (a,))
        assert grads[0].shape == a.shape
        check_jvp(fn, (a,))


def f_sign_and_logabsdet(a):
    return np.linalg.slogdet(a)


def test_slogdet_gradient_is_inverse_transpose():
    a = normal((4, 4), 7)
    np.testing.assert_allclose(s2sad.grad(f_logabsdet)(a), np.linalg.inv(a).T, rtol=1e-10)


# =================================================================== cholesky
def f_cholesky(a):
    return np.linalg.cholesky(a)


def f_cholesky_upper(a):
    return np.linalg.cholesky(a, upper=True)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)], ids=str)
@pytest.mark.parametrize("fn", [f_cholesky, f_cholesky_upper], ids=["lower", "upper"])
def test_cholesky(shape, fn):
    a = spd(shape, 8)
    upper = fn is f_cholesky_upper
    # noise in the triangle NumPy does not read: values and gradients ignore it
    a = with_other_triangle(a, 9, upper=not upper)
    np.testing.assert_allclose(s2sad.jit(fn)(a), fn(a), rtol=1e-12)
    grads = check_vjp(fn, (a,))
    unread = np.triu(np.ones(shape[-2:]), 1) if not upper else np.tril(np.ones(shape[-2:]), -1)
    assert np.all(grads[0] * unread == 0)
    check_jvp(fn, (a,))


def test_cholesky_of_a_symmetric_parametrisation():
    # through s = x x^T the read-one-triangle gradient equals the symmetric one
    x = well_conditioned((3, 3), 10)

    def f(x):
        return np.sum(np.sin(np.linalg.cholesky(x @ x.T)))
    check_vjp(f, (x,))
    check_jvp(f, (x,))


# ======================================================================= eigh
def eig_features(w, v):
    """A function of eigenvalues and eigenvectors that ignores each eigenvector's sign."""
    return w * w, v * v[..., :1, :], np.sin(w) * np.sum(v * v[..., 1:2, :], axis=-2)


def f_eigh_lower(a):
    return eig_features(*np.linalg.eigh(a))


def f_eigh_upper(a):
    return eig_features(*np.linalg.eigh(a, UPLO="U"))


def f_eigvalsh_lower(a):
    return np.linalg.eigvalsh(a)


def f_eigvalsh_upper(a):
    return np.linalg.eigvalsh(a, "U")


EIGH_FNS = [(f_eigh_lower, "L"), (f_eigh_upper, "U"),
            (f_eigvalsh_lower, "L"), (f_eigvalsh_upper, "U")]


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)], ids=str)
@pytest.mark.parametrize("fn, uplo", EIGH_FNS, ids=lambda v: getattr(v, "__name__", v))
def test_eigh(shape, fn, uplo):
    a = with_other_triangle(distinct_symmetric(shape, 11), 12, upper=uplo == "L")
    np.testing.assert_allclose(np.linalg.eigvalsh(a, uplo), np.linalg.eigh(a, uplo)[0])
    grads = check_vjp(fn, (a,))
    unread = np.triu(np.ones(shape[-2:]), 1) if uplo == "L" else np.tril(np.ones(shape[-2:]), -1)
    assert np.all(grads[0] * unread == 0)
    check_jvp(fn, (a,))


def test_eigh_values_match_numpy():
    a = distinct_symmetric((2, 3, 3), 13)

    def f(a):
        return np.linalg.eigh(a)
    w, v = s2sad.jit(f)(a)
    want_w, want_v = np.linalg.eigh(a)
    np.testing.assert_allclose(w, want_w, rtol=1e-12)
    np.testing.assert_allclose(np.abs(v), np.abs(want_v), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s2sad.jit(f_eigvalsh_upper)(a), np.linalg.eigvalsh(a, "U"),
                               rtol=1e-12)


def f_reconstruct(a):
    # v diag(w) v^T rebuilds the symmetric matrix
    w, v = np.linalg.eigh(a)
    return np.sum(np.sin((v * w[..., None, :]) @ np.swapaxes(v, -1, -2)))


def f_eigenvalue_energy(a):
    return np.sum(np.linalg.eigvalsh(a) ** 2)


def f_isolated_projector(a):
    # the projector on the eigenvector of the largest eigenvalue (sign-free)
    v = np.linalg.eigh(a)[1]
    return np.sin(v[..., :, 2:] * v[..., None, :, 2])


REPEATED = np.diag([2.0, 2.0, 5.0])     # eigh returns the eigenvalue 2 twice, exactly


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_eigh_repeated_eigenvalues():
    assert np.linalg.eigvalsh(REPEATED)[0] == np.linalg.eigvalsh(REPEATED)[1]
    # functions of the eigenvalues, and of eigenvectors of the other eigenvalues: exact
    check_vjp(f_eigenvalue_energy, (REPEATED,))
    check_jvp(f_eigenvalue_energy, (REPEATED,))
    check_vjp(f_isolated_projector, (REPEATED,))
    check_jvp(f_isolated_projector, (REPEATED,))
    # a function of how the equal eigenvalues' eigenvectors mix: not silently finite
    assert not np.all(np.isfinite(s2sad.grad(f_reconstruct)(REPEATED)))
    x = distinct_symmetric((3, 3), 14)
    check_vjp(f_reconstruct, (x,))


def test_eigh_rejects_a_bad_uplo():
    def f(a):
        return np.linalg.eigh(a, UPLO="X")[0]
    with pytest.raises((ValueError, CompileError), match="UPLO must be 'L' or 'U'"):
        s2sad.grad(lambda_sum(f))(np.eye(2))


def lambda_sum(f):
    def g(a):
        return np.sum(f(a))
    return g


# ============================================================== second order
def sum_sin(q):
    return np.sum(q * np.sin(q))


def so_solve(a, b):
    return sum_sin(np.linalg.solve(a, b))


def so_slogdet(a):
    return sum_sin(np.linalg.slogdet(a)[1])


def so_cholesky(a):
    return sum_sin(np.linalg.cholesky(a))


def so_eigh(a):
    w, v = np.linalg.eigh(a, UPLO="U")
    return sum_sin(w) + sum_sin(v * v[..., :1, :])


def so_eigvalsh(a):
    return sum_sin(np.linalg.eigvalsh(a))


def so_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return sum_sin(s) + sum_sin(u * u[..., :1, :]) + sum_sin(vh * vh[..., :, :1])


def so_norms(a):
    return np.linalg.norm(a, 2) + np.linalg.norm(a, "nuc") * np.linalg.norm(a, -2, (0, 1))


def so_qr(a):
    q, r = np.linalg.qr(a)
    return sum_sin(q) + sum_sin(r)


def so_pinv(a):
    return sum_sin(np.linalg.pinv(a))


def so_power(a):
    return sum_sin(np.linalg.matrix_power(a, 3)) + sum_sin(np.linalg.matrix_power(a, -2))


def so_tensorsolve(a, b):
    return sum_sin(np.linalg.tensorsolve(a, b)) + sum_sin(np.linalg.tensorinv(a))


SECOND_ORDER = [
    (so_solve, (well_conditioned((3, 3), 20), normal(3, 21))),
    (so_solve, (well_conditioned((2, 3, 3), 22), normal((3, 2), 23))),
    (so_slogdet, (well_conditioned((2, 3, 3), 24),)),
    (so_cholesky, (spd((3, 3), 25),)),
    (so_eigh, (distinct_symmetric((3, 3), 26),)),
    (so_eigvalsh, (distinct_symmetric((2, 3, 3), 27),)),
    (so_svd, (np.array([[3.0, 1.0, 0.5], [0.2, -2.0, 1.0]]),)),
    (so_svd, (np.array([[[3.0, 1.0], [0.5, 0.2], [-2.0, 1.0]]]),)),
    (so_norms, (np.array([[3.0, 1.0, 0.5], [0.2, -2.0, 1.0], [1.0, 0.3, 1.5]]),)),
    (so_qr, (normal((3, 2), 30),)),
    (so_pinv, (normal((2, 3), 31),)),
    (so_power, (0.3 * normal((3, 3), 32) + np.eye(3),)),
    (so_tensorsolve, (well_conditioned((4, 4), 33).reshape(2, 2, 2, 2), normal((2, 2), 34))),
]


@pytest.mark.parametrize("fn, args", SECOND_ORDER, ids=lambda v: getattr(v, "__name__", ""))
def test_second_order(fn, args):
    s2sad.check_grads(fn, args, order=2, modes=("rev", "fwd"))


def test_hessian_of_logabsdet_in_closed_form():
    # d2 log|det a| [h, k] = -tr(a^-1 h a^-1 k)
    a, h = well_conditioned((3, 3), 28), normal((3, 3), 29)
    inv = np.linalg.inv(a)
    _, hvp = s2sad.jvp(s2sad.grad(f_logabsdet), (a,), (h,))
    np.testing.assert_allclose(hvp, -(inv @ h @ inv).T, rtol=1e-9, atol=1e-12)


# ======================================================================== svd
def svd_features(u, s, vh):
    """Sign-free functions of the singular vectors (u's and v's columns flip together)."""
    return (s, u * u[..., :1, :], vh * vh[..., :, :1],
            np.sin(u[..., :, :1] * vh[..., :1, :]))


def f_svd_reduced(a):
    return svd_features(*np.linalg.svd(a, full_matrices=False))


def f_svd_full_leading(a):
    # full_matrices=True (NumPy's default), using the columns the reduced SVD has
    u, s, vh = np.linalg.svd(a)
    k = s.shape[-1]
    return svd_features(u[..., :, :k], s, vh[..., :k, :])


def f_singular_values(a):
    return np.linalg.svd(a, compute_uv=False)


SVD_SHAPES = [(3, 3), (4, 2), (2, 4), (2, 3, 5), (2, 1, 4, 3)]


def distinct_singular(shape, seed):
    """Singular values 1, 2, ... (gaps of 1) in random bases."""
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(normal(shape[:-2] + (m, k), seed))
    v, _ = np.linalg.qr(normal(shape[:-2] + (n, k), seed + 1))
    return (u * np.arange(1.0, k + 1)) @ np.swapaxes(v, -1, -2)


@pytest.mark.parametrize("shape", SVD_SHAPES, ids=str)
@pytest.mark.parametrize("fn", [f_svd_reduced, f_svd_full_leading, f_singular_values],
                         ids=lambda f: f.__name__)
def test_svd(shape, fn):
    a = distinct_singular(shape, 40)
    grads = check_vjp(fn, (a,))
    assert grads[0].shape == a.shape
    check_jvp(fn, (a,))


@pytest.mark.parametrize("full", [False, True])
def test_svd_values_match_numpy(full):
    a = normal((2, 4, 3), 41)

    def f(a):
        return np.linalg.svd(a, full_matrices=full)
    u, s, vh = s2sad.jit(f)(a)
    want = np.linalg.svd(a, full_matrices=full)
    assert u.shape == want[0].shape and vh.shape == want[2].shape
    np.testing.assert_allclose(s, want[1], rtol=1e-12)
    np.testing.assert_allclose((u[..., :3] * s[..., None, :]) @ vh[..., :3, :], a, atol=1e-12)
    np.testing.assert_allclose(s2sad.jit(f_singular_values)(a), want[1], rtol=1e-12)


def f_full_u(a):
    return np.linalg.svd(a)[0]


def test_svd_full_matrices_extra_columns_have_no_gradient():
    a = normal((4, 2), 42)
    with pytest.raises(ValueError, match="extra columns of u"):
        s2sad.vjp(f_full_u, a)[1](np.ones((4, 4)))
    _, tangent = s2sad.jvp(f_full_u, (a,), (normal((4, 2), 43),))
    assert np.all(np.isfinite(tangent[:, :2])) and np.all(np.isnan(tangent[:, 2:]))
    # a square input has no extra columns
    check_vjp(f_svd_full_leading, (distinct_singular((3, 3), 44),))


def test_singular_values_gradient_in_closed_form():
    # ds_k/da = u_k v_k^T
    a = distinct_singular((4, 3), 45)
    w = normal(3, 46)
    u, _, vh = np.linalg.svd(a, full_matrices=False)

    def f(a):
        return np.sum(w * np.linalg.svd(a, compute_uv=False))
    np.testing.assert_allclose(s2sad.grad(f)(a), (u * w) @ vh, rtol=1e-10, atol=1e-12)


def test_svd_rejects_hermitian():
    def f(a):
        return np.sum(np.linalg.svd(a, hermitian=True)[1])
    with pytest.raises((ValueError, CompileError), match="hermitian=True"):
        s2sad.grad(f)(np.eye(2))


# ======================================================================= norm
INF = float("inf")
NORM_CASES = [
    # (ord, axis, input shape): every matrix ord over the last two or other axes
    (2, None, (3, 4)), (-2, None, (4, 3)), ("nuc", None, (3, 4)), (2, None, (5,)),
    (2, (0, 1), (3, 4)), (-2, (1, 0), (3, 4)), ("nuc", (-2, -1), (2, 3, 4)),
    (2, (0, 2), (3, 2, 4)), (-2, (2, 0), (3, 2, 4)), ("nuc", (1, 2), (2, 4, 3)),
    ("fro", (0, 2), (3, 2, 4)), (1, (-1, -2), (2, 3, 4)), (-1, (0, 1), (2, 3, 4)),
    (INF, (-2, -1), (2, 3, 4)), (-INF, (2, 1), (2, 3, 4)), (None, (0, 1), (2, 3, 4)),
    # vector ords over one axis
    (None, 0, (3, 4)), (1, 1, (3, 4)), (2, -1, (2, 3, 4)), (INF, 0, (3, 4)),
    (-INF, 1, (3, 4)), (3, 1, (3, 4)), (0.5, 0, (3, 4)), (-1, 1, (3, 4)), (-2, 0, (3, 4)),
    (-1, None, (3, 4)), (INF, None, (5,)), (-INF, None, (5,)), (1, None, (5,)),
]


def make_norm(ord, axis, keepdims):
    def f_norm(x):
        return np.linalg.norm(x, ord, axis, keepdims)
    return f_norm


def norm_input(shape):
    """Entries 0.3 apart in magnitude, none 0: no ties for max/min, and distinct
    singular values for these seeds."""
    n = int(np.prod(shape))
    rng = np.random.default_rng(47)
    values = (rng.permutation(n) + 1) * 0.3 * np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return values.reshape(shape)


@pytest.mark.parametrize("ord,axis,shape", NORM_CASES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm(ord, axis, shape, keepdims):
    x = norm_input(shape)
    fn = make_norm(ord, axis, keepdims)
    expected = np.linalg.norm(x, ord, axis, keepdims)
    got = s2sad.jit(fn)(x)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    grads = check_vjp(fn, (x,))
    assert grads[0].shape == x.shape
    check_jvp(fn, (x,))


def test_norm_of_a_vector_with_ord_minus_one_is_not_a_column_norm():
    # NumPy's vector -1 norm (sum 1/|x|)^-1 is not the -1 norm of the column x:
    # refused, not silently the column's
    def f(x):
        return np.linalg.norm(x, -1)
    with pytest.raises(ValueError, match="give dim=0"):
        s2sad.jit(f)(np.array([1.0, 2.0]))


# ========================================================================= qr
def f_qr(a):
    q, r = np.linalg.qr(a)
    return q, r


def f_qr_r(a):
    return np.linalg.qr(a, mode="r")


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4, 3), (2, 1, 3, 3)], ids=str)
@pytest.mark.parametrize("fn", [f_qr, f_qr_r], ids=lambda f: f.__name__)
def test_qr(shape, fn):
    a = normal(shape, 50)
    got = s2sad.jit(fn)(a)
    want = np.linalg.qr(a, mode="r" if fn is f_qr_r else "reduced")
    for g, w in zip(got if fn is f_qr else (got,), want if fn is f_qr else (want,)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    grads = check_vjp(fn, (a,))
    assert grads[0].shape == a.shape
    check_jvp(fn, (a,))


def test_qr_of_a_wide_matrix_has_no_derivative():
    with pytest.raises(ValueError, match="wide matrix"):
        s2sad.grad(lambda_sum(f_qr_r))(normal((2, 4), 51))


def test_qr_rejects_other_modes():
    def f(a):
        return np.linalg.qr(a, mode="complete")[0]
    with pytest.raises((ValueError, CompileError), match="mode='complete' is not supported"):
        s2sad.grad(lambda_sum(f))(normal((3, 3), 52))


# ======================================================================= pinv
def f_pinv(a):
    return np.linalg.pinv(a)


def f_pinv_rcond(a):
    return np.linalg.pinv(a, rcond=1e-10)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 5)], ids=str)
@pytest.mark.parametrize("fn", [f_pinv, f_pinv_rcond], ids=lambda f: f.__name__)
def test_pinv(shape, fn):
    a = normal(shape, 53)
    np.testing.assert_allclose(s2sad.jit(fn)(a), fn(a), rtol=1e-10, atol=1e-12)
    grads = check_vjp(fn, (a,))
    assert grads[0].shape == a.shape
    check_jvp(fn, (a,))


def test_pinv_of_an_invertible_matrix_has_the_inverses_gradient():
    a, w = well_conditioned((3, 3), 54), normal((3, 3), 55)

    def f(a):
        return np.sum(w * np.linalg.pinv(a))
    inv = np.linalg.inv(a)
    np.testing.assert_allclose(s2sad.grad(f)(a), -inv.T @ w @ inv.T, rtol=1e-9, atol=1e-12)


# =============================================================== matrix_power
def make_power(n):
    def f_power(a):
        return np.linalg.matrix_power(a, n)
    return f_power


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, -1, -2, -3])
def test_matrix_power(n):
    a = 0.3 * normal((2, 3, 3), 56) + np.eye(3)
    fn = make_power(n)
    np.testing.assert_allclose(s2sad.jit(fn)(a), np.linalg.matrix_power(a, n), rtol=1e-12)
    grads = check_vjp(fn, (a,))
    if n == 0:
        assert np.all(grads[0] == 0)
    check_jvp(fn, (a,))


def test_matrix_power_needs_an_int():
    with pytest.raises((TypeError, CompileError), match="exponent n must be an int"):
        s2sad.grad(lambda_sum(make_power(1.5)))(np.eye(2))


# ================================================= tensorinv, tensorsolve, eig
def f_tensorinv(a):
    return np.linalg.tensorinv(a, ind=1)


def f_tensorinv2(a):
    return np.linalg.tensorinv(a)


def f_tensorsolve(a, b):
    return np.linalg.tensorsolve(a, b)


def f_tensorsolve_axes(a, b):
    return np.linalg.tensorsolve(a, b, axes=(0,))


def well_conditioned_tensor(shape, seed):
    n = int(np.prod(shape)) // int(np.sqrt(np.prod(shape)))
    return well_conditioned((n, n), seed).reshape(shape)


def test_tensorinv():
    for fn, shape in ((f_tensorinv, (6, 2, 3)), (f_tensorinv2, (2, 3, 6))):
        a = well_conditioned_tensor(shape, 57)
        np.testing.assert_allclose(s2sad.jit(fn)(a), fn(a), rtol=1e-12)
        check_vjp(fn, (a,))
        check_jvp(fn, (a,))


def test_tensorsolve():
    a, b = well_conditioned_tensor((2, 3, 2, 3), 58), normal((2, 3), 59)
    for fn in (f_tensorsolve, f_tensorsolve_axes):
        np.testing.assert_allclose(s2sad.jit(fn)(a, b), fn(a, b), rtol=1e-12)
        check_vjp(fn, (a, b))
        check_jvp(fn, (a, b))


@pytest.mark.parametrize("name", ["eig", "eigvals"])
def test_eig_of_a_real_matrix_needs_a_real_loss(name):
    """eig makes complex values of a real matrix: their sum (complex for a rotation)
    is refused as a loss, its real part (the trace) has the gradient I."""
    fn = getattr(np.linalg, name)
    rotation = np.array([[0.1, -1.0], [1.0, 0.1]])

    def eigenvalues(a):
        out = fn(a)
        return out[0] if name == "eig" else out

    def f(a):
        return np.sum(eigenvalues(a))

    def f_real(a):
        return np.real(np.sum(eigenvalues(a)))
    with pytest.raises(TypeError, match="real-valued output"):
        s2sad.grad(f)(rotation)
    np.testing.assert_allclose(s2sad.grad(f_real)(rotation), np.eye(2), atol=1e-12)


# ======================================================= det and inv, batched
def f_det(a):
    return np.linalg.det(a)


def f_inv(a):
    return np.linalg.inv(a)


@pytest.mark.parametrize("fn", [f_det, f_inv], ids=lambda f: f.__name__)
def test_det_and_inv_batched(fn):
    a = well_conditioned((2, 3, 3, 3), 60)
    np.testing.assert_allclose(s2sad.jit(fn)(a), fn(a), rtol=1e-12)
    check_vjp(fn, (a,))
    check_jvp(fn, (a,))
