"""Pytrees: nested containers of arrays, flattened to leaves and rebuilt.

A pytree is a leaf (an array, a Tensor, a number, anything not registered
as a container) or a container node whose children are pytrees.  The
registered nodes, with JAX's conventions:

- ``tuple`` and ``list``: their items;
- ``dict``: its values in sorted key order (the rebuilt dict has its keys
  sorted too, so ``{"b": .., "a": ..}`` and ``{"a": .., "b": ..}`` are one
  structure); ``collections.OrderedDict``: insertion order, which is part
  of its structure;
- namedtuples: their fields; dataclasses: their ``fields()`` (those with
  ``init=True``; rebuilt by calling the class with them as keywords);
- ``None``: a node with no children (no leaf);
- any type given to ``register_pytree_node``.

``tree_flatten`` gives ``(leaves, treedef)``; a ``PyTreeDef`` compares and
hashes by structure (node types, keys or fields, what a custom flatten
returned as auxiliary data), so it can be part of a cache key.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable, Iterable, List, Tuple

__all__ = ["PyTreeDef", "register_pytree_node", "tree_flatten", "tree_unflatten",
           "tree_leaves", "tree_structure", "tree_map", "is_node"]


class _Node:
    """How one container type is taken apart and put back together."""

    __slots__ = ("flatten", "unflatten")

    def __init__(self, flatten, unflatten):
        self.flatten = flatten          # value -> (children, aux)
        self.unflatten = unflatten      # (aux, children) -> value


def _dict_flatten(d):
    keys = sorted(d)
    return [d[k] for k in keys], tuple(keys)


def _ordered_flatten(d):
    keys = tuple(d)
    return [d[k] for k in keys], keys


_REGISTRY = {
    tuple: _Node(lambda t: (list(t), None), lambda aux, ch: tuple(ch)),
    list: _Node(lambda t: (list(t), None), lambda aux, ch: list(ch)),
    dict: _Node(_dict_flatten, lambda keys, ch: dict(zip(keys, ch))),
    collections.OrderedDict: _Node(_ordered_flatten,
                                   lambda keys, ch: collections.OrderedDict(zip(keys, ch))),
    type(None): _Node(lambda n: ([], None), lambda aux, ch: None),
}


def register_pytree_node(nodetype: type, flatten_func: Callable[[Any], Tuple[Iterable, Any]],
                         unflatten_func: Callable[[Any, Iterable], Any]) -> None:
    """Make ``nodetype`` a container for the functional API (as JAX's function of that name).

    ``flatten_func(value)`` returns ``(children, aux_data)``: the children are
    pytrees, ``aux_data`` a hashable description of the rest (compared to
    tell structures apart).  ``unflatten_func(aux_data, children)`` builds
    the value back; it is also called while compiling, with the children the
    compiled code computes, so it should only store them.
    """
    if not isinstance(nodetype, type):
        raise TypeError("register_pytree_node: 'nodetype' must be a class, but got %r"
                        % (nodetype,))
    if not callable(flatten_func) or not callable(unflatten_func):
        raise TypeError("register_pytree_node: 'flatten_func' and 'unflatten_func' must be "
                        "callable")
    if nodetype in _REGISTRY:
        raise ValueError("register_pytree_node: %s is already registered" % nodetype.__name__)
    _REGISTRY[nodetype] = _Node(lambda v: _checked(flatten_func(v), nodetype), unflatten_func)


def _checked(pair, nodetype):
    try:
        children, aux = pair
    except (TypeError, ValueError):
        raise TypeError("the flatten function registered for %s must return (children, "
                        "aux_data), but returned %r" % (nodetype.__name__, pair)) from None
    return list(children), aux


def _is_namedtuple(t):
    return issubclass(t, tuple) and hasattr(t, "_fields")


def _node_of(t):
    """The ``_Node`` of type ``t``, or None for a leaf."""
    node = _REGISTRY.get(t)
    if node is not None:
        return node
    if _is_namedtuple(t):
        return _Node(lambda v: (list(v), None), lambda aux, ch: t(*ch))
    if dataclasses.is_dataclass(t):
        names = tuple(f.name for f in dataclasses.fields(t) if f.init)
        return _Node(lambda v: ([getattr(v, n) for n in names], names),
                     lambda aux, ch: t(**dict(zip(aux, ch))))
    return None


def is_node(value) -> bool:
    """Whether ``value`` is a container (not a leaf) of a pytree."""
    return _node_of(type(value)) is not None


class PyTreeDef:
    """The structure of a pytree: compared and hashed by value, leaves left out."""

    __slots__ = ("type", "aux", "children", "num_leaves", "_hash")

    def __init__(self, type_, aux, children):
        self.type = type_           # None for a leaf
        self.aux = aux
        self.children = tuple(children)
        self.num_leaves = 1 if type_ is None else sum(c.num_leaves for c in self.children)
        self._hash = hash((type_, aux, self.children))

    def __eq__(self, other):
        return isinstance(other, PyTreeDef) and self._hash == other._hash and \
            (self.type, self.aux, self.children) == (other.type, other.aux, other.children)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return self._hash

    def __repr__(self):
        if self.type is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        if self.type in (dict, collections.OrderedDict):
            inner = ", ".join("%r: %r" % kv for kv in zip(self.aux, self.children))
            return "{%s}" % inner if self.type is dict else "OrderedDict({%s})" % inner
        if self.type is tuple:
            return "(%s%s)" % (inner, "," if len(self.children) == 1 else "")
        if self.type is list:
            return "[%s]" % inner
        if self.type is type(None):
            return "None"
        return "%s(%s)" % (self.type.__name__, inner)

    def unflatten(self, leaves, build=None):
        """The pytree of this structure holding ``leaves`` (see ``tree_unflatten``)."""
        it = iter(leaves)
        out = _rebuild(self, it, build)
        if next(it, _END) is not _END:
            raise ValueError("tree_unflatten: too many leaves for the structure %r" % self)
        return out


LEAF = PyTreeDef(None, None, ())
_END = object()


def _rebuild(treedef, it, build):
    if treedef.type is None:
        leaf = next(it, _END)
        if leaf is _END:
            raise ValueError("tree_unflatten: too few leaves for the structure")
        return leaf
    children = [_rebuild(c, it, build) for c in treedef.children]
    if build is not None:
        return build(treedef, children)
    return _node_of(treedef.type).unflatten(treedef.aux, children)


def unflatten_node(treedef, children):
    """One node of ``treedef`` put back together from its (already built) children."""
    return _node_of(treedef.type).unflatten(treedef.aux, children)


def tree_flatten(tree: Any) -> Tuple[List[Any], PyTreeDef]:
    """``(leaves, treedef)``: the leaves left to right, and the structure around them."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    node = _node_of(type(tree))
    if node is None:
        leaves.append(tree)
        return LEAF
    children, aux = node.flatten(tree)
    return PyTreeDef(type(tree), aux, [_flatten(c, leaves) for c in children])


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """The pytree of structure ``treedef`` with ``leaves`` (left to right)."""
    if not isinstance(treedef, PyTreeDef):
        raise TypeError("tree_unflatten: 'treedef' must be a PyTreeDef (from tree_flatten), "
                        "but got %s" % type(treedef).__name__)
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any) -> List[Any]:
    return tree_flatten(tree)[0]


def tree_structure(tree: Any) -> PyTreeDef:
    return tree_flatten(tree)[1]


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``f`` applied to each leaf of ``tree`` (and the matching leaves of ``rest``)."""
    leaves, treedef = tree_flatten(tree)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r)
        if r_def != treedef:
            raise ValueError("tree_map: every tree must have the structure %r, but one has "
                             "%r" % (treedef, r_def))
        others.append(r_leaves)
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))
