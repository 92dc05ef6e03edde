"""Point an error raised inside generated code at the user's source line.

A traceback through a compiled adjoint shows the generated line (the source is
registered with ``linecache``), but the user wrote a different file.  Codegen
groups statements under ``# <where>: <source>`` comments and remembers, per
``<where>``, the user's file and line; when an exception leaves the generated
function, the nearest such comment above the failing line becomes a note on
the exception, printed with the traceback::

    ValueError: matmul: Input operand 1 has a mismatch ...
    in differentiated code: File "model.py", line 7, in f
        return np.sum(a @ b)
"""
import functools
import re

_COMMENT = re.compile(r"^\s*# (?P<where>(?:[^:]+ )?line \d+)(:|$)")


def pointing_at_user_lines(fn, filename, source, where):
    """``fn`` wrapped so an exception it raises carries a note naming the user's line.

    ``filename`` is the name the generated ``source`` was compiled under;
    ``where`` maps the text of each location comment to its ``Loc``.
    """
    if not where or not hasattr(BaseException, "add_note"):     # notes: Python 3.11+
        return fn
    lines = source.splitlines()

    @functools.wraps(fn)
    def generated(*args):
        try:
            return fn(*args)
        except Exception as e:
            _note(e, filename, lines, where)
            raise
    return generated


def _note(exc, filename, lines, where):
    tb, lineno = exc.__traceback__, None
    while tb is not None:               # the innermost frame of the generated function
        if tb.tb_frame.f_code.co_filename == filename:
            lineno = tb.tb_lineno
        tb = tb.tb_next
    if lineno is None:
        return
    for k in range(min(lineno, len(lines)) - 1, -1, -1):
        m = _COMMENT.match(lines[k])
        if m and m.group("where") in where:
            loc = where[m.group("where")]
            text = 'in differentiated code: File "%s", line %d' % (loc.filename, loc.lineno)
            if getattr(loc, "source_line", None):
                text += "\n    " + loc.source_line.strip()
            if text not in getattr(exc, "__notes__", ()):
                exc.add_note(text)
            return


__all__ = ["pointing_at_user_lines"]
