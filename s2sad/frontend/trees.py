"""Containers with a known structure: dicts and other pytree nodes of abstract values.

The functional API passes a dict (or a dataclass, or a registered pytree
class) argument to the differentiated code as a ``TreeVal`` holding the
abstract values of its leaves; a dict display builds one too.  Reading an
item or attribute with a key known while compiling, ``items()``/``keys()``/
``values()``/``get``, ``len`` and iterating over the keys are answered
while compiling, as for tuples; anything else is refused with an error.
"""
import builtins
import inspect
import operator

from ..errors import CompileError
from ..ir.nodes import Var, Const
from .control import NeedsConstant
from .values import TreeVal, ListVal, is_const, const_value

_DICT_METHODS = ("items", "keys", "values", "get")
_ITERATING = (builtins.list, builtins.tuple, builtins.sorted, builtins.enumerate, builtins.zip,
              builtins.reversed)


class TreeOutput(CompileError):
    """A differentiated function returned a dict or other pytree container.

    Only the functional API's flat functions (``api/trees.py``) take such
    outputs apart; ``jvp`` retries through one when it meets this error.
    """


def holds_tree(value):
    """Whether an abstract value is or contains a ``TreeVal``."""
    if isinstance(value, TreeVal):
        return True
    if isinstance(value, ListVal):
        value = tuple(value.items)
    return isinstance(value, tuple) and any(holds_tree(v) for v in value)


def check_result(result, loc):
    """Refuse a program output holding a container compiled code cannot return."""
    if holds_tree(result):
        raise TreeOutput("the function returns a dict (or a dataclass or registered pytree); "
                         "s2sad.vjp, jvp, jacfwd and jacrev take such outputs, but a gradient "
                         "needs a scalar loss, and GradOperation a Tensor or a tuple of them: "
                         "return the loss, or a tuple", loc)


