"""Read a Python function's source and parse it with gast.

Line numbers in the returned tree are the ones in the user's file, so every
error and every ``# line N`` comment in generated code points at the file the
user edits.
"""
import inspect
import io
import re
import textwrap
import tokenize
import weakref

import gast

from ..compat import getline, module_name
from ..errors import CompileError, Location, NoGradientRuleError


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
                        getline(self.filename, lineno), self.qualname)


# id(code) -> (weak reference to the code, SourceInfo): by identity, since code objects
# of identical functions in two files compare equal; weak, so functions that are
# gone take their trees with them
_cache = {}


def _forget(ref, key):
    hit = _cache.get(key)
    if hit is not None and hit[0] is ref:
        del _cache[key]


def clear_cache():
    """Forget every parsed source (``s2sad.clear_caches``)."""
    _cache.clear()


def get_source_info(fn, call_loc=None):
    """The parsed ``FunctionDef`` of ``fn`` (cached per code object).

    Keyed by the code object's identity: code objects of identical functions in
    two files compare equal, and each must be read from its own file.
    """
    code = getattr(fn, "__code__", None)
    if code is not None:
        hit = _cache.get(id(code))
        if hit is not None and hit[0]() is code:
            return hit[1]
    # the code object, not ``fn``: inspect would follow a ``functools.wraps``
    # wrapper's ``__wrapped__`` to the undecorated function, whose source is
    # not what the user calls
    where = code if code is not None else fn
    try:
        lines, first = inspect.getsourcelines(where)
        filename = inspect.getsourcefile(where) or inspect.getfile(where)
    except (OSError, TypeError, UnicodeDecodeError, SyntaxError):   # the last two: Python 3.9
        check_decodable(getattr(code, "co_filename", None))
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
        key = id(code)
        _cache[key] = (weakref.ref(code, lambda ref: _forget(ref, key)), info)
    return info


_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=]")


def check_decodable(filename):
    """Raise a CompileError at the first byte ``filename``'s encoding cannot decode.

    Python reads a source file in the encoding its first two lines declare
    (PEP 263), UTF-8 when none is declared; ``linecache`` (so ``inspect``)
    then finds no source at all, and CPython before 3.12 imports such a file
    anyway when the byte sits in a comment.  Naming the line and the byte says
    what to fix.  Does nothing for a file that decodes or cannot be read.
    """
    try:
        with open(filename, "rb") as f:
            data = f.read()
        encoding, first = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except (OSError, TypeError, SyntaxError):
        return      # unreadable, or an unknown encoding: importing the file said so
    except UnicodeDecodeError as e:
        start = data.rfind(b"\n", 0, e.start) + 1
        end = data.find(b"\n", e.start)
        line = data[start:end if end >= 0 else len(data)]
        col = len(data[start:e.start].decode(encoding))
        declared = any(_CODING.match(l) for l in first)
        why = "the encoding the file declares" if declared else \
            "the default: the file declares no encoding"
        raise CompileError(
            "byte 0x%02x is not valid %s (%s)" % (data[e.start], encoding, why),
            Location(filename, data.count(b"\n", 0, e.start) + 1, col,
                     line.decode(encoding, "backslashreplace")),
            hint="save the file as %s, or declare the encoding it is saved in on its "
                 "first or second line, e.g. '# -*- coding: latin-1 -*-' (PEP 263)"
                 % encoding)


def _indent(text):
    for line in text.splitlines():
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0


def describe(obj):
    """A short human name for a callable: ``module.qualname`` or its repr."""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    mod = module_name(obj)
    if name and mod:
        return "'%s.%s'" % (mod, name)
    if name:
        return "'%s'" % name
    return repr(obj)
