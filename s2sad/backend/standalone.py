"""A compiled adjoint as a module of its own: imports, constants, then the code.

Generated code runs in a namespace s2sad fills (``xp``, ``rt``, ``random``
and the constants ``_k0, _k1 ...``); printed alone it would fail with a
``NameError``.  ``module_source`` writes those names as source so the text
``s2sad dump`` prints can be saved and imported.  A constant that has no
source form (an arbitrary object) is not guessed at: the module raises on
import, naming it, instead of computing something else.
"""
import importlib
import math
import re

import numpy as np

from ..runtime import ShapeOf
from .namer import GENERAL

#: arrays with more elements are not written out (a line of megabytes is no
#: longer something to read); the module names them instead
MAX_ELEMENTS = 10000

_IMPORTS = (("xp", "import numpy as xp"),
            ("rt", "from s2sad import runtime as rt"),
            ("random", "import random"), ("logging", "import logging"),
            ("warnings", "import warnings"))


class Unwritable(Exception):
    """A constant with no source form; the message says what it is."""


def module_source(compiled, source=None):
    """``source`` (``compiled``'s by default) as an importable module (see above)."""
    header, body = _split_header(compiled.source if source is None else source)
    imports = []
    constants = _constant_lines(compiled.constants, body, imports)
    imports[:0] = [text for name, text in _IMPORTS
                   if re.search(r"\b%s\." % name, "\n".join([body] + constants))]
    lines = header + ["# A module of its own: save it, import it and call %s; it returns the "
                      "derivatives." % compiled.grad_ir.name]
    lines += _inputs_note(compiled, body)
    return "\n".join(lines + imports + constants + _general_stub(body)) + "\n\n\n" + body


def _general_stub(body):
    """What a function specialised to its shapes calls for others: the module holds
    only the specialised code (``opt/static_shapes.py``), so it says so."""
    if not re.search(r"\b%s\(" % GENERAL, body):
        return []
    return ["", "", "def %s(*args):" % GENERAL,
            "    raise ValueError(\"this module's code was compiled for the shapes its function "
            "checks first; generate it again from arguments of the shapes you need\")"]


def _split_header(source):
    lines = source.split("\n")
    k = 0
    while k < len(lines) and lines[k].startswith("#"):
        k += 1
    return lines[:k], "\n".join(lines[k:])


def _inputs_note(compiled, body):
    """Comment lines naming the parameters that are not the user's inputs.

    A Cell's Parameters and the arrays a function captured are read at each
    call, so they are inputs of the generated function after the user's.
    """
    entries = getattr(getattr(compiled, "inputs", None), "entries", ())
    found = re.search(r"^def %s\((.*)\):$" % re.escape(compiled.grad_ir.name), body, re.M)
    if not entries or found is None:
        return []
    names = [n.strip() for n in found.group(1).split(",")]
    params = compiled.grad_ir.params
    out = []
    for var, path, obj in entries:
        k = next((i for i, p in enumerate(params) if p is var), None)
        if k is None or k >= len(names):
            continue
        if path is None:
            try:
                what = "computed while compiling: %s" % value_source(obj, [])
            except Unwritable as e:
                what = "computed while compiling: %s" % e
        elif _in_cell(path):
            what = "the Cell's self.%s, read at each call" % _path_text(path)
        else:
            what = "a global or captured variable the function reads, read at each call"
        out.append("#   %s: %s" % (names[k], what))
    return ["# inputs after the function's own:"] + out if out else []


def _in_cell(path):
    """Whether ``path`` is an attribute path in the Cell (not a global's or a closure's)."""
    return bool(path) and isinstance(path[0], str)


def _path_text(path):
    out = ""
    for step in path:
        out += ("." + step if out else step) if isinstance(step, str) else "[%r]" % (step,)
    return out


def _constant_lines(constants, body, imports):
    """``_kN = <source>`` for each constant ``body`` reads, with where it came from."""
    out = []
    for i, (value, path) in enumerate(zip(constants.values, constants.paths)):
        name = "_k%d" % i
        if not re.search(r"\b%s\b" % name, body):
            continue
        origin = "the Cell's self.%s" % _path_text(path) if _in_cell(path) else \
            "a value the program read while compiling"
        try:
            text = value_source(value, imports)
        except Unwritable as e:
            out.append("# %s: %s, %s" % (name, e, origin))
            out.append("raise ImportError(%r)" % (
                "%s (%s, %s) cannot be written as source: define it here by hand, or call "
                "the compiled gradient function instead" % (name, e, origin)))
            continue
        out.append("%s = %s  # %s" % (name, text, origin))
    return out


def value_source(value, imports):
    """Source text evaluating (with ``xp`` = NumPy) to ``value``; ``Unwritable`` if none.

    An import the text needs is added to ``imports``.
    """
    t = type(value)
    if value is None or t in (bool, int, str):
        return repr(value)
    if t is float:
        return _float(value)
    if t is complex:
        return "complex(%s, %s)" % (_float(value.real), _float(value.imag))
    if t in (tuple, list):
        inner = ", ".join(value_source(v, imports) for v in value)
        if t is tuple:
            return "(%s,)" % inner if len(value) == 1 else "(%s)" % inner
        return "[%s]" % inner
    if isinstance(value, np.ndarray) and t is np.ndarray:
        return _array(value)
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return "xp.%s(%s)" % (type(value).__name__, value_source(value.item(), imports))
    if isinstance(value, np.dtype):
        return "xp.dtype(%r)" % value.str if value.names is None else _unwritable(value)
    if t is ShapeOf and not value.is_scalar:
        return "rt.ShapeOf.known(%s)" % value_source(value.shape, imports)
    return _importable(value, imports)


def _float(v):
    if math.isnan(v):
        return "float('nan')"
    if math.isinf(v):
        return "float('inf')" if v > 0 else "-float('inf')"
    return repr(v)


def _array(a):
    if a.dtype.kind not in "biufc":
        raise Unwritable("an array of dtype %s" % a.dtype)
    if a.size > MAX_ELEMENTS:
        raise Unwritable("a %s array of shape %s, larger than %d elements"
                         % (a.dtype, a.shape, MAX_ELEMENTS))
    if a.size == 0:
        return "xp.zeros(%r, dtype=%r)" % (a.shape, a.dtype.str)
    return "xp.array(%s, dtype=%r)" % (value_source(a.tolist(), []), a.dtype.str)


def _importable(value, imports):
    """``module.name`` for a class or function importable by name, else ``Unwritable``."""
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        try:
            found = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            found = None
        if found is value:
            if module == "numpy":
                return "xp." + qualname
            line = "import %s" % module
            if line not in imports:
                imports.append(line)
            return "%s.%s" % (module, qualname)
    return _unwritable(value)


def _unwritable(value):
    raise Unwritable("an object of type %s" % type(value).__name__)
