"""Read a Python function's source and parse it with gast.

Line numbers in the returned tree are the ones in the user's file, so every
error and every ``# line N`` comment in generated code points at the file the
user edits.
"""
import ast
import functools
import inspect
import io
import linecache
import os
import re
import sysconfig
import textwrap
import tokenize
import weakref

import gast

from ..compat import module_name
from ..errors import CompileError, Location, NoGradientRuleError
from . import treecache


class SourceInfo:
    """Where a parsed function came from: its file, tree and original lines."""

    def __init__(self, filename, tree, col_shift, qualname):
        self.filename = filename
        self.tree = tree
        self.col_shift = col_shift
        self.qualname = qualname
        self.kept = None        # (file, first line, stamp): where ``treecache`` keeps the tree

    def loc(self, node):
        lineno = getattr(node, "lineno", None) or self.tree.lineno
        col = (getattr(node, "col_offset", 0) or 0) + self.col_shift
        return Location(self.filename, lineno, col, None, self.qualname)


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
    treecache.forget()


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
    if code is not None and code.co_name == "<lambda>":
        return _remember(code, _lambda_info(fn, code, call_loc))
    # the code object, not ``fn``: inspect would follow a ``functools.wraps``
    # wrapper's ``__wrapped__`` to the undecorated function, whose source is
    # not what the user calls
    where = code if code is not None else fn
    stamp = None
    if code is not None and treecache.is_own(code.co_filename):
        kept, stamp = treecache.get(code.co_filename, code.co_firstlineno)
        if kept is not None:
            fdef, col_shift, fenced = kept
            info = SourceInfo(code.co_filename, fdef, col_shift,
                              getattr(fn, "__qualname__", fdef.name))
            info.kept, info.fenced = (code.co_filename, code.co_firstlineno, stamp), fenced
            return _remember(code, info)
    try:
        lines, first = _source_lines(where)
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
    tree = gast.ast_to_gast(_parse(first, dedented))     # numbered as in the file
    fdef = tree.body[0]
    if not isinstance(fdef, (gast.FunctionDef,)):
        raise NoGradientRuleError(
            "cannot read the source of %s as a function definition" % describe(fn), call_loc)
    info = SourceInfo(filename, fdef, col_shift, getattr(fn, "__qualname__", fdef.name))
    if stamp is not None:
        treecache.put(code.co_filename, code.co_firstlineno, fdef, col_shift, stamp)
        info.kept = (code.co_filename, code.co_firstlineno, stamp)
    return _remember(code, info) if code is not None else info


def _source_lines(where):
    """``inspect.getsourcelines(where)``, read from ``linecache`` directly for a
    code object of a file that ``linecache`` can read.

    ``inspect`` first looks for the module of the file with ``getmodule``,
    which resolves the path of every module in ``sys.modules`` (a disk access
    each) whenever a module was imported since its last call: that was half the
    time of compiling a first gradient.  Its file and first line are what the
    code object says; anything else (a notebook cell, a zip import) goes
    through ``inspect``.
    """
    filename = inspect.getsourcefile(where) if inspect.iscode(where) else None
    if filename:
        linecache.checkcache(filename)      # an edited file is read again, as inspect does
        lines = linecache.getlines(filename)
        first = where.co_firstlineno - 1
        if 0 <= first < len(lines):
            return _block(lines[first:], first + 1), first + 1
    return inspect.getsourcelines(where)


# the block ``_block`` last parsed to check it: (first line, dedented text, ast tree),
# taken by ``_parse`` (the source of a function is then parsed once, not twice)
_checked = [None]


def _parse(first, dedented):
    """The ast of ``dedented``, numbered from line ``first``: the tree ``_block`` made
    of that very text, or parsed now."""
    checked, _checked[0] = _checked[0], None
    if checked is not None and checked[0] == first and checked[1] == dedented:
        return checked[2]
    return ast.parse("\n" * (first - 1) + dedented)


