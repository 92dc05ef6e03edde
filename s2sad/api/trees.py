"""Pytree arguments and outputs of the functional API, flattened at its boundary.

A call whose arguments hold a dict, namedtuple, dataclass or registered
container (``pytree.py``) differentiates a *flat function* instead: it
takes the leaves of every argument as separate inputs, rebuilds the
containers and calls the user's function, and returns the leaves of its
output when the caller asks for them.  The gradients, tangents and
Jacobians of the leaves are then put back into the arguments' (and the
output's) structure.

Tuples and lists of arrays alone keep the driver's own handling (a tuple
argument is one input with a tuple gradient), so nothing changes for them.

The structures are part of what the flat function is compiled for: they
are named by a string key (``structure_key``) the flat function captures,
and compiled code is guarded on what a function captures, by value for a
string, so a call with another structure never reuses code compiled for
this one.  The same structure with other keys is another structure.

Inside the compiled code the containers are ``TreeVal`` values
(``frontend/trees.py``): the helpers here marked ``__s2sad_structural__``
are applied to abstract values while compiling instead of being inlined.
"""
from __future__ import annotations

import inspect
import threading
import warnings

import numpy as np

from .. import driver as G
from .. import tracebacks
from ..compat import signature
from ..errors import CompileError
from ..frontend.values import TreeVal, ListVal, FrozenList, const_value
from ..ir import Const
from ..tensor import Tensor
from . import pytree
from .packing import memoized

# leaves met on every call of a gradient function: skipped without a function call
_LEAVES = frozenset((np.ndarray, Tensor, float, int, bool, np.float64, np.float32, type(None)))


# ------------------------------------------------------------ detection
def has_trees(args):
    """Whether an argument holds a container the driver does not take (a dict, ...)."""
    for a in args:
        if type(a) not in _LEAVES and _is_tree(a):
            return True
    return False


def _is_tree(a):
    if type(a) in (tuple, list):
        return has_trees(a)
    return pytree.is_node(a)


def _has_trees_abstract(args):
    """Inside compiled code a pytree argument cannot be differentiated again (yet)."""
    if _abstract_has_trees(args):
        raise CompileError("a gradient, vjp or jvp of a function taking a dict, namedtuple, "
                           "dataclass or registered container cannot be computed inside a "
                           "function s2sad differentiates (yet); pass tuples of arrays there")
    return Const(False)


def _abstract_has_trees(value):
    if isinstance(value, TreeVal):
        return True
    if isinstance(value, tuple):
        if hasattr(type(value), "_fields"):
            return True
        return any(_abstract_has_trees(v) for v in value)
    if isinstance(value, ListVal):
        return any(_abstract_has_trees(v) for v in value.items)
    return False


has_trees.__s2sad_structural__ = _has_trees_abstract


# ------------------------------------------------------ structure keys
_STRUCTURES = {}            # key -> tuple of PyTreeDefs (kept: their types stay alive)
_KEYS = {}                  # tuple of PyTreeDefs -> key
_keys_lock = threading.Lock()


def structure_key(treedefs):
    """A string naming this tuple of structures (equal structures, one key)."""
    key = _KEYS.get(treedefs)
    if key is None:
        with _keys_lock:
            key = _KEYS.get(treedefs)
            if key is None:
                key = "pytree-%d" % len(_KEYS)
                _KEYS[treedefs] = key
                _STRUCTURES[key] = treedefs
    return key


def structures(key):
    return _STRUCTURES[key]


# ---------------------------------------------------------- flattening
class FlatArgs:
    """The arguments of one call, flattened: their leaves, structures and key."""

    def __init__(self, args):
        self.leaves, defs, self.starts = [], [], []
        for a in args:
            leaves, treedef = pytree.tree_flatten(a)
            self.starts.append(len(self.leaves))
            self.leaves.extend(leaves)
            defs.append(treedef)
        self.treedefs = tuple(defs)
        self.key = structure_key(self.treedefs)

    def runtime(self, i):
        """Whether leaf ``i`` gets a derivative (an array, a Tensor, a NumPy scalar)."""
        return G.has_runtime_leaves(G.arg_spec(self.leaves[i]))

    def leaf_range(self, p):
        return range(self.starts[p], self.starts[p] + self.treedefs[p].num_leaves)

    def runtime_leaves(self, positions):
        """The flat positions of the runtime leaves of the arguments at ``positions``."""
        return tuple(i for p in positions for i in self.leaf_range(p) if self.runtime(i))

    def rebuild(self, p, values_by_leaf):
        """Argument ``p``'s structure with ``values_by_leaf[i]`` (None where missing)."""
        return self.treedefs[p].unflatten(values_by_leaf.get(i) for i in self.leaf_range(p))

    def rebuild_all(self, positions, single, values_by_leaf):
        trees = tuple(self.rebuild(p, values_by_leaf) for p in positions)
        return trees[0] if single else trees


def check_same_structure(api, what, expected, got):
    """A ValueError naming both structures when ``got`` does not mirror ``expected``."""
    e_def, g_def = pytree.tree_structure(expected), pytree.tree_structure(got)
    if e_def != g_def:
        raise ValueError("For '%s', %s must have the structure %r, but it has the structure "
                         "%r" % (api, what, e_def, g_def))


# ------------------------------------------------------- flat functions
def arguments_of(key, leaves):
    """The arguments of structure ``key`` holding ``leaves`` (eagerly: real containers)."""
    it = iter(leaves)
    return tuple(_take(treedef, it) for treedef in structures(key))


def _take(treedef, it):
    return treedef.unflatten([next(it) for _ in range(treedef.num_leaves)])


def _arguments_abstract(key, leaves):
    it = iter(leaves)
    return tuple(_rebuild_abstract(treedef, it) for treedef in structures(const_value(key)))


