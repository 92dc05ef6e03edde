"""tools/bench.py --quick runs end to end and writes its JSON (no timing is asserted).

The benchmark checks every gradient against a hand-written one before timing
it; this test only reads what it recorded.  Peers (autograd, PyTorch, JAX,
tangent) are used when installed and reported as absent otherwise.
"""
import json
import os
import subprocess
import sys

from repo import ROOT
SCRIPT = os.path.join(ROOT, "tools", "bench.py")

TOOLS = ("numpy", "hand", "s2sad", "autograd", "torch", "jax", "jax_jit", "tangent")
S2SAD_KEYS = {"grad_s", "forward_s", "grad_over_forward", "compile_s", "first_call_s",
              "compiles_on_second_call", "generated_lines", "max_abs_error", "grad_matches"}


def _run(tmp_path, *extra):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--quick", "--json", str(out)] + list(extra),
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout, json.loads(out.read_text())


def test_bench_quick_run(tmp_path):
    stdout, data = _run(tmp_path)
    assert "Targets" in stdout
    assert data["all_gradients_match"] is True
    assert data["options"]["quick"] is True
    for key in ("cpu", "cores", "python", "numpy", "s2sad", "autograd", "torch", "jax",
                "tangent"):
        assert key in data["machine"], key
    workloads = data["workloads"]
    assert set(workloads) == set("abcdef")

    for w in "abce":
        res = workloads[w]
        assert res["gradients_match"] is True, (w, res)
        assert set(TOOLS) <= set(res["tools"]), (w, sorted(res["tools"]))
        s = res["tools"]["s2sad"]
        assert S2SAD_KEYS <= set(s), (w, sorted(S2SAD_KEYS - set(s)))
        assert s["grad_matches"] is True and s["compiles_on_second_call"] == 0
        assert s["grad_s"] > 0 and s["forward_s"] > 0
        assert res["tools"]["hand"]["grad_matches"] is True
        assert "s2sad_over_hand" in res["ratios"]
        for name in TOOLS[3:]:
            t = res["tools"][name]
            # a peer is timed and matched, or reported as absent / unable, never silently
            assert t["status"] == "ok" and t["grad_matches"] is True or t["status"] != "ok", \
                (w, name, t)
    for w in "ab":
        r = workloads[w]["ratios"]
        assert r["s2sad_peak_over_hand_peak"] > 0
        assert workloads[w]["tools"]["s2sad"]["memory_ratio"] > 0

    d = workloads["d"]
    assert d["gradients_match"] is True
    assert sorted(d["orders"]) == ["1", "2", "3", "4", "5"]
    for row in d["orders"].values():
        s = row["s2sad"]
        assert s["grad_matches"] is True and s["generated_lines"] > 0 and s["compile_s"] > 0
    lines = [d["mlp_orders"][k]["generated_lines"] for k in ("1", "2", "3")]
    assert all(n > 0 for n in lines)

    f = workloads["f"]
    assert f["gradients_match"] is True
    assert len(f["sizes"]) == 3 and len(f["programs"]) == 5
    for p in f["programs"].values():
        assert p["s2sad"]["grad_matches"] is True and p["s2sad"]["compile_s"] > 0
        assert p["s2sad"]["compiles_on_second_call"] == 0
    assert f["compile_ratio_largest_over_middle"] > 0
    for n in f["sizes"]:
        # a straight-line program's compile time is the median of five compiles
        s = f["programs"]["straight_%d" % n]["s2sad"]
        assert len(s["compile_s_samples"]) == 5
        assert s["compile_s"] == sorted(s["compile_s_samples"])[2]

    results = {t["result"] for t in data["targets"]}
    assert results <= {"PASS", "MISS", "n/a"}
    assert len(data["targets"]) >= 12


def test_bench_without_peers(tmp_path):
    """Every peer absent: the benchmark still runs and says so."""
    _, data = _run(tmp_path, "--peers", "none", "--only", "c")
    assert set(data["workloads"]) == {"c"}
    tools = data["workloads"]["c"]["tools"]
    for name in ("autograd", "torch", "jax", "jax_jit", "tangent"):
        assert tools[name]["status"].startswith("disabled"), (name, tools[name])
    assert tools["s2sad"]["grad_matches"] is True
    assert data["all_gradients_match"] is True
