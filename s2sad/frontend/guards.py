"""Guards: what compiled code assumed about the world, checked before reuse.

Compiling reads Python objects: module globals, closure cells, default
arguments, attributes of the differentiated Cell and of objects it holds,
items of dicts and lists.  Each such read is recorded as a *path* (how to
find the value again) with the value seen; before a cache entry is reused,
every path is read again and compared.  Arrays and Parameters are not
compared but read through their paths on every call (``RuntimeInputs``), so
rebinding a global array or replacing a Parameter is seen at once.

A path starts at an origin and continues with steps:

- no origin: the Cell being differentiated (``("fc1", "weight")``);
- ``FN``: the function being differentiated (a closure created anew for each
  training step reuses the code compiled for the first, its captured values
  read from its own cells);
- ``Globals(d)``: a module's globals dictionary.

A step is an attribute name (``str``), an index (``int``) or an ``Item`` (a
dict key).  The checks of one cache entry are compiled into one small Python
function, so a lookup costs a few attribute reads and comparisons.
"""
import math
import types

import numpy as np



class _Fn:
    """The origin of paths that start at the differentiated function."""

    def __repr__(self):
        return "FN"


FN = _Fn()


class Same:
    """A key that matches only the very object it holds (not one equal to it)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is type(self) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


class Globals(Same):
    """The origin of paths that start at a module's globals (held: modules live long)."""

    __slots__ = ()

    @property
    def dict(self):
        return self.obj

    def __repr__(self):
        return "Globals(%s)" % self.obj.get("__name__", "?")


