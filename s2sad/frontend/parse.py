"""Read a Python function's source and parse it with gast.

Line numbers in the returned tree are the ones in the user's file, so every
error and every ``# line N`` comment in generated code points at the file the
user edits.
"""
import inspect
import linecache
import textwrap

import gast

from ..errors import Location, NoGradientRuleError


class SourceInfo:
    """Where a parsed function came from: its file, tree and original lines."""

    def __init__(self, filename, tree, col_shift, qualname):
        self.filename = filename
        self.tree = tree
        self.col_shift = col_shift
        self.qualname = qualname

    def loc(self, node):
        lineno = getattr(node, "lineno", None) or self.tree.lineno
        col = (getattr(node, "col_offset", 0) or 0) + self.col_shift
        return Location(self.filename, lineno, col,
                        linecache.getline(self.filename, lineno), self.qualname)


_cache = {}


def get_source_info(fn, call_loc=None):
    """The parsed ``FunctionDef`` of ``fn`` (cached per code object).

    Keyed by the code object's identity: code objects of identical functions in
    two files compare equal, and each must be read from its own file.
    """
    code = getattr(fn, "__code__", None)
    if code is not None:
        hit = _cache.get(id(code))
        if hit is not None and hit[0] is code:
            return hit[1]
    # the code object, not ``fn``: inspect would follow a ``functools.wraps``
    # wrapper's ``__wrapped__`` to the undecorated function, whose source is
    # not what the user calls
    where = code if code is not None else fn
    try:
        lines, first = inspect.getsourcelines(where)
        filename = inspect.getsourcefile(where) or inspect.getfile(where)
    except (OSError, TypeError):
        raise NoGradientRuleError(
            "cannot differentiate %s: it has no Python source s2sad can read and no "
            "registered bprop rule" % describe(fn), call_loc,
            hint="define it in a .py file, or make it a Primitive and register a rule "
                 "with @bprop_getters.register(YourPrimitive)")
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    col_shift = _indent(text) - _indent(dedented)
    tree = gast.parse(dedented)
    gast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    if not isinstance(fdef, (gast.FunctionDef,)):
        raise NoGradientRuleError(
            "cannot read the source of %s as a function definition" % describe(fn), call_loc)
    info = SourceInfo(filename, fdef, col_shift, getattr(fn, "__qualname__", fdef.name))
    if code is not None:
        _cache[id(code)] = (code, info)      # the reference keeps the id from being reused
    return info


def _indent(text):
    for line in text.splitlines():
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0


def describe(obj):
    """A short human name for a callable: ``module.qualname`` or its repr."""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    mod = getattr(obj, "__module__", None)
    if name and mod:
        return "'%s.%s'" % (mod, name)
    if name:
        return "'%s'" % name
    return repr(obj)
