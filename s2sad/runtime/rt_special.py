"""Runtime helpers (``special_*`` in ``rt``) for the primitives of
``ops/operations/special_ops.py``: SciPy's gamma, incomplete gamma and beta,
inverse error and Bessel functions.

``scipy.special`` is imported only when generated code calls these, which it
does only for a program whose own code used SciPy.
"""
from .rt_math import _keep_dtype
from .rt_stats import _special


def special_call(name, *args):
    """``scipy.special.<name>(*args)`` in the floating dtype of the last argument (x)."""
    return _keep_dtype(getattr(_special(name), name)(*args), args[-1])