def _block(lines, first=1):
    """The lines of the ``def`` (its decorators first) that ``lines`` starts with.

    It ends before the first line of code indented no deeper than the ``def``,
    checked by parsing it: such a line inside brackets or a string leaves the
    block cut in the middle of a statement, a syntax error, and then
    ``inspect.getblock`` (which tokenizes the file up to the block's end, five
    times slower) decides.  ``first``: the line number of ``lines[0]``, which
    the tree kept for ``_parse`` is numbered from.
    """
    indent = _indent(lines[0])
    k = 0
    while k < len(lines) and lines[k].lstrip().startswith("@"):
        k += 1      # decorators, each on one line; a longer one fails the parse below
    end = k + 1
    while end < len(lines):
        stripped = lines[end].lstrip()
        if stripped and not stripped.startswith("#") and \
                len(lines[end]) - len(stripped) <= indent:
            break
        end += 1
    while end > k + 1 and lines[end - 1].lstrip()[:1] in ("", "#"):
        end -= 1        # blank and comment lines after the body are not its own
    block = lines[:end]
    dedented = textwrap.dedent("".join(block))
    try:
        _checked[0] = (first, dedented, ast.parse("\n" * (first - 1) + dedented))
    except SyntaxError:
        return inspect.getblock(lines)
    return block


def _remember(code, info):
    key = id(code)
    _cache[key] = (weakref.ref(code, lambda ref: _forget(ref, key)), info)
    return info


# ------------------------------------------------------------------ lambdas
def _lambda_info(fn, code, call_loc):
    """A lambda's source as a ``def`` returning its body, found in its whole file.

    ``inspect`` returns the lines a lambda starts on, which may cut an
    expression in half; the file (or notebook cell) is parsed whole instead
    and the lambda picked among those starting on its line by its position
    (Python 3.11+) or by its parameters and the names and constants it uses.
    The file is parsed by ``ast`` alone and only the nodes spanning the
    lambda's line are visited; the lambda found is the one converted to gast
    (converting and walking a whole file was most of the cold start of a
    gradient of a lambda).
    """
    filename = inspect.getsourcefile(code) or code.co_filename
    lines = linecache.getlines(filename)
    if not lines:
        _no_source(fn, code, call_loc)
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        _no_source(fn, code, call_loc)
    owners = _owners_on_line(tree, code.co_firstlineno)
    found = [n for n in owners if isinstance(n, ast.Lambda)
             and n.lineno == code.co_firstlineno and _same_lambda(n, code)]
    if len(found) > 1:      # before Python 3.11 (no columns): tell them apart by constants
        found = [n for n in found if _same_constants(n, code)] or found
    if len(found) > 1 and len({ast.dump(n) for n in found}) == 1:
        found = found[:1]   # the same text twice: either is the function
    if len(found) != 1:
        raise NoGradientRuleError(
            "cannot tell which of the %d lambdas on line %d of %s is %s"
            % (len(found), code.co_firstlineno, filename, describe(fn)) if found else
            "cannot find the source of %s on line %d of %s"
            % (describe(fn), code.co_firstlineno, filename), call_loc,
            hint="define the function with 'def', or put the lambda on a line of its own")
    name = _assigned_name(found[0], owners)
    lam = gast.ast_to_gast(found[0])
    fdef = gast.FunctionDef(name=name or "<lambda>", args=lam.args,
                            body=[gast.copy_location(gast.Return(value=lam.body), lam.body)],
                            decorator_list=[], returns=None, type_comment=None,
                            **({"type_params": []} if "type_params" in gast.FunctionDef._fields
                               else {}))
    gast.copy_location(fdef, lam)
    qualname = getattr(fn, "__qualname__", "<lambda>")
    if fdef.name != "<lambda>" and qualname == "<lambda>":
        qualname = fdef.name
    return SourceInfo(filename, fdef, 0, qualname)


def _owners_on_line(tree, line):
    """{node: its parent} for the nodes of ``tree`` whose lines include ``line`` (and the
    nodes without lines below them): where a lambda starting on ``line`` can be."""
    owners, todo = {}, [tree]
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            first = getattr(child, "lineno", None)
            decorators = getattr(child, "decorator_list", None)
            if decorators:      # a decorated def or class starts at its first decorator
                first = min([first] + [d.lineno for d in decorators])
            if first is None or first <= line <= getattr(child, "end_lineno", first):
                owners[child] = node
                todo.append(child)
    return owners


