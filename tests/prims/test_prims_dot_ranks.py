"""``np.dot`` and ``np.tensordot`` where what they do depends on ranks known
only at run time: a 0-D operand of ``np.dot`` multiplies, a second operand of
3 or more dimensions is contracted on its second-to-last axis, and
``np.tensordot(a, b, np.ndim(b))`` takes its count of axes from a run-time
rank.  Values against NumPy, derivatives (to second order, reverse and
forward over reverse) against float64 central differences; complex operands
along the real and the imaginary direction of every element.
"""
import numpy as np
import pytest

import s2sad

RNG = np.random.default_rng(27)


def normal(*shape):
    return np.asarray(RNG.standard_normal(shape))


def sin_dot(a, b):
    return np.sin(np.dot(a, b))


@pytest.mark.parametrize("sa, sb", [
    ((), ()), ((), (3,)), ((3,), ()), ((2, 3), ()), ((), (2, 3, 4)),
    ((3,), (2, 3, 4)), ((2, 2, 3), (2, 3, 4)), ((2, 3), (3, 4)), ((3,), (3,)),
])
def test_dot_of_every_rank(sa, sb):
    a, b = normal(*sa), normal(*sb)
    got, _ = s2sad.jvp(sin_dot, (a, b), (a, b))
    np.testing.assert_allclose(got, sin_dot(a, b), rtol=1e-12)
    s2sad.check_grads(sin_dot, (a, b), order=2)


def contract_all_of_b(a, b):
    return np.sum(np.sin(np.tensordot(a, b, np.ndim(b))))


def contract_all_of_v(v, b):
    return np.tensordot(v, b, axes=np.ndim(v)) ** 2


@pytest.mark.parametrize("fn, sa, sb", [
    (contract_all_of_b, (2, 3, 4), (3, 4)),
    (contract_all_of_b, (2, 3), ()),
    (contract_all_of_v, (2, 3), (2, 3, 4)),
    (contract_all_of_v, (), (2, 3)),
    (contract_all_of_v, (4,), (4,)),
])
def test_tensordot_with_a_run_time_count_of_axes(fn, sa, sb):
    a, b = normal(*sa), normal(*sb)
    got, _ = s2sad.jvp(fn, (a, b), (a, b))
    np.testing.assert_allclose(got, fn(a, b), rtol=1e-12)
    s2sad.check_grads(fn, (a, b), order=2)


def numeric_complex_grad(f, z, *rest, eps=1e-6):
    """df/dx - 1j df/dy of a real ``f`` (JAX's convention), by central differences."""
    g = np.zeros_like(z)
    for k in range(z.size):
        for direction in (1.0, 1j):
            up, down = z.copy(), z.copy()
            up.flat[k] += eps * direction
            down.flat[k] -= eps * direction
            slope = (f(up, *rest) - f(down, *rest)) / (2 * eps)
            g.flat[k] += slope if direction == 1.0 else -1j * slope
    return g


def complex_dot_power(a, b):
    p = np.dot(a, b)
    return np.real(np.sum(p * np.conj(p)))


def complex_tensordot_power(a, b):
    p = np.tensordot(a, b, np.ndim(b))
    return np.real(np.sum(p * np.conj(p)))


@pytest.mark.parametrize("fn, sa, sb", [
    (complex_dot_power, (3,), (3, 2)),
    (complex_dot_power, (2, 3), (2, 3, 4)),
    (complex_tensordot_power, (2, 3, 4), (3, 4)),
])
def test_complex_operands(fn, sa, sb):
    a = normal(*sa) + 1j * normal(*sa)
    b = normal(*sb)
    np.testing.assert_allclose(s2sad.grad(fn)(a, b), numeric_complex_grad(fn, a, b),
                               rtol=1e-6, atol=1e-8)


W3 = normal(3) + 1j * normal(3)


def complex_gradient_pairing(a, b):
    """A real function of the complex gradient: its derivative goes through the
    matmul gradients' own rules."""
    g = s2sad.grad(complex_dot_power)(a, b)
    return np.real(np.sum(g * W3)) + np.sum(np.abs(g) ** 2)


def test_complex_operands_second_order():
    a = normal(3) + 1j * normal(3)
    b = normal(3, 2)
    np.testing.assert_allclose(s2sad.grad(complex_gradient_pairing)(a, b),
                               numeric_complex_grad(complex_gradient_pairing, a, b),
                               rtol=1e-5, atol=1e-7)
