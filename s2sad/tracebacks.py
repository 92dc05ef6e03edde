"""Errors about the user's program, shown from the user's call rather than from s2sad's insides.

A compile error raised ten frames deep in the frontend is about a line of
the user's code (its message says which); the frames of s2sad between the
user's call and the ``raise`` only hide that.  The public entry points
(a gradient function's call, ``jvp``, ``jacfwd``, ``compiled``) pass the
``S2SADError`` they catch to ``for_user``, which drops the frames whose
file is inside the s2sad package.  Frames of the user's own code (run
while compiling) and of generated code stay.  ``S2SAD_TRACEBACK=full``
in the environment keeps every frame, for debugging s2sad itself.

An error whose location is missing or inside s2sad (the packed wrapper
``grad`` differentiates, for an error about the differentiated callable
itself) is given the user's call site instead.
"""
import os
import sys
import types

from .compat import getline
from .errors import CompileError, Location

PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def internal(filename):
    """Whether ``filename`` is one of s2sad's own modules."""
    return filename.startswith(PACKAGE)


def user_frame(depth=1):
    """The innermost calling frame outside the s2sad package, and its ``stacklevel``."""
    frame, level = sys._getframe(depth), depth
    while frame is not None and internal(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return frame, level


def for_user(err):
    """``err`` ready to re-raise at a public entry point: located, and its frames filtered."""
    if isinstance(err, CompileError) and (err.loc is None or internal(err.loc.filename)):
        _locate_at_call(err)
    if os.environ.get("S2SAD_TRACEBACK", "").lower() != "full":
        err.__traceback__ = _without_internal_frames(err.__traceback__)
    return err


def _locate_at_call(err):
    frame, _ = user_frame(2)
    if frame is None:
        return
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    line = getline(filename, lineno)
    col = len(line) - len(line.lstrip())
    err.loc = Location(filename, lineno, col, line, frame.f_code.co_name)
    err.args = (err._render(),)


def _without_internal_frames(tb):
    kept = []
    while tb is not None:
        if not internal(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for entry in reversed(kept):
        out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out
