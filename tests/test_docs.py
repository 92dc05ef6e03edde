"""Every ```python block of docs/guide*.md (and of the README) runs.

Each page's blocks run in order in one fresh namespace (a later block may use
names an earlier one defined), each written to a .py file of its own first
because s2sad reads the source of what it differentiates.  A block preceded
by an HTML comment ``<!-- no-test: reason -->`` is skipped; the reason must
be given.
"""
import glob
import os
import re
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted(glob.glob(os.path.join(ROOT, "docs", "guide*.md")))
RUN_PAGES = PAGES + [os.path.join(ROOT, "README.md")]
FENCE = re.compile(r"^([ \t]*)```(\w*)[^\n]*\n(.*?)^\1```[ \t]*$", re.M | re.S)
NO_TEST = re.compile(r"<!--\s*no-test:?(.*?)-->\s*$", re.S)


def python_blocks(text):
    """(line number, source, skip reason or None) of each ```python block."""
    blocks = []
    for m in FENCE.finditer(text):
        if m.group(2) != "python":
            continue
        before = text[:m.start()].rstrip()
        skip = NO_TEST.search(before[-300:]) if before.endswith("-->") else None
        reason = skip.group(1).strip() if skip else None
        if skip and not reason:
            raise AssertionError("a <!-- no-test --> comment must say why the block is skipped")
        line = text.count("\n", 0, m.start()) + 2
        blocks.append((line, textwrap.dedent(m.group(3)), reason))
    return blocks


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


@pytest.mark.parametrize("page", RUN_PAGES, ids=[os.path.basename(p) for p in RUN_PAGES])
def test_python_blocks_run(page, tmp_path, monkeypatch, capsys):
    text = open(page, encoding="utf-8").read()
    blocks = python_blocks(text)
    assert blocks, "%s has no python block" % page
    monkeypatch.chdir(ROOT)          # blocks may name files relative to the repository
    stem = os.path.splitext(os.path.basename(page))[0].replace("-", "_")
    namespace = {"__name__": "docs_" + stem}
    ran = 0
    for i, (line, source, skip) in enumerate(blocks):
        if skip is not None:
            continue
        path = tmp_path / ("%s_block%02d_line%d.py" % (stem, i, line))
        path.write_text(source, encoding="utf-8")
        namespace["__file__"] = str(path)
        code = compile(source, str(path), "exec")
        try:
            exec(code, namespace)
        except Exception as exc:  # report where in the page the failing block is
            raise AssertionError("%s: the python block at line %d raised %s: %s"
                                 % (os.path.basename(page), line, type(exc).__name__, exc)
                                 ) from exc
        ran += 1
    assert ran >= 1
    capsys.readouterr()


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
