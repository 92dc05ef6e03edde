"""``numpy.fft``: the transforms as one n-dimensional primitive each, the shifts, and
the sample frequencies (constants).

``hfft``/``ihfft`` are ``irfft``/``rfft`` of a conjugate, as NumPy defines them.
The transforms make complex values: a derivative of a program using one compiles
in complex mode even when its inputs are all real (``driver/compile.py``).
"""
import numpy as np

from ...runtime import constexpr
from ..operations import elementwise_ops as E
from ..operations import fft_ops as F

_conj = E.Conj()
_DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


@constexpr
def _plan(name, s, axes, norm, one_d):
    """The lengths and axes of a call, checked while compiling."""
    if norm not in F.NORMS:
        raise ValueError("Invalid norm value %r; should be \"backward\", \"ortho\" or "
                         "\"forward\"." % (norm,))
    if one_d:
        if isinstance(axes, (tuple, list)):
            raise TypeError("np.fft.%s: axis must be an int, got %r" % (name, axes))
        return (None if s is None else (_length(name, s),)), (int(axes),)
    if axes is None:
        return None, None       # every axis (``s`` given sets the axes: ``_axes_of``)
    axes = tuple(int(a) for a in axes)
    if s is not None:
        s = tuple(_length(name, n) for n in s)
        if len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
    return s, axes


def _length(name, n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError("np.fft.%s: a length must be an int known while compiling, got %r"
                        % (name, n))
    if n < 1:
        raise ValueError("Invalid number of FFT data points (%d) specified." % n)
    return int(n)


@constexpr
def _axes_of(s, axes, default):
    """NumPy's default axes: the last ``len(s)``, else ``default`` (``None``: all)."""
    if axes is not None or (s is None and default is None):
        return axes
    if s is not None:
        return tuple(range(-len(s), 0))
    return default


@constexpr
def _spec(plan):
    return plan[0]


@constexpr
def _axes(plan):
    return plan[1]


@constexpr
def _dual(norm):
    return _DUAL[norm]


def _apply(kind, x, plan, norm):
    return F.FFT(kind, _axes(plan), _spec(plan), norm)(x)


def fft(a, n=None, axis=-1, norm=None):
    return _apply("fftn", a, _plan("fft", n, axis, norm, True), norm)


def ifft(a, n=None, axis=-1, norm=None):
    return _apply("ifftn", a, _plan("ifft", n, axis, norm, True), norm)


def rfft(a, n=None, axis=-1, norm=None):
    return _apply("rfftn", a, _plan("rfft", n, axis, norm, True), norm)


def irfft(a, n=None, axis=-1, norm=None):
    return _apply("irfftn", a, _plan("irfft", n, axis, norm, True), norm)


def hfft(a, n=None, axis=-1, norm=None):
    """``irfft`` of the conjugate, the norm swapped (NumPy's definition)."""
    return _apply("irfftn", _conj(a), _plan("hfft", n, axis, norm, True), _dual(norm))


def ihfft(a, n=None, axis=-1, norm=None):
    """The conjugate of ``rfft``, the norm swapped (NumPy's definition)."""
    return _conj(_apply("rfftn", a, _plan("ihfft", n, axis, norm, True), _dual(norm)))


def fftn(a, s=None, axes=None, norm=None):
    return _apply("fftn", a, _plan("fftn", s, _axes_of(s, axes, None), norm, False), norm)


def ifftn(a, s=None, axes=None, norm=None):
    return _apply("ifftn", a, _plan("ifftn", s, _axes_of(s, axes, None), norm, False), norm)


def rfftn(a, s=None, axes=None, norm=None):
    return _apply("rfftn", a, _plan("rfftn", s, _axes_of(s, axes, None), norm, False), norm)


def irfftn(a, s=None, axes=None, norm=None):
    return _apply("irfftn", a, _plan("irfftn", s, _axes_of(s, axes, None), norm, False), norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    return _apply("fftn", a, _plan("fft2", s, axes, norm, False), norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    return _apply("ifftn", a, _plan("ifft2", s, axes, norm, False), norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    return _apply("rfftn", a, _plan("rfft2", s, axes, norm, False), norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    return _apply("irfftn", a, _plan("irfft2", s, axes, norm, False), norm)


def fftshift(x, axes=None):
    return F.FFTShift(_shift_axes(axes))(x)


def ifftshift(x, axes=None):
    return F.FFTShift(_shift_axes(axes), True)(x)


@constexpr
def _shift_axes(axes):
    if axes is None or isinstance(axes, (int, np.integer)):
        return axes
    return tuple(axes)


def fftfreq(n, d=1.0, device=None):
    return F.FFTFreq()(n, d)


def rfftfreq(n, d=1.0, device=None):
    return F.FFTFreq(True)(n, d)


#: NumPy functions met in differentiated code -> the functional form to inline
NUMPY = {
    np.fft.fft: fft, np.fft.ifft: ifft, np.fft.rfft: rfft, np.fft.irfft: irfft,
    np.fft.hfft: hfft, np.fft.ihfft: ihfft, np.fft.fftn: fftn, np.fft.ifftn: ifftn,
    np.fft.rfftn: rfftn, np.fft.irfftn: irfftn, np.fft.fft2: fft2, np.fft.ifft2: ifft2,
    np.fft.rfft2: rfft2, np.fft.irfft2: irfft2, np.fft.fftshift: fftshift,
    np.fft.ifftshift: ifftshift, np.fft.fftfreq: fftfreq, np.fft.rfftfreq: rfftfreq,
}

TENSOR_METHODS = {}

__all__ = []
