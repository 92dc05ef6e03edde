"""Parsed trees of s2sad's own functions, kept beside their bytecode (``frontend/treecache.py``).

A kept tree must be the tree parsing gives, and must never outlive its
source: an edited file, a damaged cache file, another format are parsed
again.  ``PYTHONDONTWRITEBYTECODE`` writes nothing, as for bytecode.  The
end-to-end check runs the same gradient in two fresh processes, the second
reading what the first wrote, against central differences.
"""
import json
import os
import pickle
import subprocess
import sys
import textwrap
import types

import gast
import numpy as np
import pytest

import s2sad
from s2sad.frontend import parse, treecache
from s2sad.ops.function import math_func

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def prefix(tmp_path, monkeypatch):
    """Cache files under ``tmp_path``; the in-memory state saved and restored."""
    saved = dict(treecache._modules)
    treecache._modules.clear()
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    yield tmp_path
    treecache._modules.clear()
    treecache._modules.update(saved)


def _source(tmp_path, body="return x * 2"):
    path = tmp_path / "mod.py"
    path.write_text("def f(x):\n    %s\n" % body)
    return str(path)


def _tree(text):
    return gast.parse(textwrap.dedent(text)).body[0]


def _put(src, line, tree, shift=0):
    """``treecache.put`` as ``parse`` calls it: with the stamp read before parsing."""
    treecache.put(src, line, tree, shift, treecache.get(src, line)[1])


def _kept(src, line):
    return treecache.get(src, line)[0]


def test_a_kept_tree_is_read_back_equal(prefix):
    src = _source(prefix)
    tree = _tree("def f(x):\n    return x * 2\n")
    _put(src, 1, tree, 4)
    treecache.flush()
    assert os.path.exists(treecache.cache_path(src))
    treecache._modules.clear()          # as a new process
    got, shift, fenced = _kept(src, 1)
    assert gast.dump(got) == gast.dump(tree) and shift == 4 and not fenced
    assert _kept(src, 2) is None
    treecache.passed_fence(src, 1, treecache.get(src, 1)[1])
    treecache.flush()
    treecache._modules.clear()
    assert _kept(src, 1)[2]


def test_an_edited_source_is_parsed_again(prefix):
    src = _source(prefix)
    _put(src, 1, _tree("def f(x):\n    return x * 2\n"))
    treecache.flush()
    _source(prefix, "return x * 3 + 1")     # another size
    treecache._modules.clear()
    assert _kept(src, 1) is None


def test_a_tree_read_while_its_file_changed_is_not_kept(prefix):
    """``parse`` reads the file's stamp before its source: a tree parsed from a
    file edited in between may be either version, and is not kept."""
    src = _source(prefix)
    stamp = treecache.get(src, 1)[1]
    _source(prefix, "return x * 4 + 1")
    treecache.put(src, 1, _tree("def f(x):\n    return x * 2\n"), 0, stamp)
    assert _kept(src, 1) is None
    treecache.flush()
    treecache._modules.clear()
    assert _kept(src, 1) is None


def test_a_module_edited_in_the_same_process_is_parsed_again(prefix):
    """An edited module reloaded (``importlib.reload``, autoreload) gets no tree kept
    for its old text, whose lines may now start other functions."""
    src = _source(prefix)
    _put(src, 1, _tree("def f(x):\n    return x * 2\n"))
    assert _kept(src, 1) is not None
    _source(prefix, "return x * 3 + 1")
    assert _kept(src, 1) is None


def test_a_kept_entry_of_another_shape_is_ignored(prefix):
    src = _source(prefix)
    stamp = treecache.get(src, 1)[1]
    with treecache._lock:
        treecache._entry(src, stamp)[1][1] = pickle.dumps((None, 0))
    assert _kept(src, 1) is None


def test_a_gast_without_a_version_still_keeps_trees(monkeypatch):
    """gast 0.5.0-0.5.2 have no ``__version__``: its file stands for it."""
    fake = types.SimpleNamespace(gast=types.SimpleNamespace(__file__=gast.gast.__file__))
    monkeypatch.setattr(treecache, "gast", fake)
    made = treecache._producer()
    assert made is not None and made[-2] is None


def test_a_damaged_or_foreign_file_is_ignored(prefix, monkeypatch):
    src = _source(prefix)
    _put(src, 1, _tree("def f(x):\n    return x * 2\n"))
    treecache.flush()
    path = treecache.cache_path(src)
    with open(path, "wb") as f:
        f.write(b"not a pickle")
    treecache._modules.clear()
    assert _kept(src, 1) is None
    treecache._modules.clear()
    _put(src, 1, _tree("def f(x):\n    return x * 2\n"))
    treecache.flush()
    treecache._modules.clear()
    monkeypatch.setattr(treecache, "FORMAT", treecache.FORMAT + 1)   # trees of another format
    assert _kept(src, 1) is None


