"""NumPy functions met in differentiated code, mapped to functional forms.

Whatever name the user imported NumPy under, ``np.sin`` is the same function
object, so the table is keyed by object; each primitive family lists its own
entries (``NUMPY`` in ``ops/function/*_func.py``).  A NumPy function applied
to runtime values that is not in the table is an error naming it, never a
silent zero.
"""


def lookup(f):
    from ..ops.function import NUMPY
    try:
        return NUMPY.get(f)
    except TypeError:
        return None