class Item:
    """A step ``[key]`` with a key other than an int (``self.cfg["lr"]``)."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __eq__(self, other):
        return type(other) is Item and type(other.key) is type(self.key) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return "[%r]" % (self.key,)


_MISSING = object()

#: modules whose contents compiled code may assume never change: their
#: attributes are not guarded (a guard on every ``np.`` call would cost time)
STABLE_MODULES = frozenset(("numpy", "s2sad", "math", "cmath", "builtins", "operator",
                            "functools", "itertools", "collections", "typing", "scipy"))


def stable(value):
    """Whether reads inside ``value`` need no guard (a library module or an object of one)."""
    if isinstance(value, types.ModuleType):
        name = value.__name__
    else:
        return False
    return name.split(".")[0] in STABLE_MODULES


def child(const, step, item=False):
    """The path of ``const.<step>`` (``const[step]`` with ``item``), or ``None`` when
    unguarded: ``const`` has no path, or is a library module."""
    path = const.path
    if path is None or stable(const.value):
        return None
    if item and (type(step) is not int):
        try:
            hash(step)
        except TypeError:
            return None
        step = Item(step)
    return path + (step,)


def read_path(root, path, fn=None):
    """Follow ``path`` from its origin (``root`` when it has none)."""
    value, steps = root, path
    if path:
        first = path[0]
        if first is FN:
            value, steps = fn, path[1:]
        elif type(first) is Globals:
            value, steps = first.dict, path[1:]
    for step in steps:
        if type(step) is str:
            value = getattr(value, step)
        elif type(step) is Item:
            value = value[step.key]
        else:
            value = value[step]
    return value


def describe(path):
    """A path as the user would write it: ``self.cfg['a']``, ``SCALE``, ``f.<closure k>``."""
    steps = list(path)
    if steps and steps[0] is FN:
        text, steps = "the function", steps[1:]
    elif steps and type(steps[0]) is Globals:
        text, steps = "%s." % steps[0].obj.get("__name__", "?"), steps[1:]
        if steps and type(steps[0]) is Item:
            text, steps = text + str(steps[0].key), steps[1:]
    else:
        text = "self"
    i = 0
    while i < len(steps):
        step = steps[i]
        if step == "__closure__" and i + 2 < len(steps) and steps[i + 2] == "cell_contents":
            text += "'s closure variable #%d" % steps[i + 1]
            i += 3
            continue
        text += ("." + step) if type(step) is str else "[%r]" % getattr(step, "key", step)
        i += 1
    return text


# ------------------------------------------------------------------- keys
def scalar_key(value):
    """A Python scalar's key: floats by their bits' meaning (-0.0 is not 0.0, nan is nan)."""
    t = type(value)
    if t is float:
        return (t, value.hex())
    if t is complex:
        return (t, value.real.hex(), value.imag.hex())
    return (t, value)


def deep_key(value, _depth=0):
    """A key of a whole value, contents included, for reads that take it whole.

    ``len(self.cfg)``, iterating a dict, or a call evaluated while compiling
    read a container entirely.  Arrays inside count by identity.
    """
    if _depth > 20:
        return ("id", id(value))
    t = type(value)
    if t in (tuple, list):
        return (t,) + tuple(deep_key(v, _depth + 1) for v in value)
    if t is dict:
        return (t,) + tuple((k, deep_key(v, _depth + 1)) for k, v in value.items())
    if t in (set, frozenset):
        try:
            return (t, frozenset(value))
        except TypeError:
            return ("id", id(value))
    if t in (type(None), bool, int, float, complex, str, bytes):
        return scalar_key(value)
    if isinstance(value, types.FunctionType):
        return (types.FunctionType, value.__code__,
                tuple(deep_key(_contents(c), _depth + 1) for c in value.__closure__ or ()),
                deep_key(value.__defaults__, _depth + 1))
    return ("id", id(value))


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


# --------------------------------------------------------------- checking
_types = None


def guard_types():
    """``(Tensor, Parameter, Cell, Primitive)``, imported once (they import this module)."""
    global _types
    if _types is None:
        from ..tensor import Tensor, Parameter
        from ..nn.cell import Cell
        from ..ir.primitive import Primitive
        _types = (Tensor, Parameter, Cell, Primitive)
    return _types


def classify(value):
    """How to check, on later calls, a value read through a path: ``(kind, payload)``."""
    Tensor, Parameter, Cell, Primitive = guard_types()
    t = type(value)
    if t in _SCALARS:
        return ("const", (t, value))
    if isinstance(value, (Tensor, np.ndarray)):
        # read on every call; its exact type may have answered an isinstance
        return ("type", t)
    if isinstance(value, Primitive):
        return ("prim", (t, value.key()))
    key = getattr(t, "__s2sad_guard_key__", None)
    key = key(value) if key is not None else None
    if key is not None:
        # an object of s2sad's own made anew per call (``grad(lambda ...)``), whose key is all
        # that compiling read of it besides what it holds, which is read through paths
        return ("key", (t, key))
    if isinstance(value, Cell):
        return ("type", t)
    if t is types.FunctionType:
        if "__s2sad_stage__" in value.__dict__:
            # what a transform returned (``vmap(f)``, ``jacfwd(f)``): compiled code stages
            # what its closure holds, which no path reads, so its closure is compared whole
            return ("deep", deep_key(value))
        # its closure cells and defaults are read through paths of their own
        return ("code", value.__code__)
    if t is types.MethodType and hasattr(value.__func__, "__code__"):
        return ("func", value.__func__.__code__)
    if t in (tuple, list, dict, set, frozenset):
        # often read whole (passed on, compared, iterated): compared by contents
        return ("deep", deep_key(value))
    if t is types.MethodType or t is types.BuiltinFunctionType and not isinstance(
            value.__self__, (types.ModuleType, type(None))):
        return ("eq", value)     # a method of a builtin object (``d.get``): made anew per read
    return ("is", value)


_SCALARS = frozenset((type(None), bool, int, float, complex, str, bytes))


class GuardSet:
    """The guards of one compile: path -> what to check, turned into one function."""

    def __init__(self):
        self.checks = {}    # path -> (kind, payload)

    def record(self, path, value):
        """Guard the value read through ``path``."""
        if self.checks.get(path, ("",))[0] != "deep":
            self.checks[path] = classify(value)

    def deepen(self, path, value):
        """The whole value was read (evaluated while compiling): compare contents."""
        self.checks[path] = ("deep", deep_key(value))

    def absent(self, path):
        """The global was not defined (a builtin was used): it must stay so."""
        self.checks.setdefault(path, ("absent", None))

    def __len__(self):
        return len(self.checks)

    def failing(self, root, fn):
        """What no longer holds, each as ``describe(path)`` (for the recompile log)."""
        out = []
        for path, check in self.checks.items():
            one = GuardSet()
            one.checks[path] = check
            if not one.compile()(root, fn):
                out.append(describe(path))
        return out

    def compile(self):
        """One function ``check(root, fn) -> bool`` testing every guard."""
        if not self.checks:
            return _always
        ns = {"_deep": deep_key, "_copysign": math.copysign}
        tests = [_test(i, path, kind, payload, ns)
                 for i, (path, (kind, payload)) in enumerate(self.checks.items())]
        body = ("def check(root, fn):\n    try:\n        return (%s)\n"
                "    except Exception:\n        return False\n"
                % "\n                and ".join(tests))
        exec(compile(body, "<s2sad guards>", "exec"), ns)
        return ns["check"]

    def compile_reading(self, reads):
        """One function ``read(root, fn)``: the values a call passes for ``reads`` when
        every guard holds, else None (a prepared call path's check and read in one).

        ``reads`` holds ``(path, obj, whole)``: read ``path`` (``obj`` itself when
        None), passing a Tensor's array unless ``whole``.  A path both guarded and
        read is followed once.
        """
        ns = {"_deep": deep_key, "_copysign": math.copysign, "_unwrap": _unwrap}
        bound = {}
        tests = []
        for i, (path, (kind, payload)) in enumerate(self.checks.items()):
            read = None
            if kind == "type":      # the value is read as it is tested
                read = "(r%d := %s)" % (i, _reader(i, path, ns))
                bound[path] = ("r%d" % i, payload)
            tests.append(_test(i, path, kind, payload, ns, read))
        values = []
        for j, (path, obj, whole) in enumerate(reads):
            if path is None:
                ns["c%d" % j] = obj
                expr = "c%d" % j
                plain = whole or type(obj) is np.ndarray
            elif path in bound:
                expr, seen = bound[path]
                plain = whole or seen is np.ndarray
            else:
                expr, plain = _reader("x%d" % j, path, ns), whole
            values.append(expr if plain else "_unwrap(%s)" % expr)
        body = ("def read(root, fn):\n    try:\n        if not (%s):\n            return None\n"
                "        return [%s]\n    except Exception:\n        return None\n"
                % ("\n                and ".join(tests) or "True", ", ".join(values)))
        exec(compile(body, "<s2sad guarded reads>", "exec"), ns)
        return ns["read"]


def _always(root, fn):
    return True


def _unwrap(value):
    """A Tensor's array (what compiled code takes), other values as they are."""
    return getattr(value, "_data", value)


def _reader(i, path, ns):
    """A Python expression reading ``path`` (its constants bound in ``ns``)."""
    steps = path
    if path and path[0] is FN:
        expr, steps = "fn", path[1:]
    elif path and type(path[0]) is Globals:
        ns["g%s" % i] = path[0].dict
        expr, steps = "g%s" % i, path[1:]
    else:
        expr = "root"
    for j, step in enumerate(steps):
        if type(step) is str and step.isidentifier():
            expr += "." + step
        elif type(step) is str:
            expr = "getattr(%s, %r)" % (expr, step)
        elif type(step) is Item:
            ns["k%s_%d" % (i, j)] = step.key
            expr += "[k%s_%d]" % (i, j)
        else:
            expr += "[%d]" % step
    return expr


# one payload ``o``, compared with the value read: a missing attribute is False too
_TESTS = {
    "is": "({read} is {o})",
    "eq": "({read} == {o})",
    "code": "({read}.__code__ is {o})",
    "func": "({read}.__func__.__code__ is {o})",
    "type": "(type({read}) is {o})",
    "deep": "(_deep({read}) == {o})",
}


def _test(i, path, kind, payload, ns, read=None):
    """The Python expression testing one guard (names it needs go into ``ns``);
    ``read``: the expression reading the value, when not the plain path."""
    if kind == "absent":
        ns["g%d" % i], ns["k%d" % i] = path[0].dict, path[-1].key
        return "(k%d not in g%d)" % (i, i)
    read = read or _reader(i, path, ns)
    v = "(v := %s)" % read
    if kind == "const":
        t, value = payload
        ns["t%d" % i], ns["v%d" % i] = t, value
        if t is float and value != value:
            return "(type(%s) is float and v != v)" % v
        if t is float and value == 0.0:
            return "(type(%s) is float and v == 0.0 and _copysign(1.0, v) == %r)" \
                % (v, math.copysign(1.0, value))
        if t in (type(None), bool):
            return "(%s is v%d)" % (read, i)
        return "(type(%s) is t%d and v == v%d)" % (v, i, i)
    if kind == "prim":
        ns["t%d" % i], ns["v%d" % i] = payload
        return "(type(%s) is t%d and v.key() == v%d)" % (v, i, i)
    if kind == "key":
        ns["t%d" % i], ns["v%d" % i] = payload
        return "(type(%s) is t%d and v.__s2sad_guard_key__() == v%d)" % (v, i, i)
    ns["o%d" % i] = payload
    if kind in _TESTS:
        return _TESTS[kind].format(read=read, o="o%d" % i)
    raise ValueError("unknown guard kind %r" % kind)
