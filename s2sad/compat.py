"""What differs between the Python and NumPy versions s2sad supports.

Python 3.9 with NumPy 2.0 (the newest NumPy for 3.9) is the oldest pair;
each function here gives the newer behaviour on the older versions too, so the
rest of the package is written once.
"""
import inspect
import linecache

import numpy as np

_P = inspect.Parameter

# the keyword arguments every NumPy ufunc takes, as NumPy >= 2.1 declares them
_UFUNC_KEYWORDS = (("where", True), ("casting", "same_kind"), ("order", "K"), ("dtype", None),
                   ("subok", True), ("signature", None))


def signature(fn, **kwargs):
    """``inspect.signature(fn)``, also for a NumPy ufunc of NumPy < 2.1.

    Ufuncs declare a signature from NumPy 2.1 on (``(x, /, out=None, *,
    where=True, ...)``); before, ``inspect`` raises ``ValueError``, so
    ``GradOperation()(np.tanh)`` would depend on the NumPy version.  The same
    signature is built from the ufunc's ``nin``.
    """
    try:
        return inspect.signature(fn, **kwargs)
    except ValueError:
        if not isinstance(fn, np.ufunc):
            raise
    names = ["x"] if fn.nin == 1 else ["x%d" % (k + 1) for k in range(fn.nin)]
    params = [_P(name, _P.POSITIONAL_ONLY) for name in names]
    params.append(_P("out", _P.POSITIONAL_OR_KEYWORD, default=None))
    params += [_P(name, _P.KEYWORD_ONLY, default=value) for name, value in _UFUNC_KEYWORDS]
    return inspect.Signature(params)


def module_name(obj):
    """``obj.__module__``, and ``'numpy'`` for NumPy's own ufuncs of NumPy < 2.1 (which lack it)."""
    mod = getattr(obj, "__module__", None)
    if mod is None and isinstance(obj, np.ufunc) and getattr(np, obj.__name__, None) is obj:
        return "numpy"
    return mod


def getline(filename, lineno):
    """``linecache.getline``, ``''`` for a file its declared encoding cannot decode.

    Python 3.9's ``linecache`` lets the ``UnicodeDecodeError`` (or the
    ``SyntaxError`` of an unknown encoding) out; later versions return ``''``.
    """
    try:
        return linecache.getline(filename, lineno)
    except (UnicodeDecodeError, SyntaxError):
        return ""
