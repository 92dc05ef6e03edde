"""IR -> Python source.

One line per primitive, written from the primitive's own ``emit`` template,
grouped under ``# line N: <source>`` comments that point at the user's file.
"""
import os

import numpy as np

from ..ir.nodes import Var, Const
from ..ops.operations import array_ops as A
from .namer import Namer

_LITERAL_TYPES = (bool, int, float, str, type(None))


class Constants:
    """Non-literal constants (arrays, objects) bound as ``_k0, _k1, ...`` globals."""

    def __init__(self):
        self.values = []
        self._ids = {}

    def name(self, value):
        key = id(value)
        if key not in self._ids:
            self._ids[key] = "_k%d" % len(self.values)
            self.values.append(value)
        return self._ids[key]

    def namespace(self):
        return {"_k%d" % i: v for i, v in enumerate(self.values)}


def _is_literal(v):
    if type(v) in _LITERAL_TYPES:
        return not (isinstance(v, float) and not np.isfinite(v))
    if type(v) in (tuple, list):
        return all(_is_literal(x) for x in v)
    if type(v) is slice:
        return all(_is_literal(x) for x in (v.start, v.stop, v.step))
    return v is Ellipsis


def _literal(v):
    if type(v) is list:
        return "[%s]" % ", ".join(_literal(x) for x in v)
    if type(v) is tuple:
        inner = ", ".join(_literal(x) for x in v)
        return "(%s,)" % inner if len(v) == 1 else "(%s)" % inner
    if type(v) is slice:
        return "slice(%s, %s, %s)" % (_literal(v.start), _literal(v.stop), _literal(v.step))
    if v is Ellipsis:
        return "Ellipsis"
    text = repr(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
        text = "(%s)" % text
    return text


def _subscript_part(v, render):
    if isinstance(v, Const) and type(v.value) is slice:
        s = v.value
        parts = ["" if s.start is None else _literal(s.start),
                 "" if s.stop is None else _literal(s.stop)]
        text = ":".join(parts)
        if s.step is not None:
            text += ":" + _literal(s.step)
        return text
    if isinstance(v, Const) and v.value is Ellipsis:
        return "..."
    return render(v)


class CodeGen:
    def __init__(self):
        self.namer = Namer()
        self.consts = Constants()

    def render(self, a):
        if isinstance(a, Var):
            return self.namer[a]
        if isinstance(a, tuple):
            inner = ", ".join(self.render(x) for x in a)
            return "(%s,)" % inner if len(a) == 1 else "(%s)" % inner
        if isinstance(a, Const):
            if _is_literal(a.value):
                return _literal(a.value)
            return self.consts.name(a.value)
        raise TypeError("cannot render %r" % (a,))

    def render_index(self, index):
        if isinstance(index, Const) and type(index.value) is tuple and index.value:
            return ", ".join(_subscript_part(Const(x), self.render) for x in index.value)
        if isinstance(index, tuple) and index:
            return ", ".join(_subscript_part(x, self.render) for x in index)
        return _subscript_part(index, self.render)

    def expr(self, op):
        if isinstance(op.prim, A.GetItem):
            return "%s[%s]" % (self.render(op.args[0]), self.render_index(op.args[1]))
        return op.prim.emit(*[self.render(a) for a in op.args])

    def function(self, func, header=None, explain=False):
        """Source of ``def <name>(params): ...`` for ``func``."""
        params = [self.namer.define(p) for p in func.params]
        lines = []
        if header:
            lines.extend("# " + h for h in header.splitlines())
        lines.append("def %s(%s):" % (func.name, ", ".join(params)))
        last_loc = None
        backward = getattr(func, "backward_start", None)
        for i, op in enumerate(func.body):
            if backward is not None and i == backward:
                lines.append("    # -- backward sweep --")
                last_loc = None
            loc = op.loc
            key = (loc.filename, loc.lineno) if loc is not None else None
            if key is not None and key != last_loc:
                src = loc.source_line.strip()
                where = "line %d" % loc.lineno
                if func.loc is not None and loc.filename != func.loc.filename:
                    where = "%s line %d" % (os.path.basename(loc.filename), loc.lineno)
                lines.append("    # %s: %s" % (where, src) if src else "    # %s" % where)
                last_loc = key
            rhs = self.expr(op)
            outs = [self.namer.define(o, op) for o in op.outs]
            text = "    %s = %s" % (", ".join(outs), rhs)
            if explain and op.origin:
                text += "  # %s" % op.origin
            lines.append(text)
        lines.append("    return %s" % self.render(func.result))
        return "\n".join(lines) + "\n"
