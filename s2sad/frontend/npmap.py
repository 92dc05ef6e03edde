"""NumPy functions met in differentiated code, mapped to functional forms.

Whatever name the user imported NumPy under, ``np.sin`` is the same function
object, so the table is keyed by object; each primitive family lists its own
entries (``NUMPY`` in ``ops/function/*_func.py``).  A NumPy function applied
to runtime values that is not in the table is an error naming it, never a
silent zero.
"""
import sys
import types


def lookup(f):
    from ..ops.function import NUMPY, SCIPY_LINALG, SCIPY_SIGNAL, SCIPY_SPECIAL
    try:
        found = NUMPY.get(f)
    except TypeError:
        return None
    if found is None:
        for module, table in (("scipy.special", SCIPY_SPECIAL), ("scipy.signal", SCIPY_SIGNAL),
                              ("scipy.linalg", SCIPY_LINALG)):
            module = sys.modules.get(module)     # imported by the user's program
            if module is not None:
                for name, form in table.items():
                    if getattr(module, name, None) is f:
                        return form
        if isinstance(f, types.MethodType):
            return _stats_method(f)
    return found


def _stats_method(f):
    """The form of a ``scipy.stats`` distribution's method, e.g. ``norm.logpdf``.

    ``scipy.stats.norm`` is an instance and each attribute read makes a new
    bound method, so the key is (the module's distribution object, method
    name); a frozen distribution (``norm(0, 1).pdf``) is not one of them.
    """
    from ..ops.function import SCIPY_STATS
    stats = sys.modules.get("scipy.stats")
    if stats is None:
        return None
    owner, method = f.__self__, getattr(f.__func__, "__name__", None)
    for (dist, name), form in SCIPY_STATS.items():
        if name == method and getattr(stats, dist, None) is owner:
            return form
    return None


def lookup_indexed(obj):
    """The form staging ``obj[index]`` for a NumPy object indexed with runtime
    values (``np.r_``, ``np.c_``), else ``None``."""
    from ..ops.function import NUMPY_INDEXED
    for known, form in NUMPY_INDEXED.items():
        if obj is known:
            return form
    return None