def test_an_edited_parser_or_fence_reads_no_old_tree(prefix, monkeypatch):
    """The files that make and check trees are part of what a tree is valid for."""
    src = _source(prefix)
    _put(src, 1, _tree("def f(x):\n    return x * 2\n"))
    treecache.flush()
    treecache._modules.clear()
    assert _kept(src, 1) is not None
    treecache._modules.clear()
    parse_py = (treecache._PRODUCER[1][0] + 1, treecache._PRODUCER[1][1])
    monkeypatch.setattr(treecache, "_PRODUCER",
                        (treecache._PRODUCER[0], parse_py, treecache._PRODUCER[2]))
    assert _kept(src, 1) is None


def test_nothing_is_written_without_bytecode(prefix, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    src = _source(prefix)
    _put(src, 1, _tree("def f(x):\n    return x * 2\n"))
    treecache.flush()
    assert not os.path.exists(treecache.cache_path(src))


def test_only_s2sads_own_files_are_kept(tmp_path):
    assert treecache.is_own(math_func.__file__)
    assert not treecache.is_own(__file__)
    assert not treecache.is_own(str(tmp_path / "s2sad" / "x.py"))


def test_a_library_function_read_from_the_cache_is_the_parsed_one(prefix):
    fn = math_func.tanh
    parse.clear_cache()
    parsed = parse.get_source_info(fn)
    treecache.flush()
    parse.clear_cache()
    treecache._modules.clear()
    kept = treecache.get(fn.__code__.co_filename, fn.__code__.co_firstlineno)[0]
    assert kept is not None
    assert not kept[2]          # not fenced yet when it was written
    again = parse.get_source_info(fn)
    assert again is not parsed and not getattr(again, "fenced", False)
    assert gast.dump(again.tree) == gast.dump(parsed.tree)
    assert (again.filename, again.col_shift, again.qualname) == \
        (parsed.filename, parsed.col_shift, parsed.qualname)
    node = again.tree.body[-1]
    fields = ("filename", "lineno", "col", "source_line", "func")
    assert [getattr(again.loc(node), k) for k in fields] == \
        [getattr(parsed.loc(node), k) for k in fields]
    assert "return" in again.loc(node).source_line


CHILD = textwrap.dedent("""\
    import json, sys
    import numpy as np
    import s2sad
    from s2sad.frontend import treecache

    def loss(W, x):
        z = np.tanh(x @ W)
        return np.sum(np.log(np.sum(np.exp(z), axis=1)))

    rng = np.random.default_rng(0)
    W, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    g = s2sad.grad(loss)(W, x)
    kept = sum(len(e[1]) for e in treecache._modules.values())
    print(json.dumps({"grad": g.tolist(), "kept": kept}))
""")


def test_a_second_process_reads_the_trees_the_first_wrote(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(tmp_path / "pycache"),
               PYTHONPATH=REPO)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    written = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "pycache")
               for f in fs if f.endswith(".s2sad-trees")]
    assert written
    assert runs[1]["kept"] >= runs[0]["kept"] > 0
    assert runs[0]["grad"] == runs[1]["grad"]

    def loss(W, x):
        z = np.tanh(x @ W)
        return np.sum(np.log(np.sum(np.exp(z), axis=1)))
    rng = np.random.default_rng(0)
    W, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    fd = np.zeros_like(W)
    for i in np.ndindex(W.shape):
        e = np.zeros_like(W)
        e[i] = 1e-6
        fd[i] = (loss(W + e, x) - loss(W - e, x)) / 2e-6
    np.testing.assert_allclose(np.array(runs[1]["grad"]), fd, rtol=1e-6, atol=1e-8)


def test_only_a_tree_that_passed_the_fence_skips_it(prefix, monkeypatch):
    """A kept tree is marked once the fence let it through; one it refused never is,
    so each process refuses it again."""
    from s2sad.errors import UnsupportedSyntaxError
    from s2sad.frontend.fence import fence
    src = _source(prefix)
    good = parse.SourceInfo(src, _tree("def f(x):\n    return x * 2\n"), 0, "f")
    bad = parse.SourceInfo(src, _tree("def g(x):\n    for i in x:\n        pass\n"
                                      "    else:\n        pass\n    return x\n"), 0, "g")
    _put(src, 1, good.tree)
    _put(src, 5, bad.tree)
    stamp = treecache.get(src, 1)[1]
    good.kept, bad.kept = (src, 1, stamp), (src, 5, stamp)
    fence(good)
    with pytest.raises(UnsupportedSyntaxError):
        fence(bad)
    treecache.flush()
    treecache._modules.clear()
    assert _kept(src, 1)[2] and not _kept(src, 5)[2]
