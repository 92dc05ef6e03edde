"""Generated code of higher orders names the user's function and lines, and the
printed source shows plain expressions where the compiled code may write in place."""
import linecache
import os
import re

import numpy as np
import pytest

import s2sad
from s2sad import cli, ops, Tensor

from repo import ROOT
SAMPLE = os.path.join("samples", "sin_cos_net.py")


def dump(capsys, *argv):
    assert cli.main(["dump", *argv, "--color", "never"]) == 0
    return capsys.readouterr().out


def assert_comments_quote(text, path):
    """Every ``# line N: <source>`` comment quotes line N of ``path``; returns how many."""
    found = re.findall(r"^\s*# (?:(\S+) )?line (\d+): (.*)$", text, re.M)
    assert found, text
    for name, lineno, quoted in found:
        assert name == "", "a comment points into another file: %s" % name
        assert linecache.getline(path, int(lineno)).strip() == quoted, (lineno, quoted)
    return len(found)


@pytest.mark.parametrize("order, words", [(2, "gradient of the gradient"),
                                          (3, "gradient of the gradient of the gradient")])
def test_higher_orders_of_a_cell_name_it_and_its_lines(capsys, order, words):
    text = dump(capsys, SAMPLE + "::Net", "--order", str(order))
    assert text.startswith("# s2sad: %s of Net.construct (%s)\n" % (words, SAMPLE)), text[:200]
    assert "gradfunction.py" not in text and "grad_fn" not in text and "gradient_of" not in text
    assert "def Net_construct%s(x):" % ("_grad" * order) in text
    assert_comments_quote(text, os.path.join(ROOT, SAMPLE))
    # seeding and summing the gradient belong to the function as a whole
    assert "# line 19: def construct(self, x):" in text


def test_forward_mode_of_a_gradient_names_the_function(capsys):
    text = dump(capsys, SAMPLE + "::Net", "--order", "2", "--mode", "forward")
    assert text.startswith("# s2sad: forward-mode derivative of the gradient of Net.construct "
                           "(%s)\n" % SAMPLE), text[:200]
    assert "def Net_construct_grad_jvp(x, t_x):" in text
    assert_comments_quote(text, os.path.join(ROOT, SAMPLE))


def test_order_2_of_a_function_is_its_taylor_mode_program(capsys, tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import numpy as np\n\n\ndef f(x):\n    y = np.sin(x) * x\n"
                    "    return np.sum(y * y)\n")
    text = dump(capsys, str(path) + "::f", "--order", "2")
    assert text.startswith("# s2sad: order-2 gradient of f (%s)\n" % path), text[:200]
    assert assert_comments_quote(text, str(path)) >= 2


def test_get_source_of_a_gradient_of_a_gradient_names_the_user(tmp_path):
    from samples.sin_cos_net import Net
    gg = ops.GradOperation()(ops.GradOperation()(Net()))
    x = np.array([0.3, 1.2])
    gg(Tensor(x))
    src = s2sad.get_source(gg)
    assert src.startswith("# s2sad: gradient of the gradient of Net.construct (")
    assert_comments_quote(src, os.path.join(ROOT, SAMPLE))
    assert "gradfunction.py" not in src


# ------------------------------------------------------------ in place
BIG = """\
import numpy as np


def f(x):
    s = np.sin(x)
    return np.sum(np.cos(s) * np.exp(-x * x))
"""


def test_printed_source_is_plain_and_the_compiled_code_writes_in_place(tmp_path):
    from s2sad.cli import load_file
    path = tmp_path / "big.py"
    path.write_text(BIG)
    mod = load_file(str(path))
    g = ops.GradOperation()(mod.f)
    x = np.random.default_rng(0).standard_normal(100000)
    want = g(x)
    executed, shown = g.last.executed_source, s2sad.get_source(g)
    assert "rt.spare(" in executed and "out=" in executed
    assert "rt.spare(" not in shown and "out=" not in shown
    assert len(executed.splitlines()) == len(shown.splitlines())
    # a traceback or pdb shows the printed lines
    assert linecache.getlines(g.last.fn.__s2sad_filename__) == shown.splitlines(True)
    # the printed module computes the same values, bit for bit
    ns = {}
    exec(compile(s2sad.get_source(g, standalone=True), "<printed>", "exec"), ns)
    np.testing.assert_array_equal(ns[g.last.grad_ir.name](x)[0], want)
    np.testing.assert_allclose(want, (-np.sin(np.sin(x)) * np.cos(x) - 2 * x * np.cos(np.sin(x)))
                               * np.exp(-x * x), rtol=1e-12, atol=1e-15)


def test_dump_of_higher_orders_prints_no_run_time_checks(capsys):
    for argv in (["--order", "2"], ["--mode", "forward"], ["--order", "3"]):
        text = dump(capsys, SAMPLE + "::Net", *argv)
        assert "rt.spare" not in text and "out=" not in text, argv
