"""The ``s2sad dump`` command: output, determinism and exit codes."""
import os
import subprocess
import sys
import textwrap

import pytest

from s2sad import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIN_COS = os.path.join(ROOT, "samples", "sin_cos_net.py")
MATMUL = os.path.join(ROOT, "samples", "matmul_net.py")


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_dump_sin_cos_source(capsys):
    code, out, err = run(capsys, "dump", SIN_COS + "::Net")
    assert code == 0, err
    assert "def " in out
    assert "xp.cos(" in out
    assert "# line" in out
    assert err == ""


def test_dump_ir(capsys):
    code, out, err = run(capsys, "dump", SIN_COS + "::Net", "--ir")
    assert code == 0, err
    assert "Sin(" in out and "Cos(" in out
    forward, sep, grad = out.partition("\n\n")
    assert sep and forward.startswith("func ") and grad.startswith("func ")


def test_dump_matmul_all_flags(capsys):
    code, out, err = run(capsys, "dump", MATMUL + "::Net",
                         "--get-all", "--get-by-list", "--sens-param")
    assert code == 0, err
    assert "sens" in out
    assert "self_z" in out  # the Parameter's gradient is computed too


def test_dump_function(tmp_path, capsys):
    src = tmp_path / "fns.py"
    src.write_text("def f(x, y):\n    return x * y\n")
    code, out, err = run(capsys, "dump", str(src) + "::f", "--get-all")
    assert code == 0, err
    assert "def f_grad(" in out


def test_dump_local_import(tmp_path, capsys):
    """The file's directory is on sys.path while importing, so sibling modules load."""
    (tmp_path / "helper_mod_for_cli.py").write_text("SCALE = 3.0\n")
    src = tmp_path / "uses_helper.py"
    src.write_text("from helper_mod_for_cli import SCALE\n\n\ndef f(x):\n    return x * SCALE\n")
    code, out, err = run(capsys, "dump", str(src) + "::f")
    assert code == 0, err
    assert "def f_grad(" in out


def test_dump_is_deterministic_across_processes():
    cmd = [sys.executable, "-m", "s2sad", "dump", "samples/sin_cos_net.py::Net"]
    runs = [subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=120) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr.decode()
    assert runs[0].stdout == runs[1].stdout
    assert b"xp.cos(" in runs[0].stdout


def test_help_describes_every_option(capsys):
    assert cli.main(["--help"]) == 0
    assert "dump" in capsys.readouterr().out
    assert cli.main(["dump", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--get-all", "--get-by-list", "--sens-param", "--ir", "FILE::NAME"):
        assert option in out


# ------------------------------------------------------------ usage errors
def assert_usage_error(code, err):
    assert code == 2
    assert err.startswith("s2sad: error:") or "error:" in err
    assert "Traceback" not in err


def test_missing_file(tmp_path, capsys):
    code, out, err = run(capsys, "dump", str(tmp_path / "nope.py") + "::Net")
    assert_usage_error(code, err)
    assert err.startswith("s2sad: error:")
    assert out == ""


def test_missing_name_separator(capsys):
    code, _, err = run(capsys, "dump", SIN_COS)
    assert_usage_error(code, err)
    assert err.startswith("s2sad: error:")
    assert "::" in err


def test_unknown_name(capsys):
    code, _, err = run(capsys, "dump", SIN_COS + "::NoSuchNet")
    assert_usage_error(code, err)
    assert err.startswith("s2sad: error:")
    assert "NoSuchNet" in err


def test_get_by_list_on_function(tmp_path, capsys):
    src = tmp_path / "fn.py"
    src.write_text("def f(x):\n    return x * x\n")
    code, _, err = run(capsys, "dump", str(src) + "::f", "--get-by-list")
    assert_usage_error(code, err)
    assert err.startswith("s2sad: error:")


def test_not_a_cell_or_function(tmp_path, capsys):
    src = tmp_path / "const.py"
    src.write_text("VALUE = 3\n")
    code, _, err = run(capsys, "dump", str(src) + "::VALUE")
    assert_usage_error(code, err)
    assert err.startswith("s2sad: error:")


def test_cell_needing_arguments(tmp_path, capsys):
    src = tmp_path / "needs_args.py"
    src.write_text(textwrap.dedent("""\
        from s2sad import nn


        class Net(nn.Cell):
            def __init__(self, scale):
                super().__init__()
                self.scale = scale

            def construct(self, x):
                return x * self.scale
        """))
    code, _, err = run(capsys, "dump", str(src) + "::Net")
    assert_usage_error(code, err)
    assert err.startswith("s2sad: error:")


def test_argparse_errors_are_usage_errors(capsys):
    code, _, err = run(capsys, "dump", SIN_COS + "::Net", "--no-such-flag")
    assert code == 2 and "error" in err
    code, _, err = run(capsys)
    assert code == 2


# ---------------------------------------------------------- compile errors
UNSUPPORTED = """\
from s2sad import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.sin = ops.Sin()

    def construct(self, x):
        try:
            y = self.sin(x)
        except ValueError:
            y = x
        return y
"""


def test_compile_error_points_at_source(tmp_path, capsys):
    src = tmp_path / "unsupported_net.py"
    src.write_text(UNSUPPORTED)
    code, out, err = run(capsys, "dump", str(src) + "::Net")
    assert code == 1
    assert out == ""
    assert "unsupported_net.py" in err
    assert "line 10" in err
    assert "^" in err
    assert "try" in err
    assert "Traceback" not in err


def test_compile_error_subprocess(tmp_path):
    src = tmp_path / "unsupported_net.py"
    src.write_text(UNSUPPORTED)
    r = subprocess.run([sys.executable, "-m", "s2sad", "dump", str(src) + "::Net"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "unsupported_net.py" in r.stderr and "line 10" in r.stderr and "^" in r.stderr
    assert "Traceback" not in r.stderr


def test_import_error_in_user_file(tmp_path, capsys):
    src = tmp_path / "broken_import.py"
    src.write_text("import numpy as np\n\nx = 1\nraise RuntimeError('boom at import')\n")
    code, _, err = run(capsys, "dump", str(src) + "::Net")
    assert code == 1
    assert "broken_import.py" in err and "line 4" in err and "boom at import" in err
    assert "Traceback" not in err


def test_syntax_error_in_user_file(tmp_path, capsys):
    src = tmp_path / "bad_syntax.py"
    src.write_text("def f(x):\n    return x +\n")
    code, _, err = run(capsys, "dump", str(src) + "::f")
    assert code == 1
    assert "bad_syntax.py" in err and "line 2" in err and "^" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("flags", [[], ["--get-all"], ["--sens-param"]])
def test_console_entry_point_function(flags, capsys):
    """``main`` returns the exit code instead of exiting: the console script exits with it."""
    code, out, _ = run(capsys, "dump", SIN_COS + "::Net", *flags)
    assert code == 0 and out.startswith("# s2sad: gradient of Net.construct")
