"""Argument specs: the structure of a call's arguments, and their runtime leaves.

A spec is a hashable description of one argument (``("array",)``, a tuple's
specs, a Python constant's value...).  It is part of every cache key, so it
is computed on every call: the common types skip the ``isinstance`` chain.
Tracing turns specs into the program's inputs (``abstract_args``); each call
flattens its arguments the same way (``flatten_runtime``).
"""
import numpy as np

from ..backend.namespaces import backend_for, device_of, library_of
from ..errors import UnfitInput
from ..runtime.xarrays import subclass_problem
from ..ir import Var, Const
from ..frontend import resolve


class Mutable:
    """A Python value passed as a runtime, differentiable input (``s2sad.mutable``)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def mutable(value):
    """Mark a Python scalar or tuple as a runtime input that gets a gradient."""
    return Mutable(value)


# ---------------------------------------------------------------- arguments
ARRAY_SPEC = ("array",)
_TENSOR_SPEC = ("tensor",)
# a complex array compiles apart: rules with a complex form of their own
# (``np.abs``, ``np.real``...) emit other code for it
COMPLEX_ARRAY_SPEC = ("array", "complex")
# a real array of shape () compiles apart, per dtype: its code skips the shape
# work of broadcasting (``opt/scalars.py``), which a loop of scalar steps is mostly
# made of, and a float64 one may run as a Python float (``opt/floats.py``)
_ARRAY0_SPECS = {}


def _array_spec(v):
    if v.dtype.kind == "c":
        return COMPLEX_ARRAY_SPEC
    if v.ndim:
        return ARRAY_SPEC
    spec = _ARRAY0_SPECS.get(v.dtype)
    if spec is None:
        spec = _ARRAY0_SPECS[v.dtype] = ("array", "0-d", v.dtype.str)
    return spec


# exact type -> spec builder, filled as types are met: called on every
# argument of every call, so the common types skip the isinstance chain
_SPEC_BY_TYPE = {np.ndarray: _array_spec}


def arg_spec(value):
    """The part of an argument compiled code depends on (not its shape)."""
    fast = _SPEC_BY_TYPE.get(type(value))
    if fast is not None:
        return fast(value)
    return _arg_spec_slow(value)


def _const_spec(value):
    return ("const",) + resolve.guard_key(value)


def _seq_spec(value):
    return (type(value).__name__,) + tuple(map(arg_spec, value))


for _t in (type(None), bool, int, float, complex, str, bytes):
    _SPEC_BY_TYPE[_t] = _const_spec
_SPEC_BY_TYPE[tuple] = _SPEC_BY_TYPE[list] = _seq_spec


_MUTABLE, _MUTABLE_NUMBER = ("mutable", None), ("mutable", None, "number")
_NUMBERS = (bool, int, float, complex)


def _tensor_spec(value):
    """``("tensor",)``, or ``("tensor", library, device)`` for a Tensor holding data of
    another library (the code is compiled for that library: ``backend_of``)."""
    data = value._data
    if type(data) is np.ndarray:
        return _TENSOR_SPEC
    library = library_of(data)
    if library is None:
        return _TENSOR_SPEC
    return ("tensor", library, device_of(data))


def _arg_spec_slow(value):
    from ..tensor import Tensor
    t = type(value)
    if isinstance(value, Tensor):
        _SPEC_BY_TYPE[t] = _tensor_spec
        return _tensor_spec(value)
    if isinstance(value, np.ndarray):
        problem = subclass_problem(value)
        if problem is not None:
            raise UnfitInput(value, "%s is " + problem)
        _SPEC_BY_TYPE[t] = _array_spec
        return _array_spec(value)
    library = library_of(value)
    if library is not None:
        # the library and device choose the code's ``xp``: both are part of the key
        _SPEC_BY_TYPE[t] = lambda v: ("xarray", library, device_of(v))
        return _SPEC_BY_TYPE[t](value)
    if isinstance(value, np.generic):
        spec = ("npscalar", t)
        _SPEC_BY_TYPE[t] = lambda v: spec
        return spec
    if isinstance(value, Mutable):
        inner = value.value
        if isinstance(inner, (tuple, list)):
            return ("mutable", arg_spec(inner))
        # a Python number is 0-d: compiled code may drop shape work for it
        return _MUTABLE_NUMBER if type(inner) in _NUMBERS else _MUTABLE
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(arg_spec(v) for v in value)
    return _const_spec(value)


def is_complex_spec(spec):
    """Whether an argument with this spec holds a complex array or NumPy scalar."""
    if spec is None:
        return False
    if spec is COMPLEX_ARRAY_SPEC or spec[0] == "npscalar" and issubclass(
            spec[1], np.complexfloating):
        return True
    if spec[0] in ("tuple", "list"):
        return any(is_complex_spec(s) for s in spec[1:])
    return False


def is_differentiable_spec(spec):
    return spec[0] in ("tensor", "array", "npscalar", "mutable", "xarray")


def backend_of(specs, runtime=()):
    """The ``Backend`` for arguments of these specs, or None for NumPy.

    Arrays of another library (``("xarray", library, device)``), or Tensors
    holding them (``("tensor", library, device)``), choose it; so does the
    data the program reads when it runs (``runtime``: ``(name, (library,
    device) or None for NumPy)`` of each Parameter or global array).  They
    cannot be mixed with NumPy arrays, Tensors or NumPy scalars, nor with
    arrays of another library or device (a ``TypeError`` says what to
    convert).
    """
    found, numpy_kind = set(), None
    for spec in _leaf_specs(specs):
        if spec[0] == "xarray" or spec[0] == "tensor" and len(spec) > 1:
            found.add(spec[1:])
        elif spec[0] in ("array", "tensor", "npscalar"):
            numpy_kind = spec[0]
    numpy_read = sorted({name for name, where in runtime if where is None})
    found.update(where for _, where in runtime if where is not None)
    if not found:
        return None
    if len(found) > 1:
        raise TypeError(
            "the arguments are arrays of different libraries or devices (%s); s2sad runs "
            "one program on one library and device: convert them to one"
            % ", ".join("%s on %s" % f for f in sorted(found)))
    (library, device), = found
    if numpy_read:
        raise TypeError(
            "this program reads NumPy data when it runs (%s), but its other data is %s "
            "arrays on %s; s2sad does not mix libraries: convert that data where it is defined "
            "(a global array), create it under the same set_context(array_library=..., "
            "device_target=...) as the rest (a Cell and its Parameters), or pass it as an "
            "argument"
            % (", ".join(numpy_read), library, device))
    if numpy_kind is not None:
        what = {"array": "a NumPy array", "tensor": "an s2sad Tensor",
                "npscalar": "a NumPy scalar"}[numpy_kind]
        raise TypeError(
            "the arguments mix %s arrays with %s; s2sad does not convert between libraries: "
            "convert the NumPy data first (for PyTorch torch.as_tensor(a), for JAX "
            "jax.numpy.asarray(a)), or pass NumPy arrays only" % (library, what))
    return backend_for(library, device)


def _leaf_specs(specs):
    for spec in specs:
        if spec is None or not isinstance(spec, tuple) or not spec:
            continue
        if spec[0] in ("tuple", "list"):
            yield from _leaf_specs(spec[1:])
        elif spec[0] == "mutable" and spec[1] is not None:
            yield from _leaf_specs(spec[1][1:])
        else:
            yield spec


def has_runtime_leaves(spec):
    """Whether an argument with this spec contributes gradients."""
    if spec is None or is_differentiable_spec(spec):
        return True
    if spec[0] in ("tuple", "list"):
        return any(has_runtime_leaves(s) for s in spec[1:])
    return False


def abstract_args(values, specs, hints):
    """Vars for runtime leaves, Consts for the rest; also the flat runtime leaves."""
    flat = []
    return [_abstract(v, s, h, flat) for v, s, h in zip(values, specs, hints)], flat


def _abstract(value, spec, hint, flat):
    """``value``'s Vars and Consts; each new Var is appended to ``flat``."""
    kind = spec[0]
    if kind in ("tensor", "array", "npscalar", "xarray"):
        var = Var(hint)
        flat.append(var)
        return var
    if kind == "mutable":
        inner = value.value
        if isinstance(inner, (tuple, list)):
            return tuple(_abstract(Mutable(v), ("mutable", None), "%s_%d" % (hint, i), flat)
                         for i, v in enumerate(inner))
        var = Var(hint)
        flat.append(var)
        return var
    if kind in ("tuple", "list"):
        # a tuple of hints names each element; a string is numbered
        return tuple(_abstract(v, s, hint[i] if isinstance(hint, tuple) else "%s_%d" % (hint, i),
                               flat)
                     for i, (v, s) in enumerate(zip(value, spec[1:])))
    return Const(value)


