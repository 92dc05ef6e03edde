"""``numpy.fft`` against central differences along the real and the imaginary
direction of every input element (JAX's convention), NumPy's values and dtypes,
second order, and the refusal in programs of real inputs."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError

RNG = np.random.default_rng(11)
Z = RNG.standard_normal((4, 5)) + 1j * RNG.standard_normal((4, 5))


def numeric_complex_grad(f, z, eps=1e-6):
    """``df/dx - 1j df/dy`` by central differences, element by element of an n-d ``z``."""
    g = np.zeros_like(z)
    for k in np.ndindex(z.shape):
        for direction in (1.0, 1j):
            up, down = z.copy(), z.copy()
            up[k] += eps * direction
            down[k] -= eps * direction
            slope = (f(up) - f(down)) / (2 * eps)
            g[k] += slope if direction == 1.0 else -1j * slope
    return g


def loss(y):
    """Real, not linear, and weighting the real and imaginary parts differently."""
    return np.sum(np.abs(y) ** 2 * 1.3) + np.sum(np.real(y) ** 3) + np.sum(np.imag(y))


CASES = {
    "fft": lambda z: loss(np.fft.fft(z)),
    "fft_n_pad": lambda z: loss(np.fft.fft(z, n=7, norm="ortho")),
    "fft_n_crop_axis0": lambda z: loss(np.fft.fft(z, n=3, axis=0, norm="forward")),
    "ifft": lambda z: loss(np.fft.ifft(z, n=6)),
    "ifft_backward": lambda z: loss(np.fft.ifft(z, axis=0, norm="backward")),
    "fft2": lambda z: loss(np.fft.fft2(z, s=(3, 6))),
    "ifft2": lambda z: loss(np.fft.ifft2(z, norm="ortho")),
    "fftn": lambda z: loss(np.fft.fftn(z)),
    "ifftn_axes": lambda z: loss(np.fft.ifftn(z, s=(5,), axes=(0,), norm="forward")),
    "rfft": lambda z: loss(np.fft.rfft(np.real(z) * np.imag(z))),
    "rfft_n_odd": lambda z: loss(np.fft.rfft(np.real(z), n=7, norm="ortho")),
    "rfft_crop_axis0": lambda z: loss(np.fft.rfft(np.imag(z), n=3, axis=0)),
    "irfft": lambda z: loss(np.fft.irfft(z)),
    "irfft_n_odd": lambda z: loss(np.fft.irfft(z, n=7, norm="forward")),
    "irfft_n_crop": lambda z: loss(np.fft.irfft(z, n=4, axis=0, norm="ortho")),
    "rfft2": lambda z: loss(np.fft.rfft2(np.real(z), s=(5, 3))),
    "irfft2": lambda z: loss(np.fft.irfft2(z, s=(3, 5), norm="ortho")),
    "rfftn": lambda z: loss(np.fft.rfftn(np.real(z), norm="forward")),
    "irfftn": lambda z: loss(np.fft.irfftn(z)),
    "hfft": lambda z: loss(np.fft.hfft(z, n=7)),
    "ihfft": lambda z: loss(np.fft.ihfft(np.real(z), norm="ortho")),
    "fftshift": lambda z: loss(np.fft.fftshift(z) * np.arange(5.0)),
    "ifftshift_axis0": lambda z: loss(np.fft.ifftshift(z, axes=0) * np.arange(4.0)[:, None]),
    "fftshift_odd": lambda z: loss(np.fft.fftshift(np.fft.fft(z, n=5), axes=(-1,)) * np.arange(5.0)),
    "freq_weighted": lambda z: loss(np.fft.fft(z) * np.fft.fftfreq(z.shape[-1], 0.5)),
    "rfreq_weighted": lambda z: loss(np.fft.rfft(np.real(z), n=7) * np.fft.rfftfreq(7)),
    "roundtrip": lambda z: loss(np.fft.irfft(np.fft.rfft(np.real(z)), n=5) * z),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fft_gradient_against_central_differences(name):
    f = CASES[name]
    np.testing.assert_allclose(s2sad.grad(f)(Z), numeric_complex_grad(f, Z),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["fft_n_pad", "rfft_n_odd", "irfft_n_odd", "irfft2", "hfft"])
def test_fft_forward_mode_against_central_differences(name):
    """``jvp`` along a complex tangent is the directional derivative."""
    f = CASES[name]
    t = RNG.standard_normal(Z.shape) + 1j * RNG.standard_normal(Z.shape)
    eps = 1e-6
    _, tangent = s2sad.jvp(f, (Z,), (t,))
    np.testing.assert_allclose(tangent, (f(Z + eps * t) - f(Z - eps * t)) / (2 * eps),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["fft_n_crop_axis0", "rfft_n_odd", "fftshift_odd", "irfft_n_odd",
                                  "irfft_n_crop", "rfft2", "ihfft"])
def test_fft_second_order(name):
    """The derivative of ``re(<grad f(z), v>)``: the rules differentiate again."""
    f = CASES[name]
    v = RNG.standard_normal(Z.shape) + 1j * RNG.standard_normal(Z.shape)

    def directional(z):
        return np.real(np.sum(s2sad.grad(f)(z) * np.conj(v)))
    np.testing.assert_allclose(s2sad.grad(directional)(Z), numeric_complex_grad(directional, Z),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("call", [
    lambda z: np.fft.fft(z, n=7, norm="ortho"), lambda z: np.fft.irfft(z, n=7),
    lambda z: np.fft.rfft2(np.real(z).astype(np.float32)), lambda z: np.fft.ihfft(np.real(z)),
    lambda z: np.fft.ifftn(z.astype(np.complex64), axes=(0,)),
    lambda z: np.fft.ifftshift(z) * np.fft.fftfreq(z.shape[-1], 0.1),
    lambda z: np.fft.irfftn(z, s=(4, 4), axes=(0, 1)) * np.fft.rfftfreq(6)[:4]])
def test_fft_values_and_dtypes_are_numpys(call):
    """The value a program computes is NumPy's, in NumPy's dtype (through ``vjp``)."""
    out, _ = s2sad.vjp(call, Z)
    expected = call(Z)
    assert out.dtype == expected.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


X = RNG.standard_normal(6)


def power(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2 * np.arange(4.0)) + np.sum(
        np.real(np.fft.fft(x, n=4, norm="ortho")) ** 3)


def numeric_grad(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


def test_fft_of_real_inputs_gradient_and_forward_mode():
    """A real loss of a transform of real inputs compiles in complex mode: the rules of
    ``np.abs`` are the complex ones, and the real input gets a real gradient."""
    g = s2sad.grad(power)(X)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, numeric_grad(power, X), rtol=1e-6, atol=1e-7)
    t = RNG.standard_normal(6)
    np.testing.assert_allclose(s2sad.jvp(power, (X,), (t,))[1], numeric_grad(power, X) @ t,
                               rtol=1e-6, atol=1e-7)


def test_fft_of_real_inputs_second_order():
    """The Hessian (forward over reverse) and grad of grad against differences of grad."""
    expected = np.array([numeric_grad(lambda y: s2sad.grad(power)(y)[i], X)
                         for i in range(X.size)])
    np.testing.assert_allclose(s2sad.hessian(power)(X), expected, rtol=1e-5, atol=1e-6)
    v = np.arange(6.0)
    gg = s2sad.grad(lambda x: np.sum(s2sad.grad(power)(x) * v))(X)
    np.testing.assert_allclose(gg, expected @ v, rtol=1e-5, atol=1e-6)


def test_fft_of_real_inputs_gradient_staged_inside_compiled_code():
    """A gradient met inside ``jit`` or another gradient is real for a real input (its
    imaginary part means nothing and must not reach ``np.abs``)."""
    np.testing.assert_allclose(s2sad.jit(lambda x: s2sad.grad(power)(x))(X),
                               numeric_grad(power, X), rtol=1e-6, atol=1e-7)

    def size(x):
        return np.sum(np.abs(s2sad.grad(power)(x)))
    np.testing.assert_allclose(s2sad.grad(size)(X), numeric_grad(size, X, 1e-5),
                               rtol=1e-4, atol=1e-5)


def test_fft_of_real_inputs_refuses_real_only_rules():
    """A primitive without a complex rule is refused at its line, not given a real rule."""
    with pytest.raises(S2SADError, match="makes complex values"):
        s2sad.grad(lambda x: np.sum(np.maximum(np.abs(np.fft.rfft(x)), 0.5)))(X)


def test_fft_of_real_inputs_complex_output_is_refused():
    with pytest.raises(TypeError, match="real-valued output"):
        s2sad.grad(lambda x: np.sum(np.fft.rfft(x)))(X)


def test_fft_bad_norm_is_refused():
    with pytest.raises((S2SADError, ValueError), match="Invalid norm"):
        s2sad.grad(lambda z: np.sum(np.abs(np.fft.fft(z, norm="unitary"))))(Z)
