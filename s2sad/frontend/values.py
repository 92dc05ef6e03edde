"""The abstract values the builder walks with, besides ``Var`` and ``Const``.

They live apart from the walker (``build.py``) so that the mixins it is
made of (``statements``, ``expressions``, ``calls``, ``control``, ``loops``,
``closures``, ``alias``) can use them without importing it.
"""
from ..ir.nodes import Const
from ..tensor import Tensor
from . import resolve


class Bound:
    """A method of a runtime value, e.g. ``x.sum`` before it is called."""

    __slots__ = ("var", "name")

    def __init__(self, var, name):
        self.var = var
        self.name = name


class Spread:
    """``*value`` of a runtime value in a call made at run time (``rand(*x.shape)``)."""

    __slots__ = ("var",)

    def __init__(self, var):
        self.var = var


class ListVal:
    """A Python list being built while compiling (``ys = []; ys.append(y)``).

    It is mutated in place, so it may only change in the region that created
    it: appending inside a branch or loop over runtime values raises
    ``NeedsConstant`` (a loop over a known range is then unrolled instead).
    """

    __slots__ = ("items", "region")

    def __init__(self, items, region):
        self.items = list(items)
        self.region = region


def is_const(a):
    if isinstance(a, Const):
        return True
    if isinstance(a, tuple):
        return all(is_const(x) for x in a)
    if isinstance(a, ListVal):
        return all(is_const(x) for x in a.items)
    return False


def const_value(a):
    if isinstance(a, Const):
        return a.value
    if isinstance(a, ListVal):
        return [const_value(x) for x in a.items]
    if isinstance(a, FrozenList):
        return [const_value(x) for x in a]
    return tuple(const_value(x) for x in a)


class FrozenList(tuple):
    """A list that has stopped changing: structure like any tuple, but still a
    list to ``isinstance``/``type`` and as a known value (``const_value``)."""

    __slots__ = ()


def freeze(a):
    """Lists become tuples where a value leaves the builder (results, phis, ops)."""
    if isinstance(a, ListVal):
        return FrozenList(freeze(x) for x in a.items)
    if isinstance(a, tuple):
        items = (freeze(x) for x in a)
        return FrozenList(items) if isinstance(a, FrozenList) else tuple(items)
    return a


def canon(a):
    """An all-known tuple or list becomes one ``Const`` (a list stays a list, as an
    index must); anything else is unchanged."""
    if isinstance(a, ListVal):
        if is_const(a):
            return Const(const_value(a))
        a = tuple(a.items)
    if isinstance(a, tuple):
        items = tuple(canon(x) for x in a)
        if all(isinstance(x, Const) for x in items):
            known = tuple(x.value for x in items)
            return Const(list(known) if isinstance(a, FrozenList) else known)
        return items
    return a


class Scope:
    """One activation of a function being walked.

    ``path`` is where the function was read from (see ``guards``), so what its
    closure cells and defaults hold is guarded through it; ``None`` for a
    function computed while compiling.
    """

    def __init__(self, info, fn, env, path=None):
        self.info = info
        self.fn = fn
        self.env = env
        self.globals = getattr(fn, "__globals__", {})
        self.closure = resolve.closure_vars(fn)
        self.parent = None      # the defining scope of a nested def / lambda
        self.path = path
        self.library = is_library(fn)



def is_library(fn):
    """Whether ``fn`` is s2sad's own code (walked as a library, not guarded)."""
    return (getattr(fn, "__module__", "") or "").startswith("s2sad.")


def is_tensor(value):
    """Whether ``value`` is an s2sad Tensor (a Parameter included)."""
    return isinstance(value, Tensor)


class TreeVal:
    """A container of abstract values with a structure known while compiling.

    ``obj`` is a dict of abstract values (a dict argument of the functional
    API, or a dict display), or an object (a dataclass, a registered pytree
    class) whose attributes are.  Its items are read with keys, and its
    attributes by name, known while compiling (``trees.py``).
    """

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


def known_truth(value):
    """``bool(value)`` when it is known while compiling (a constant, a tuple or list
    of abstract values, a dict or other container: its items decide, as in Python),
    else ``None`` (a runtime value: the condition becomes a branch)."""
    if isinstance(value, Const):
        return bool(value.value)
    if isinstance(value, tuple):
        return bool(value)
    if isinstance(value, ListVal):
        return bool(value.items)
    if isinstance(value, TreeVal):
        return bool(value.obj)
    return None
