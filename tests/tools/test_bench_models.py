"""tools/bench_models.py --quick runs end to end with no peers (no timing is asserted).

The benchmark checks every s2sad gradient (and the training step's updated
weights) against a hand-written NumPy one before timing it and exits 1 on a
mismatch; this test reads what it recorded.
"""
import json
import os
import subprocess
import sys

from repo import ROOT
SCRIPT = os.path.join(ROOT, "tools", "bench_models.py")
PARTS = {"g": ("s2sad", "s2sad_einsum", "s2sad_nn"), "h": ("s2sad", "s2sad_nn"),
         "i": ("s2sad",), "hvp": ("s2sad",), "hessian": ("s2sad",), "k": ("s2sad",),
         "l": ("s2sad",)}


def _run(tmp_path, *extra):
    out = tmp_path / "bench_models.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--quick", "--peers", "none",
                           "--json", str(out)] + list(extra),
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout, json.loads(out.read_text())


def test_quick_run_checks_every_model(tmp_path):
    stdout, data = _run(tmp_path, "--cold-samples", "0")
    assert data["all_gradients_match"] is True
    assert "Summary" in stdout and "Targets" in stdout
    parts = {}
    for w, res in data["workloads"].items():
        parts.update(res.get("parts", {w: res}))
    assert set(parts) == set(PARTS)
    for key, rows in PARTS.items():
        tools = parts[key]["tools"]
        assert tools["hand"]["grad_matches"] is True, key
        for row in rows:
            t = tools[row]
            assert t["grad_matches"] is True and t["grad_s"] > 0, (key, row, t)
            assert t.get("compiles_on_second_call", 0) == 0, (key, row)
            assert "%s/hand" % row in parts[key]["ratios"], (key, row)
            assert t["grad_peak_bytes"] > 0, (key, row)
    # peers are off: reported as disabled, never silently absent
    assert data["machine"]["torch"].startswith("disabled")


def test_cold_start_and_import_time(tmp_path):
    stdout, data = _run(tmp_path, "--only", "k", "--cold-samples", "1")
    assert set(data["cold_start"]) == {"k RK4 Lorenz"}
    assert data["cold_start"]["k RK4 Lorenz"]["seconds"] > 0
    assert data["import_s"] > 0
    source = data["from_source"]
    assert source["cold_start"]["k RK4 Lorenz"]["seconds"] > 0 and source["import_s"] > 0
    assert "import s2sad" in stdout
    assert "bytecode cached" in stdout and "compiled from source" in stdout


def test_wrong_gradient_fails_the_run(tmp_path):
    """A hand-written gradient that disagrees makes the run exit 1 (the check can fail)."""
    code = ("import sys; sys.path.insert(0, %r); import bench_models as BM, "
            "bench_models_defs as M\n"
            "orig = M.lorenz_hand\n"
            "M.lorenz_hand = lambda *a: tuple(1.5 * g for g in orig(*a))\n"
            "sys.exit(BM.main(['--quick', '--peers', 'none', '--only', 'k', "
            "'--cold-samples', '0']))" % os.path.join(ROOT, "tools"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "FAILED s2sad" in proc.stdout
