"""Name resolution: what a name or ``self.`` attribute denotes while compiling.

Compiled code is specialised on what it read while compiling: the
attributes of the differentiated Cell (which primitive, which constant,
which sub-Cell class), module globals, closure cells, defaults.  Every such
read is recorded as a guard (``guards.py``); a later call reuses the
compiled code only if every guard still holds, so two instances of one
Cell class with different attributes never share a wrong adjoint, and a
changed global is seen.  Tensors and Parameters are never baked in: they are
runtime inputs read through their paths on each call.
"""
import types

import numpy as np

from ..ir.nodes import Var
from ..runtime import xarrays
from .guards import FN, read_path, scalar_key, guard_types


def closure_vars(fn):
    """The values of ``fn``'s free variables, by name."""
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    out = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # not yet bound
            pass
    return out


def child_path(const, name, item=False):
    """The path of ``const.<name>`` (``const[name]`` with ``item``), if ``const`` has one."""
    from .guards import child
    return child(const, name, item)


_SCALAR_TYPES = frozenset((type(None), bool, int, float, complex, str, bytes))
def guard_key(value):
    """What compiled code may assume about ``value``, an argument, on later calls.

    Floats count by meaning: ``-0.0`` is not ``0.0`` (``arctan2`` tells them
    apart) and a NaN is the same key as another NaN.
    """
    if type(value) in _SCALAR_TYPES:    # the common case, checked on every call
        return ("const",) + scalar_key(value)
    Tensor, Parameter, Cell, Primitive = guard_types()
    if isinstance(value, Parameter):
        return ("param",)
    if isinstance(value, (Tensor, np.ndarray)):
        return ("tensor",)
    if isinstance(value, Primitive):
        return ("prim", value.key())
    if isinstance(value, Cell):
        return ("cell", type(value))
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return ("const", type(value), value)    # a subclass: compared by value
    if isinstance(value, (tuple, list)):
        return ("seq", type(value), len(value))
    if isinstance(value, types.FunctionType):
        # a closure is specialised on what it captured (another k in make_scale(k)
        # is another function); captured arrays by identity, as they are read from there
        cells = tuple(_captured_key(c) for c in (value.__closure__ or ()))
        defaults = tuple(_captured_key_value(d) for d in (value.__defaults__ or ()))
        return ("fn", value.__code__, cells, defaults)
    if isinstance(value, types.MethodType):
        return ("method", getattr(value.__func__, "__code__", value.__func__),
                id(value.__self__))
    if isinstance(value, (type, types.ModuleType, types.BuiltinFunctionType)):
        return ("obj", value)
    return ("id", id(value))


def _captured_key(cell):
    try:
        return _captured_key_value(cell.cell_contents)
    except ValueError:
        return ("unbound",)


def _captured_key_value(value):
    Tensor = guard_types()[0]
    if isinstance(value, (Tensor, np.ndarray)):
        return ("id", id(value))
    try:
        key = guard_key(value)
        hash(key)
        return key
    except (TypeError, RecursionError):
        return ("id", id(value))


def path_in(root, obj, _seen=None):
    """The attribute path from ``root`` to ``obj`` through Cells, or ``None``."""
    from ..nn.cell import Cell
    if root is None:
        return None
    if obj is root:
        return ()
    seen = set() if _seen is None else _seen
    if id(root) in seen:
        return None
    seen.add(id(root))
    for name, value in vars(root).items():
        if value is obj:
            return (name,)
        if isinstance(value, Cell):
            sub = path_in(value, obj, seen)
            if sub is not None:
                return (name,) + sub
    return None


def data_location(value):
    """``(library, device)`` of an array of another library, or of a Tensor's data
    of one; None for NumPy data (and anything else)."""
    data = getattr(value, "_data", value)
    if type(data) is np.ndarray:
        return None
    library = xarrays.library_of(data)
    return None if library is None else (library, xarrays.device_of(data))


