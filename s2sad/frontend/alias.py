"""Which variables may share one NumPy array, for writes in place.

NumPy's ``v -= e`` and ``v[i] = e`` update ``v``'s array in place, so every
other name bound to that array (``v = x``) or to a view of it (``t =
v[::-1]``, a reshape, a transpose) changes too.  s2sad compiles them into a
new array, ``v = v - e`` and a functional update of ``v``, like every other
operation.  The two agree unless another variable that shares the array is
read afterwards; that case is refused with an error naming both variables,
rather than compiled into a different function.

Sharing is tracked on SSA values as they are emitted (``Emitter.roots``):
each ``Var`` has a set of *roots*, the arrays whose memory it may use.  Views
take their operand's roots; a phi of a branch or loop takes the union of what
it may be.
"""
import gast

from ..errors import CompileError
from ..ir.nodes import Var, leaves
from .values import freeze

_OP_TEXT = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**",
            gast.MatMult: "@", gast.FloorDiv: "//", gast.Mod: "%"}


class Aliasing:
    """Mixin of ``Builder``: the checks on ``v op= e`` and ``v[i] = e``."""

    def check_in_place(self, node, cur, scope):
        """Refuse ``name op= e`` when a variable sharing ``name``'s array is read later."""
        target = node.target.id
        op = _OP_TEXT.get(type(node.op), "?")
        self.check_shared(target, cur, node, scope, "'%s %s= ...'" % (target, op),
                          "'%s = %s %s ...'" % (target, target, op),
                          "write '%s = %s %s ...' if '%%s' should keep its value, or assign the "
                          "new value to '%%s' as well" % (target, target, op))

    def check_item_write(self, name, cur, stmt, scope):
        """Refuse ``name[i] = e`` (or ``name[i] op= e``) on a shared array read later."""
        self.check_shared(name, cur, stmt, scope, "'%s[...] = ...'" % name,
                          "a new array '%s' with that item changed" % name,
                          "make it a new array first ('%s = %s * 1.0') if '%%s' should keep its "
                          "value, or make the same change to '%%s'" % (name, name))

    def check_shared(self, target, cur, stmt, scope, what, compiled, hint):
        """Raise if another variable read after ``stmt`` shares the array of ``cur``."""
        if not isinstance(cur, Var):
            return
        shared = self.roots(cur)
        frames = self.frames or [(scope, None)]
        for depth in range(len(frames) - 1, -1, -1):
            frame, _ = frames[depth]
            if depth == len(frames) - 1:
                frame, at, after = scope, stmt, (stmt.end_lineno, stmt.end_col_offset)
            else:
                at, after = _call_site(frame.info, frames[depth + 1][1])
            for name, value in list(frame.env.items()):
                if name.startswith(".") or (frame is scope and name == target):
                    continue
                if not any(isinstance(v, Var) and self.roots(v) & shared
                           for v in leaves(_plain(value))):
                    continue
                if read_later(frame.info, name, at, after):
                    raise CompileError(
                        "%s changes in place the array '%s' shares with '%s', which is read "
                        "afterwards: NumPy changes both, while s2sad compiles it as %s"
                        % (what, target, name, compiled), scope.info.loc(stmt),
                        hint=hint % (name, name))


def _plain(value):
    value = freeze(value)
    return value if isinstance(value, (tuple, Var)) else ()


def _call_site(info, loc):
    """``(call node or position, end of the call)`` of the call at ``loc`` in ``info``."""
    if loc is None or loc.filename != info.filename:
        return (0, 0), (0, 0)           # unknown: treat every read as later
    col = loc.col - info.col_shift
    for node in gast.walk(info.tree):
        if isinstance(node, gast.Call) and node.lineno == loc.lineno and node.col_offset == col:
            return node, (node.end_lineno, node.end_col_offset)
    return (loc.lineno, col), (loc.lineno, col)


def read_later(info, name, at, after):
    """Whether ``name`` is read after position ``after`` in ``info``'s function, or
    anywhere in a loop around ``at`` (a node or a position), i.e. possibly
    after it at run time."""
    reads, loops = _index(info)
    positions = reads.get(name, ())
    if any(p > after for p in positions):
        return True
    start = (at.lineno, at.col_offset) if not isinstance(at, tuple) else at
    for lo, hi, loop in loops:
        if lo <= start <= hi and any(lo <= p <= hi for p in positions) \
                and not _written_first(loop, name):
            return True
    return False


def _written_first(loop, name):
    """Whether each iteration of ``loop`` binds ``name`` anew before reading it: the
    first statement of its body that names it is ``name = e`` with ``e`` not reading
    it (and a ``while`` test does not read it), so a read in a later iteration reads
    that new value, not the array written in place."""
    if isinstance(loop, gast.While) and _names(loop.test, name, gast.Load):
        return False
    for stmt in loop.body:
        if _names(stmt, name):
            return isinstance(stmt, gast.Assign) and not _names(stmt.value, name) and any(
                isinstance(t, gast.Name) and t.id == name for t in stmt.targets)
    return False


def _names(node, name, ctx=None):
    """Whether ``name`` appears in ``node`` (in context ``ctx``, given)."""
    return any(isinstance(n, gast.Name) and n.id == name
               and (ctx is None or isinstance(n.ctx, ctx)) for n in gast.walk(node))


def read_outside(info, name, loop):
    """Whether ``name`` may be read after ``loop`` has run: after its end, or
    outside it in a loop around it (a later iteration of that loop)."""
    reads, loops = _index(info)
    lo, hi = (loop.lineno, loop.col_offset), (loop.end_lineno, loop.end_col_offset)
    outside = [p for p in reads.get(name, ()) if not lo <= p <= hi]
    if any(p > hi for p in outside):
        return True
    return any(a <= lo and hi <= b and any(a <= p <= b for p in outside) for a, b, _ in loops)


def _index(info):
    """Positions of every read of each name, and the spans of loops (cached)."""
    cached = getattr(info, "reads_index", None)
    if cached is not None:
        return cached
    reads, loops = {}, []
    for node in gast.walk(info.tree):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Store):
            reads.setdefault(node.id, []).append((node.lineno, node.col_offset))
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            t = node.target      # ``v += e`` reads v too
            reads.setdefault(t.id, []).append((t.lineno, t.col_offset))
        elif isinstance(node, (gast.For, gast.While)):
            loops.append(((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset),
                          node))
    info.reads_index = (reads, loops)
    return info.reads_index
