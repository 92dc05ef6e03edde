"""Eager Tensor, Parameter and ParameterTuple wrapping numpy arrays.

The array lives in ``_data`` (always an ``ndarray``, 0-d for scalars) so other
modules can read and replace it without going through the public API.
"""
from __future__ import annotations

import numbers
from typing import Any, Iterable, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from . import dtype as mstype

__all__ = ["Tensor", "Parameter", "ParameterTuple", "tensor"]

#: What ``Tensor(...)`` and ``Parameter(...)`` convert: a Tensor, an array, a
#: Python or NumPy scalar, or a (nested) list or tuple of numbers.
InputData = Union["Tensor", np.ndarray, np.generic, bool, int, float, complex, Sequence[Any]]
#: A dtype: ``mstype.float32``, a NumPy dtype or scalar type (``np.float64``), or its name.
DTypeLike = Union[mstype.Type, np.dtype, type, str]
#: An axis argument: one axis, several, or None for all.
Axis = Union[int, Sequence[int], None]


def _to_array(data, dtype=None):
    """Convert user input to an ndarray following MindSpore's default dtypes."""
    npdt = mstype.to_numpy(dtype)
    if isinstance(data, Tensor):
        arr = data._data
    elif isinstance(data, np.ndarray):
        arr = data
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
    else:
        raise TypeError("Tensor input_data must be a Tensor, numpy.ndarray, number, list "
                        "or tuple, but got {}".format(type(data).__name__))
    if npdt is not None and arr.dtype != npdt:
        arr = arr.astype(npdt)
    return arr


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
    t._data = value if type(value) is np.ndarray else np.asarray(value)
    return t


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


def _binary(fn):
    def op(self, other):
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        return _wrap(fn(self._data, o))
    return op


