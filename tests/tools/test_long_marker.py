"""The ``long`` marker: campaigns left out of the default run keep a slice in it.

A test marked ``@pytest.mark.long`` must have a ``<name>_slice`` test in the
same file (the same code on fewer examples), so that nothing loses all of
its coverage by default; ``S2SAD_LONG_SCALE`` must be a fraction.
"""
import ast
import glob
import os
import subprocess
import sys

from repo import ROOT, TESTS


def _is_long_mark(decorator):
    return ast.unparse(decorator) == "pytest.mark.long"


def long_tests_and_slices():
    """(file, name of a long test, whether the file defines its slice), for every long test."""
    found = []
    for path in sorted(glob.glob(os.path.join(TESTS, "*", "test_*.py"))):
        tree = ast.parse(open(path).read())
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any(map(_is_long_mark, node.decorator_list)):
                found.append((os.path.relpath(path, ROOT), node.name,
                              node.name + "_slice" in names))
    return found


def test_every_long_campaign_has_a_slice_in_the_default_run():
    found = long_tests_and_slices()
    assert found, "no test is marked long"
    missing = ["%s::%s" % (path, name) for path, name, has_slice in found if not has_slice]
    assert not missing, "long tests without a <name>_slice in the default run: %s" % missing


def test_a_long_scale_that_is_not_a_fraction_is_refused():
    env = dict(os.environ, S2SAD_LONG_SCALE="2")
    r = subprocess.run([sys.executable, "-c", "import campaign"], capture_output=True, text=True,
                       cwd=os.path.join(TESTS, "support"), env=env, timeout=60)
    assert r.returncode != 0 and "S2SAD_LONG_SCALE must be a fraction" in r.stderr, r.stderr
