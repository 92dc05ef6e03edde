"""A lambda's source is found without converting its whole file to gast.

The lambda's file is parsed whole (a lambda's first line may cut an
expression in half), but by ``ast`` alone: converting and walking every node
of a long file with gast was most of the cold start of ``jvp`` of a lambda.
"""
import ast
import importlib.util
import textwrap

import gast
import numpy as np

import s2sad
from s2sad.frontend import parse

UNRELATED = "".join("def unrelated_%d(a, b):\n    return [a * b + %d for _ in range(3)]\n\n\n"
                    % (k, k) for k in range(40))

MODULE = UNRELATED + textwrap.dedent("""
    import numpy as np

    def outer(c):
        square = lambda x: np.sum(c * x * x)
        twice = [lambda y: 2 * y, lambda y: np.sum(y)]
        return square, twice
""")


def _load(tmp_path):
    path = tmp_path / "many_functions.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("many_functions", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_lambda_is_read_without_converting_its_file_to_gast(tmp_path, monkeypatch):
    module = _load(tmp_path)
    parsed = []
    real_parse, real_convert = gast.parse, gast.ast_to_gast
    monkeypatch.setattr(gast, "parse", lambda text, *a, **k: parsed.append(text) or
                        real_parse(text, *a, **k))
    monkeypatch.setattr(gast, "ast_to_gast", lambda node: parsed.append(ast.dump(node)) or
                        real_convert(node))
    parse.clear_cache()
    square, twice = module.outer(3.0)
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(s2sad.grad(square)(x), 6.0 * x)
    assert not [t for t in parsed if "unrelated_" in t]
    # the lambda is named after the variable it is assigned to, found among its owners
    assert parse.get_source_info(square).tree.name == "square"
    # two lambdas on one line with the same parameters: told apart by their columns
    # (Python 3.11+) or their names (before); either way each gets its own body
    np.testing.assert_allclose(s2sad.grad(lambda v: np.sum(twice[0](v)))(x), 2.0 * np.ones(3))
    np.testing.assert_allclose(s2sad.grad(twice[1])(x), np.ones(3))


def test_a_function_source_is_parsed_once(tmp_path, monkeypatch):
    # the block of a def is parsed to check where it ends; that tree is the one
    # converted to gast, numbered as in the file (not a second parse)
    path = tmp_path / "methods.py"
    path.write_text("\n\nclass Holder:\n    def method(self, x):\n"
                    "        return (x *\n                2.0)\n")
    spec = importlib.util.spec_from_file_location("methods", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    calls = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: calls.append(text) or
                        real(text, *a, **k))
    parse.clear_cache()
    info = parse.get_source_info(module.Holder.method)
    assert len(calls) == 1
    ret = info.tree.body[0]
    assert (info.tree.lineno, ret.lineno, ret.value.lineno, info.col_shift) == (4, 5, 5, 4)
    loc = info.loc(ret.value)
    assert (loc.lineno, loc.col, loc.source_line.strip()) == (5, 16, "return (x *")  # the x
    np.testing.assert_allclose(s2sad.grad(module.Holder().method)(1.5), 2.0)


def _keep(fn):
    """A decorator factory: the lambda it is given is found through the decorated def."""
    def deco(f):
        f.kept = fn
        return f
    return deco


@_keep(
    lambda x: np.sum(np.sin(x) * 3.0))
def _decorated():
    return None


def test_a_lambda_in_a_decorators_arguments_is_found():
    """A decorated def starts at its first decorator, not at ``def`` (the lambda's line
    is above the def's own ``lineno``)."""
    x = np.array([0.1, -0.4, 2.0])
    np.testing.assert_allclose(s2sad.grad(_decorated.kept)(x), 3.0 * np.cos(x), rtol=1e-12)
