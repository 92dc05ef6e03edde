"""Every example of docs/errors.md raises the error it documents.

Each ```python block starting with ``# raises: ErrorClass`` is written to its
own ``.py`` file and run; it must raise exactly that class, with the text of
its ``# message:`` line in the message.  Blocks starting with ``# runs`` must
run without error.
"""
import os
import re
import runpy
import sys

import pytest

import s2sad.errors
from s2sad.runtime import UndefinedVariableError
from s2sad import ops
from s2sad.frontend import parse
from s2sad.frontend.control import NeedsConstant
from s2sad.frontend.trees import TreeOutput

from repo import ROOT

DOC = os.path.join(ROOT, "docs", "errors.md")

CLASSES = {
    "CompileError": s2sad.errors.CompileError,
    "UnsupportedSyntaxError": s2sad.errors.UnsupportedSyntaxError,
    "NoGradientRuleError": s2sad.errors.NoGradientRuleError,
    "RuleError": s2sad.errors.RuleError,
    "NeedsConstant": NeedsConstant,
    "TreeOutput": TreeOutput,
    "UndefinedVariableError": UndefinedVariableError,
    "TypeError": TypeError,
    "ValueError": ValueError,
    "IndexError": IndexError,
}


def blocks():
    text = open(DOC).read()
    out = []
    for m in re.finditer(r"```python\n(.*?)```", text, re.S):
        code = m.group(1)
        first = code.splitlines()[0].strip()
        if not (first.startswith("# raises:") or first == "# runs"):
            continue
        line = text[:m.start()].count("\n") + 2
        out.append(pytest.param(code, id="line%d" % line))
    return out


def test_the_doc_has_examples():
    assert len(blocks()) >= 60


def _header(code, key):
    for line in code.splitlines():
        if line.startswith("# %s:" % key):
            return line.split(":", 1)[1].strip()
    return None


@pytest.mark.parametrize("code", blocks())
def test_example(code, tmp_path):
    # examples share function bodies; s2sad's parse cache would mix their files
    # up (see test_identical_functions_in_two_files below)
    parse._cache.clear()
    path = tmp_path / "example.py"
    path.write_text(code)
    expected = _header(code, "raises")
    if expected is None:
        runpy.run_path(str(path), run_name="__main__")
        return
    cls = CLASSES[expected]
    with pytest.raises(Exception) as info:
        runpy.run_path(str(path), run_name="__main__")
    assert type(info.value) is cls, "expected %s, got %s: %s" % (
        expected, type(info.value).__name__, info.value)
    message = _header(code, "message")
    assert message and message in str(info.value), str(info.value)
    if isinstance(info.value, s2sad.errors.CompileError) and \
            _header(code, "location") != "none":
        # compile errors point at the example's file and line
        assert str(info.value).startswith('File "%s", line ' % path), str(info.value)


def test_identical_functions_in_two_files(tmp_path):
    # was: the parse cache was keyed by code object, and code objects that differ
    # only in their file compare equal, so the second file's errors named the first
    import numpy as np
    source = ("import numpy as np\n\n\ndef f(x):\n    if x.sum() > 0:\n        y = x\n"
              "    return y\n")
    fns = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        path = tmp_path / name / "same.py"
        path.write_text(source)
        fns.append((runpy.run_path(str(path))["f"], str(path)))
    ops.GradOperation()(fns[0][0])(np.ones(2))
    with pytest.raises(UndefinedVariableError) as info:
        ops.GradOperation()(fns[1][0])(-np.ones(2))
    assert fns[1][1] in str(info.value), str(info.value)
