"""Calls evaluated while compiling: what they read of their arguments, and how it is guarded.

``len(self.cfg)`` or a helper called on constants reads its arguments whole,
so their contents are guarded (``read_whole``).  A transform such as
``s2sad.grad(fn)`` only wraps ``fn``; its result calls ``fn`` later in the
program, where ``fn`` is inlined through the path it was read by
(``pass_by_path``), so what it captured is guarded value by value instead.
"""
import types

from ..ir.nodes import Const
from .values import ListVal, is_library


class WholeReads:
    """Builder mixin: guards for calls evaluated while compiling."""

    def read_whole(self, func, args, kwargs):
        """A call evaluated while compiling reads its arguments whole: guard their contents.

        A bound method (``self.cfg.get``) reads its object too.  A transform
        (``s2sad.grad``) only wraps the function it is given: see ``pass_by_path``.
        """
        wraps = getattr(func.value, "__s2sad_wraps_fn__", False)
        if args and wraps and self.pass_by_path(args[0], methods=wraps == "with methods"):
            args = args[1:]
        for a in [func, *args, *kwargs.values()]:
            for c in _consts_in(a):
                if c.path is not None:
                    self.guards.deepen(c.path, c.value)
                    if isinstance(c.value, (types.MethodType, types.BuiltinMethodType)) \
                            and c.path[-1:] != ("__func__",) and len(c.path) > 1:
                        owner = getattr(c.value, "__self__", None)
                        if owner is not None and not isinstance(owner, types.ModuleType):
                            self.guards.deepen(c.path[:-1], owner)

    def pass_by_path(self, fn, methods=False):
        """Let a plain function read through a path, handed to a transform evaluated while
        compiling, keep that path where the transform's result calls it.

        ``s2sad.grad(fn)`` inside compiled code (``hvp``'s, ``jacfwd(grad(f))``)
        is made while compiling and has no path of its own, so what ``fn``
        captured was guarded whole, its arrays by identity: a new
        ``lambda w: loss(w, x)`` with a new ``x`` compiled again on every call.
        The transform only wraps ``fn`` and calls it, so where that call is
        inlined (``call_function`` with no path, ``known_path``) ``fn``'s path
        is used: its code is guarded (``lift``), its cells and defaults are
        read or guarded one by one, and its arrays are read on every call.
        True where so.  A bound method (``methods``: ``vmap(dist.logpdf)``) only where
        the transform calls it through the ``Const`` of ``passed_by_path``, so that
        its object is read through the path too.
        """
        if not isinstance(fn, Const) or fn.path is None or not (
                type(fn.value) is types.FunctionType or methods
                and type(fn.value) is types.MethodType
                and not isinstance(fn.value.__self__, (types.ModuleType, type))):
            return False
        known = self.known_paths.get(id(fn.value))
        if known is not None and known[1] != fn.path:
            # the same function read another way too: calls read it through the first
            # path, so this one is guarded whole (a change through either compiles again)
            return False
        self.known_paths[id(fn.value)] = (fn.value, fn.path)
        return True

    def passed_by_path(self, fn):
        """``fn`` as a ``Const`` with the path it was handed to a transform by, for a
        transform whose every call of it is made from s2sad's own code (``vmap``'s loop)."""
        known = self.known_paths.get(id(fn))
        return Const(fn, known[1] if known is not None and known[0] is fn else None)

    def known_path(self, fn):
        """The path ``fn`` was handed to a transform by (``pass_by_path``), where the
        transform's own code calls it (the innermost frame is s2sad's), or None: a
        call reaching the same object another way keeps what that way guards."""
        known = self.known_paths.get(id(fn))
        if known is None or known[0] is not fn or not self.frames \
                or not is_library(self.frames[-1][0].fn):
            return None
        return known[1]


def _consts_in(a):
    """The ``Const``s inside an abstract value (tuples and lists being built included)."""
    if isinstance(a, Const):
        return [a]
    if isinstance(a, ListVal):
        a = tuple(a.items)
    if isinstance(a, tuple):
        return [c for x in a for c in _consts_in(x)]
    return []
