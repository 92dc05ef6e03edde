"""Complex SVD, complex Hermitian eigh and the general eig, against central
differences along the real and the imaginary direction of every input element
(JAX's convention: the gradient of a real ``f`` at ``z`` is ``df/dx - 1j df/dy``).

Singular vectors and eigenvectors are fixed only up to a phase each, so every
function checked here ignores the phases: singular values, eigenvalues, ``|u|``,
``|v|``, and products such as ``u_i v_i^H``.
"""
import numpy as np
import pytest

import s2sad

H = 1e-6
RNG = np.random.default_rng(27)


def cnormal(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def fd_grad(f, z):
    """``df/dx - 1j df/dy`` (``df/dx`` for a real ``z``) by central differences."""
    g = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[i] = 1
        g[i] = (f(z + H * e) - f(z - H * e)) / (2 * H)
        if np.iscomplexobj(z):
            g[i] -= 1j * (f(z + 1j * H * e) - f(z - 1j * H * e)) / (2 * H)
    return g


def check_both_modes(f, z):
    """Reverse mode against differences; forward mode along a random direction."""
    np.testing.assert_allclose(s2sad.grad(f)(z), fd_grad(f, z), rtol=1e-5, atol=1e-6)
    t = RNG.standard_normal(z.shape)
    if np.iscomplexobj(z):
        t = t + 1j * RNG.standard_normal(z.shape)
    _, tangent = s2sad.jvp(f, (z,), (t,))
    np.testing.assert_allclose(tangent, (f(z + H * t) - f(z - H * t)) / (2 * H),
                               rtol=1e-5, atol=1e-6)


def check_second_order(f, z):
    """The derivative of ``re(<grad f(z), conj(w)>)``: the rules differentiate again."""
    w = cnormal(*z.shape) if np.iscomplexobj(z) else RNG.standard_normal(z.shape)

    def directional(z):
        return np.real(np.sum(s2sad.grad(f)(z) * np.conj(w)))
    np.testing.assert_allclose(s2sad.grad(directional)(z), fd_grad(directional, z),
                               rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ svd
def svd_loss(full):
    def f(x):
        u, s, vh = np.linalg.svd(x, full_matrices=full)
        k = s.shape[-1]
        u, vh = u[..., :, :k], vh[..., :k, :]
        return np.sum(np.abs(u) ** 2 * s[..., None, :]) + np.sum(np.abs(vh) ** 3) \
            + np.sum(s ** 2 * np.arange(1.0, k + 1))
    return f


def svd_outer(x):
    """``u_0 v_0^H`` weighted: the phase each pair shares cancels (complex entries)."""
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    outer = u[..., :, :1] * vh[..., :1, :]
    return np.sum(np.real(outer) * np.arange(outer.shape[-1])) + np.sum(np.imag(outer) ** 2)


def singular_values(x):
    return np.sum(np.sin(np.linalg.svd(x, compute_uv=False)))


@pytest.mark.parametrize("full", [False, True], ids=["reduced", "full"])
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (3, 3), (2, 4, 3), (2, 3, 4)])
def test_complex_svd(full, shape):
    check_both_modes(svd_loss(full), cnormal(*shape))


@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3)])
def test_complex_svd_vectors_together(shape):
    check_both_modes(svd_outer, cnormal(*shape))


@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3)])
def test_complex_singular_values_only(shape):
    check_both_modes(singular_values, cnormal(*shape))


def test_complex_svd_second_order():
    check_second_order(svd_loss(False), cnormal(3, 2))
    check_second_order(svd_outer, cnormal(2, 3))


# ---------------------------------------------------------------- norms
@pytest.mark.parametrize("ord_", ["nuc", 2, -2, "fro", None])
def test_complex_matrix_norm(ord_):
    def f(x):
        return np.linalg.norm(x, ord_, axis=(0, 2))
    z = cnormal(4, 2, 3)
    value = f(z)
    assert not np.iscomplexobj(value)
    np.testing.assert_allclose(s2sad.jit(f)(z), value)

    def total(x):
        return np.sum(f(x) ** 2)
    check_both_modes(total, z)


@pytest.mark.parametrize("ord_", [None, 2, 3])
def test_complex_vector_norm_is_real(ord_):
    def f(x):
        return np.linalg.norm(x, ord_)
    z = cnormal(5)
    value, grad = s2sad.value_and_grad(f)(z)
    assert np.isrealobj(value)
    np.testing.assert_allclose(value, f(z))
    np.testing.assert_allclose(grad, fd_grad(f, z), rtol=1e-6, atol=1e-8)


def test_complex_nuclear_norm_second_order():
    check_second_order(lambda x: np.linalg.norm(x, "nuc"), cnormal(3, 2))


# ----------------------------------------------------------------- eigh
def eigh_terms(w, v):
    return np.sum(w * np.arange(1.0, w.shape[-1] + 1)) + np.sum(np.abs(v) ** 3)


def eigh_lower(x):
    return eigh_terms(*np.linalg.eigh(x))


def eigh_upper(x):
    return eigh_terms(*np.linalg.eigh(x, "U"))


EIGH = {"L": eigh_lower, "U": eigh_upper}


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_complex_eigh(uplo, shape):
    """Not Hermitian: only the ``uplo`` triangle (and the diagonal's real part) counts."""
    check_both_modes(EIGH[uplo], cnormal(*shape))


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_complex_eigvalsh(uplo):
    def f(x):
        return np.sum(np.linalg.eigvalsh(x, uplo) ** 3)
    z = cnormal(2, 3, 3)
    check_both_modes(f, z)
    assert np.isrealobj(s2sad.jit(lambda x: np.linalg.eigvalsh(x, uplo))(z))


def test_complex_eigh_second_order():
    # two functions, not two closures of one: a gradient of a closure calling
    # s2sad.grad on a captured function is cached by that function's code
    check_second_order(eigh_lower, cnormal(3, 3))
    check_second_order(eigh_upper, cnormal(3, 3))


# ------------------------------------------------------------------ eig
def eig_loss(x):
    w, v = np.linalg.eig(x)
    return np.sum(np.real(w) * np.imag(w)) + np.sum(np.abs(w) ** 2) \
        + np.sum(np.abs(v) ** 3 * np.arange(v.shape[-1]))


def eigvals_loss(x):
    return np.sum(np.abs(np.linalg.eigvals(x)) ** 3)


@pytest.mark.parametrize("f", [eig_loss, eigvals_loss])
@pytest.mark.parametrize("cplx", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_eig(f, cplx, shape):
    x = cnormal(*shape) if cplx else RNG.standard_normal(shape)
    check_both_modes(f, x)


def test_eig_of_real_input_gives_a_real_gradient():
    """Complex inside, a real input and a real loss: the gradient is real, as JAX's."""
    x = np.array([[0.0, -2.0, 0.5], [1.0, 0.3, 0.0], [0.2, 0.1, 1.5]])   # a complex pair
    assert np.iscomplexobj(np.linalg.eigvals(x))
    g = s2sad.grad(eig_loss)(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, fd_grad(eig_loss, x), rtol=1e-5, atol=1e-6)


def test_eig_second_order():
    check_second_order(eig_loss, RNG.standard_normal((3, 3)))
    check_second_order(eig_loss, cnormal(3, 3))
