"""The package's import structure: layers import only downward, no cycles.

``tools/layers.py`` reads every import of ``s2sad`` (those inside functions
included) and checks them against its ``LAYERS`` table; its ``EXCEPTIONS``
list is empty, so a new upward import or cycle fails here with the file and
line that made it.
"""
import importlib.util
import os
import textwrap

import pytest

from repo import ROOT
_SPEC = importlib.util.spec_from_file_location("layers", os.path.join(ROOT, "tools", "layers.py"))
layers = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(layers)


def test_every_module_has_a_layer():
    for module in layers.modules():
        layers.layer_of(module)          # raises KeyError naming the module


def test_no_new_upward_import_or_cycle_and_no_stale_exception():
    _graph, problems = layers.report()
    assert not problems, "\n".join(problems)


def _tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(tmp_path)


def test_graph_sees_imports_inside_functions_and_relative_forms(tmp_path):
    root = _tree(tmp_path, {
        "s2sad/__init__.py": "from . import errors\n",
        "s2sad/errors.py": "def f():\n    from .ir import nodes\n",
        "s2sad/ir/__init__.py": "",
        "s2sad/ir/nodes.py": "from ..errors import f\nfrom typing import TYPE_CHECKING\n"
                             "if TYPE_CHECKING:\n    from s2sad import tensor\n",
        "s2sad/cli.py": "import s2sad.ir.nodes\n"})
    graph = layers.import_graph(root)
    assert graph["s2sad"] == {"s2sad.errors": 1}
    assert graph["s2sad.errors"] == {"s2sad.ir.nodes": 2}
    assert graph["s2sad.ir.nodes"] == {"s2sad.errors": 1}       # TYPE_CHECKING skipped
    assert graph["s2sad.cli"] == {"s2sad.ir.nodes": 1}
    assert layers.upward_imports(graph) == {("s2sad.errors", "s2sad.ir.nodes")}
    assert layers.cycles(graph) == [["s2sad.errors", "s2sad.ir.nodes"]]
    assert layers.cycles(graph, {("s2sad.errors", "s2sad.ir.nodes")}) == []


def test_unknown_module_must_be_placed():
    with pytest.raises(KeyError, match="add it to LAYERS"):
        layers.layer_of("elsewhere.module")
