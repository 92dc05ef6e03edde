"""``s2sad dump --explain``: the rule behind each generated line, and what each ``rt.<name>`` does.

``explained_source`` regenerates the adjoint with a ``# rule`` comment per
line and ends it with two legends: where each rule used is defined, and
what each runtime helper called does.  A helper's description is the
summary (first paragraph) of its own docstring, so it is written once, next
to the code, and cannot drift from a separate table;
``tests/cli/test_dump_explain.py`` checks every public helper has one.
"""
import os
import re

from .. import runtime
from ..ir.nodes import walk_ops
from ..ops._grad.grad_base import bprop_getters
from .codegen import CodeGen

_RT_NAME = re.compile(r"\brt\.([A-Za-z_]\w*)")


def public_helpers():
    """The names generated code may call as ``rt.<name>``: the runtime's own public objects.

    Modules and functions the runtime merely imports (``np``, ``prod``) are
    not among them.
    """
    names = []
    for name, value in vars(runtime).items():
        if name.startswith("_"):
            continue
        owner = value if isinstance(value, type) or callable(value) else type(value)
        module = str(getattr(owner, "__module__", ""))
        if module == runtime.__name__ or module.startswith(runtime.__name__ + "."):
            names.append(name)
    return sorted(names)


def describe(name):
    """The summary of ``rt.<name>``'s docstring (its class's for an object), or ``None``."""
    value = getattr(runtime, name, None)
    if value is None:
        return None
    doc = getattr(value, "__doc__", None) if callable(value) else type(value).__doc__
    summary = (doc or "").strip().split("\n\n")[0]
    return " ".join(summary.split()) or None


def helpers_in(source):
    """The ``rt.<name>`` names ``source`` reads, in order of first use."""
    seen = []
    for line in source.splitlines():
        if line.lstrip().startswith("#"):      # a comment quoting the user's line
            continue
        for name in _RT_NAME.findall(line):
            if name not in seen:
                seen.append(name)
    return seen


def legend(source):
    """Comment lines describing each runtime helper ``source`` calls (none: no lines)."""
    names = helpers_in(source)
    if not names:
        return []
    lines = ["# runtime helpers used (s2sad/runtime/):"]
    for name in names:
        lines.append("#   rt.%s: %s" % (name, describe(name) or "(not described)"))
    return lines


def _rule_sources():
    """Rule name (as ``Op.origin`` records it) -> (file, line, primitive names)."""
    found = {}
    for prim, getter in bprop_getters.items():
        name = getattr(getter, "__qualname__", None)
        if name is None:
            continue
        code = getattr(getter, "__code__", None)
        where = (code.co_filename, code.co_firstlineno) if code is not None else (None, None)
        prim_name = getattr(prim, "__name__", str(prim))
        entry = found.setdefault(name, [where[0], where[1], []])
        if prim_name not in entry[2]:
            entry[2].append(prim_name)
    return found


def display_path(path):
    if path is None:
        return "?"
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def explained_source(compiled):
    """The adjoint regenerated with a ``# rule`` comment per line, plus where the rules
    live and what each ``rt.`` helper it calls does."""
    header_lines = []
    for line in compiled.source.splitlines():
        if not line.startswith("#"):
            break
        header_lines.append(line[2:] if line.startswith("# ") else line[1:])
    header = "\n".join(header_lines) or None
    gen = CodeGen()
    gen.consts = compiled.constants     # so ``_kN`` names what the printed module defines
    text = gen.readable(gen.function(compiled.grad_ir, header=header, explain=True))
    used = []
    sources = _rule_sources()
    for op in walk_ops(compiled.grad_ir.body):
        if op.origin and op.origin not in used:
            used.append(op.origin)
        cell = getattr(op.prim, "cell", None)
        bprop = getattr(type(cell), "bprop", None) if cell is not None else None
        code = getattr(bprop, "__code__", None)
        if code is not None:   # a Cell's own bprop method
            sources.setdefault(bprop.__qualname__, [code.co_filename, code.co_firstlineno, []])
    helpers = legend(text)
    if not used:
        return text + "\n".join(["# no bprop rule was needed"] + helpers) + "\n"
    rules = ["# rules used (the comment at the end of each backward line):"]
    for name in used:
        path, line, prims = sources.get(name, (None, None, []))
        where = "%s:%s" % (display_path(path), line) if path else "(not in bprop_getters)"
        what = " for " + ", ".join(prims) if prims else ""
        rules.append("#   %s%s  %s" % (name, what, where))
    return text + "\n".join(rules + helpers) + "\n"
