"""Rules of the Fourier transforms: each is linear, so its bprop is its transpose.

Under JAX's convention (a cotangent pairs with a tangent by ``Re(ct * t)``,
no conjugate) the transpose of the DFT matrix is the same matrix: ``fftn``'s
bprop is ``fftn`` of the cotangent with the same ``norm``, ``ifftn``'s is
``ifftn``.  The real transforms are real-linear: ``rfftn``'s transpose pads
the half spectrum with zeros and keeps the real part of its ``fftn``
(``rfftn_T``); ``irfftn``'s counts each half-spectrum bin that stands for two
(all but the first and an even length's last) twice (``irfftn_T``).  The
cropping or zero-padding to ``s`` a transform does first is transposed by
``FFTFit``, padding or cropping back to the input's shape.
"""
from ..operations import array_ops as A
from ..operations import elementwise_ops as E
from ..operations import fft_ops as F
from .grad_base import bprop_getters, jvp_getters

real = E.Real()
zeros_like = A.ZerosLike()

# the transpose of each kind, and whether its cotangent is read as real
_TRANSPOSE = {"fftn": ("fftn", False), "ifftn": ("ifftn", False),
              "rfftn": ("rfftn_T", False), "irfftn": ("irfftn_T", True),
              "rfftn_T": ("rfftn", True), "irfftn_T": ("irfftn", False)}


@bprop_getters.register(F.FFT)
def get_bprop_fft(self):
    kind, real_ct = _TRANSPOSE[self.kind]
    fit = F.FFTFit(self.axes)

    def bprop(x, *rest):
        like, dout = (rest[0] if len(rest) == 3 else None), rest[-1]
        ct = real(dout) if real_ct else dout
        if self.kind in ("rfftn", "irfftn_T"):
            # the transpose has the original's full lengths: its ``s``, else its input's
            # (``rfftn``) or its ``like``'s (``irfftn_T``, whose output is a half spectrum)
            size = like if like is not None else x
            dx = F.FFT(kind, self.axes, self.s, self.norm)(ct, size)
        else:
            # the transpose runs at the cotangent's own lengths (the output's)
            dx = F.FFT(kind, self.axes, None, self.norm)(ct)
        dx = fit(dx, x)
        return (dx,) if like is None else (dx, zeros_like(like))
    return bprop


@jvp_getters.register(F.FFT)
def get_jvp_fft(self):
    def jvp(*args):
        # (x, out, tx), or (x, like, out, tx, tlike): ``like`` gives lengths only
        tx = args[2] if len(args) == 3 else args[3]
        if tx is None:
            return None
        return self(tx) if len(args) == 3 else self(tx, args[1])
    return jvp


@bprop_getters.register(F.FFTFit)
def get_bprop_fft_fit(self):
    def bprop(y, like, out, dout):
        return self(dout, y), zeros_like(like)
    return bprop


@jvp_getters.register(F.FFTFit)
def get_jvp_fft_fit(self):
    def jvp(y, like, out, ty, tlike):
        return None if ty is None else self(ty, like)
    return jvp


@bprop_getters.register(F.FFTShift)
def get_bprop_fft_shift(self):
    back = F.FFTShift(self.axes, not self.inverse)

    def bprop(x, out, dout):
        return (back(dout),)
    return bprop


@jvp_getters.register(F.FFTShift)
def get_jvp_fft_shift(self):
    def jvp(x, out, tx):
        return None if tx is None else self(tx)
    return jvp
