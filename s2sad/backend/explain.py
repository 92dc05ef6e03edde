"""What each ``rt.<name>`` in generated code does, for ``s2sad dump --explain``.

The description is the summary (first paragraph) of the helper's own
docstring, so it is written once, next to the code, and cannot drift from a
separate table; ``tests/test_dump_explain.py`` checks every public helper has
one.
"""
import re

from .. import runtime

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
