"""Appending SSA ops: the part of the builder that the AD passes drive directly.

Reverse, forward and Taylor mode do not walk source; they emit ops into a
``Builder`` and inline rules through it.  What they need -- the op list,
``emit`` with its folding of constants, which values carry no gradient, which
values share an array, and where emitted ops say they come from -- is kept
here, apart from the AST walker, so that it can be read (and changed) on its
own.
"""
import contextlib

from ..errors import CompileError
from ..ir.nodes import Var, Const, Op, leaves
from .values import canon, freeze

_KEEP = object()


class Emitter:
    """An op list being built, with constant folding and the bookkeeping ``emit`` does."""

    def __init__(self):
        self.ops = []
        self.loc_override = None   # where emitted ops point instead of their own line
        self.origin = None         # the rule emitted ops come from (``Op.origin``)
        self.inert = set()         # ids of Vars no differentiable input flows into
        self.alias = {}            # Var id -> ids of the arrays it may share memory with
        self.boolean = set()       # ids of Vars that are boolean arrays (masks)
        self.region_depth = 0      # how many regions (branch, loop, rule bodies) are open

    def emit(self, prim, args, loc):
        """Append ``prim(*args)``; fold it if every argument is known."""
        args = [canon(a) for a in args]
        if all(isinstance(a, Const) for a in args) and not prim.stateful:
            try:
                return Const(prim.impl(*[a.value for a in args]))
            except Exception as e:
                raise CompileError("evaluating %s on constants failed: %s: %s"
                                   % (prim.name, type(e).__name__, e), loc)
        outs = [Var() for _ in range(prim.num_outputs)]
        if not prim.differentiable or all(v.id in self.inert for v in leaves(tuple(args))
                                          if isinstance(v, Var)):
            self.inert.update(o.id for o in outs)
        self.ops.append(Op(prim, args, outs, self.loc_override or loc, self.origin))
        self.note_view(prim, args, outs)
        return outs[0] if prim.num_outputs == 1 else tuple(outs)

    def carries_no_gradient(self, values):
        """Whether no differentiated input flows into any runtime value of ``values``."""
        return all(v.id in self.inert for v in leaves(tuple(freeze(x) for x in values))
                   if isinstance(v, Var))

    @contextlib.contextmanager
    def region(self):
        """Ops emitted inside the block go to a fresh list (``self.ops`` there),
        the body of a branch, loop or rule; the enclosing list is restored
        after, however the block ends."""
        saved, self.ops = self.ops, []
        self.region_depth += 1
        try:
            yield
        finally:
            self.ops = saved
            self.region_depth -= 1

    @contextlib.contextmanager
    def attributed(self, loc, origin=_KEEP):
        """Ops emitted inside the block point at ``loc`` (``None``: at their own
        lines) and, if given, come from ``origin``; both are restored after,
        however the block ends.

        The one place that changes them: an inlined rule's ops are attributed
        to the rule and to the user's line, a library helper's to its caller.
        """
        saved = (self.loc_override, self.origin)
        self.loc_override = loc
        if origin is not _KEEP:
            self.origin = origin
        try:
            yield
        finally:
            self.loc_override, self.origin = saved

    # ------------------------------------------------------------- sharing
    def roots(self, v):
        """The ids of the arrays whose memory ``v`` may use."""
        return self.alias.get(v.id) or frozenset((v.id,))

    def note_view(self, prim, args, outs):
        """A view (``prim.shares_input``) shares its operand's arrays."""
        if prim.boolean:
            self.boolean.update(o.id for o in outs)
        if args and isinstance(args[0], Var) and \
                prim.shares_input(args, lambda v: v.id in self.boolean):
            for out in outs:
                self.alias[out.id] = self.roots(args[0])

    def note_join(self, out, sides):
        """``out`` is one of ``sides`` (a branch's phi, a loop's carried value)."""
        roots = {out.id}
        for s in sides:
            for leaf in leaves(s):
                if isinstance(leaf, Var):
                    roots |= self.roots(leaf)
        self.alias[out.id] = frozenset(roots)
