"""Reading a function's source: the block found without ``inspect``'s module search.

The frontend reads a function's lines from ``linecache`` and ends the block at
the first line of code indented no deeper than its ``def``; where that line is
inside brackets or a string, ``inspect.getblock`` decides.  Each layout below
is checked against ``inspect``'s own answer and by finite differences.
"""
import importlib.util
import inspect
import sys
import textwrap

import numpy as np
import pytest

import s2sad
from gradcheck import assert_fd
from s2sad.frontend import parse

MODULE = textwrap.dedent('''\
    import functools
    import numpy as np


    def plain(x):
        return np.sum(np.sin(x) * x)


    def low_string(x):
        note = """a string
    whose second line is not indented
    """
        return np.sum(x * x) + 0.0 * len(note)


    def low_bracket(x):
        y = np.sum(
    x * x)
        return y


    def backslash(x):
        y = np.sum(x) + \\
    np.sum(x * x)
        return y


    def commented(x):
        y = x * 3.0
    # a comment at the left margin does not end the function
        return np.sum(y * x)


    def keep(fn):
        @functools.wraps(fn)
        def inner(*args):
            return fn(*args)
        return inner


    @keep
    @functools.lru_cache(
        maxsize=None)
    def decorated_twice(k):
        return k


    def outer(x):
        def inner(y):
            return np.cos(y) * y
        return np.sum(inner(x))
    z = 1
''')

NAMES = ("plain", "low_string", "low_bracket", "backslash", "commented", "outer")


@pytest.fixture()
def module(tmp_path):
    path = tmp_path / "source_layouts.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("source_layouts", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    parse.clear_cache()


@pytest.mark.parametrize("name", NAMES + ("decorated_twice",))
def test_the_block_read_is_inspects_block(module, name):
    fn = inspect.unwrap(getattr(module, name))
    assert parse._source_lines(fn.__code__) == inspect.getsourcelines(fn.__code__)


@pytest.mark.parametrize("name", NAMES)
def test_functions_of_every_layout_differentiate(module, name):
    assert_fd(getattr(module, name), np.array([0.3, -1.2, 2.0]))


def test_reading_a_source_does_not_search_every_module(module, monkeypatch):
    def search(*args, **kwargs):
        raise AssertionError("inspect.getmodule resolves the path of every loaded module")
    monkeypatch.setattr(inspect, "getmodule", search)
    assert_fd(module.plain, np.array([0.5, 1.5]))


def test_an_edited_file_is_read_again(tmp_path):
    path = tmp_path / "edited_layout.py"
    for power, expected in ((2, 2 * 1.5), (3, 3 * 1.5 ** 2)):
        path.write_text("import numpy as np\n\n\ndef f(x):\n    return np.sum(x ** %d)"
                        "  # %s\n" % (power, "x" * power))
        spec = importlib.util.spec_from_file_location("edited_layout", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        assert float(s2sad.grad(mod.f)(np.array(1.5))) == pytest.approx(expected)
    sys.modules.pop("edited_layout", None)
