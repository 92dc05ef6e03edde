"""The progress lines of long tests (tests/support/progress.py) show under ``pytest -q``."""
import os
import shutil
import subprocess
import sys

from progress import Progress

from repo import TESTS


class Recorder(Progress):
    def __init__(self, times, every_s):
        self.lines = []
        ticks = iter(times)
        super().__init__(config=None, every_s=every_s, clock=lambda: next(ticks))

    def write(self, line):
        self.lines.append(line)


def test_progress_prints_every_so_often_and_at_the_end():
    rec = Recorder([0.0, 5.0, 11.0, 12.0, 25.0, 26.0], every_s=10.0)
    for _ in range(6):
        rec.step("long", 6)
    assert rec.lines == ["long: 3/6 examples, 11 s", "long: 5/6 examples, 25 s",
                         "long: 6/6 examples, 26 s"]


def test_a_short_test_prints_nothing():
    rec = Recorder([0.0, 1.0, 2.0], every_s=10.0)
    for _ in range(3):
        rec.step("short", 3)
    assert rec.lines == []


def test_progress_line_passes_pytest_capture(tmp_path):
    """Run a tiny suite with ``-q`` (output captured): the line reaches the terminal."""
    for name in ("conftest.py", os.path.join("support", "progress.py")):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(os.path.join(TESTS, name), str(tmp_path / name))
    (tmp_path / "test_demo.py").write_text(
        "def test_ok():\n    pass\n\n"
        "def test_long(progress):\n"
        "    for _ in range(4):\n"
        "        progress.step('demo', 4)\n\n"
        "def test_after():\n    pass\n")
    env = dict(os.environ, S2SAD_PROGRESS_EVERY_S="0")       # every step prints
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(tmp_path)], cwd=str(tmp_path), capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "  [progress] demo: 1/4 examples, 0 s" in lines, r.stdout
    assert "  [progress] demo: 4/4 examples, 0 s" in lines, r.stdout
    assert "3 passed" in lines[-1]