class Trees:
    """Mixin of ``Builder``: item, attribute and method access on ``TreeVal``."""

    def tree_value(self, value):
        """A child read from a ``TreeVal``: abstract already, else a constant."""
        if isinstance(value, (Var, Const, tuple, ListVal, TreeVal)):
            return value
        return self.lift(value)

    def tree_item(self, tree, index, loc):
        if not isinstance(tree.obj, dict):
            raise CompileError("a %s cannot be indexed" % type(tree.obj).__name__, loc)
        if not is_const(index):
            raise NeedsConstant("a dict key must be known while compiling", loc)
        key = const_value(index)
        if key not in tree.obj:
            raise CompileError("KeyError: %r (the keys are %s)"
                               % (key, ", ".join(map(repr, tree.obj))), loc)
        return self.tree_value(tree.obj[key])

    def tree_attribute(self, tree, name, loc):
        if isinstance(tree.obj, dict):
            if name in _DICT_METHODS:
                return ("tree-method", tree, name)
            if getattr(type(tree.obj), "__getattr__", None) in (dict.__getitem__, dict.get):
                return self.tree_item(tree, Const(name), loc)   # ``params.layer``: a dot-dict
            raise CompileError("dict.%s is not supported inside differentiated code; use "
                               "one of %s" % (name, ", ".join(_DICT_METHODS)), loc)
        on_class = getattr(type(tree.obj), name, None)
        if name not in getattr(tree.obj, "__dict__", ()):
            if inspect.isfunction(on_class):
                return ("tree-method", tree, name)      # a method: inlined on the container
            if isinstance(on_class, property) and inspect.isfunction(on_class.fget):
                return self.call_function(on_class.fget, [], {}, loc, self_value=tree)
        try:
            return self.tree_value(getattr(tree.obj, name))
        except Exception as e:      # any error of the user's class, at the user's line
            raise CompileError("reading attribute '%s' of a %s while compiling raised %s: %s"
                               % (name, type(tree.obj).__name__, type(e).__name__, e), loc)

    def tree_method(self, tree, name, args, kwargs, loc):
        d = tree.obj
        if not isinstance(d, dict):
            return self.call_function(getattr(type(d), name), list(args), kwargs, loc,
                                      self_value=tree)
        if kwargs:
            raise CompileError("dict.%s takes no keyword arguments" % name, loc)
        if name == "get" and 1 <= len(args) <= 2:
            if not is_const(args[0]):
                raise NeedsConstant("a dict key must be known while compiling", loc)
            key = const_value(args[0])
            if key in d:
                return self.tree_value(d[key])
            return args[1] if len(args) == 2 else Const(None)
        if args:
            raise CompileError("dict.%s takes no arguments" % name, loc)
        if name == "keys":
            return tuple(Const(k) for k in d)
        if name == "values":
            return tuple(self.tree_value(v) for v in d.values())
        return tuple((Const(k), self.tree_value(v)) for k, v in d.items())

    def dict_builtin(self, func, args, kwargs, loc):
        """``dict(...)`` over runtime values, or ``get``/``keys``/``values``/``items``
        of a dict known while compiling given a runtime value (``d.get(k, x)``):
        answered as for a ``TreeVal``; ``None`` for any other call."""
        f = func.value
        if f is builtins.dict:
            return self.make_dict(args, kwargs, loc)
        if f is builtins.sorted and len(args) == 1:
            return self.sorted_known(args[0], kwargs, loc)
        owner = getattr(f, "__self__", None)
        if type(owner) is dict and getattr(f, "__name__", None) in _DICT_METHODS:
            self.read_whole(func, [], {})       # the answer depends on the dict's contents
            return self.tree_method(TreeVal(dict(owner)), f.__name__, args, kwargs, loc)
        return None

    def sorted_known(self, seq, kwargs, loc):
        """``sorted`` of a sequence known while compiling (``d.items()``, a dict's keys)
        whose sort keys are known then: the items reordered (``None`` otherwise)."""
        items = self.static_sequence(seq)
        if items is None or set(kwargs) - {"key", "reverse"}:
            return None
        reverse = kwargs.get("reverse", Const(False))
        key = kwargs.get("key", Const(None))
        keys = [self._sort_key(key, item, loc) for item in items]
        if not is_const(reverse) or not all(is_const(k) for k in keys):
            raise NeedsConstant("sorted(): the sort keys must be known while compiling", loc)
        order = sorted(range(len(items)), key=lambda i: const_value(keys[i]),
                       reverse=bool(const_value(reverse)))
        return tuple(items[i] for i in order)

    def _sort_key(self, key, item, loc):
        """``key(item)``; an ``operator.itemgetter`` picks from a tuple of abstract values."""
        if is_const(key) and isinstance(const_value(key), operator.itemgetter) \
                and isinstance(item, tuple):
            picked = const_value(key)(tuple(range(len(item))))
            return tuple(item[i] for i in picked) if isinstance(picked, tuple) else item[picked]
        return item if is_const(key) and const_value(key) is None else \
            self.call(key, [item], {}, loc)

    def make_dict(self, args, kwargs, loc):
        """``dict(mapping_or_pairs, **kwargs)`` as a ``TreeVal`` (keys known while compiling)."""
        if len(args) > 1:
            raise CompileError("dict expected at most 1 argument, got %d" % len(args), loc)
        out = {}
        src = args[0] if args else ()
        if isinstance(src, TreeVal) and isinstance(src.obj, dict):
            out.update(src.obj)
        elif isinstance(src, Const) and isinstance(src.value, dict):
            out.update(src.value)
        else:
            pairs = self.static_sequence(src)
            if pairs is None:
                raise CompileError("dict() of a value known only at run time is not "
                                   "supported: build it from (key, value) pairs or a dict "
                                   "display", loc)
            for pair in pairs:
                items = self.static_sequence(pair)
                if items is None or len(items) != 2:
                    raise CompileError("dict(): each item must be a (key, value) pair", loc)
                if not is_const(items[0]):
                    raise NeedsConstant("a dict key must be known while compiling", loc)
                out[const_value(items[0])] = items[1]
        out.update(kwargs)
        return TreeVal(out)

    def tree_keys(self, tree):
        """What iterating over ``tree`` gives: a dict's keys (None for other objects)."""
        if isinstance(tree.obj, dict):
            return [Const(k) for k in tree.obj]
        return None

    def dict_keys_for(self, f, args):
        """``list(d)``, ``sorted(d)``, ``zip(d, ...)``...: a dict iterated as its keys."""
        if f in _ITERATING and any(isinstance(a, TreeVal) for a in args):
            return [tuple(self.tree_keys(a) or ()) if isinstance(a, TreeVal) and
                    isinstance(a.obj, dict) else a for a in args]
        return args

    def ex_Dict(self, node, scope):
        """A dict display: its keys must be known while compiling (a constant when
        its values are too)."""
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:       # ``{**other, ...}``
                out.update(self.keyword_arguments(v, scope, what="a dict display"))
            else:
                out[self.dict_key(k, scope)] = self.eval(v, scope)
        return self.dict_value(out)

    def dict_value(self, items):
        """A dict of abstract values built while compiling: a constant when every value
        is one (``np.sum(x, **{"axis": 0})``), else a ``TreeVal``."""
        if all(is_const(v) for v in items.values()):
            return Const({k: const_value(v) for k, v in items.items()})
        return TreeVal(items)