def _same_lambda(node, code):
    """Whether the parsed ``node`` (an ``ast.Lambda``) is the lambda ``code`` was compiled
    from."""
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    if params != list(code.co_varnames[:code.co_argcount]):
        return False
    positions = getattr(code, "co_positions", None)
    if positions is not None:                       # Python 3.11+: columns of the body
        cols = [(line, col) for line, _end, col, endcol in positions()   # not RESUME's (0, 0)
                if line == code.co_firstlineno and col is not None and endcol and endcol > col]
        if cols:
            start = min(col for _line, col in cols)
            end_line = getattr(node, "end_lineno", node.lineno)
            return node.col_offset <= start and (
                end_line > node.lineno or start < getattr(node, "end_col_offset", 1 << 30))
    words = {n.id for n in ast.walk(node.body) if isinstance(n, ast.Name)} | \
        {n.attr for n in ast.walk(node.body) if isinstance(n, ast.Attribute)}
    return set(code.co_names) <= words and set(code.co_freevars) <= words


def _same_constants(node, code):
    """Whether the numbers and strings ``code`` holds all appear in ``node``'s body
    (a tie-breaker only: the compiler folds ``-1`` or ``2 ** 3`` into new constants)."""
    written = {n.value for n in ast.walk(node.body) if isinstance(n, ast.Constant)}
    held = {c for c in code.co_consts
            if isinstance(c, (int, float, str)) and not isinstance(c, bool)}
    return held <= written


def _assigned_name(lam, owners):
    """``f`` for ``f = lambda ...`` (the name generated code is called after)."""
    owner = owners.get(lam)
    if isinstance(owner, ast.Assign) and len(owner.targets) == 1 \
            and isinstance(owner.targets[0], ast.Name):
        return owner.targets[0].id
    return None


def _no_source(fn, code, call_loc):
    check_decodable(getattr(code, "co_filename", None))
    raise NoGradientRuleError(
        "cannot differentiate %s: it has no Python source s2sad can read and no registered "
        "bprop rule" % describe(fn), call_loc,
        hint="define it in a .py file, or make it a Primitive and register a rule with "
             "@bprop_getters.register(YourPrimitive)")


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


@functools.lru_cache(maxsize=None)
def _library_folders():
    """Where the standard library and installed packages live (not the user's code)."""
    paths = sysconfig.get_paths()
    return tuple(sorted({os.path.join(os.path.abspath(paths[k]), "")
                         for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}))


def _in_a_library(filename):
    return bool(filename) and os.path.abspath(filename).startswith(_library_folders())


def library_error(err, fn, loc, caller):
    """``err``, raised inside the source of an installed library's function ``fn``
    (``scipy.linalg.cholesky``) that the user's ``caller`` called at ``loc``, as an
    error at that call naming ``fn``, or None (``err`` stands as it is).

    Such a function has no rule, so its source is differentiated; what fails in
    it (a ``raise``, a C extension) is no line the user wrote or can change.
    """
    if (getattr(fn, "__module__", "") or "").startswith("s2sad."):
        return None     # s2sad's own code, wherever it is installed
    if loc is None or err.loc is None or not _in_a_library(err.loc.filename) \
            or not _in_a_library(getattr(getattr(fn, "__code__", None), "co_filename", "")) \
            or caller is not None and _in_a_library(getattr(getattr(caller, "__code__", None),
                                                            "co_filename", "")):
        return None
    return NoGradientRuleError(
        "cannot differentiate %s: s2sad has no rule for it, and its source does what "
        "differentiated code cannot (%s, line %d: %s)"
        % (describe(fn), os.path.basename(err.loc.filename), err.loc.lineno, err.message), loc,
        hint="use a NumPy function s2sad has a rule for (np.linalg.cholesky for "
             "scipy.linalg.cholesky, say), or make it a Primitive and register a rule with "
             "@bprop_getters.register(YourPrimitive)")
