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

Notes (``add_note``) exist on Python 3.11+.  Older Pythons do not print
``__notes__``, so there the text ends the message of an exception whose
message is a string printed as is (or that has none), and is otherwise shown
as the cause of the exception: a ``UserLine`` printed above it.
"""
from __future__ import annotations

import functools
import re

_COMMENT = re.compile(r"^\s*# (?P<where>(?:[^:]+ )?line \d+)(:|$)")
_HAS_NOTES = hasattr(BaseException, "add_note")     # Python 3.11+


class UserLine(Exception):
    """The user's line, shown as the cause of an error raised by generated code.

    Python < 3.11 only, for exceptions whose message cannot carry the text
    (several arguments, or a class that formats its message, like KeyError).
    """


def pointing_at_user_lines(fn, filename, source, where):
    """``fn`` wrapped so an exception it raises carries a note naming the user's line.

    ``filename`` is the name the generated ``source`` was compiled under;
    ``where`` maps the text of each location comment to its ``Loc``.
    """
    if not where:
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
    if getattr(exc, "__s2sad_api_error__", False):
        return          # an error about how an API was called (``hessian``'s output)
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
            _add_note(exc, text)
            return


def _add_note(exc, text):
    """``exc.add_note(text)``, or where it is missing, the same text where tracebacks show it."""
    if _HAS_NOTES:
        if text not in getattr(exc, "__notes__", ()):
            exc.add_note(text)
    elif not _shown(exc, text) and not _in_message(exc, text):
        _as_cause(exc, text)


def _shown(exc, text):
    cause = exc.__cause__
    return text in str(exc) or (isinstance(cause, UserLine) and cause.args == (text,))


def _in_message(exc, text):
    """Append ``text`` to the message of ``exc``, if its class prints the message as is."""
    args = exc.args
    if args == ():
        exc.args = (text,)
    elif len(args) == 1 and isinstance(args[0], str):
        exc.args = (args[0] + "\n" + text,)
    else:
        return False
    if str(exc) == exc.args[0]:
        return True
    exc.args = args                 # its class prints the message otherwise (KeyError quotes it)
    return False


def _as_cause(exc, text):
    """Show ``text`` as a ``UserLine`` printed above ``exc``, keeping the chain ``exc`` had."""
    cause = UserLine(text)
    cause.__cause__, cause.__context__ = exc.__cause__, exc.__context__
    cause.__suppress_context__ = exc.__suppress_context__
    exc.__cause__ = cause


__all__ = ["pointing_at_user_lines"]