class RuntimeInputs:
    """Tensors met while compiling, which the compiled code takes as arguments.

    Each is read on every call from where it was found: by its path (from the
    Cell, the differentiated function or a module's globals; see ``guards``),
    or, when it has none (a value computed while compiling), by object.
    """

    def __init__(self):
        self.entries = []   # (var, path or None, obj)
        self._by_id = {}
        self._types = {}    # var id -> the type the value had while compiling
        self._where = {}    # var id -> (library, device) of its data, None for NumPy's
        self._handles = set()   # ids of the Vars passed as the object itself (see handle_for)

    def var_for(self, value, path, hint=None):
        from ..tensor import Parameter
        key = id(value)
        if key in self._by_id:
            return self._by_id[key]
        if hint is not None:
            pass
        elif path is not None and isinstance(path[0], (str, int)):
            hint = "self_" + "_".join(str(getattr(p, "key", p)) for p in path)
        else:
            hint = getattr(value, "name", None) if isinstance(value, Parameter) else None
            hint = (hint or "const").replace(".", "_")
        var = Var(hint)
        self._by_id[key] = var
        self._types[var.id] = type(value)
        self._where[var.id] = data_location(value)
        # with a path the object is not kept: it is read again on every call
        self.entries.append((var, path, None if path is not None else value))
        return var

    def handle_for(self, var):
        """An input passing the object whose array ``var`` is (a Parameter to write
        into), read from the same place; ``None`` when ``var`` is no input."""
        key = ("object", var.id)
        if key in self._by_id:
            return self._by_id[key]
        entry = next((e for e in self.entries if e[0] is var), None)
        if entry is None:
            return None
        handle = Var((var.hint or "param") + "_ref")
        self._by_id[key] = handle
        self._types[handle.id] = self._types.get(var.id)
        self._where[handle.id] = self._where.get(var.id)
        self._handles.add(handle.id)
        self.entries.append((handle,) + entry[1:])
        return handle

    @staticmethod
    def computed(obj):
        """Whether ``obj`` (an entry's object) is a NumPy array computed while compiling:
        no one else holds it, so it may move to the library the program runs on."""
        return type(obj) is np.ndarray

    def move_computed(self, convert, where):
        """Replace each NumPy array computed while compiling by ``convert(array)``, data
        at ``where`` (``(library, device)``)."""
        for i, (var, path, obj) in enumerate(self.entries):
            if path is None and self.computed(obj):
                self.entries[i] = (var, None, convert(obj))
                self._where[var.id] = where

    def where(self, var):
        """``(library, device)`` of the data ``var`` stands for while compiling, or None
        for NumPy data (``driver.specs.backend_of``)."""
        return self._where.get(var.id)

    def type_of(self, var):
        """The type of the value ``var`` stands for (guarded: see ``guards.classify``)."""
        return self._types.get(var.id)

    def var_of(self, value):
        return self._by_id.get(id(value))

    def object_of(self, var, root):
        """The object ``var`` stands for while compiling (``None`` when it is no input
        or was found where only the running function can read it)."""
        for v, path, obj in self.entries:
            if v is var:
                if path is None:
                    return obj
                if path and path[0] is FN:
                    return None
                return read_path(root, path)
        return None

    def plan(self):
        """What ``read`` follows, as ``guards.GuardSet.compile_reading`` takes it."""
        handles = self._handles
        return [(path, obj, var.id in handles) for var, path, obj in self.entries]

    def read(self, root, fn=None):
        """The arrays to pass for this call, in ``entries`` order."""
        out = []
        handles = self._handles
        for var, path, obj in self.entries:
            value = read_path(root, path, fn) if path is not None else obj
            out.append(value if handles and var.id in handles else getattr(value, "_data", value))
        return out


_NOT_INLINED = ("numpy", "logging")


def call_target(f):
    """How to apply a known callable: ``(kind, function, self)`` or ``None``.

    ``cell``: a Cell instance, inline its ``construct``; ``method``: a bound
    method of a Python object, inline with ``self``; ``inline``: a Python
    function with source (user helpers, functional ops, NumPy mappings).
    """
    from ..nn.cell import Cell
    from . import npmap
    if isinstance(f, Cell):
        if getattr(type(f), "bprop", None) is not None:
            return ("custom_bprop", None, f)
        return ("cell", type(f).construct, f)
    mapped = npmap.lookup(f)
    if mapped is not None:
        return ("inline", mapped, None)
    if (getattr(f, "__module__", None) or "").split(".")[0] in _NOT_INLINED:
        # never inline NumPy's own code (a function without a mapping), nor
        # logging's (``getLogger`` is evaluated while compiling, a log call staged)
        return None
    if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType):
        return ("method", f.__func__, f.__self__)
    if isinstance(f, types.FunctionType):
        return ("inline", f, None)
    return None


def runtime_builtin(f):
    """A replacement written with primitives for a builtin applied to runtime values."""
    from ..ops.function import BUILTINS
    try:
        return BUILTINS.get(f)
    except TypeError:
        return None

