"""Eager Tensor, Parameter and ParameterTuple wrapping arrays.

The array lives in ``_data`` so other modules can read and replace it
without going through the public API: an ``ndarray`` (0-d for scalars), or,
under ``set_context(array_library="torch")`` or ``device_target="GPU"``, an
array of that library on the context's device (``docs/backends.md``).  The
NumPy path stays first and as it was; arrays of another library go through
their array-API namespace (``runtime/xarrays.py``), never through ``np.*``.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Iterable, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from . import context as _context
from . import dtype as mstype
from .runtime import xarrays

__all__ = ["Tensor", "Parameter", "ParameterTuple", "tensor"]

#: What ``Tensor(...)`` and ``Parameter(...)`` convert: a Tensor, an array, a
#: Python or NumPy scalar, or a (nested) list or tuple of numbers.
InputData = Union["Tensor", np.ndarray, np.generic, bool, int, float, complex, Sequence[Any]]
#: A dtype: ``mstype.float32``, a NumPy dtype or scalar type (``np.float64``), or its name.
DTypeLike = Union[mstype.Type, np.dtype, type, str]
#: An axis argument: one axis, several, or None for all.
Axis = Union[int, Sequence[int], None]


def _to_array(data, dtype=None):
    """Convert user input to an ndarray following MindSpore's default dtypes, then
    to the context's array library and device when one is set."""
    npdt = mstype.to_numpy(dtype)
    if isinstance(data, Tensor):
        arr = data._data
        if type(arr) is not np.ndarray:
            return _foreign_as(arr, npdt)
    elif isinstance(data, np.ndarray):
        # a subclass's data as a plain array: a Tensor's operations are its own, and
        # compiled code would not follow a np.matrix's ``*`` (as MindSpore's Tensor)
        arr = data if type(data) is np.ndarray else np.asarray(data)
    elif isinstance(data, np.generic):
        arr = np.asarray(data)
    elif isinstance(data, bool):
        arr = np.asarray(data, dtype=np.bool_)
    elif isinstance(data, int):
        arr = np.asarray(data, dtype=np.int64)
    elif isinstance(data, float):
        arr = np.asarray(data, dtype=np.float32)
    elif isinstance(data, (list, tuple)):
        arr = np.asarray(data)
        if npdt is None:
            # Python floats default to float32, ints to int64 (as in MindSpore).
            if arr.dtype == np.float64:
                arr = arr.astype(np.float32)
            elif arr.dtype.kind == "i" and arr.dtype != np.int64:
                arr = arr.astype(np.int64)
    elif data is None:
        raise TypeError("Tensor requires input_data (Tensor, ndarray, number, list or tuple)")
    elif xarrays.library_of(data) is not None:
        return _foreign_as(data, npdt)
    else:
        raise TypeError("Tensor input_data must be a Tensor, numpy.ndarray, number, list "
                        "or tuple, but got {}".format(type(data).__name__))
    if npdt is not None and arr.dtype != npdt:
        arr = arr.astype(npdt)
    target = _context.array_target
    if target is not None:
        return xarrays.from_numpy(arr, *target)
    return arr


def _foreign_as(arr, npdt):
    """``arr``, an array of another library, kept where it is (cast to ``npdt``)."""
    if npdt is not None and xarrays.numpy_dtype(arr) != npdt:
        xp = xarrays.xp_of(arr)
        arr = xp.astype(arr, getattr(xp, npdt.name))
    return arr


def _copy(arr):
    """A copy of ``arr`` (an array of any library) that shares no storage with it."""
    if type(arr) is np.ndarray:
        return arr.copy()
    return xarrays.xp_of(arr).asarray(arr, copy=True)


# Tensor methods and attributes beyond the arithmetic protocol (``t.sum()``,
# ``t.T``): the primitive families list them and ``ops.function`` installs
# them here, so this module does not import the layer above it.
_METHODS = {}
_PROPERTIES = {}


def register_methods(methods, properties):
    """Make ``methods`` (name -> function(self, ...)) and ``properties`` (name ->
    function(self)) available on every Tensor."""
    _METHODS.update(methods)
    _PROPERTIES.update(properties)


def _wrap(value):
    """Build a plain Tensor around an op result without re-running conversion."""
    t = Tensor.__new__(Tensor)
    t._data = value if type(value) is np.ndarray else _data_of(value)
    return t


