"""Highlighted generated source: ANSI colours for terminals, HTML for notebooks.

Pygments (the optional ``color`` extra) lexes the source when it is
installed; without it a small highlighter built on :mod:`tokenize` colours the
terminal and notebooks get an escaped ``<pre>``.  Both terminal paths use the
same palette, so ``s2sad dump`` looks the same either way: keywords,
comments, strings, the name a ``def`` defines and the adjoint names (``d_*``)
the generated code is read by.  Highlighting never changes the text: removing
the escapes gives the source back.
"""
from __future__ import annotations

import html
import io
import keyword
import tokenize
from typing import Iterable, Iterator, Optional, Tuple

RESET = "\033[0m"
STYLES = {
    "keyword": "\033[1;34m",   # bold blue
    "comment": "\033[2;32m",   # dim green
    "adjoint": "\033[35m",     # magenta: d_* names
    "defname": "\033[1m",      # bold: the function defined
    "string": "\033[33m",      # yellow
    "number": "\033[36m",      # cyan
}
ADJOINT_PREFIX = "d_"
ADJOINT_HTML_COLOR = "#a626a4"   # the notebook colour of d_* names


def ansi(source: str) -> str:
    """``source`` with ANSI colours, by Pygments when installed, else by :mod:`tokenize`."""
    pieces = _pygments_pieces(source)
    if pieces is None:
        pieces = _tokenize_pieces(source)
    if pieces is None:              # does not lex: the plain text
        return source
    return _paint(pieces)


def to_html(source: str) -> str:
    """``source`` as an HTML block with inline styles (a notebook has no stylesheet for it).

    Pygments colours it; without Pygments it is an escaped ``<pre>``.
    """
    try:
        import pygments
        from pygments.formatters import HtmlFormatter
    except ImportError:
        return '<pre class="s2sad-source">%s</pre>' % html.escape(source)
    tokens = _adjoints_marked(_lexer().get_tokens(source))
    return pygments.format(tokens, HtmlFormatter(noclasses=True, style=_html_style()))


def to_markdown(source: str) -> str:
    """``source`` in a fenced ``python`` block, the fence longer than any backtick run inside."""
    longest = run = 0
    for ch in source:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    body = source if source.endswith("\n") else source + "\n"
    return "%spython\n%s%s\n" % (fence, body, fence)


class SourceText(str):
    """Generated source: a plain ``str`` that Jupyter/IPython display highlighted.

    Every string operation behaves as on ``str`` (and returns ``str``);
    pickling gives back a plain ``str``, so a pickle does not need s2sad.
    """
    __slots__ = ()

    def _repr_html_(self) -> str:
        return to_html(str(self))

    def _repr_markdown_(self) -> str:
        return to_markdown(str(self))

    def __reduce__(self):
        return (str, (str(self),))


# ------------------------------------------------------------ Pygments
def _lexer():
    from pygments.lexers import PythonLexer
    # keep leading/trailing newlines: the highlighted text must be the source
    return PythonLexer(stripnl=False, ensurenl=False)


def _pygments_pieces(source: str) -> Optional[list]:
    """``(style or None, text)`` pieces from Pygments; None without Pygments."""
    try:
        from pygments.token import Comment, Keyword, Name, Number, Operator, String
    except ImportError:
        return None
    kinds = ((Comment, "comment"), (String, "string"), (Number, "number"),
             (Keyword, "keyword"), (Operator.Word, "keyword"), (Name.Function, "defname"))
    pieces = []
    for ttype, text in _lexer().get_tokens(source):
        style = next((kind for parent, kind in kinds if ttype in parent), None)
        if ttype is Name and text.startswith(ADJOINT_PREFIX):
            style = "adjoint"
        pieces.append((style, text))
    if "".join(text for _, text in pieces) != source:   # a lexer that rewrote the text
        return None
    return pieces


def _adjoints_marked(tokens: Iterable[Tuple[object, str]]) -> Iterator[Tuple[object, str]]:
    """The token stream with ``d_*`` names retyped, so the HTML style can colour them."""
    from pygments.token import Name
    for ttype, text in tokens:
        if ttype is Name and text.startswith(ADJOINT_PREFIX):
            ttype = Name.Adjoint
        yield ttype, text


_STYLE = []


def _html_style():
    """Pygments' default style plus a colour for the adjoint names (built once)."""
    if not _STYLE:
        from pygments.styles import get_style_by_name
        from pygments.token import Name
        base = get_style_by_name("default")
        styles = dict(base.styles)
        styles[Name.Adjoint] = ADJOINT_HTML_COLOR
        _STYLE.append(type("S2sadStyle", (base,), {"styles": styles}))
    return _STYLE[0]


# ------------------------------------------------------------ tokenize fallback
def _tokenize_pieces(source: str) -> Optional[list]:
    """``(style or None, text)`` pieces from :mod:`tokenize`; None if it does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    pieces, pos, previous = [], 0, None
    for tok in tokens:
        style = _tokenize_style(tok, previous)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            previous = tok
        if style is None:
            continue
        begin = starts[tok.start[0] - 1] + tok.start[1]
        end = starts[tok.end[0] - 1] + tok.end[1]
        pieces += [(None, source[pos:begin]), (style, source[begin:end])]
        pos = end
    pieces.append((None, source[pos:]))
    return pieces


def _tokenize_style(tok, previous) -> Optional[str]:
    if tok.type == tokenize.COMMENT:
        return "comment"
    if tok.type == tokenize.STRING:
        return "string"
    if tok.type == tokenize.NUMBER:
        return "number"
    if tok.type == tokenize.NAME:
        if keyword.iskeyword(tok.string):
            return "keyword"
        if tok.string.startswith(ADJOINT_PREFIX):
            return "adjoint"
        if previous is not None and previous.string == "def":
            return "defname"
    return None


def _paint(pieces) -> str:
    """Join ``(style, text)`` pieces, one escape per run of the same style."""
    out, run_style, run = [], None, []

    def flush():
        text = "".join(run)
        out.append(STYLES[run_style] + text + RESET if run_style and text else text)

    for style, text in pieces:
        if style != run_style:
            flush()
            run_style, run = style, []
        run.append(text)
    flush()
    return "".join(out)


__all__ = ["ansi", "to_html", "to_markdown", "SourceText"]
