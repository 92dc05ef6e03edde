"""Human-readable text form of the IR (``--ir``, ``s2sad.get_ir``)."""
from .nodes import Var, Const


class _Numbering:
    """Local numbers in order of definition, so the text is deterministic."""

    def __init__(self):
        self.ids = {}

    def __call__(self, a):
        if isinstance(a, tuple):
            return "(" + ", ".join(self(x) for x in a) + ("," if len(a) == 1 else "") + ")"
        if isinstance(a, Var):
            n = self.ids.setdefault(a.id, len(self.ids))
            return "%%%s.%d" % (a.hint if a.hint is not None else "v", n)
        if isinstance(a, Const):
            return repr(a.value)
        return repr(a)


def format_func(func):
    """``func name(%x.0, ...):`` then one ``%out = Prim(args)  # line N`` per op."""
    fmt = _Numbering()
    lines = ["func %s(%s):" % (func.name, ", ".join(fmt(p) for p in func.params))]
    _block(func.body, fmt, lines, "  ")
    lines.append("  return %s" % fmt(func.result))
    return "\n".join(lines)


def _block(ops, fmt, lines, indent):
    for op in ops:
        outs = ", ".join(fmt(o) for o in op.outs)
        args = ", ".join(fmt(a) for a in op.args)
        attrs = getattr(op.prim, "attrs", None)
        name = op.prim.name
        if attrs:
            name += "[%s]" % ", ".join("%s=%r" % kv for kv in sorted(attrs.items()))
        text = "%s%s = %s(%s)" % (indent, outs, name, args) if outs else \
            "%s%s(%s)" % (indent, name, args)
        if op.loc is not None:
            text += "  # line %d" % op.loc.lineno
        lines.append(text)
        for i, r in enumerate(op.regions):
            lines.append("%s  region %d (%s):" % (indent, i, ", ".join(fmt(p) for p in r.params)))
            _block(r.ops, fmt, lines, indent + "    ")
            lines.append("%s    yield %s" % (indent, fmt(r.result)))
