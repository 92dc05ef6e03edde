"""``docs/numpy-functions.md`` is measured by ``tools/numpy_table.py`` and must be current.

Every function in ``s2sad.ops.function.NUMPY`` has a row, each row is the
result of differentiating it in each mode against finite differences, and
no mode may disagree with them.
"""
import os
import subprocess
import sys

from s2sad.ops.function import NUMPY

from repo import ROOT
DOC = os.path.join(ROOT, "docs", "numpy-functions.md")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import numpy_table  # noqa: E402


def test_numpy_functions_doc_is_up_to_date_and_never_wrong():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_numpy_doc.py"),
                             "--check"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    text = open(DOC, encoding="utf-8").read()
    assert "WRONG" not in text.split("| function |", 1)[1]


def test_every_mapped_numpy_function_has_a_row():
    text = open(DOC, encoding="utf-8").read()
    for names, fn in numpy_table.entries():
        assert "| `%s`" % names[0] in text, names
    assert len(numpy_table.entries()) >= len(NUMPY)


def test_a_wrong_gradient_would_show_as_wrong():
    """The table can fail: a program whose s2sad gradient differs from the finite
    differences (a stop-gradient NumPy cannot see) is reported ``WRONG``."""
    import numpy as np
    from s2sad import ops

    def hidden(x):
        return x * ops.stop_gradient(x)
    statuses = numpy_table.check_modes(hidden, (np.linspace(0.5, 1.5, 4),))
    assert statuses[0] == "WRONG" and statuses[1] == "WRONG"
