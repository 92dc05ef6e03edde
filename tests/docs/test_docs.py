"""Every documentation page runs as printed, and prints what it shows.

Pages: every ``.md`` file that ``PAGE_GLOBS`` finds (``docs/``, the
repository root, ``samples/``) except those another test runs
(``OTHER_TESTS``), so a new page there is run as soon as it exists;
``test_every_page_is_tested`` fails if a Markdown file anywhere else in the
repository is neither run here nor named in ``OTHER_TESTS``.

Conventions (also in docs/testing.md, "Documentation examples"):

* Each page's ```` ```python ```` blocks run in order in one fresh namespace (a
  later block uses what an earlier one defined), each written to a ``.py``
  file of its own first because s2sad reads the source it differentiates.
* A block preceded by ``<!-- no-test: reason -->`` is skipped; the reason is
  required.
* A block whose first line is ``# raises: ErrorName`` must raise an exception
  of that class (or a subclass); the page goes on with the next block.  What
  such a block prints ends with the exception's message.
* **Output blocks.**  A fenced block whose info string has the word
  ``output`` after the language (```` ```text output ````, or
  ```` ```python output ```` for a listing of generated code) shows what the
  fenced block just before it prints.  After a ```` ```python ```` block it is
  that block's whole standard output; after a ```` ```sh ```` block, whose
  lines must all be ``python ...`` commands, it is their standard output, run
  from the repository root.
* **Excerpts.**  An output block with the word ``excerpt`` too
  (```` ```python output excerpt ````) shows some of the printed lines: each
  of its lines must be printed, in the order shown, with anything between
  them; ``...`` lines and notes added at the end of a code line
  (``x = y   # note``, two spaces or more before the ``#``) are left out of
  the comparison.
* An unmarked ```` ``` ````, ```` ```text ```` or ```` ```console ```` block
  right after a python block, with no prose between, fails the test: it
  reads as output, so it must be marked as such (or introduced as something
  else).
* **Inline output.**  A line ending in ``# prints: TEXT`` must print TEXT (all
  its ``print`` calls together, on one line).  A ``print(...)`` line whose
  comment looks like output (starts with a digit, sign, bracket or quote) but
  is not ``# prints:`` fails the test, so shown values cannot go unchecked.
* Comparison: line by line, ignoring trailing blank lines and trailing spaces;
  indentation must match, other runs of spaces count as one space and spaces
  just inside brackets are ignored (NumPy pads columns); numbers (parsed out of
  both texts) must agree to ``RTOL``/``ATOL``; everything else must be equal.
  The only text normalised away is the file named by a generated source's
  header (``# s2sad: gradient of f (FILE)``) and by an error's first line
  (``File "FILE", line 3``) and by a generated line that comes from another
  file than the header's (``# FILE line 3: ...``): that is wherever the code
  was saved.
"""
import builtins
import contextlib
import glob
import io
import os
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

from repo import ROOT
PAGES = sorted(glob.glob(os.path.join(ROOT, "docs", "guide*.md")))
OTHER_TESTS = {"docs/errors.md": "test_errors_doc.py",
               "docs/backends.md": "test_backends_doc.py",
               "docs/primitives.md": "test_primitives_doc.py"}


PAGE_GLOBS = ("*.md", "docs/**/*.md", "samples/**/*.md")
NOT_SOURCE = re.compile(r"^(\.|__pycache__$|build$|dist$|venv$|node_modules$)|\.egg-info$")


def _relative(paths):
    return sorted({os.path.relpath(p, ROOT).replace(os.sep, "/") for p in paths})


def run_pages():
    """The pages this module runs: those ``PAGE_GLOBS`` find, less ``OTHER_TESTS``."""
    found = []
    for pattern in PAGE_GLOBS:
        found += glob.glob(os.path.join(ROOT, pattern), recursive=True)
    return [p for p in _relative(found) if p not in OTHER_TESTS]


