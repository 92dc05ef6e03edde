"""The frontend's shape: modules one reader can hold in mind, one place for attribution.

The builder is split into one module per part of the walk (see
docs/design.md); these checks keep it that way: every module of
``s2sad/frontend`` says why it exists, stays under ~600 lines and has no
function over 80 lines, and only ``Emitter.attributed`` changes where
emitted ops point (``loc_override``) and which rule they come from
(``origin``), so that every change is undone however the code inside ends.
"""
import ast
import os

import pytest

from s2sad.frontend.build import Builder

from repo import ROOT

FRONTEND = os.path.join(ROOT, "s2sad", "frontend")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _modules(folder):
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            yield os.path.relpath(path, ROOT), text, ast.parse(text)


def test_frontend_modules_are_small_and_say_why_they_exist():
    problems = []
    for path, text, tree in _modules(FRONTEND):
        n = len(text.splitlines())
        if n > MAX_MODULE_LINES:
            problems.append("%s has %d lines (at most %d)" % (path, n, MAX_MODULE_LINES))
        if not path.endswith("__init__.py") and not ast.get_docstring(tree):
            problems.append("%s has no module docstring" % path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    problems.append("%s:%d: %s has %d lines (at most %d)"
                                    % (path, node.lineno, node.name, length,
                                       MAX_FUNCTION_LINES))
    assert not problems, "\n".join(problems)


def test_only_the_emitter_sets_loc_override_and_origin():
    """The frontend and the AD passes change attribution through ``attributed`` only."""
    allowed = os.path.join("s2sad", "frontend", "emitter.py")
    found = []
    for folder in (FRONTEND, os.path.join(ROOT, "s2sad", "ad")):
        for path, _text, tree in _modules(folder):
            if path == allowed:
                continue
            for node in ast.walk(tree):
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
                for target in targets:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Attribute) and \
                                sub.attr in ("loc_override", "origin"):
                            found.append("%s:%d sets .%s" % (path, node.lineno, sub.attr))
    assert not found, "use Emitter.attributed instead:\n" + "\n".join(found)


def test_attributed_sets_and_restores_location_and_origin():
    b = Builder()
    b.loc_override, b.origin = "outer loc", "outer"
    with b.attributed("op loc"):
        assert (b.loc_override, b.origin) == ("op loc", "outer")
        with b.attributed(None, "rule"):
            assert (b.loc_override, b.origin) == (None, "rule")
        assert (b.loc_override, b.origin) == ("op loc", "outer")
    with pytest.raises(KeyError):
        with b.attributed("op loc", "rule"):
            raise KeyError
    assert (b.loc_override, b.origin) == ("outer loc", "outer")


def test_region_collects_ops_apart_and_restores_the_enclosing_list():
    from s2sad.ops.operations import math_ops as M
    from s2sad.ir.nodes import Var
    b = Builder()
    x = Var("x")
    outer = b.ops
    with b.region():
        inner = b.ops
        b.emit(M.Neg(), [x], None)
    assert b.ops is outer and outer == []
    assert [type(op.prim).__name__ for op in inner] == ["Neg"]
    with pytest.raises(KeyError):
        with b.region():
            raise KeyError
    assert b.ops is outer
