"""The primitives complex programs stage (``Real``, ``Imag``, ``Conj``, ``Angle``,
``RealOutput``), each by name, against central differences along the real and the
imaginary direction of every input element (JAX's convention: the gradient of
a real ``f`` at ``z`` is ``df/dx - 1j df/dy``)."""
import numpy as np
import pytest

import s2sad
from s2sad.ops import operations as P

RNG = np.random.default_rng(5)
Z = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)
W = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)
real, imag, conj, angle = P.Real(), P.Imag(), P.Conj(), P.Angle()


def f_real(z):
    return np.sum(real(z) ** 3)


def f_imag(z):
    return np.sum(np.sin(imag(z)))


def f_conj(z):
    return np.sum(real(conj(z) * W) ** 2)


def f_angle(z):
    return np.sum(angle(z) ** 2)


def numeric_complex_grad(f, z, eps=1e-6):
    g = np.zeros_like(z)
    for k in range(z.size):
        for direction in (1.0, 1j):
            up, down = z.copy(), z.copy()
            up[k] += eps * direction
            down[k] -= eps * direction
            slope = (f(up) - f(down)) / (2 * eps)
            g[k] += slope if direction == 1.0 else -1j * slope
    return g


@pytest.mark.parametrize("f", [f_real, f_imag, f_conj, f_angle], ids=lambda f: f.__name__)
def test_complex_part_primitive_gradient(f):
    g = s2sad.grad(f)(Z)
    np.testing.assert_allclose(g, numeric_complex_grad(f, Z), rtol=1e-6, atol=1e-8)


def test_real_output_checks_the_output_of_a_complex_program():
    grad_fn = s2sad.grad(f_angle)
    grad_fn(Z)
    assert "RealOutput" in s2sad.get_ir(grad_fn, Z, stage="forward")


@pytest.mark.parametrize("f", [f_real, f_imag, f_conj, f_angle], ids=lambda f: f.__name__)
def test_complex_part_primitive_second_order(f):
    """The derivative of ``re(<grad f(z), v>)``: the rules differentiate again."""
    v = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)

    def directional(z):
        return np.real(np.sum(s2sad.grad(f)(z) * np.conj(v)))
    np.testing.assert_allclose(s2sad.grad(directional)(Z), numeric_complex_grad(directional, Z),
                               rtol=1e-5, atol=1e-6)