def _reflected(fn):
    def op(self, other):
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        return _wrap(fn(o, self._data))
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
        return mstype.from_numpy(self._data.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return int(self._data.size)

    @property
    def T(self) -> Tensor:
        return _wrap(self._data.T)

    def asnumpy(self) -> np.ndarray:
        """The underlying ndarray itself (no copy), like MindSpore's asnumpy."""
        return self._data

    def item(self, *args: int) -> Any:
        return self._data.item(*args)

    def tolist(self) -> Any:
        return self._data.tolist()

    # ---- numpy / Python protocol -----------------------------------------
    def __array__(self, dtype=None, copy=None):
        arr = self._data
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
        if self._data.size != 1:
            raise TypeError("only Tensors with one element can be converted to Python "
                            "scalars, got shape {}".format(self.shape))
        return self._data.reshape(()).item()

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ValueError("The truth value of a Tensor with {} elements is ambiguous"
                             .format(self._data.size))
        return bool(self._data.reshape(()).item())

    def __format__(self, spec):
        if spec and self._data.size == 1:
            return format(self._scalar(), spec)
        return format(str(self), spec)

    def __repr__(self):
        arr = self._data
        if arr.ndim == 0:
            value = " " + _scalar_str(arr)
        elif arr.ndim == 1:
            value = " " + _array_str(arr)
        else:
            value = "\n" + _array_str(arr)
        return "Tensor(shape={}, dtype={}, value={})".format(
            list(self.shape), _dtype_name(arr.dtype), value)

    def __str__(self):
        return str(self._data)

    # ---- operators --------------------------------------------------------
    __add__ = _binary(np.add)
    __radd__ = _reflected(np.add)
    __sub__ = _binary(np.subtract)
    __rsub__ = _reflected(np.subtract)
    __mul__ = _binary(np.multiply)
    __rmul__ = _reflected(np.multiply)
    __truediv__ = _binary(np.true_divide)
    __rtruediv__ = _reflected(np.true_divide)
    __floordiv__ = _binary(np.floor_divide)
    __rfloordiv__ = _reflected(np.floor_divide)
    __mod__ = _binary(np.remainder)
    __rmod__ = _reflected(np.remainder)
    __matmul__ = _binary(np.matmul)
    __rmatmul__ = _reflected(np.matmul)
    __rpow__ = _reflected(np.power)

    def __pow__(self, other, mod=None):
        if mod is not None:
            return NotImplemented
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        return _wrap(np.power(self._data, o))

    __eq__ = _binary(np.equal)
    __ne__ = _binary(np.not_equal)
    __lt__ = _binary(np.less)
    __le__ = _binary(np.less_equal)
    __gt__ = _binary(np.greater)
    __ge__ = _binary(np.greater_equal)
    __and__ = _binary(np.bitwise_and)
    __rand__ = _reflected(np.bitwise_and)
    __or__ = _binary(np.bitwise_or)
    __ror__ = _reflected(np.bitwise_or)
    __xor__ = _binary(np.bitwise_xor)
    __rxor__ = _reflected(np.bitwise_xor)

    def __invert__(self):
        return _wrap(np.invert(self._data))

    def __neg__(self):
        return _wrap(np.negative(self._data))

    def __pos__(self):
        return _wrap(np.positive(self._data))

    def __abs__(self):
        return _wrap(np.abs(self._data))

    # ---- indexing ---------------------------------------------------------
    def __getitem__(self, idx: Any) -> Tensor:
        return _wrap(self._data[_index(idx)])

    def __setitem__(self, idx: Any, value: Any) -> None:
        if isinstance(value, Tensor):
            value = value._data
        self._data[_index(idx)] = value

    # ---- methods ----------------------------------------------------------
    # ``out=None`` and ``**_`` let NumPy's functions (np.sum(t), np.mean(t)) call these.
    def sum(self, axis: Axis = None, dtype: Optional[DTypeLike] = None, keepdims: bool = False,
            out: Any = None, **_: Any) -> Tensor:
        return _wrap(np.sum(self._data, axis=_axis(axis), dtype=mstype.to_numpy(dtype),
                            keepdims=keepdims))

    def mean(self, axis: Axis = None, keep_dims: bool = False,
             dtype: Optional[DTypeLike] = None, out: Any = None, keepdims: bool = False,
             **_: Any) -> Tensor:
        return _wrap(np.mean(self._data, axis=_axis(axis), keepdims=keep_dims or keepdims))

    def max(self, axis: Axis = None, keepdims: bool = False, out: Any = None,
            keep_dims: bool = False, **_: Any) -> Tensor:
        return _wrap(np.max(self._data, axis=_axis(axis), keepdims=keepdims or keep_dims))

    def min(self, axis: Axis = None, keepdims: bool = False, out: Any = None,
            keep_dims: bool = False, **_: Any) -> Tensor:
        return _wrap(np.min(self._data, axis=_axis(axis), keepdims=keepdims or keep_dims))

    def reshape(self, *shape: Union[int, Sequence[int]]) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _wrap(self._data.reshape(shape))

    def transpose(self, *axes: Union[int, Sequence[int]]) -> Tensor:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _wrap(np.transpose(self._data, axes or None))

    def squeeze(self, axis: Axis = None) -> Tensor:
        return _wrap(np.squeeze(self._data, axis=_axis(axis)))

    def expand_dims(self, axis: int) -> Tensor:
        return _wrap(np.expand_dims(self._data, axis))

    def flatten(self, order: str = "C", *, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Every dim merged, or ``start_dim..end_dim`` (MindSpore 2.x's arguments)."""
        return _METHODS["flatten"](self, order, start_dim=start_dim, end_dim=end_dim)

    def astype(self, dtype: DTypeLike) -> Tensor:
        return _wrap(self._data.astype(mstype.to_numpy(dtype)))

    def abs(self) -> Tensor:
        return _wrap(np.abs(self._data))

    def exp(self) -> Tensor:
        return _wrap(np.exp(self._data))

    def log(self) -> Tensor:
        return _wrap(np.log(self._data))

    def sqrt(self) -> Tensor:
        return _wrap(np.sqrt(self._data))

    def square(self) -> Tensor:
        return _wrap(np.square(self._data))

    def copy(self) -> Tensor:
        return _wrap(self._data.copy())


def tensor(input_data: Optional[InputData] = None, dtype: Optional[DTypeLike] = None) -> Tensor:
    """MindSpore 2.x's ``mindspore.tensor``: the same as ``Tensor(input_data, dtype)``."""
    return Tensor(input_data, dtype)


class Parameter(Tensor):
    """A trainable Tensor; its ``name`` is filled in when a Cell registers it."""

    def __init__(self, default_input: InputData, name: Optional[str] = None,
                 requires_grad: bool = True) -> None:
        arr = _to_array(default_input)
        if isinstance(default_input, (Tensor, np.ndarray)):
            # Own the storage so in-place updates cannot leak into the source.
            arr = arr.copy()
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
            self.name, self.shape, _dtype_name(self._data.dtype), self.requires_grad)


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