def _data_of(value):
    """An op result as a Tensor's data: an array of another library as it is."""
    if xarrays.library_of(value) is not None:
        return value
    return np.asarray(value)


def _operand(x):
    """Unwrap an operand for numpy, or NotImplemented for foreign types."""
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, (np.ndarray, np.generic, numbers.Number)):
        return x  # Python scalars stay "weak" under NEP 50.
    if isinstance(x, (list, tuple)):
        return _to_array(x)
    return NotImplemented


def _index(idx):
    """Unwrap Tensors used as (parts of) an index."""
    if isinstance(idx, Tensor):
        return idx._data
    if isinstance(idx, tuple):
        return tuple(i._data if isinstance(i, Tensor) else i for i in idx)
    return idx


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


_PLAIN = frozenset((float, int, bool, complex))


def _binary(fn, name):
    """The operator ``fn`` (NumPy's), or ``xp.<name>`` for data of another library."""
    def op(self, other):
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        a = self._data
        if type(a) is np.ndarray and (type(o) is np.ndarray or type(o) in _PLAIN):
            return _wrap(fn(a, o))
        return _wrap(_either(fn, name, a, o))
    return op


def _reflected(fn, name):
    def op(self, other):
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        a = self._data
        if type(a) is np.ndarray and (type(o) is np.ndarray or type(o) in _PLAIN):
            return _wrap(fn(o, a))
        return _wrap(_either(fn, name, o, a))
    return op


def _either(fn, name, a, b):
    """``fn(a, b)`` on NumPy data, ``xp.<name>(a, b)`` when either is another library's
    (mixing libraries or devices raises a ``TypeError``)."""
    if xarrays.library_of(a) is None and xarrays.library_of(b) is None:
        return fn(a, b)
    return xarrays.binary(name, a, b)


def _unary(fn, name):
    def op(self):
        a = self._data
        if type(a) is np.ndarray:
            return _wrap(fn(a))
        return _wrap(getattr(xarrays.xp_of(a), name)(a))
    return op


def _array_str(arr):
    """NumPy's layout with ', ' separators, floats as MindSpore prints them: '%.8e'
    with a sign column, so ``[ 1.00000000e+00, -2.00000000e+00]`` lines up."""
    if arr.dtype.kind != "f":
        return np.array2string(arr, separator=", ")
    # a third exponent digit (1e+100, only reached in float64) widens every column
    mags = np.abs(arr[np.isfinite(arr) & (arr != 0)]).astype(np.float64)
    wide = mags.size and (mags.max() >= 1e100 or mags.min() < 1e-99)
    width = 16 if wide else 15
    fmt = lambda v: ("% .8e" % float(v)).rjust(width)  # noqa: E731
    return np.array2string(arr, separator=", ", formatter={"float_kind": fmt})


def _scalar_str(arr):
    """A 0-d value as MindSpore prints it: floats with 6 significant digits
    (``1.5``, ``1024``, ``3.18133e-05``), other kinds as Python prints them."""
    value = arr.item()
    if arr.dtype.kind == "f":
        return "%g" % value
    return str(value)


def _dtype_name(npdt):
    try:
        return mstype.from_numpy(npdt).name
    except TypeError:
        return str(npdt)


