"""Complex inputs through the elementwise functions, contractions, reductions and norms
beyond the basic arithmetic, each checked against central differences along the real
and the imaginary direction of every input element (JAX's convention: the gradient
of a real ``f`` at ``z`` is ``df/dx - 1j df/dy``), forward mode against directional
differences, and second order through ``re(<grad f(z), v>)``."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError

from gradcheck import fd_complex_grad, fd_directional

try:        # SciPy is optional: its tests are skipped without it
    from scipy import linalg, special
except ImportError:     # pragma: no cover - depends on the environment
    linalg = special = None
needs_scipy = pytest.mark.skipif(
    linalg is None, reason="SciPy is optional and not installed (pip install -e '.[scipy]'): "
    "the scipy.linalg/scipy.special rules are checked where it is")

RNG = np.random.default_rng(27)


def cplx(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


# points on both sides of the imaginary axis: arccosh's derivative flips sign there
# if written as 1/sqrt(z^2 - 1) instead of the principal branch's
Z = np.array([0.3 + 0.4j, -0.7 + 0.2j, 1.5 - 0.6j, -1.2 - 0.9j])
W = cplx(4)
V = cplx(4)
UNARY = [np.sinh, np.cosh, np.tan, np.expm1, np.log1p, np.arcsinh, np.arccosh, np.arctanh]


def _loss(u):
    return np.sum(np.real(u * W)) + np.sum(np.abs(u) ** 2)


# one function (one code object) each: a closure over ``fn`` would do, but the
# compiled second-order program of a closure is not told apart by what it captures
def f_sinh(z):
    return _loss(np.sinh(z))


def f_cosh(z):
    return _loss(np.cosh(z))


def f_tan(z):
    return _loss(np.tan(z))


def f_expm1(z):
    return _loss(np.expm1(z))


def f_log1p(z):
    return _loss(np.log1p(z))


def f_arcsinh(z):
    return _loss(np.arcsinh(z))


def f_arccosh(z):
    return _loss(np.arccosh(z))


def f_arctanh(z):
    return _loss(np.arctanh(z))


LOSSES = dict((f.__name__[2:], f) for f in (f_sinh, f_cosh, f_tan, f_expm1, f_log1p,
                                             f_arcsinh, f_arccosh, f_arctanh))


def assert_grad_fd(f, z, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(s2sad.grad(f)(z), fd_complex_grad(f, z), rtol=rtol, atol=atol)


def second_order(f, z, v):
    """``re(<grad f(z), v>)``, a real function whose gradient needs f's rules differentiated."""
    def directional(x):
        return np.real(np.sum(s2sad.grad(f)(x) * np.conj(v)))
    return directional


