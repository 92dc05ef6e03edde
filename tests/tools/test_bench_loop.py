"""tools/bench_loop.py runs end to end and writes its JSON (no timing is asserted)."""
import json
import os
import subprocess
import sys

from repo import ROOT
SCRIPT = os.path.join(ROOT, "tools", "bench_loop.py")

KEYS = {"steps", "hidden", "repeat", "dtype", "forward_time_s", "grad_time_s", "time_ratio",
        "forward_peak_bytes", "grad_peak_bytes", "memory_ratio", "max_abs_error_vs_bptt",
        "python", "numpy", "s2sad"}


def test_bench_loop_small_run(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--steps", "20", "--repeat", "2",
                           "--json", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ratio grad/fwd" in proc.stdout
    data = json.loads(out.read_text())
    assert KEYS <= set(data), sorted(KEYS - set(data))
    assert data["steps"] == 20 and data["repeat"] == 2 and data["hidden"] == 16
    for key in ("forward_time_s", "grad_time_s", "time_ratio", "memory_ratio"):
        assert isinstance(data[key], float) and data[key] > 0, (key, data[key])
    for key in ("forward_peak_bytes", "grad_peak_bytes"):
        assert isinstance(data[key], int) and data[key] > 0, (key, data[key])
    # the script asserts the gradient against hand-written BPTT before timing
    assert data["max_abs_error_vs_bptt"] < 1e-10
