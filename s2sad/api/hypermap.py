"""MindSpore's ``MultitypeFuncGraph``, ``HyperMap`` and ``Map`` (``mindspore.ops.composite``).

Model-zoo optimizers and loss-scale cells overload a function by argument
type (``MultitypeFuncGraph``) and apply it to every item of tuples of
gradients and parameters (``HyperMap``).  Here both are plain Python: the
overload is chosen by the arguments' types when called, and a map is a
tuple comprehension.  They run eagerly -- where model-zoo code calls them, on
gradients in a training step -- and refuse, with a message, to run inside a
function s2sad differentiates or compiles.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..tensor import Tensor
from .args import refused_inside


def _is_tensor(x):
    return isinstance(x, (Tensor, np.ndarray))


# MindSpore's type names -> whether a value has that type
_TYPE_TESTS = {
    "Tensor": _is_tensor,
    "Number": lambda x: isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, bool),
    "Bool": lambda x: isinstance(x, (bool, np.bool_)),
    "Int": lambda x: isinstance(x, (int, np.integer)) and not isinstance(x, bool),
    "Float": lambda x: isinstance(x, (float, np.floating)),
    "String": lambda x: isinstance(x, str),
    "Tuple": lambda x: isinstance(x, tuple),
    "List": lambda x: isinstance(x, list),
    "Dictionary": lambda x: isinstance(x, dict),
    "Function": callable,
    "None": lambda x: x is None,
}


def _type_test(name):
    key = name if isinstance(name, str) else getattr(name, "__name__", str(name))
    if key not in _TYPE_TESTS:
        raise TypeError("For 'MultitypeFuncGraph.register', the type %r is not one of %s"
                        % (name, sorted(_TYPE_TESTS)))
    return _TYPE_TESTS[key]


class _Eager:
    """Met inside code being compiled, the call is refused at the user's line: these
    run eagerly, where model-zoo code uses them (on gradients, in optimizer steps)."""

    def __s2sad_stage__(self, builder, args, kwargs, loc, path):
        refused_inside(type(self).__name__, "call it outside the function being "
                       "differentiated or compiled (on the gradients it returns, in the "
                       "training step)")(builder, args, kwargs, loc, path)


class MultitypeFuncGraph(_Eager):
    """A function overloaded by the types of its arguments (``register("Tensor", "Number")``)."""

    def __init__(self, name: str, read_value: bool = False) -> None:
        self.name = name
        self.read_value = read_value
        self.entries = []       # (type names, tests, function), in registration order

    def register(self, *type_names):
        tests = [_type_test(t) for t in type_names]

        def deco(fn):
            self.entries.append((type_names, tests, fn))
            return fn
        return deco

    def __call__(self, *args):
        for names, tests, fn in self.entries:
            if len(tests) == len(args) and all(t(a) for t, a in zip(tests, args)):
                return fn(*args)
        raise ValueError("For 'MultitypeFuncGraph' %r, no function is registered for "
                         "arguments of types (%s); registered: %s"
                         % (self.name, ", ".join(type(a).__name__ for a in args),
                            "; ".join("(%s)" % ", ".join(map(str, n))
                                      for n, _t, _f in self.entries) or "none"))


def _map_items(fn, seqs, reverse):
    """``fn`` applied across the items of the tuples/lists ``seqs`` (recursively)."""
    if not any(isinstance(s, (tuple, list)) for s in seqs):
        return fn(*seqs)
    lengths = {len(s) for s in seqs if isinstance(s, (tuple, list))}
    if len(lengths) != 1 or not all(isinstance(s, (tuple, list)) for s in seqs):
        raise ValueError("For 'HyperMap', the sequences must all be tuples or lists of one "
                         "length, but got %s" % [type(s).__name__ for s in seqs])
    n = lengths.pop()
    if reverse:     # the order calls are made in (what side effects see), not the result's
        out = tuple(_map_items(fn, [s[i] for s in seqs], reverse)
                    for i in range(n - 1, -1, -1))[::-1]
    else:
        out = tuple(_map_items(fn, [s[i] for s in seqs], reverse) for i in range(n))
    return list(out) if isinstance(seqs[0], list) else out


class HyperMap(_Eager):
    """``HyperMap(ops)(*seqs)`` or ``HyperMap()(ops, *seqs)``: ``ops`` over nested tuples."""

    def __init__(self, ops=None, reverse: bool = False) -> None:
        self.ops = ops
        self.reverse = reverse

    def __call__(self, *args):
        fn, seqs = (self.ops, args) if self.ops is not None else (args[0], args[1:])
        if not callable(fn):
            raise TypeError("For 'HyperMap', the function to map must be callable, but got %s"
                            % type(fn).__name__)
        return _map_items(fn, list(seqs), self.reverse)


class Map(HyperMap):
    """``Map``: ``HyperMap`` over the top level of the sequences only."""

    def __call__(self, *args):
        fn, seqs = (self.ops, args) if self.ops is not None else (args[0], args[1:])
        n = {len(s) for s in seqs}
        if len(n) != 1:
            raise ValueError("For 'Map', the sequences must have one length")
        out = tuple(fn(*items) for items in zip(*seqs))
        return list(out) if isinstance(seqs[0], list) else out
