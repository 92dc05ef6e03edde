"""Bodies of the FFT primitives (``ops/operations/fft_ops.py``).

Each transform runs over ``axes`` as ``numpy.fft``'s n-dimensional form; a
1-D call is the n-dimensional one with one axis.  The ``_T`` kinds are the
transposes (JAX's convention: no conjugate) that the reverse rules emit.
"""
import numpy as np

__all__ = ["fft_apply", "fft_fit"]

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def fft_apply(kind, x, s, axes, norm, like=None):
    """``kind`` of ``x`` over ``axes`` (``None``: all); ``s`` the lengths, else ``like``'s
    along ``axes``."""
    if axes is None:
        axes = tuple(range(np.ndim(x)))
    if s is None and like is not None:
        s = tuple(np.shape(like)[a] for a in axes)
    if kind == "rfftn" and np.iscomplexobj(x):
        raise TypeError("np.fft.rfft needs a real input, got %s: take np.real(x) first, "
                        "or use np.fft.fft" % np.asarray(x).dtype)
    if kind == "rfftn_T":
        return np.real(np.fft.fftn(x, s, axes, norm))
    if kind == "irfftn_T":
        return _irfftn_transpose(np.real(x), axes, norm)
    return getattr(np.fft, kind)(x, s, axes, norm)


def _irfftn_transpose(g, axes, norm):
    """The transpose of ``irfftn`` (output shape ``g``'s): each half-spectrum bin but
    the first (and, for even lengths, the last) stands for two bins, hence twice."""
    n = g.shape[axes[-1]]
    half = np.conj(np.fft.rfftn(g, None, axes, _DUAL[norm or "backward"]))
    weight = np.full(n // 2 + 1, 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    shape = [1] * g.ndim
    shape[axes[-1]] = n // 2 + 1
    return half * weight.reshape(shape)


def fft_fit(y, like, axes):
    """``y`` cropped or zero-padded along ``axes`` to ``like``'s lengths there; its real
    part when ``like`` is real (a real input's gradient: JAX's convention)."""
    target = np.shape(like)
    if axes is None:
        axes = range(np.ndim(y))
    index = [slice(None)] * np.ndim(y)
    pads = [(0, 0)] * np.ndim(y)
    for a in axes:
        index[a] = slice(0, target[a])
        pads[a] = (0, max(0, target[a] - y.shape[a]))
    out = np.asarray(y)[tuple(index)]
    if np.iscomplexobj(out) and not np.iscomplexobj(like):
        out = out.real
    return np.pad(out, pads) if any(p[1] for p in pads) else out
