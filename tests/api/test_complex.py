"""Complex inputs under JAX's convention: grad of a real f(z) is df/dx - 1j df/dy."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError

H = 1e-6


def fd_complex(f, z):
    """df/dx - 1j df/dy by central differences along each element's two directions."""
    g = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[i] = 1
        dx = (f(z + H * e) - f(z - H * e)) / (2 * H)
        dy = (f(z + 1j * H * e) - f(z - 1j * H * e)) / (2 * H)
        g[i] = dx - 1j * dy
    return g


def sq_norm(z):
    return np.sum(np.real(z * np.conj(z)))


def inner_re(z, w):
    return np.real(np.sum(z * np.conj(w)))


def abs_poly(z):
    return np.sum(np.abs(z ** 3 - 2j * z + 1))


def parts(z):
    return np.sum(np.real(z) ** 2 * np.imag(z) + np.angle(z))


def lin_loss(a, x):
    r = a @ x - 1j
    return np.mean(np.abs(r) ** 2)


def methods(z):
    return np.sum(z.real * z.imag + np.abs(z.conj() * np.exp(z)))


Z = np.array([3 + 4j, 1 - 2j, -0.5 + 0.7j])


@pytest.mark.parametrize("f", [sq_norm, abs_poly, parts, methods])
def test_grad_of_real_function_matches_differences(f):
    np.testing.assert_allclose(s2sad.grad(f)(Z), fd_complex(f, Z), rtol=1e-6, atol=1e-6)


def test_sq_norm_closed_form():
    np.testing.assert_allclose(s2sad.grad(sq_norm)(Z), 2 * np.conj(Z))


def test_two_inputs_and_matmul():
    rng = np.random.default_rng(0)
    w = rng.normal(size=3) + 1j * rng.normal(size=3)
    gz, gw = s2sad.grad(inner_re, grad_position=(0, 1))(Z, w)
    np.testing.assert_allclose(gz, fd_complex(lambda z: inner_re(z, w), Z), atol=1e-6)
    np.testing.assert_allclose(gw, fd_complex(lambda v: inner_re(Z, v), w), atol=1e-6)
    a = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    ga = s2sad.grad(lin_loss)(a, Z)
    np.testing.assert_allclose(ga, fd_complex(lambda m: lin_loss(m, Z), a), atol=1e-6)


def test_real_input_beside_complex_gets_real_gradient():
    def f(x, z):
        return np.sum(np.abs(x * z))
    x = np.array([0.5, -2.0, 1.5])
    g = s2sad.grad(f)(x, Z)
    assert g.dtype == np.float64
    fd = [(f(x + H * e, Z) - f(x - H * e, Z)) / (2 * H) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, atol=1e-6)


def test_real_call_then_complex_call_compiles_again():
    x = np.array([1.0, -2.0, 3.0])
    gf = s2sad.grad(sq_norm)
    np.testing.assert_allclose(gf(x), 2 * x)
    np.testing.assert_allclose(gf(Z), 2 * np.conj(Z))
    np.testing.assert_allclose(gf(x), 2 * x)


def test_jvp_with_complex_tangent():
    def f(z):
        return np.sin(z) * z
    t = np.array([1 - 1j, 2j, 0.5])
    out, tout = s2sad.jvp(f, (Z,), (t,))
    np.testing.assert_allclose(out, f(Z))
    np.testing.assert_allclose(tout, (np.cos(Z) * Z + np.sin(Z)) * t)


def test_unsupported_primitive_is_refused_at_the_line():
    def f(z):
        return np.sum(np.maximum(np.real(z), 0.0) * np.tanh(np.imag(z)))
    with pytest.raises(CompileError, match="no complex rule"):
        s2sad.grad(f)(Z)


def sum_exp(v):
    return np.sum(np.exp(v))


def sum_cube(v):
    return np.sum(v ** 3)


def sum_sin(v):
    return np.sum(np.sin(v))


