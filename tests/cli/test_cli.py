"""The ``s2sad dump`` command: output, determinism and exit codes."""
import io
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from s2sad import cli

from repo import ROOT
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


def test_version_is_the_package_version(capsys):
    import s2sad
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == "s2sad " + s2sad.__version__


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


# ------------------------------------------------------------ highlighting
D2L = os.path.join(ROOT, "samples", "d2l_control_flow.py")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_color_always_highlights_keywords_comments_and_adjoints(capsys):
    code, out, err = run(capsys, "dump", SIN_COS + "::Net", "--color", "always")
    assert code == 0, err
    assert "\x1b[1;34mdef\x1b[0m" in out and "\x1b[1;34mreturn\x1b[0m" in out
    assert "\x1b[2;32m# line 20: a = self.sin(x)\x1b[0m" in out
    assert "\x1b[35md_x\x1b[0m" in out and "\x1b[35md_a\x1b[0m" in out
    assert "\x1b[35msin_a" not in out                        # only names starting with d_
    code, plain, _ = run(capsys, "dump", SIN_COS + "::Net")
    assert ANSI.sub("", out) == plain                         # colour changes nothing else


def test_color_auto_follows_the_terminal(capsys, monkeypatch):
    code, out, _ = run(capsys, "dump", SIN_COS + "::Net")     # captured: not a TTY
    assert code == 0 and "\x1b[" not in out
    monkeypatch.delenv("NO_COLOR", raising=False)
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stdout", tty)
    assert cli.main(["dump", SIN_COS + "::Net"]) == 0
    assert "\x1b[1;34mdef" in tty.getvalue()
    never = FakeTTY()
    monkeypatch.setattr(sys, "stdout", never)
    assert cli.main(["dump", SIN_COS + "::Net", "--color", "never"]) == 0
    assert "\x1b[" not in never.getvalue() and "def Net_construct_grad" in never.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    no_color = FakeTTY()
    monkeypatch.setattr(sys, "stdout", no_color)
    assert cli.main(["dump", SIN_COS + "::Net"]) == 0
    assert "\x1b[" not in no_color.getvalue()


