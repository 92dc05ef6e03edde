"""Every module of the package fits in a reader's head: ~600 lines, functions of 80.

Tables of small, independent entries (a primitive class or a rule per
entry, read one at a time) are the exception and are named here; any other
module over the limit, and any function over 80 lines anywhere, fails.
"""
import ast
import os

from repo import ROOT

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80

#: modules that are tables of small rules: one primitive, rule or functional
#: form per entry, each read on its own
TABLES = {
    "s2sad/ops/operations/array_ops.py",
    "s2sad/ops/_grad/grad_array_ops.py",
    "s2sad/ops/_grad/grad_math_ops.py",
    "s2sad/ops/_grad/grad_nn_ops.py",
    "s2sad/ops/function/math_func.py",
}


def _package_modules():
    for folder, _dirs, files in os.walk(os.path.join(ROOT, "s2sad")):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, ROOT).replace(os.sep, "/"), f.read()


def test_no_module_over_600_lines_unless_it_is_a_table():
    long = ["%s: %d lines" % (path, len(text.splitlines()))
            for path, text in _package_modules()
            if len(text.splitlines()) > MAX_MODULE_LINES and path not in TABLES]
    assert not long, "split these by idea (or name a table of rules in TABLES):\n" + \
        "\n".join(long)


def test_the_tables_named_are_still_tables_over_the_limit():
    sizes = {path: len(text.splitlines()) for path, text in _package_modules()}
    stale = [path for path in TABLES if sizes.get(path, 0) <= MAX_MODULE_LINES]
    assert not stale, "no longer needs an exception: %s" % stale


def test_no_function_over_80_lines():
    long = []
    for path, text in _package_modules():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append("%s:%d %s: %d lines" % (path, node.lineno, node.name, length))
    assert not long, "\n".join(long)
