"""Discrete Fourier transforms (``numpy.fft``) over a tuple of axes.

One class serves every transform: ``kind`` names the ``numpy.fft``
n-dimensional function (``fftn``, ``ifftn``, ``rfftn``, ``irfftn``) or a
transpose the reverse rules emit (``rfftn_T``, ``irfftn_T``).  Every
transform is linear (real-linear for the real ones), so the rules
(``ops/_grad/grad_fft_ops.py``) are transforms again and differentiate again.
"""
from ...ir.primitive import Primitive, constexpr

KINDS = ("fftn", "ifftn", "rfftn", "irfftn", "rfftn_T", "irfftn_T")
NORMS = (None, "backward", "ortho", "forward")


class FFT(Primitive):
    """``numpy.fft.<kind>(x, s, axes, norm)`` (``axes=None``: all of x's); with a second input ``like`` and no ``s``,
    the lengths are ``like``'s along ``axes`` (the rules' shapes, known at run time)."""
    linearity = "linear"
    complex_ok = True
    complex_result = True
    formula = "dx = the transposed transform of dout, cropped or padded to x's shape"

    def __init__(self, kind, axes, s=None, norm=None):
        if kind not in KINDS:
            raise ValueError("For 'FFT', kind must be one of %s, but got %r" % (KINDS, kind))
        if norm not in NORMS:
            raise ValueError("Invalid norm value %r; should be \"backward\", \"ortho\" or "
                             "\"forward\"." % (norm,))
        axes = None if axes is None else tuple(int(a) for a in axes)
        if s is not None:
            s = tuple(int(n) for n in s)
            if axes is None or len(s) != len(axes):
                raise ValueError("Shape and axes have different lengths.")
            if any(n < 1 for n in s):
                raise ValueError("Invalid number of FFT data points (%r) specified." % (s,))
        super().__init__(kind=kind, axes=axes, s=s, norm=norm)

    def emit(self, x, like=None):
        extra = "" if like is None else ", " + like
        return "rt.fft_apply(%r, %s, %s, %s, %r%s)" % (
            self.kind, x, constexpr(self.s), constexpr(self.axes), self.norm, extra)


class FFTFit(Primitive):
    """``y`` cropped or zero-padded along ``axes`` to ``like``'s lengths, its real part
    when ``like`` is real (a rule helper: the transpose of a transform's own cropping or
    padding to ``n``, and of a real input's reading as complex)."""
    linearity = "linear"
    complex_ok = True
    formula = "dy = dout cropped or padded back to y's shape"

    def __init__(self, axes):
        super().__init__(axes=None if axes is None else tuple(int(a) for a in axes))

    def emit(self, y, like):
        return "rt.fft_fit(%s, %s, %s)" % (y, like, constexpr(self.axes))


class FFTShift(Primitive):
    """``numpy.fft.fftshift`` (``inverse``: ``ifftshift``) over ``axes`` (``None``: all):
    a roll by half of each length, its transpose the opposite roll."""
    linearity = "linear"
    complex_ok = True
    formula = "dx = the opposite shift of dout"

    def __init__(self, axes=None, inverse=False):
        if axes is not None:
            axes = (int(axes),) if isinstance(axes, int) else tuple(int(a) for a in axes)
        super().__init__(axes=axes, inverse=bool(inverse))

    def emit(self, x):
        return "xp.fft.%s(%s, %s)" % ("ifftshift" if self.inverse else "fftshift", x,
                                      constexpr(self.axes))


class FFTFreq(Primitive):
    """``numpy.fft.fftfreq(n, d)`` (``real``: ``rfftfreq``): sample frequencies, constants
    of the length ``n`` (known at run time) and the spacing ``d``."""
    differentiable = False

    def __init__(self, real=False):
        super().__init__(real=bool(real))

    def emit(self, n, d):
        return "xp.fft.%s(%s, %s)" % ("rfftfreq" if self.real else "fftfreq", n, d)

__all__ = ["FFT", "FFTFit", "FFTShift", "FFTFreq"]