def _rebuild_abstract(treedef, it):
    return treedef.unflatten([next(it) for _ in range(treedef.num_leaves)], _abstract_node)


def _abstract_node(treedef, children):
    """One container node as the compiled code sees it (see the module docstring)."""
    t = treedef.type
    if t is tuple:
        return tuple(children)
    if t is list:
        return FrozenList(children)
    if t is type(None):
        return Const(None)
    if issubclass(t, tuple):                    # a namedtuple: a tuple with fields
        return pytree.unflatten_node(treedef, children)
    return TreeVal(pytree.unflatten_node(treedef, children))


arguments_of.__s2sad_structural__ = _arguments_abstract


def output_of(mode, out):
    """What a flat function returns (eagerly): ``out``, or its leaves (``mode``)."""
    if mode in ("same", "same-aux"):
        return out
    if mode == "head-leaves":
        out = out[0]
    leaves, treedef = pytree.tree_flatten(out)
    if mode == "leaves-key":
        return tuple(leaves), structure_key((treedef,))
    return tuple(leaves)


def _output_abstract(mode, out):
    mode = const_value(mode)
    if mode in ("same", "same-aux"):
        head = out[0] if mode == "same-aux" and isinstance(out, tuple) and out else out
        if _abstract_has_trees(head):
            raise CompileError("the function returns a dict or other container; a gradient "
                               "needs a scalar loss: return one value, or use vjp or jacrev "
                               "for a container of outputs")
        return out
    if mode == "head-leaves":
        if not isinstance(out, tuple) or len(out) < 2:
            raise CompileError("with has_aux=True the function must return a tuple "
                               "(output, aux, ...)")
        out = out[0]
    leaves = []
    treedef = _flatten_abstract(out, leaves)
    if mode == "leaves-key":
        return tuple(leaves), Const(structure_key((treedef,)))
    return tuple(leaves)


def _flatten_abstract(value, leaves):
    """``tree_flatten`` of an abstract value: the same structure the eager value has."""
    if isinstance(value, ListVal):
        value = FrozenList(value.items)
    if isinstance(value, Const) and (value.value is None or pytree.is_node(value.value)):
        return _flatten_const(value.value, leaves)
    if isinstance(value, TreeVal):
        obj = value.obj
        if type(obj) is dict:
            keys = sorted(obj)
            return pytree.PyTreeDef(dict, tuple(keys),
                                    [_flatten_abstract(obj[k], leaves) for k in keys])
        children, treedef = pytree.tree_flatten(obj)    # the leaves are abstract values
        return _replace_leaves(treedef, iter(children), leaves)
    if isinstance(value, tuple):
        t = list if isinstance(value, FrozenList) else type(value)
        return pytree.PyTreeDef(t, None, [_flatten_abstract(v, leaves) for v in value])
    leaves.append(value)
    return pytree.LEAF


def _replace_leaves(treedef, children, leaves):
    """``treedef`` with each leaf (an abstract value) flattened in turn."""
    if treedef.type is None:
        return _flatten_abstract(next(children), leaves)
    return pytree.PyTreeDef(treedef.type, treedef.aux,
                            [_replace_leaves(c, children, leaves) for c in treedef.children])


def _flatten_const(value, leaves):
    const_leaves, treedef = pytree.tree_flatten(value)
    leaves.extend(Const(v) for v in const_leaves)
    return treedef


output_of.__s2sad_structural__ = _output_abstract


def flat_function(fn, key, mode):
    """``fn`` taking the leaves of arguments of structure ``key``; output by ``mode``:
    ``same`` (``same-aux``: its first item a loss), ``leaves``, ``head-leaves`` (of ``out[0]``, for ``has_aux``) or
    ``leaves-key`` (the leaves and the output's structure key)."""
    return memoized(("pytree-flat", fn, key, mode), lambda: _make_flat(fn, key, mode))


def _make_flat(fn, key, mode):
    def flat(*leaves):
        return output_of(mode, fn(*arguments_of(key, leaves)))
    names = _leaf_names(fn, structures(key))
    flat.__s2sad_params__ = names
    flat.__s2sad_named_after__ = lambda root: fn if inspect.isfunction(fn) else flat
    return flat


def _leaf_names(fn, treedefs):
    """Names for the leaves in generated code: ``params_w`` for ``params["w"]``."""
    try:
        params = [p.name for p in signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for i, treedef in enumerate(treedefs):
        _name_leaves(treedef, params[i] if i < len(params) else "arg%d" % i, names)
    return names


def _name_leaves(treedef, prefix, names):
    if treedef.type is None:
        names.append(prefix)
        return
    labels = treedef.aux if isinstance(treedef.aux, tuple) and \
        len(treedef.aux) == len(treedef.children) else range(len(treedef.children))
    if hasattr(treedef.type, "_fields"):
        labels = treedef.type._fields
    for label, child in zip(labels, treedef.children):
        part = str(label)
        _name_leaves(child, "%s_%s" % (prefix, part if part.isidentifier() else "%d" % len(
            names)), names)


def rebuild_output(out, t_out=None):
    """A ``leaves-key`` output (and its tangent) back in the output's structure."""
    leaves, key = out
    (treedef,) = structures(key)
    if t_out is None:
        return treedef.unflatten(leaves)
    return treedef.unflatten(leaves), treedef.unflatten(t_out[0])


def warn_all_constant(api, positions):
    warnings.warn(
        "every gradient asked for in '%s' is of a constant (s2sad treats Python numbers as "
        "constants): the arguments at positions %s hold no array or Tensor; the result is ()"
        % (api, ", ".join(map(str, positions))), UserWarning,
        stacklevel=tracebacks.user_frame(2)[1])
