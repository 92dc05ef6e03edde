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
    assert set(data) == {"bytecode cached", "compiled from source"}
    for mode in data.values():
        assert set(mode) == {"import numpy", "import s2sad", "import s2sad (NumPy imported)",
                             "cold start: fn", "cold start: cell"}
        assert all(isinstance(v, float) and v > 0 for v in mode.values()), mode
    assert "bytecode cached" in proc.stdout and "compiled from source" in proc.stdout


def test_bytecode_cached_mode_uses_the_compiled_prefix_and_source_mode_writes_nothing(tmp_path):
    """The cached mode's processes load s2sad from the prefix's bytecode; the source mode's
    compile it (a cache that is not read would measure the wrong thing)."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bench_startup as S
    probe = ("import importlib.util, sys, s2sad; "
             "print(s2sad.__spec__.cached, bool(sys.flags.dont_write_bytecode))")
    with S.Bytecode(ROOT) as cache:
        got = {}
        for mode in (S.CACHED, S.SOURCE):
            done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                  env=cache.env(mode), cwd=str(tmp_path), timeout=120)
            assert done.returncode == 0, done.stderr
            got[mode] = done.stdout.split()
        cached_file, dont_write = got[S.CACHED]
        assert cached_file.startswith(cache.dir) and os.path.exists(cached_file)
        assert dont_write == "False" and got[S.SOURCE][1] == "True"
    assert not os.path.exists(cache.dir)
