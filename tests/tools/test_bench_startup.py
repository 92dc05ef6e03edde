"""tools/bench_startup.py runs end to end and writes its JSON (no timing is asserted).

Its cold-start children check each gradient against its closed form, so a run
that exits 0 also computed them right."""
import json
import os
import subprocess
import sys

from repo import ROOT
SCRIPT = os.path.join(ROOT, "tools", "bench_startup.py")


def test_bench_startup_small_run(tmp_path):
    out = tmp_path / "startup.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--samples", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert set(data) == {"import numpy", "import s2sad", "import s2sad (NumPy imported)",
                         "cold start: fn", "cold start: cell"}
    assert all(isinstance(v, float) and v > 0 for v in data.values()), data