def test_color_in_a_subprocess_pipe_is_plain():
    r = subprocess.run([sys.executable, "-m", "s2sad", "dump", "samples/sin_cos_net.py::Net"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "\x1b[" not in r.stdout and "def Net_construct_grad" in r.stdout


def test_highlight_keeps_strings_with_hashes():
    text = "x = rt.f(a, 'NCHW#1')  # note\n"
    colored = cli.highlight(text)
    assert ANSI.sub("", colored) == text
    assert "\x1b[33m'NCHW#1'\x1b[0m" in colored and "\x1b[2;32m# note\x1b[0m" in colored


# ----------------------------------------------------------------- explain
def test_explain_names_the_rule_of_each_backward_line(capsys):
    code, out, err = run(capsys, "dump", SIN_COS + "::Net", "--explain")
    assert code == 0, err
    assert "sin_a = xp.sin(a)  # get_bprop_cos" in out
    assert "d_x = d_a * cos_x  # get_bprop_sin" in out
    assert "a = xp.sin(x)\n" in out                          # forward lines are unannotated
    assert re.search(r"#   get_bprop_sin for Sin  \S*grad_math_ops\.py:\d+", out)
    code, plain, _ = run(capsys, "dump", SIN_COS + "::Net")
    body = out.split("# rules used")[0]
    assert re.sub(r"  # get_bprop_\w+", "", body) == plain


def test_explain_with_control_flow_and_flags(capsys):
    code, out, err = run(capsys, "dump", D2L + "::f", "--explain")
    assert code == 0, err
    assert "while " in out and "# get_bprop_mul" in out
    code, out, err = run(capsys, "dump", MATMUL + "::Net", "--get-all", "--get-by-list",
                         "--sens-param", "--explain")
    assert code == 0, err
    assert "# get_bprop_matmul" in out and "def Net_construct_grad(" in out


# --------------------------------------------------------------------- dot
def dot_nodes_and_edges(text):
    nodes = dict(re.findall(r"^\s*(\w+) \[label=\"((?:[^\"\\]|\\.)*)\"", text, re.M))
    edges = re.findall(r"^\s*(\w+) -> (\w+)", text, re.M)
    return nodes, edges


def test_dot_straight_line(capsys):
    code, out, err = run(capsys, "dump", SIN_COS + "::Net", "--format", "dot")
    assert code == 0, err
    assert out.startswith("digraph s2sad {") and out.rstrip().endswith("}")
    assert out.count("{") == out.count("}")
    assert "subgraph cluster_forward {" in out and "subgraph cluster_grad {" in out
    nodes, edges = dot_nodes_and_edges(out)
    labels = list(nodes.values())
    assert any(l.startswith("a.1 = Sin(x.0)\\nline 20") for l in labels), labels
    assert any(l.startswith("out.2 = Cos(a.1)\\nline 21") for l in labels), labels
    # data flow: x -> Sin -> Cos -> return in the forward graph
    by_label = {v.split("\\n")[0]: k for k, v in nodes.items() if k.startswith("forward_")}
    assert (by_label["x.0"], by_label["a.1 = Sin(x.0)"]) in edges
    assert (by_label["a.1 = Sin(x.0)"], by_label["out.2 = Cos(a.1)"]) in edges
    assert (by_label["out.2 = Cos(a.1)"], by_label["return"]) in edges
    for src, dst in edges:
        assert src in nodes and dst in nodes                   # every edge joins known nodes
    assert_edges_at_top_level(out)


def assert_edges_at_top_level(text):
    """Edges sit outside every cluster: one inside would pull its nodes into that cluster."""
    depth = 0
    for line in text.splitlines():
        if " -> " in line:
            assert depth == 1, line
        depth += line.count("{") - line.count("}")
    assert depth == 0


def test_dot_control_flow_regions_are_clusters(capsys):
    code, out, err = run(capsys, "dump", D2L + "::f", "--format", "dot", "--explain")
    assert code == 0, err
    assert re.search(r'label="While \(line 18\)"', out)
    assert re.search(r'label="If \(line 20\)"', out)
    # the backward loop only doubled d_b: it is one scaling now, at line 19
    assert re.search(r'= ScaleRepeated\(d_b[.0-9]*, 2, [^"]*\\nline 19\\n', out)
    for region in ("cond", "body", "then", "else"):
        assert 'label="%s"' % region in out
    assert out.count("subgraph cluster_") >= 2 + 3 * 2
    assert "rule: get_bprop_mul" in out
    nodes, edges = dot_nodes_and_edges(out)
    # D2L's backward loop reads nothing of the forward iterations (b only for its
    # shape, which its adjoint has): no stack at all
    assert not any("StackPop" in l or "StackPush" in l for l in nodes.values())
    assert_edges_at_top_level(out)


def test_dot_backward_loop_is_a_cluster(capsys, tmp_path):
    src = tmp_path / "loop.py"
    src.write_text("import numpy as np\n\n\ndef g(x):\n"
                   "    for t in range(x.shape[0]):\n        x = np.sin(x)\n"
                   "    return np.sum(x)\n")
    code, out, err = run(capsys, "dump", str(src) + "::g", "--format", "dot")
    assert code == 0, err
    # the function, and the gradient's forward and backward sweeps
    assert len(re.findall(r'label="ForRange \(line 5\)"', out)) == 3
    assert any("StackPop" in l for l in dot_nodes_and_edges(out)[0].values())
    assert_edges_at_top_level(out)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("target", [SIN_COS + "::Net", D2L + "::f"])
def test_dot_output_is_valid_graphviz(target, capsys):
    code, out, _ = run(capsys, "dump", target, "--format", "dot")
    assert code == 0
    r = subprocess.run(["dot", "-Tsvg"], input=out, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "<svg" in r.stdout and "warning" not in r.stderr.lower()


def test_format_ir_equals_ir_flag(capsys):
    _, a, _ = run(capsys, "dump", SIN_COS + "::Net", "--ir")
    _, b, _ = run(capsys, "dump", SIN_COS + "::Net", "--format", "ir")
    assert a == b and a.startswith("func ")
    _, c, _ = run(capsys, "dump", SIN_COS + "::Net", "--format", "python")
    assert c.startswith("# s2sad: gradient of Net.construct")


def test_conflicting_format_options_are_usage_errors(capsys):
    code, out, err = run(capsys, "dump", SIN_COS + "::Net", "--ir", "--format", "dot")
    assert_usage_error(code, err)
    assert out == ""
    code, out, err = run(capsys, "dump", SIN_COS + "::Net", "--format", "ir", "--explain")
    assert_usage_error(code, err)
    code, _, err = run(capsys, "dump", SIN_COS + "::Net", "--color", "sometimes")
    assert code == 2 and "error" in err


def test_help_describes_the_inspection_options(capsys):
    assert cli.main(["dump", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--format", "dot", "--explain", "--color", "always", "never"):
        assert option in out


CUSTOM_BPROP = """\
from s2sad import nn, ops


class Clip(nn.Cell):
    def construct(self, x):
        return x * 1.0

    def bprop(self, x, out, dout):
        return (ops.clip_by_value(dout, -1.0, 1.0),)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.clip = Clip()

    def construct(self, x):
        return self.clip(ops.sin(x))
"""


def test_explain_locates_a_cells_own_bprop(tmp_path, capsys):
    src = tmp_path / "custom_bprop_net.py"
    src.write_text(CUSTOM_BPROP)
    code, out, err = run(capsys, "dump", str(src) + "::Net", "--explain")
    assert code == 0, err
    assert "# Clip.bprop" in out
    assert re.search(r"#   Clip\.bprop  \S*custom_bprop_net\.py:8$", out, re.M), out
    code, out, err = run(capsys, "dump", str(src) + "::Net", "--format", "dot")
    assert code == 0, err
    assert re.search(r'label="CustomBprop \(line 18\)"', out)
    assert_edges_at_top_level(out)


def _run_dumped(source, *args):
    """Execute a dumped program and call the function it defines."""
    import numpy as np
    from s2sad import runtime
    ns = {"xp": np, "rt": runtime}
    exec(compile(source, "<dumped>", "exec"), ns)
    fn = [v for k, v in ns.items() if callable(v) and k not in ("xp", "rt")][-1]
    return fn(*args)


def test_dump_order_2_computes_the_second_derivative(capsys):
    import numpy as np
    from s2sad.cli import main
    assert main(["dump", "samples/sin_cos_net.py::Net", "--order", "2", "--color",
                 "never"]) == 0
    x = np.array([0.3, 1.1, 2.0])
    (got,) = _run_dumped(capsys.readouterr().out, x)
    # f = cos(sin x); f' = -sin(sin x) cos x; f'' = -cos(sin x) cos^2 x + sin(sin x) sin x
    want = -np.cos(np.sin(x)) * np.cos(x) ** 2 + np.sin(np.sin(x)) * np.sin(x)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_dump_order_3_keeps_the_users_parameter_names(capsys):
    import numpy as np
    from s2sad.cli import main
    assert main(["dump", "samples/sin_cos_net.py::Net", "--order", "3", "--color",
                 "never"]) == 0
    source = capsys.readouterr().out
    assert "def Net_construct_grad_grad_grad(x):" in source, source[:300]
    assert main(["dump", "samples/sin_cos_net.py::Net", "--order", "2", "--color",
                 "never"]) == 0
    order2 = capsys.readouterr().out
    assert "def Net_construct_grad_grad(x):" in order2, order2[:300]
    x = np.array([0.3, 1.1, 2.0])
    h = 1e-5
    (got,) = _run_dumped(source, x)
    (up,), (down,) = _run_dumped(order2, x + h), _run_dumped(order2, x - h)
    np.testing.assert_allclose(got, (up - down) / (2 * h), rtol=1e-6)


def test_dump_forward_mode_computes_the_jvp(capsys):
    import numpy as np
    from s2sad.cli import main
    assert main(["dump", "samples/sin_cos_net.py::Net", "--mode", "forward", "--color",
                 "never"]) == 0
    x, t = np.array([0.3, 1.1]), np.array([1.0, -2.0])
    out, t_out = _run_dumped(capsys.readouterr().out, x, t)
    np.testing.assert_allclose(out, np.cos(np.sin(x)), rtol=1e-12)
    np.testing.assert_allclose(t_out, -np.sin(np.sin(x)) * np.cos(x) * t, rtol=1e-12)


def test_dump_order_and_mode_usage_errors(capsys):
    from s2sad.cli import main
    assert main(["dump", "samples/sin_cos_net.py::Net", "--order", "0"]) == 2
    assert main(["dump", "samples/sin_cos_net.py::Net", "--mode", "forward",
                 "--get-all"]) == 2
