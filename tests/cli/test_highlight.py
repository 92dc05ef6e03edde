"""Highlighted source, with Pygments and without it, and its display in notebooks.

The text is checked independently of the colouring: removing the ANSI escapes
(or the HTML tags, then unescaping) must give back exactly the source.
"""
import html
import pickle
import re
import sys

import numpy as np
import pytest

import s2sad
from s2sad import cli, ops
from s2sad.highlight import SourceText, ansi, to_html, to_markdown

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TAG = re.compile(r"<[^>]*>")
PRE = re.compile(r"<pre[^>]*>(.*)</pre>", re.S)
SOURCE = ('def f_grad(x, d_out):\n'
          '    # line 3: return np.sum(x * 2.5)\n'
          '    y = rt.f(x, \'NCHW#1\', None)  # note\n'
          '    d_x = d_out * 2.5 if not flag else x < y\n'
          '    return d_x\n')


def shown(out):
    """The text an HTML block shows: what is in its ``<pre>``, tags removed, unescaped."""
    return html.unescape(TAG.sub("", PRE.search(out).group(1)))


@pytest.fixture
def no_pygments(monkeypatch):
    """Every ``import pygments...`` raises ImportError, as when it is not installed."""
    for name in [m for m in sys.modules if m == "pygments" or m.startswith("pygments.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "pygments", None)


def _f(x):
    return np.sum(np.sin(x) * x)


def generated():
    grad_fn = ops.GradOperation()(_f)
    grad_fn(np.array([0.5, 1.0]))
    return s2sad.get_source(grad_fn)


# --------------------------------------------------------------- terminal
@pytest.mark.parametrize("pygments", [False, True], ids=["tokenize", "pygments"])
def test_terminal_colours_keep_the_text(pygments, request):
    if pygments:
        pytest.importorskip("pygments")
    else:
        request.getfixturevalue("no_pygments")
    colored = ansi(SOURCE)
    assert ANSI.sub("", colored) == SOURCE
    assert "\x1b[1;34mdef\x1b[0m \x1b[1mf_grad\x1b[0m" in colored
    assert "\x1b[2;32m# line 3: return np.sum(x * 2.5)\x1b[0m" in colored
    assert "\x1b[33m'NCHW#1'\x1b[0m" in colored and "\x1b[2;32m# note\x1b[0m" in colored
    assert "\x1b[35md_x\x1b[0m" in colored and "\x1b[35md_out\x1b[0m" in colored
    assert "\x1b[1;34mNone\x1b[0m" in colored and "\x1b[1;34mnot\x1b[0m" in colored
    assert "\x1b[36m2.5\x1b[0m" in colored
    assert "\x1b[35mrt" not in colored and "\x1b[35mx" not in colored


def test_both_terminal_paths_colour_generated_code_alike(no_pygments, monkeypatch):
    source = generated()
    plain = ansi(source)
    monkeypatch.undo()                      # Pygments importable again
    pytest.importorskip("pygments")
    assert ansi(source) == plain
    assert ANSI.sub("", plain) == source and "\x1b[35md_x" in plain


@pytest.mark.parametrize("pygments", [False, True], ids=["tokenize", "pygments"])
def test_text_that_does_not_tokenize_comes_back_unchanged(pygments, request):
    if pygments:
        pytest.importorskip("pygments")
    else:
        request.getfixturevalue("no_pygments")
    broken = 'x = """never closed\n  y = (\n'
    assert ANSI.sub("", ansi(broken)) == broken
    assert ansi("") == ""


def test_cli_highlight_is_the_module_s_terminal_highlighter():
    assert cli.highlight(SOURCE) == ansi(SOURCE)


# --------------------------------------------------------------- HTML / notebooks
def test_html_without_pygments_is_an_escaped_pre(no_pygments):
    text = "if a < b & c:\n    s = '<b>'\n"
    out = to_html(text)
    assert out.startswith("<pre") and out.endswith("</pre>")
    assert "<b>" not in out and "&lt;b&gt;" in out and "&amp;" in out
    assert shown(out) == text


def test_html_with_pygments_has_inline_styles_and_adjoint_colour():
    pytest.importorskip("pygments")
    out = to_html(SOURCE + "s = '<b>' & 1\n")
    assert 'style="' in out and 'class="' in out          # inline: no stylesheet needed
    assert "&lt;b&gt;" in out and "<b>" not in out
    assert re.search(r'<span style="[^"]*#a626a4[^"]*">d_x</span>', out, re.I)
    assert not re.search(r'<span style="[^"]*#a626a4[^"]*">x</span>', out, re.I)
    assert shown(out) == SOURCE + "s = '<b>' & 1\n"


def test_markdown_fence_is_longer_than_backticks_inside():
    assert to_markdown("x = 1\n") == "```python\nx = 1\n```\n"
    assert to_markdown("x = 1") == "```python\nx = 1\n```\n"
    assert to_markdown("s = '````'\n") == "`````python\ns = '````'\n`````\n"


# --------------------------------------------------------------- get_source
def test_get_source_is_a_str_that_notebooks_display_highlighted():
    source = generated()
    assert type(source) is SourceText and isinstance(source, str)
    plain = str(source)
    assert type(plain) is str and source == plain and hash(source) == hash(plain)
    assert type(source[:10]) is str and type(source + "") is str
    assert "def _f_grad(" in source and "d_x" in source
    namespace = {}
    exec(compile("text = " + repr(source), "<test>", "exec"), namespace)
    assert namespace["text"] == plain
    assert source._repr_markdown_() == "```python\n" + plain + ("" if plain.endswith("\n")
                                                                else "\n") + "```\n"
    assert shown(source._repr_html_()) == plain


def test_get_source_without_pygments_shows_a_pre(no_pygments):
    source = generated()
    assert source._repr_html_() == '<pre class="s2sad-source">%s</pre>' % html.escape(source)


def test_get_source_pickles_as_a_plain_str():
    source = generated()
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(source, protocol))
        assert type(back) is str and back == source
    assert b"s2sad" not in pickle.dumps(SourceText("x = 1\n"))
