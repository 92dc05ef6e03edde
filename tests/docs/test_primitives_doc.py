"""``docs/primitives.md`` is generated from the code and must not drift from it.

If ``test_primitives_doc_is_up_to_date`` fails, a primitive, its docstring,
``formula``, ``nondifferentiable`` or rules changed: run
``python tools/gen_primitives_doc.py`` and commit ``docs/primitives.md``.
"""
import inspect
import os
import subprocess
import sys

from s2sad.ops import operations as P
from s2sad.ops.primitive import Primitive

from repo import ROOT
TOOL = os.path.join(ROOT, "tools", "gen_primitives_doc.py")
DOC = os.path.join(ROOT, "docs", "primitives.md")


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL] + list(args), cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_primitives_doc_is_up_to_date():
    result = run_tool("--check")
    assert result.returncode == 0, (
        "docs/primitives.md is out of date; regenerate it with "
        "`python tools/gen_primitives_doc.py`\n" + result.stdout + result.stderr)


def test_check_fails_on_a_stale_file(tmp_path):
    stale = tmp_path / "primitives.md"
    stale.write_text(open(DOC, encoding="utf-8").read().replace("| `Sin` |", "| `Sine` |"),
                     encoding="utf-8")
    result = run_tool("--check", "--output", str(stale))
    assert result.returncode == 1
    assert "out of date" in result.stderr
    missing = run_tool("--check", "--output", str(tmp_path / "absent.md"))
    assert missing.returncode == 1


def test_output_is_deterministic(tmp_path):
    out = tmp_path / "primitives.md"
    assert run_tool("--output", str(out)).returncode == 0
    first = out.read_bytes()
    env = dict(os.environ, PYTHONHASHSEED="12345")
    again = subprocess.run([sys.executable, TOOL, "--stdout"], cwd=str(tmp_path), env=env,
                           capture_output=True, timeout=120)
    assert again.returncode == 0
    assert again.stdout == first


def test_every_exported_primitive_has_a_row():
    text = open(DOC, encoding="utf-8").read()
    for name in sorted(dir(P)):
        cls = getattr(P, name)
        if inspect.isclass(cls) and issubclass(cls, Primitive) and cls is not Primitive:
            row = "| `%s`" % cls.__name__
            assert text.count(row + " |") + text.count(row + " (alias") == 1, cls.__name__
            if name != cls.__name__:
                assert "`%s`" % name in text, name
    for title in ("## math", "## array", "## nn", "## Internal AD helpers"):
        assert title in text