def scalar_inputs(abstract, specs):
    """Ids of the input Vars 0-d at every call: NumPy scalars, real arrays of shape ()
    and ``mutable`` Python numbers."""
    return _inputs_where(abstract, specs, lambda s: s[0] == "npscalar" or s == _MUTABLE_NUMBER
                         or s[:2] == ("array", "0-d"))


def float64_scalar_inputs(abstract, specs):
    """Ids of the input Vars that are 0-d float64 at every call (``np.float64``, arrays)."""
    return _inputs_where(abstract, specs, lambda s: s[:3] == ("array", "0-d", "<f8") or
                         s[0] == "npscalar" and s[1] is np.float64)


def _inputs_where(abstract, specs, test):
    out = set()
    for a, s in zip(abstract, specs):
        if isinstance(a, Var) and test(s):
            out.add(a.id)
        elif isinstance(a, tuple) and s[0] in ("tuple", "list"):
            out |= _inputs_where(a, s[1:], test)
    return frozenset(out)


def flatten_runtime(values, specs):
    """The raw arrays/scalars of the runtime leaves, in ``abstract_args`` order."""
    out = []
    for v, s in zip(values, specs):
        _flatten_into(out, v, s)
    return out


def _flatten_into(out, value, spec):
    # a module-level function, not a closure: a recursive closure is a reference
    # cycle, which would keep this call's arrays alive until the next collection
    kind = spec[0]
    if kind == "tensor":
        out.append(value._data)
    elif kind in ("array", "npscalar", "xarray"):
        out.append(value)
    elif kind == "mutable":
        inner = value.value
        if isinstance(inner, (tuple, list)):
            for v in inner:
                _flatten_into(out, Mutable(v), ("mutable", None))
        else:
            out.append(getattr(inner, "_data", inner))
    elif kind in ("tuple", "list"):
        for v, s in zip(value, spec[1:]):
            _flatten_into(out, v, s)


AUX_STRUCTURE = ("when 'has_aux' is True, 'fn' must return a tuple (output, aux, ...) of at "
                 "least two items, but it returned one")


def check_aux_structure(result):
    """A ``has_aux`` function returns a tuple ``(objective, aux, ...)`` of two items or more."""
    if not isinstance(result, tuple) or len(result) < 2:
        raise ValueError(AUX_STRUCTURE)
