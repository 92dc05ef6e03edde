"""How constants are written in generated code: as Python literals where they are ones.

Numbers, strings, ``None``, ``...`` and tuples, lists and slices of them are
written out (``x[0:2]``, ``(1, 2)``); anything else is bound in the module's
namespace (``codegen.Constants``).  A slice bound that is a NumPy integer
(``np.prod(shape)``) indexes as the int it holds, so it is written as that int.
"""
import numpy as np

from ..ir.nodes import Const

_LITERAL_TYPES = (bool, int, float, str, type(None))


def is_literal(v):
    """Whether ``v`` is written out in generated code (not bound in the namespace)."""
    if type(v) in _LITERAL_TYPES:
        return not (isinstance(v, float) and not np.isfinite(v))
    if type(v) in (tuple, list):
        return all(is_literal(x) for x in v)
    if type(v) is slice:
        return all(is_literal(x) for x in (v.start, v.stop, v.step))
    return v is Ellipsis


def literal(v):
    """The Python text of ``v``, for which ``is_literal`` holds."""
    if type(v) is list:
        return "[%s]" % ", ".join(literal(x) for x in v)
    if type(v) is tuple:
        inner = ", ".join(literal(x) for x in v)
        return "(%s,)" % inner if len(v) == 1 else "(%s)" % inner
    if type(v) is slice:
        return "slice(%s, %s, %s)" % (literal(v.start), literal(v.stop), literal(v.step))
    if v is Ellipsis:
        return "Ellipsis"
    text = repr(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
        text = "(%s)" % text
    return text


def subscript_part(v, render):
    """One part of an index in ``x[...]``: a slice as ``a:b``, ``...``, else ``render(v)``."""
    if isinstance(v, Const) and type(v.value) is slice and _slice_bounds(v.value) is not None:
        start, stop, step = _slice_bounds(v.value)
        text = ":".join(["" if start is None else literal(start),
                         "" if stop is None else literal(stop)])
        if step is not None:
            text += ":" + literal(step)
        return text
    if isinstance(v, Const) and v.value is Ellipsis:
        return "..."
    return render(v)


def _slice_bounds(s):
    """A slice's bounds written as ``a:b:c``: NumPy integers (``np.prod(shape)``) as the
    ints they index like, or None where a bound is not an integer (a slice constant
    in the namespace then)."""
    out = []
    for b in (s.start, s.stop, s.step):
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, np.integer))):
            return None
        out.append(None if b is None else int(b))
    return out