def test_holomorphic_grads_closed_forms():
    z = np.array([0.3 + 0.4j, -1.2 + 0.1j])
    for f, df in [(sum_exp, np.exp), (sum_cube, 3 * z ** 2), (sum_sin, np.cos)]:
        g = s2sad.grad(f, holomorphic=True)(z)
        np.testing.assert_allclose(g, df(z) if callable(df) else df)
    value, g = s2sad.value_and_grad(lambda v: np.exp(v) * v, holomorphic=True)(
        np.complex128(1 + 1j))
    np.testing.assert_allclose(g, np.exp(1 + 1j) * (2 + 1j))


def test_complex_output_needs_holomorphic():
    with pytest.raises(TypeError, match="real-valued output.*holomorphic=True"):
        s2sad.grad(lambda v: np.sum(v * v))(Z)
    with pytest.raises(TypeError, match="holomorphic=True needs complex inputs"):
        s2sad.grad(lambda v: np.sum(v * v), holomorphic=True)(np.array([1.0]))


def test_holomorphic_jacobians():
    def f(v):
        return np.exp(v) * v[::-1]
    z = np.array([0.3 + 0.4j, -1.2 + 0.1j])
    expect = np.diag(np.exp(z) * z[::-1]) + np.exp(z)[:, None] * np.eye(2)[::-1]
    np.testing.assert_allclose(s2sad.jacfwd(f, holomorphic=True)(z), expect)
    np.testing.assert_allclose(s2sad.jacrev(f, holomorphic=True)(z), expect)
    with pytest.raises(TypeError, match="pass holomorphic=True"):
        s2sad.jacrev(f)(z)
    with pytest.raises(TypeError, match="pass holomorphic=True"):
        s2sad.jacfwd(f)(z)


def test_vdot_conjugates_its_first_argument():
    w = np.array([0.5 - 1j, 2 + 0.25j, -1j])

    def f(z):
        return np.real(np.vdot(z, w)) + np.imag(np.vdot(w, z * z))
    np.testing.assert_allclose(s2sad.grad(f)(Z), fd_complex(f, Z), atol=1e-6)


def test_second_order_through_real_parts():
    def f(z):
        return np.sum(np.abs(z) ** 2 * np.real(z))

    def g(z):
        return np.real(np.sum(s2sad.grad(f)(z) * np.conj(z)))
    np.testing.assert_allclose(s2sad.grad(g)(Z), fd_complex(g, Z), atol=1e-5)


def test_loops_and_indexing():
    def f(z):
        y = z[0]
        for i in range(1, 3):
            y = y * z[i] + np.cumsum(z)[i]
        return np.abs(y) + np.sum(np.abs(z[::-1][:2] * z[1:]))
    np.testing.assert_allclose(s2sad.grad(f)(Z), fd_complex(f, Z), atol=1e-6)


def test_item_assignment_is_refused():
    def f(z):
        y = np.abs(z)
        y[0] = np.abs(z[1])
        return np.sum(y)
    with pytest.raises(CompileError, match="'SetItem' has no complex rule"):
        s2sad.grad(f)(Z)


def _elementwise_exp(z):
    return np.exp(z)


def _elementwise_abs2(z):
    return np.abs(z) ** 2


def test_a_non_scalar_complex_output_is_refused_like_a_scalar_one():
    """A non-scalar output's gradient seeds the adjoint with ones and never reads the
    value: the check that it is real was dropped as dead code, and grad returned the
    holomorphic derivative without holomorphic=True."""
    z = np.array([[0.3 + 0.2j, -0.5 + 1.0j], [1.1 - 0.4j, 0.2 + 0.0j]])
    with pytest.raises(TypeError, match="needs a real-valued output"):
        s2sad.grad(_elementwise_exp)(z)
    np.testing.assert_allclose(s2sad.grad(_elementwise_exp, holomorphic=True)(z), np.exp(z))
    # a real non-scalar output: the sum of |z|^2, whose gradient is df/dx - 1j df/dy = 2 conj(z)
    np.testing.assert_allclose(s2sad.grad(_elementwise_abs2)(z), 2 * np.conj(z))