def repository_pages():
    """Every Markdown file under the repository root, outside hidden and build folders."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if not NOT_SOURCE.search(d)]
        found += [os.path.join(folder, f) for f in files if f.endswith(".md")]
    return _relative(found)


RUN_PAGES = run_pages()
FENCE = re.compile(r"^([ \t]*)```(\w*)([^\n]*)\n(.*?)^\1```[ \t]*$", re.M | re.S)
NO_TEST = re.compile(r"<!--\s*no-test:?(.*?)-->\s*$", re.S)
RAISES = re.compile(r"\A\s*# raises: *(\w+)")
PRINTS = re.compile(r"#\s*prints:\s?(.*)$")
UNCHECKED_PRINT = re.compile(r"\bprint\(.*#\s*(?!prints:)[-+\d\[\(\'\"]")
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
HEADER = re.compile(r"^(\s*# s2sad: .*\()[^()]*(\)\s*)$")
FILE = re.compile(r'^(\s*File ")[^"]*(")')
SOURCE_LINE = re.compile(r"^(\s*# )\S+\.py( line \d+:)")
RTOL, ATOL = 1e-6, 1e-7


class Block:
    """One fenced block: ``kind`` is "code", "output" or "other"."""

    def __init__(self, line, lang, info, source, skip):
        self.line, self.lang, self.source, self.skip = line, lang, source, skip
        self.kind = "output" if "output" in info.split() else (
            "code" if lang in ("python", "sh") else "other")
        self.shows = None             # the output block showing what this one prints
        self.excerpt = "excerpt" in info.split()


def _unindent(source, indent):
    """``source`` without the indentation of its fence (a block in a list item).

    Only that much: a listing's own indentation is part of what it shows.
    """
    return "".join(line[len(indent):] if line.startswith(indent) else line.lstrip(" \t")
                   for line in source.splitlines(True))


def blocks_of(text):
    """The fenced blocks of a page, each output block attached to the block before it."""
    blocks, end = [], 0
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip()
        skip = NO_TEST.search(before[-300:]) if before.endswith("-->") else None
        reason = skip.group(1).strip() if skip else None
        if skip and not reason:
            raise AssertionError("a <!-- no-test --> comment must say why the block is skipped")
        line = text.count("\n", 0, m.start()) + 2
        block = Block(line, m.group(2), m.group(3), _unindent(m.group(4), m.group(1)), reason)
        if block.kind == "output":
            if not blocks or blocks[-1].kind != "code" or blocks[-1].shows is not None:
                raise AssertionError("the output block at line %d does not follow a python "
                                     "or sh block" % line)
            blocks[-1].shows = block
        elif block.kind == "other" and block.lang in ("", "text", "console") and blocks \
                and blocks[-1].lang == "python" and not text[end:m.start()].strip():
            raise AssertionError("the block at line %d directly follows a python block, so it "
                                 "reads as its output: mark it ```%s output, or say in a "
                                 "sentence between them what it is" % (line, block.lang or "text"))
        blocks.append(block)
        end = m.end()
    return blocks


def python_blocks(text):
    """(line number, source, skip reason or None) of each ```python block that runs."""
    return [(b.line, b.source, b.skip) for b in blocks_of(text)
            if b.kind == "code" and b.lang == "python"]


def _line_parts(line):
    """(indent, text without numbers, numbers) of one line of output."""
    for pattern in (HEADER, FILE, SOURCE_LINE):
        line = pattern.sub(r"\1FILE\2", line.rstrip())
    body = line.lstrip()
    numbers = [float(n) for n in NUMBER.findall(body)]
    words = re.sub(r"\s+", " ", NUMBER.sub("#", body))
    words = re.sub(r"([\[(]) ", r"\1", re.sub(r" ([\])])", r"\1", words))
    return len(line) - len(body), words, numbers


def output_mismatch(expected, actual):
    """Why ``actual`` is not what ``expected`` shows (see the module docstring), or None."""
    want = expected.rstrip().splitlines()
    got = actual.rstrip().splitlines()
    for i in range(max(len(want), len(got))):
        if i >= len(want) or i >= len(got):
            extra = got[i] if i < len(got) else want[i]
            return "line %d: %s %r" % (i + 1, "printed in addition" if i < len(got)
                                        else "shown but not printed", extra)
        (wi, ww, wn), (gi, gw, gn) = _line_parts(want[i]), _line_parts(got[i])
        same = (wi, ww, len(wn)) == (gi, gw, len(gn)) and np.allclose(
            gn, wn, rtol=RTOL, atol=ATOL, equal_nan=True)
        if not same:
            return "line %d: shown %r, printed %r" % (i + 1, want[i], got[i])
    return None


def _without_note(line):
    """An excerpt's line without the note added at its end (``code   # note``)."""
    if line.lstrip().startswith("#"):
        return line
    return re.sub(r"\s{2,}#.*$", "", line)


def excerpt_mismatch(expected, actual):
    """Why the lines of ``expected`` do not appear in ``actual`` in order, or None.

    ``...`` lines and notes at the end of a code line are the excerpt's own.
    """
    got = actual.splitlines()
    start = 0
    for line in expected.splitlines():
        line = _without_note(line)
        if not line.strip() or line.strip() == "...":
            continue
        for i in range(start, len(got)):
            if output_mismatch(line, got[i]) is None:
                start = i + 1
                break
        else:
            return "%r is not printed (after the lines before it)" % line.strip()
    return None


def _recording_print(records):
    """A ``print`` that also files what it writes under its caller's (file, line)."""
    def print_(*args, **kwargs):
        if kwargs.get("file") not in (None, sys.stdout):
            return builtins.print(*args, **kwargs)
        buffer = io.StringIO()
        builtins.print(*args, **dict(kwargs, file=buffer))
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        records[key] = records.get(key, "") + buffer.getvalue()
        sys.stdout.write(buffer.getvalue())
    return print_


def _check_inline(block, path, records, where):
    for number, text in enumerate(block.source.splitlines(), 1):
        if UNCHECKED_PRINT.search(text):
            raise AssertionError("%s: %r shows output in a plain comment; write it as "
                                 "'# prints: ...' so it is checked" % (where, text.strip()))
        shown = PRINTS.search(text)
        if shown is None:
            continue
        printed = records.get((path, number))
        assert printed is not None, "%s, block line %d has '# prints:' but printed nothing" % (
            where, number)
        why = output_mismatch(shown.group(1), printed.replace("\n", " ").strip())
        assert why is None, "%s, block line %d: %s" % (where, number, why)


def run_python_block(block, path, namespace):
    """Run one block in ``namespace``; its standard output."""
    path.write_text(block.source, encoding="utf-8")
    namespace["__file__"] = str(path)
    records = {}
    namespace["print"] = _recording_print(records)
    where = "the python block at line %d" % block.line
    raises = RAISES.match(block.source)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(block.source, str(path), "exec"), namespace)
    except Exception as exc:
        names = [cls.__name__ for cls in type(exc).__mro__]
        if raises is None or raises.group(1) not in names:
            raise AssertionError("%s raised %s: %s" % (where, type(exc).__name__, exc)) from exc
        out.write("%s\n" % exc)
    else:
        assert raises is None, "%s should raise %s" % (where, raises.group(1))
    _check_inline(block, str(path), records, where)
    return out.getvalue()


def run_sh_block(block):
    """Run a sh block's ``python ...`` lines from the repository root; their stdout."""
    out = []
    for command in block.source.splitlines():
        argv = shlex.split(command, comments=True)
        if not argv:
            continue
        assert argv[0] == "python" and not set("|&;<>$`") & set(command), (
            "the sh block at line %d has an output block, so it may hold only "
            "'python ...' commands, not %r" % (block.line, command))
        result = subprocess.run([sys.executable] + argv[1:], cwd=ROOT, capture_output=True,
                                text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
        assert result.returncode == 0, result.stderr
        out.append(result.stdout)
    return "".join(out)


def test_guide_pages_exist_and_link_each_other():
    names = [os.path.basename(p) for p in PAGES]
    assert "guide.md" in names and len(names) >= 2
    index = open(os.path.join(ROOT, "docs", "guide.md"), encoding="utf-8").read()
    for name in names:
        if name != "guide.md":
            assert "(%s)" % name in index, "guide.md does not link %s" % name
    for target in ("control-flow.md", "higher-order.md", "design.md", "api.md"):
        assert "(%s)" % target in index


def test_block_extraction():
    text = ("intro\n\n```python\nx = 1\n```\n\n<!-- no-test: needs a GPU -->\n```python\n"
            "boom()\n```\n\n```sh\nls\n```\n\n```python\ny = x + 1\n```\n"
            "- a list item:\n\n  ```python\n  z = y\n  ```\n")
    blocks = python_blocks(text)
    assert [(src, reason) for _, src, reason in blocks] == [
        ("x = 1\n", None), ("boom()\n", "needs a GPU"), ("y = x + 1\n", None),
        ("z = y\n", None)]
    assert blocks[0][0] == 4
    with pytest.raises(AssertionError, match="must say why"):
        python_blocks("<!-- no-test -->\n```python\nx\n```\n")


def test_output_blocks_attach_to_the_block_before():
    text = ("```python\nprint(1)\n```\n\nprints:\n\n```text output\n1\n```\n"
            "```python\nx = 2\n```\n```python output\ndef f(x):\n```\n")
    blocks = blocks_of(text)
    assert [b.kind for b in blocks] == ["code", "output", "code", "output"]
    assert blocks[0].shows is blocks[1] and blocks[2].shows is blocks[3]
    assert [b[1] for b in python_blocks(text)] == ["print(1)\n", "x = 2\n"]
    with pytest.raises(AssertionError, match="does not follow"):
        blocks_of("```text\nx\n```\n```text output\n1\n```\n")
    with pytest.raises(AssertionError, match="reads as its output"):
        blocks_of("```python\nprint(1)\n```\n\n```\n1\n```\n")
    assert blocks_of("```python\nprint(1)\n```\nA record:\n```\n1\n```\n")[1].kind == "other"


@pytest.mark.parametrize("shown, printed, ok", [
    ("[-0.40286243  0.32836995]", "[-0.40286243  0.32836995]\n", True),
    ("[-0.40286243 0.32836995]", "[-0.40286243  0.32836995]", True),
    ("[ 6. 12.]", "[6. 12.]", True),
    ("[-0.40286243  0.32836995]", "[-0.40286243  0.32837995]", False),
    ("[-0.40286243  0.32836998]", "[-0.40286243  0.32836995]", True),   # float32 rounding
    ("[-0.40286243  0.32836995]", "[-0.40286243  0.32836995  1.]", False),
    ("    d_a = -sin_a", "    d_a = -sin_a", True),
    ("    d_a = -sin_a", "  d_a = -sin_a", False),
    ("    del a", "    del b", False),
    ("    # line 12: x", "    # line 13: x", False),
    ("    d_x_1 = d_x", "    d_x_2 = d_x", False),
    ("a\nb", "a\nb\nc", False),
    ("a\nb\nc", "a\nb", False),
    ("# s2sad: gradient of Net.construct (net.py)",
     "# s2sad: gradient of Net.construct (/tmp/x/block_line3.py)", True),
    ("# s2sad: gradient of Net.construct (net.py)",
     "# s2sad: gradient of f (net.py)", False),
    ('File "net.py", line 14, column 9', 'File "/tmp/b.py", line 14, column 9', True),
    ('File "net.py", line 14, column 9', 'File "net.py", line 15, column 9', False),
    ("    # f.py line 2: return x", "    # /tmp/b01.py line 2: return x", True),
    ("    # f.py line 2: return x", "    # f.py line 3: return x", False),
])
def test_output_comparison(shown, printed, ok):
    assert (output_mismatch(shown, printed) is None) == ok


def _run_page_text(text, tmp_path, stem="page"):
    """Run a page's blocks as the docs test does; raises AssertionError on a mismatch."""
    namespace = {"__name__": "docs_" + stem}
    ran = 0
    for i, block in enumerate(blocks_of(text)):
        if block.kind != "code" or block.skip is not None:
            continue
        if block.lang == "python":
            path = tmp_path / ("%s_block%02d_line%d.py" % (stem, i, block.line))
            printed = run_python_block(block, path, namespace)
            ran += 1
        elif block.shows is not None:
            printed = run_sh_block(block)
        else:
            continue
        if block.shows is not None:
            compare = excerpt_mismatch if block.shows.excerpt else output_mismatch
            why = compare(block.shows.source, printed)
            assert why is None, "the output block at line %d is not what the block at line " \
                "%d prints: %s" % (block.shows.line, block.line, why)
    return ran


def test_excerpts():
    printed = "def f_grad(x):\n    a = 1\n    del z\n    b = 2\n    return b\n"
    assert excerpt_mismatch("    a = 1   # a note\n    ...\n    return b\n", printed) is None
    assert excerpt_mismatch("    a = 1\n    b = 3\n", printed) is not None
    assert excerpt_mismatch("    b = 2\n    a = 1\n", printed) is not None


def test_conventions_catch_drift(tmp_path):
    good = ("```python\nimport numpy as np\nprint(np.arange(3) / 3)\n```\n"
            "```text output\n[0.         0.33333333 0.66666667]\n```\n"
            "```python\nprint(2 * 3)  # prints: 6\n```\n"
            "```python\n# raises: ZeroDivisionError\nprint(1)\n1 / 0\n```\n"
            "```text output\n1\ndivision by zero\n```\n")
    assert _run_page_text(good, tmp_path) == 3
    for bad, message in [
            (good.replace("0.33333333", "0.3333"), "is not what"),
            (good.replace("# prints: 6", "# prints: 7"), "shown '7'"),
            (good.replace("# prints: 6", "# 6"), "plain comment"),
            (good.replace("1 / 0", "1 / 1"), "should raise"),
            (good.replace("division by", "division of"), "is not what"),
            (good.replace("ZeroDivisionError", "KeyError"), "raised ZeroDivisionError")]:
        with pytest.raises(AssertionError, match=message):
            _run_page_text(bad, tmp_path)


@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_runs_and_prints_what_it_shows(page, tmp_path, monkeypatch):
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    monkeypatch.chdir(ROOT)          # blocks may name files relative to the repository
    stem = os.path.splitext(page)[0].replace("-", "_").replace("/", "_")
    try:
        _run_page_text(text, tmp_path, stem)
    except AssertionError as exc:
        raise AssertionError("%s: %s" % (page, exc)) from None


def test_every_page_is_tested():
    """Every Markdown page of the repository is run here or by the test claiming it."""
    for page, test in OTHER_TESTS.items():
        source = open(os.path.join(ROOT, "tests", "docs", test), encoding="utf-8").read()
        assert os.path.basename(page) in source, "%s does not read %s" % (test, page)
    untested = set(repository_pages()) - set(RUN_PAGES) - set(OTHER_TESTS)
    assert not untested, ("no test runs %s: add its folder to PAGE_GLOBS in tests/docs/test_docs.py, "
                          "or name the test that runs it in OTHER_TESTS" % sorted(untested))
    assert set(OTHER_TESTS) <= set(repository_pages())
    assert {"docs/guide.md", "README.md", "samples/README.md"} <= set(RUN_PAGES)


def test_a_page_in_a_new_folder_is_noticed(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / ".git").mkdir()
    for page in ("README.md", "docs/a.md", "tools/notes.md", ".git/x.md"):
        (tmp_path / page).write_text("# page\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    assert repository_pages() == ["README.md", "docs/a.md", "tools/notes.md"]
    assert run_pages() == ["README.md", "docs/a.md"]


def test_guide_shows_the_flag_table():
    index = open(os.path.join(ROOT, "docs", "guide.md"), encoding="utf-8").read()
    rows = re.findall(r"^\| (True|False) \| (True|False) \| (True|False) \|", index, re.M)
    assert sorted(rows) == sorted({(a, b, c) for a in ("True", "False")
                                   for b in ("True", "False") for c in ("True", "False")})


def test_flag_table_matches_gradoperation():
    """The table's 'returns' column, checked on the Cell it describes."""
    from s2sad import nn, ops, Tensor, Parameter, ParameterTuple

    index = open(os.path.join(ROOT, "docs", "guide.md"), encoding="utf-8").read()

    class Affine(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.array([2.0])), name="w")
            self.b = Parameter(Tensor(np.array([0.5])), name="b")

        def construct(self, x, y):
            return x * y * self.w + self.b

    net = Affine()
    weights = ParameterTuple(net.trainable_params())
    x, y, sens = Tensor(np.array([1.0, 2.0])), Tensor(np.array([3.0, 4.0])), \
        Tensor(np.array([1.0, 10.0]))
    shapes = {"`dx`": "T", "`(dx, dy)`": "(T,T)", "`(dw, db)`": "(T,T)",
              "`((dx, dy), (dw, db))`": "((T,T),(T,T))"}

    def structure(value):
        if isinstance(value, tuple):
            return "(" + ",".join(structure(v) for v in value) + ")"
        return "T"

    for row in re.findall(r"^\| (True|False) \| (True|False) \| (True|False) \| [^|]+\| (`[^`]+`)",
                          index, re.M):
        get_all, get_by_list, sens_param = (v == "True" for v in row[:3])
        grad = ops.GradOperation(get_all=get_all, get_by_list=get_by_list,
                                 sens_param=sens_param)
        fn = grad(net, weights) if get_by_list else grad(net)
        result = fn(x, y, sens) if sens_param else fn(x, y)
        assert structure(result) == shapes[row[3]], row