class Tensor:
    """An eager n-dimensional array with MindSpore's Tensor API."""

    __array_priority__ = 100
    # __eq__ is elementwise, so identity hashing keeps Tensors usable as dict keys.
    __hash__ = object.__hash__

    def __init__(self, input_data: Optional[InputData] = None,
                 dtype: Optional[DTypeLike] = None) -> None:
        self._data = _to_array(input_data, dtype)

    # ---- properties -------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(int(s) for s in self._data.shape)

    @property
    def dtype(self) -> mstype.Type:
        return mstype.from_numpy(xarrays.numpy_dtype(self._data))

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        if type(self._data) is not np.ndarray:
            return math.prod(self.shape)
        return int(self._data.size)

    @property
    def T(self) -> Tensor:
        if type(self._data) is not np.ndarray:
            return self.transpose()
        return _wrap(self._data.T)

    def asnumpy(self) -> np.ndarray:
        """The underlying ndarray itself (no copy), like MindSpore's asnumpy; a NumPy
        copy of data of another library (from its device)."""
        if type(self._data) is not np.ndarray:
            return xarrays.to_numpy(self._data)
        return self._data

    def item(self, *args: int) -> Any:
        return self._numpy().item(*args)

    def tolist(self) -> Any:
        return self._numpy().tolist()

    def _numpy(self):
        """The data as an ndarray to read values from (a copy for another library's)."""
        data = self._data
        return data if type(data) is np.ndarray else xarrays.to_numpy(data)

    # ---- numpy / Python protocol -----------------------------------------
    def __array__(self, dtype=None, copy=None):
        arr = self._data
        if type(arr) is not np.ndarray:
            raise TypeError(
                "this Tensor holds %s data on %s, which NumPy would copy off its device "
                "silently; call t.asnumpy() for a NumPy copy, or use s2sad's operations"
                % (xarrays.library_of(arr), xarrays.device_of(arr)))
        if dtype is not None and arr.dtype != np.dtype(dtype):
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __getattr__(self, name: str) -> Any:
        """Methods a primitive family lists (``ops/function``) work eagerly too."""
        if not name.startswith("_"):
            if name in _METHODS:
                fn = _METHODS[name]
                return lambda *args, **kwargs: fn(self, *args, **kwargs)
            if name in _PROPERTIES:
                return _PROPERTIES[name](self)
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy ufuncs on Tensors (``np.sin(t)``, ``ndarray + t``) return Tensors."""
        if "out" in kwargs:
            kwargs["out"] = tuple(o._data if isinstance(o, Tensor) else o for o in kwargs["out"])
        raw = [i._data if isinstance(i, Tensor) else i for i in inputs]
        foreign = [r for r in raw if type(r) is not np.ndarray and xarrays.library_of(r)]
        if foreign:
            raise TypeError(
                "NumPy's %s was called on a Tensor holding %s data; s2sad does not run NumPy "
                "on another library's arrays: use s2sad.ops (or the Tensor's methods), or "
                "t.asnumpy() for a NumPy copy" % (ufunc.__name__, xarrays.library_of(foreign[0])))
        result = getattr(ufunc, method)(*raw, **kwargs)
        if isinstance(result, tuple):
            return tuple(_wrap(np.asarray(r)) for r in result)
        if result is None or method == "at":
            return result
        return _wrap(np.asarray(result))

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d Tensor")
        return len(self._data)

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d Tensor")
        for row in self._data:
            yield _wrap(row)

    def _scalar(self):
        if self.size != 1:
            raise TypeError("only Tensors with one element can be converted to Python "
                            "scalars, got shape {}".format(self.shape))
        return self._data.reshape(()).item()

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError("The truth value of a Tensor with {} elements is ambiguous"
                             .format(self.size))
        return bool(self._data.reshape(()).item())

    def __format__(self, spec):
        if spec and self.size == 1:
            return format(self._scalar(), spec)
        return format(str(self), spec)

    def __repr__(self):
        arr = self._numpy()
        if arr.ndim == 0:
            value = " " + _scalar_str(arr)
        elif arr.ndim == 1:
            value = " " + _array_str(arr)
        else:
            value = "\n" + _array_str(arr)
        return "Tensor(shape={}, dtype={}, value={})".format(
            list(self.shape), _dtype_name(arr.dtype), value)

    def __str__(self):
        return str(self._numpy())

    # ---- operators --------------------------------------------------------
    __add__ = _binary(np.add, "add")
    __radd__ = _reflected(np.add, "add")
    __sub__ = _binary(np.subtract, "subtract")
    __rsub__ = _reflected(np.subtract, "subtract")
    __mul__ = _binary(np.multiply, "multiply")
    __rmul__ = _reflected(np.multiply, "multiply")
    __truediv__ = _binary(np.true_divide, "divide")
    __rtruediv__ = _reflected(np.true_divide, "divide")
    __floordiv__ = _binary(np.floor_divide, "floor_divide")
    __rfloordiv__ = _reflected(np.floor_divide, "floor_divide")
    __mod__ = _binary(np.remainder, "remainder")
    __rmod__ = _reflected(np.remainder, "remainder")
    __matmul__ = _binary(np.matmul, "matmul")
    __rmatmul__ = _reflected(np.matmul, "matmul")
    __rpow__ = _reflected(np.power, "pow")

    def __pow__(self, other, mod=None):
        if mod is not None:
            return NotImplemented
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        return _wrap(_either(np.power, "pow", self._data, o))

    __eq__ = _binary(np.equal, "equal")
    __ne__ = _binary(np.not_equal, "not_equal")
    __lt__ = _binary(np.less, "less")
    __le__ = _binary(np.less_equal, "less_equal")
    __gt__ = _binary(np.greater, "greater")
    __ge__ = _binary(np.greater_equal, "greater_equal")
    __and__ = _binary(np.bitwise_and, "bitwise_and")
    __rand__ = _reflected(np.bitwise_and, "bitwise_and")
    __or__ = _binary(np.bitwise_or, "bitwise_or")
    __ror__ = _reflected(np.bitwise_or, "bitwise_or")
    __xor__ = _binary(np.bitwise_xor, "bitwise_xor")
    __rxor__ = _reflected(np.bitwise_xor, "bitwise_xor")

    __invert__ = _unary(np.invert, "bitwise_invert")
    __neg__ = _unary(np.negative, "negative")
    __pos__ = _unary(np.positive, "positive")
    __abs__ = _unary(np.abs, "abs")

    # ---- indexing ---------------------------------------------------------
    def __getitem__(self, idx: Any) -> Tensor:
        return _wrap(self._data[_index(idx)])

    def __setitem__(self, idx: Any, value: Any) -> None:
        if isinstance(value, Tensor):
            value = value._data
        data = self._data
        if type(data) is not np.ndarray:
            value = xarrays.operand(value, data)     # same library and device, or a number
        elif xarrays.library_of(value) is not None:
            raise TypeError("cannot write %s data into a Tensor holding NumPy data; convert it "
                            "first (Tensor(t.asnumpy()))" % xarrays.library_of(value))
        data[_index(idx)] = value

    # ---- methods ----------------------------------------------------------
    # ``out=None`` and ``**_`` let NumPy's functions (np.sum(t), np.mean(t)) call these.
    def sum(self, axis: Axis = None, dtype: Optional[DTypeLike] = None, keepdims: bool = False,
            out: Any = None, **_: Any) -> Tensor:
        if type(self._data) is not np.ndarray:
            return self._reduce("sum", axis, keepdims, dtype)
        return _wrap(np.sum(self._data, axis=_axis(axis), dtype=mstype.to_numpy(dtype),
                            keepdims=keepdims))

    def mean(self, axis: Axis = None, keep_dims: bool = False,
             dtype: Optional[DTypeLike] = None, out: Any = None, keepdims: bool = False,
             **_: Any) -> Tensor:
        if type(self._data) is not np.ndarray:
            return self._reduce("mean", axis, keep_dims or keepdims)
        return _wrap(np.mean(self._data, axis=_axis(axis), keepdims=keep_dims or keepdims))

    def max(self, axis: Axis = None, keepdims: bool = False, out: Any = None,
            keep_dims: bool = False, **_: Any) -> Tensor:
        if type(self._data) is not np.ndarray:
            return self._reduce("max", axis, keepdims or keep_dims)
        return _wrap(np.max(self._data, axis=_axis(axis), keepdims=keepdims or keep_dims))

    def min(self, axis: Axis = None, keepdims: bool = False, out: Any = None,
            keep_dims: bool = False, **_: Any) -> Tensor:
        if type(self._data) is not np.ndarray:
            return self._reduce("min", axis, keepdims or keep_dims)
        return _wrap(np.min(self._data, axis=_axis(axis), keepdims=keepdims or keep_dims))

    def reshape(self, *shape: Union[int, Sequence[int]]) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if type(self._data) is not np.ndarray:
            return self._xp("reshape", shape)
        return _wrap(self._data.reshape(shape))

    def transpose(self, *axes: Union[int, Sequence[int]]) -> Tensor:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if type(self._data) is not np.ndarray:
            return self._xp("permute_dims", axes or tuple(range(self.ndim))[::-1])
        return _wrap(np.transpose(self._data, axes or None))

    def squeeze(self, axis: Axis = None) -> Tensor:
        if type(self._data) is not np.ndarray:
            if axis is None:
                axis = tuple(i for i, n in enumerate(self.shape) if n == 1)
            return self._xp("squeeze", axis=_axis(axis))
        return _wrap(np.squeeze(self._data, axis=_axis(axis)))

    def expand_dims(self, axis: int) -> Tensor:
        if type(self._data) is not np.ndarray:
            return self._xp("expand_dims", axis=axis)
        return _wrap(np.expand_dims(self._data, axis))

    def flatten(self, order: str = "C", *, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Every dim merged, or ``start_dim..end_dim`` (MindSpore 2.x's arguments)."""
        return _METHODS["flatten"](self, order, start_dim=start_dim, end_dim=end_dim)

    def astype(self, dtype: DTypeLike) -> Tensor:
        if type(self._data) is not np.ndarray:
            return _wrap(_foreign_as(self._data, mstype.to_numpy(dtype)))
        return _wrap(self._data.astype(mstype.to_numpy(dtype)))

    def _xp(self, name, *args, **kwargs):
        """``xp.<name>(data, ...)`` for data of another library, as a Tensor."""
        return _wrap(getattr(xarrays.xp_of(self._data), name)(self._data, *args, **kwargs))

    def _reduce(self, name, axis, keepdims, dtype=None):
        """A reduction of data of another library (``dtype``: the sum's, or None)."""
        kwargs = {"axis": _axis(axis), "keepdims": keepdims}
        npdt = mstype.to_numpy(dtype)
        if npdt is not None:
            kwargs["dtype"] = getattr(xarrays.xp_of(self._data), npdt.name)
        return self._xp(name, **kwargs)

    def abs(self) -> Tensor:
        return self._elementwise(np.abs, "abs")

    def exp(self) -> Tensor:
        return self._elementwise(np.exp, "exp")

    def log(self) -> Tensor:
        return self._elementwise(np.log, "log")

    def sqrt(self) -> Tensor:
        return self._elementwise(np.sqrt, "sqrt")

    def square(self) -> Tensor:
        return self._elementwise(np.square, "square")

    def _elementwise(self, fn, name):
        """``fn`` (NumPy's) on NumPy data, ``xp.<name>`` on another library's."""
        a = self._data
        if type(a) is np.ndarray:
            return _wrap(fn(a))
        return self._xp(name)

    def copy(self) -> Tensor:
        return _wrap(_copy(self._data))


