"""``import s2sad`` stays cheap: optional libraries are imported when first used.

SciPy alone took a third of a second to import, paid by every ``s2sad``
command and every program, most of which never call ``erf``.
"""
import subprocess
import sys

from repo import ROOT


def test_importing_s2sad_imports_no_optional_library():
    probe = ("import sys, s2sad; "
             "print(sorted(m for m in ('scipy', 'pygments', 'torch', 'jax') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
