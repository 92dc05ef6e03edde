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
    _fmt = _Numbering()
    lines = ["func %s(%s):" % (func.name, ", ".join(_fmt(p) for p in func.params))]
    for op in func.body:
        outs = ", ".join(_fmt(o) for o in op.outs)
        args = ", ".join(_fmt(a) for a in op.args)
        text = "  %s = %s(%s)" % (outs, op.prim.name, args)
        attrs = getattr(op.prim, "attrs", None)
        if attrs:
            text = "  %s = %s[%s](%s)" % (outs, op.prim.name,
                                         ", ".join("%s=%r" % kv for kv in sorted(attrs.items())),
                                         args)
        if op.loc is not None:
            text += "  # line %d" % op.loc.lineno
        lines.append(text)
    lines.append("  return %s" % _fmt(func.result))
    return "\n".join(lines)