def tensor(input_data: Optional[InputData] = None, dtype: Optional[DTypeLike] = None) -> Tensor:
    """MindSpore 2.x's ``mindspore.tensor``: the same as ``Tensor(input_data, dtype)``."""
    return Tensor(input_data, dtype)


class Parameter(Tensor):
    """A trainable Tensor; its ``name`` is filled in when a Cell registers it."""

    def __init__(self, default_input: InputData, name: Optional[str] = None,
                 requires_grad: bool = True) -> None:
        arr = _to_array(default_input)
        if isinstance(default_input, (Tensor, np.ndarray)) or arr is default_input:
            # Own the storage so in-place updates cannot leak into the source.
            arr = _copy(arr)
        self._data = arr
        self.name = name
        self.requires_grad = requires_grad

    @property
    def data(self) -> Parameter:
        return self

    def set_data(self, data: InputData) -> Parameter:
        """Replace the value (taking the new data's dtype) and return self."""
        self._data = _to_array(data)
        return self

    def __repr__(self):
        return "Parameter (name={}, shape={}, dtype={}, requires_grad={})".format(
            self.name, self.shape, _dtype_name(xarrays.numpy_dtype(self._data)),
            self.requires_grad)


class ParameterTuple(tuple):
    """An immutable tuple of uniquely named Parameters (what optimizers take)."""

    def __new__(cls, iterable: Iterable[Parameter] = ()) -> ParameterTuple:
        items = tuple(iterable)
        seen = set()
        for p in items:
            if not isinstance(p, Parameter):
                raise TypeError("ParameterTuple input should be `Parameter` collection, "
                                "but got {}".format(type(p)))
            if p.name is not None:
                if p.name in seen:
                    raise ValueError("ParameterTuple has duplicate Parameter name: '{}'"
                                     .format(p.name))
                seen.add(p.name)
        return tuple.__new__(cls, items)


#: What a ``weights`` argument accepts: one Parameter, a list or tuple of them
#: (``ParameterTuple``, ``net.trainable_params()``), or None.
Weights = Union[Parameter, Sequence[Parameter], None]