@pytest.mark.parametrize("fn", UNARY, ids=lambda fn: fn.__name__)
def test_holomorphic_unary_reverse_forward_second_order(fn):
    f = LOSSES[fn.__name__]
    assert_grad_fd(f, Z)
    out, tangent = s2sad.jvp(fn, (Z,), (V,))
    np.testing.assert_allclose(out, fn(Z))
    np.testing.assert_allclose(tangent, fd_directional(fn, Z, V), rtol=1e-6, atol=1e-8)
    d = second_order(f, Z, V)
    np.testing.assert_allclose(s2sad.grad(d)(Z), fd_complex_grad(d, Z), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", UNARY, ids=lambda fn: fn.__name__)
def test_holomorphic_unary_complex_derivative(fn):
    def f(z):
        return np.sum(fn(z))
    h = 1e-6
    np.testing.assert_allclose(s2sad.grad(f, holomorphic=True)(Z),
                               (fn(Z + h) - fn(Z - h)) / (2 * h), rtol=1e-6, atol=1e-8)


def kron_loss(a, b):
    return np.sum(np.abs(np.kron(a, b) - 1j) ** 2)


def tensordot_loss(a, b):
    return np.sum(np.real(np.tensordot(a, b, axes=([1], [0])) * np.conj(a[0, 0])))


def matvec_loss(a, x):
    return np.sum(np.abs(a @ x + 0.5j) ** 2)


@pytest.mark.parametrize("f,args", [
    (kron_loss, (cplx(2, 2), cplx(3, 2))),
    (tensordot_loss, (cplx(2, 3), cplx(3, 4))),
    (matvec_loss, (cplx(2, 3), cplx(3))),
], ids=["kron", "tensordot", "matmul"])
def test_contractions_both_arguments_and_second_order(f, args):
    a, b = args
    ga, gb = s2sad.grad(f, grad_position=(0, 1))(a, b)
    np.testing.assert_allclose(ga, fd_complex_grad(lambda x: f(x, b), a), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gb, fd_complex_grad(lambda y: f(a, y), b), rtol=1e-6, atol=1e-6)
    ta, tb = cplx(*a.shape), cplx(*b.shape)
    _, tangent = s2sad.jvp(f, (a, b), (ta, tb))
    np.testing.assert_allclose(tangent, fd_directional(lambda s: f(a + s * ta, b + s * tb), 0.0,
                                                       1.0), rtol=1e-6, atol=1e-6)
    va, vb = cplx(*a.shape), cplx(*b.shape)

    def d(x, y):
        g, h = s2sad.grad(f, grad_position=(0, 1))(x, y)
        return np.real(np.sum(g * np.conj(va)) + np.sum(h * np.conj(vb)))
    da, db = s2sad.grad(d, grad_position=(0, 1))(a, b)
    np.testing.assert_allclose(da, fd_complex_grad(lambda x: d(x, b), a), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(db, fd_complex_grad(lambda y: d(a, y), b), rtol=1e-5, atol=1e-5)


def roll_prod(z):
    return np.sum(np.abs(np.prod(np.roll(z, 1, axis=0) * W[:3, None], axis=0)) ** 2)


def prod_with_zero(z):
    return np.real(np.prod(z * np.array([1.0, 0.0, 1.0])) * W[0]) + np.sum(np.abs(z))


def test_roll_and_prod():
    z = cplx(3, 2)
    assert_grad_fd(roll_prod, z)
    d = second_order(roll_prod, z, cplx(3, 2))
    np.testing.assert_allclose(s2sad.grad(d)(z), fd_complex_grad(d, z), rtol=1e-5, atol=1e-5)
    assert_grad_fd(prod_with_zero, cplx(3))
    t = cplx(3, 2)
    _, tangent = s2sad.jvp(roll_prod, (z,), (t,))
    np.testing.assert_allclose(tangent, fd_directional(roll_prod, z, t), rtol=1e-6, atol=1e-6)


def real_if_close(z):
    return np.real_if_close(z)


def test_real_if_close_tangents_follow_the_result_type():
    """(the RealLike primitive: tangent and cotangent take the result's real or complex type)"""
    nearly_real = np.array([1.0 + 0j, -2.0 + 0j])
    t = np.array([0.5 + 2j, -1j])
    out, tangent = s2sad.jvp(real_if_close, (nearly_real,), (t,))
    assert not np.iscomplexobj(out) and not np.iscomplexobj(tangent)
    np.testing.assert_allclose(tangent, t.real)
    (ct,) = s2sad.vjp(real_if_close, nearly_real)[1](np.array([1.0, 3.0]))
    np.testing.assert_allclose(ct, [1.0, 3.0])
    out, tangent = s2sad.jvp(real_if_close, (Z,), (t[:1].repeat(4),))
    np.testing.assert_allclose(tangent, t[:1].repeat(4))      # complex: the identity


def max_loss(z):
    return np.real(np.max(z) * W[0]) + np.real(np.min(z) * W[1])


def test_max_min_follow_numpys_lexicographic_choice():
    """NumPy orders complex numbers by real part, then imaginary part: the gradient goes
    to the element it picks (``g = w`` there for ``re(w * z_k)``)."""
    z = np.array([1 + 2j, 1 - 1j, 0.5 + 3j, -1 + 1j, -1 + 0.5j])
    g = s2sad.grad(max_loss)(z)
    expected = np.zeros(5, complex)
    expected[0] = W[0]          # max: real parts tie at 1, imaginary 2 > -1
    expected[4] = W[1]          # min: real parts tie at -1, imaginary 0.5 < 1
    np.testing.assert_allclose(g, expected)
    smooth = cplx(5)            # distinct real parts: differentiable, checked by differences
    assert_grad_fd(max_loss, smooth)
    _, tangent = s2sad.jvp(lambda x: np.max(x, axis=0), (smooth,), (W[:1].repeat(5),))
    np.testing.assert_allclose(tangent, W[0])


def norm_vector(z):
    return np.linalg.norm(z)


def norm_fro(z):
    return np.linalg.norm(z, "fro")


def norm_axis(z):
    return np.sum(np.linalg.norm(z, axis=0) * np.array([1.0, 2.0, 3.0]))


def norm_axis_keep(z):
    return np.sum(np.linalg.norm(z, axis=1, keepdims=True) ** 3)


def norm_matrix_default(z):
    return np.linalg.norm(z)


def var_all(z):
    return np.var(z)


def std_axis(z):
    return np.sum(np.std(z, axis=1, ddof=1) * np.array([1.0, -2.0]))


def var_keep(z):
    return np.sum(np.var(z, axis=0, keepdims=True) ** 2)


@pytest.mark.parametrize("f,z", [(norm_vector, cplx(4)), (norm_fro, cplx(2, 3)),
                                 (norm_axis, cplx(2, 3)), (norm_axis_keep, cplx(2, 3)),
                                 (norm_matrix_default, cplx(2, 3)), (var_all, cplx(2, 3)),
                                 (std_axis, cplx(2, 3)), (var_keep, cplx(2, 3))],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_norms_and_spreads_of_complex_arrays_are_real(f, z):
    value = s2sad.jit(f)(z)
    assert not np.iscomplexobj(value)
    np.testing.assert_allclose(value, f(z), rtol=1e-12)
    assert_grad_fd(f, z)
    t = cplx(*z.shape)
    _, tangent = s2sad.jvp(f, (z,), (t,))
    assert not np.iscomplexobj(tangent)
    np.testing.assert_allclose(tangent, fd_directional(f, z, t), rtol=1e-6, atol=1e-7)
    d = second_order(f, z, cplx(*z.shape))
    np.testing.assert_allclose(s2sad.grad(d)(z), fd_complex_grad(d, z), rtol=1e-5, atol=1e-5)


def angle_times(x):
    return np.sum(np.angle(x) * x)


def test_angle_of_a_real_array_is_real_with_zero_slope():
    x = np.array([0.7, -1.5, 2.0, -0.25])
    assert s2sad.jit(angle_times)(x).dtype == np.float64
    g = s2sad.grad(angle_times)(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, np.angle(x))      # d(angle(x) x)/dx = angle(x)
    _, tangent = s2sad.jvp(angle_times, (x,), (np.ones(4),))
    np.testing.assert_allclose(tangent, np.sum(np.angle(x)))
    np.testing.assert_allclose(s2sad.grad(lambda v: np.sum(s2sad.grad(angle_times)(v)))(x), 0)


M3 = 3 * np.eye(3) + 0.5 * cplx(3, 3)
W3 = cplx(3, 3)


def sqrtm_loss(a):
    root = linalg.sqrtm(a)
    return np.sum(np.abs(root) ** 2) + np.real(np.sum(root * W3))


def sqrtm_of(a):
    return linalg.sqrtm(a)


@needs_scipy
def test_sqrtm_of_a_complex_matrix():
    """The Sylvester-equation rule ``X dX + dX X = dA`` holds for complex roots too."""
    assert_grad_fd(sqrtm_loss, M3, rtol=1e-6, atol=1e-6)
    t = cplx(3, 3)
    out, tangent = s2sad.jvp(sqrtm_of, (M3,), (t,))
    np.testing.assert_allclose(out, linalg.sqrtm(M3))
    np.testing.assert_allclose(tangent, fd_directional(linalg.sqrtm, M3, t), rtol=1e-6, atol=1e-7)
    d = second_order(sqrtm_loss, M3, cplx(3, 3))
    np.testing.assert_allclose(s2sad.grad(d)(M3), fd_complex_grad(d, M3), rtol=1e-5, atol=1e-5)


def erf_loss(z):
    return np.sum(np.abs(special.erf(z)))


@needs_scipy
def test_erf_of_complex_values_is_refused():
    """NumPy has no complex erf and s2sad's falls back to ``math.erf`` without SciPy."""
    with pytest.raises(CompileError, match="'Erf' has no complex rule"):
        s2sad.grad(erf_loss)(Z)
