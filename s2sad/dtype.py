"""MindSpore-style dtype objects backed by numpy dtypes.

MindSpore code compares and prints dtypes as ``mstype.float32`` / ``Float32``;
these singletons give that surface while the data itself stays in numpy.
"""
import numpy as np

__all__ = [
    "Type", "to_numpy", "from_numpy", "is_float", "is_int",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "bool_", "half", "single", "double",
]


class Type:
    """A tensor element type; equal by MindSpore name so copies still compare equal."""

    __slots__ = ("name", "np_dtype")

    def __init__(self, name, np_dtype):
        self.name = name
        self.np_dtype = np.dtype(np_dtype)

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        if isinstance(other, Type):
            return self.name == other.name
        return NotImplemented

    def __ne__(self, other):
        if isinstance(other, Type):
            return self.name != other.name
        return NotImplemented

    def __hash__(self):
        return hash(self.name)

    def __reduce__(self):
        # Pickling/copying resolves back to the module-level singleton.
        return (_by_name, (self.name,))


float16 = Type("Float16", np.float16)
float32 = Type("Float32", np.float32)
float64 = Type("Float64", np.float64)
int8 = Type("Int8", np.int8)
int16 = Type("Int16", np.int16)
int32 = Type("Int32", np.int32)
int64 = Type("Int64", np.int64)
uint8 = Type("UInt8", np.uint8)
bool_ = Type("Bool", np.bool_)

# Aliases that MindSpore also exports.
half = float16
single = float32
double = float64

_ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_)
_NAME_TO_TYPE = {t.name: t for t in _ALL}
_NP_TO_TYPE = {t.np_dtype: t for t in _ALL}


def _by_name(name):
    return _NAME_TO_TYPE[name]


def to_numpy(dt):
    """Normalise a ``Type``, numpy dtype or scalar type to ``numpy.dtype`` (None passes through)."""
    if dt is None:
        return None
    if isinstance(dt, Type):
        return dt.np_dtype
    try:
        npdt = np.dtype(dt)
    except TypeError:
        raise TypeError("Unsupported dtype: {!r}".format(dt)) from None
    if npdt not in _NP_TO_TYPE:
        raise TypeError("Unsupported dtype: {!r}".format(dt))
    return npdt


def from_numpy(npdt):
    """Map a numpy dtype to its ``Type``; unsupported dtypes (e.g. complex) raise TypeError."""
    try:
        return _NP_TO_TYPE[np.dtype(npdt)]
    except (KeyError, TypeError):
        raise TypeError("Unsupported numpy dtype: {!r}".format(npdt)) from None


def is_float(dt):
    """True for floating dtypes (``Type`` or numpy dtype)."""
    return np.issubdtype(to_numpy(dt), np.floating)


def is_int(dt):
    """True for integer dtypes, signed or unsigned; Bool is not an integer here."""
    return np.issubdtype(to_numpy(dt), np.integer)
