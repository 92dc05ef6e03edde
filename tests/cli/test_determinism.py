"""The same source and flags give byte-identical generated code, across runs and processes.

Generated names depend only on the program, never on object ids, hash seeds
or the order things were compiled in.  Each case runs the CLI
(``python -m s2sad dump ...``) in separate processes -- with different
``PYTHONHASHSEED`` values -- and compares the outputs byte for byte; in one
process, compiling the same program again (after other programs, with the
caches cleared) gives the same source too.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2sad
from s2sad import ops

import program_gen as pg

from repo import ROOT
MATMUL = os.path.join(ROOT, "samples", "matmul_net.py")

CONTROL_FLOW = textwrap.dedent("""\
    import numpy as np
    from s2sad import nn, ops, Tensor, Parameter


    def helper(a, b):
        return np.tanh(a) * b, a + b


    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.array([[0.5, -0.3], [0.2, 0.8]])), name="w")
            self.b = Parameter(Tensor(np.array([0.1, -0.2])), name="b")

        def construct(self, x, y):
            h = x @ self.w + self.b
            acc = h * 0.0
            i = 0
            while i < 3:
                i = i + 1
                if h.sum() > 0:
                    acc = acc + np.sin(h) * y
                elif h.sum() < -10.0:
                    break
                else:
                    acc = acc - np.cos(h)
            for row in x:
                if row[0] > 0.5:
                    continue
                acc = acc + row * self.b
            f = lambda t: t * self.b
            p, q = helper(acc, y)
            return f(p) + q.sum()
    """)


def dump(target, *flags, hashseed="0"):
    env = dict(os.environ, PYTHONHASHSEED=hashseed, NO_COLOR="1")
    result = subprocess.run([sys.executable, "-m", "s2sad", "dump", target, "--color", "never",
                             *flags], capture_output=True, env=env, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


@pytest.fixture(scope="module")
def control_flow_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("determinism") / "cf_net.py"
    path.write_text(CONTROL_FLOW)
    return str(path)


CASES = [
    ("matmul", ["--get-all", "--get-by-list", "--sens-param"]),
    ("matmul", ["--get-all", "--get-by-list", "--sens-param", "--ir"]),
    ("matmul", []),
    ("control_flow", ["--get-all", "--get-by-list", "--sens-param"]),
    ("control_flow", ["--get-all", "--ir"]),
    ("control_flow", ["--get-by-list"]),
]


SEEDS = ("0", "1", "12345", "random")

# Every case dumped in one process per hash seed: the CLI's ``main`` on each
# case's command line in turn, the outputs back as JSON.
DUMP_ALL = textwrap.dedent("""\
    import contextlib, io, json, sys
    from s2sad import cli
    outputs = []
    for argv in json.loads(sys.argv[1]):
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            code = cli.main(argv)
        outputs.append([code, text.getvalue()])
    sys.stdout.write(json.dumps(outputs))
    """)


@pytest.fixture(scope="module")
def dumps_by_seed(control_flow_file):
    """``{seed: [(exit code, output) per case]}``, one process per seed."""
    argvs = [["dump", (MATMUL if which == "matmul" else control_flow_file) + "::Net",
              "--color", "never", *flags] for which, flags in CASES]
    found = {}
    for seed in SEEDS:
        env = dict(os.environ, PYTHONHASHSEED=seed, NO_COLOR="1")
        result = subprocess.run([sys.executable, "-c", DUMP_ALL, json.dumps(argvs)],
                                capture_output=True, env=env, cwd=ROOT, timeout=300)
        assert result.returncode == 0, result.stderr.decode()
        found[seed] = json.loads(result.stdout)
    return found


@pytest.mark.parametrize("case", range(len(CASES)),
                         ids=["-".join([w] + [f.strip("-") for f in fl]) or w
                              for w, fl in CASES])
def test_cli_output_is_byte_identical_across_processes(case, dumps_by_seed):
    outputs = [dumps_by_seed[seed][case] for seed in SEEDS]
    code, text = outputs[0]
    assert code == 0 and text, "the dump failed or printed nothing"
    for other in outputs[1:]:
        assert other == outputs[0]


def test_the_in_process_dump_is_the_command_line_dump(dumps_by_seed):
    """What ``DUMP_ALL`` collects is what ``python -m s2sad dump`` prints."""
    assert dumps_by_seed["0"][2][1].encode() == dump(MATMUL + "::Net")


def test_control_flow_dump_keeps_control_flow(control_flow_file):
    text = dump(control_flow_file + "::Net", "--get-all").decode()
    assert "while " in text and "if " in text and "stack.append" in text


def test_same_program_same_source_within_a_process(tmp_path):
    """Compiling again, after other programs and with the caches cleared, changes nothing."""
    program = pg.generate(4242, kind="cell")
    others = [pg.generate(s) for s in (1, 2, 3)]

    def source_of(p):
        module = pg.load(p, tmp_path)
        target = pg.target_of(p, module)
        gf = ops.GradOperation(get_all=True, sens_param=True)(target)
        args = p.make_args()
        out = target(*args)
        sens = tuple(np.ones_like(np.asarray(getattr(o, "_data", o))) for o in pg._leaves(out))
        gf(*args, sens if isinstance(out, tuple) else sens[0])
        return s2sad.get_source(gf).encode()

    first = source_of(program)
    for o in others:
        try:
            source_of(o)
        except Exception:
            pass
    pg.clear_caches()
    assert source_of(program) == first
