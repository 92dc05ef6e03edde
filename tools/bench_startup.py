"""Start-up cost: ``import s2sad`` and the cold compile of a first gradient.

Each sample is a fresh Python process, so nothing is cached but the bytecode
files; the best of ``--samples`` is reported (the least disturbed by other
load on the machine).  Every measurement is made twice:

- ``bytecode cached``: what a user of a pip-installed package gets (pip
  compiles the bytecode at install time): ``compileall`` writes s2sad's
  bytecode into a temporary ``PYTHONPYCACHEPREFIX`` first, one untimed
  process per measurement caches whatever else it imports, and the timed
  processes read it from there;
- ``compiled from source``: ``PYTHONDONTWRITEBYTECODE=1`` and no prefix, so
  every s2sad module is compiled in every process (a checkout on a machine
  that sets that variable; NumPy and the standard library still use their
  installed bytecode).

What is measured:

- ``import numpy``: the floor every s2sad program pays;
- ``import s2sad``: the whole import, NumPy included, as a script sees it;
- ``import s2sad`` with NumPy already imported: s2sad's own share;
- cold start of ``fn``: ``s2sad.grad`` of a four-line NumPy function built
  and called once (``import s2sad`` done, the data made before the clock);
- cold start of ``cell``: ``GradOperation`` of a small Cell (Dense + tanh)
  with respect to its weights, built and called once.

Times are the CPU time of the process (``--clock cpu``, steadier on a shared
machine) or wall-clock (``--clock wall``); ``--repo`` measures another
checkout of s2sad (its root goes first on ``PYTHONPATH``), for before/after.

    python tools/bench_startup.py [--samples 5] [--clock cpu|wall] [--repo PATH]
                                  [--mode both|cached|source] [--json out.json]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np      # the children time what follows their imports

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

IMPORTS = {
    "import numpy": "import numpy",
    "import s2sad": "import s2sad",
    "import s2sad (NumPy imported)": "import s2sad",
}
PRELUDE = {"import s2sad (NumPy imported)": "import numpy"}
CLOCKS = {"cpu": "process_time", "wall": "perf_counter"}
IMPORT_SNIPPET = "%s\nimport time\nt = time.{0}()\n%s\nprint(time.{0}() - t)"


def loss(x, w):
    """The NumPy function of the ``fn`` cold start."""
    h = np.tanh(x @ w)
    y = np.sum(h * h) / x.shape[0]
    return y + np.mean(w ** 2)


def cold_fn():
    """(build the gradient and call it once, check its result against the closed form)."""
    import s2sad
    x = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    w = np.linspace(0.3, -0.2, 6).reshape(3, 2)

    def check(grads):
        h = np.tanh(x @ w)
        dz = 2 * h * (1 - h * h) / x.shape[0]
        _close(grads, (dz @ w.T, x.T @ dz + 2 * w / w.size))
    return (lambda: s2sad.grad(loss, grad_position=(0, 1))(x, w)), check


def cold_cell():
    """What to time for ``cell``: ``GradOperation`` of a Dense + tanh network."""
    import s2sad
    from s2sad import nn, ops

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(3, 2)

        def construct(self, x):
            return ops.reduce_sum(ops.tanh(self.dense(x)))

    net = Net()
    x = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)

    def check(grads):
        weight, bias = (p.asnumpy() for p in net.trainable_params())
        dz = 1 - np.tanh(x @ weight.T + bias) ** 2
        _close(grads, (dz.T @ x, dz.sum(axis=0)), rtol=1e-5)
    return (lambda: ops.GradOperation(get_by_list=True)(net, net.trainable_params())(
        s2sad.Tensor(x))), check


def _close(got, want, rtol=1e-10):
    """Raise unless the gradients ``got`` are ``want`` (a wrong gradient is not timed)."""
    for g, w in zip(got, want):
        g = g.asnumpy() if hasattr(g, "asnumpy") else np.asarray(g)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)
    assert len(got) == len(want)


COLD = {"fn": cold_fn, "cell": cold_cell}


def child_cold(key, clock):
    """In the fresh process: seconds of ``key``'s build + first call."""
    now = getattr(time, CLOCKS[clock])
    run, check = COLD[key]()
    start = now()
    grads = run()
    seconds = now() - start
    check(grads)
    return seconds


CACHED, SOURCE = "bytecode cached", "compiled from source"
MODES = {"cached": (CACHED,), "source": (SOURCE,), "both": (CACHED, SOURCE)}


def child_env(repo, mode, cache_dir=None):
    """The environment of a fresh process measuring ``repo`` in ``mode`` (CACHED, SOURCE).

    CACHED reads and writes bytecode under ``cache_dir`` (never in the checkout);
    SOURCE writes none, as on a machine that sets ``PYTHONDONTWRITEBYTECODE``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [repo] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    env.pop("PYTHONPYCACHEPREFIX", None)
    if mode == CACHED:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache_dir
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def compile_package(repo, cache_dir):
    """Compile ``repo``'s s2sad package into ``cache_dir``, as ``pip install`` would."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(repo, "s2sad")],
                   check=True, timeout=300, env=child_env(repo, CACHED, cache_dir))


class Bytecode:
    """A temporary bytecode cache for ``repo``, compiled on entry and deleted on exit."""

    def __init__(self, repo):
        self.repo, self.dir = repo, None

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="s2sad-pycache-")
        compile_package(self.repo, self.dir)
        return self

    def env(self, mode):
        return child_env(self.repo, mode, self.dir)

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)


def _run(argv, repo, env):
    done = subprocess.run([sys.executable] + argv, capture_output=True, text=True,
                          timeout=300, env=env, cwd=repo)
    if done.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(argv), done.stderr))
    return float(done.stdout.strip().splitlines()[-1])


def _measurements(clock):
    """{what: the command line of one fresh process measuring it}."""
    out = {}
    for name, statement in IMPORTS.items():
        snippet = IMPORT_SNIPPET.format(CLOCKS[clock]) % (PRELUDE.get(name, ""), statement)
        out[name] = ["-c", snippet]
    for key in COLD:
        out["cold start: " + key] = [os.path.abspath(__file__), "--child", key, "--clock", clock]
    return out


def measure(samples, repo, clock, modes=(CACHED, SOURCE)):
    """{mode: {what: best seconds over ``samples`` fresh processes}}."""
    out = {}
    with Bytecode(repo) as cache:
        for mode in modes:
            env = cache.env(mode)
            out[mode] = {}
            for name, argv in _measurements(clock).items():
                if mode == CACHED:
                    _run(argv, repo, env)       # untimed: caches what else it imports
                out[mode][name] = min(_run(argv, repo, env) for _ in range(samples))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    ap.add_argument("--repo", default=ROOT, help="the s2sad checkout to measure")
    ap.add_argument("--mode", choices=sorted(MODES), default="both",
                    help="bytecode cached (what an installed package gets), compiled from "
                         "source, or both")
    ap.add_argument("--json")
    ap.add_argument("--child", choices=sorted(COLD), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(child_cold(args.child, args.clock))
        return 0
    modes = MODES[args.mode]
    results = measure(args.samples, os.path.abspath(args.repo), args.clock, modes)
    print("%-32s" % ("%s time, best of %d" % (args.clock, args.samples))
          + "".join("%22s" % m for m in modes))
    for name in results[modes[0]]:
        print("%-32s" % name + "".join("%19.1f ms" % (results[m][name] * 1e3) for m in modes))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
