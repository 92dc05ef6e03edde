"""Runtime helpers (``special_*`` in ``rt``) for the primitives of
``ops/operations/special_ops.py``: SciPy's gamma, incomplete gamma and beta,
inverse error and Bessel functions.

``scipy.special`` is imported only when generated code calls these, which it
does only for a program whose own code used SciPy.
"""
import numpy as np

from .rt_math import _keep_dtype
from .rt_stats import _special


def special_call(name, *args):
    """``scipy.special.<name>(*args)`` in the floating dtype of the last argument (x)."""
    return _keep_dtype(getattr(_special(name), name)(*args), args[-1])


def special_convolve(a, b, mode):
    """``scipy.signal.convolve(a, b, mode)``."""
    try:
        from scipy import signal
    except ImportError:     # pragma: no cover - depends on the environment
        raise ImportError("scipy.signal.convolve: SciPy is not installed (the program "
                          "used it; install scipy)") from None
    return signal.convolve(a, b, mode=mode)


def _crop(mode, shape_a, shape_b):
    """The slices of a full convolution that ``mode`` keeps (SciPy's centring)."""
    if len(shape_a) != len(shape_b):
        raise ValueError("scipy.signal.convolve: in1 and in2 should have the same "
                         "dimensionality (%d and %d)" % (len(shape_a), len(shape_b)))
    out = []
    for na, nb in zip(shape_a, shape_b):
        if mode == "full":
            start, size = 0, na + nb - 1
        elif mode == "same":
            start, size = (nb - 1) // 2, na
        else:   # valid: the smaller input slides inside the larger
            start, size = min(na, nb) - 1, abs(na - nb) + 1
        out.append(slice(start, start + size))
    return tuple(out)


def special_convolve_crop(g, a, b, mode):
    """The part of the full convolution ``g`` of a and b that ``mode`` keeps."""
    return g[_crop(mode, np.shape(a), np.shape(b))]


def special_convolve_pad(d, a, b, mode):
    """Zeros of the full convolution's shape with ``d`` where ``mode`` crops it."""
    sa, sb = np.shape(a), np.shape(b)
    full = np.zeros(tuple(na + nb - 1 for na, nb in zip(sa, sb)), dtype=np.result_type(d))
    full[_crop(mode, sa, sb)] = d
    return full


def special_linalg(name, *args):
    """``scipy.linalg.<name>(*args)``, refusing a complex result of real inputs
    (a real matrix whose principal square root is complex)."""
    try:
        from scipy import linalg
    except ImportError:     # pragma: no cover - depends on the environment
        raise ImportError("scipy.linalg.%s: SciPy is not installed (the program used it; "
                          "install scipy)" % name) from None
    out = getattr(linalg, name)(*args)
    if np.iscomplexobj(out) and not any(np.iscomplexobj(a) for a in args):
        if np.allclose(out.imag, 0):
            return out.real
        raise ValueError("scipy.linalg.%s: the result is complex for this real input, and "
                         "s2sad differentiates real matrices only (for sqrtm: pass a matrix "
                         "without negative real eigenvalues, e.g. a positive definite one)"
                         % name)
    return out
