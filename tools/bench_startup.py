"""Start-up cost: ``import s2sad`` and the cold compile of a first gradient.

Each sample is a fresh Python process, so nothing is cached but the bytecode
files; the best of ``--samples`` is reported (the least disturbed by other
load on the machine):

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

    python tools/bench_startup.py [--samples 5] [--clock cpu|wall] [--repo PATH] [--json out.json]
"""
import argparse
import json
import os
import subprocess
import sys
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


def _run(argv, repo):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [repo] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run([sys.executable] + argv, capture_output=True, text=True,
                          timeout=300, env=env, cwd=repo)
    if done.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(argv), done.stderr))
    return float(done.stdout.strip().splitlines()[-1])


def measure(samples, repo, clock):
    """{what: best seconds over ``samples`` fresh processes}."""
    out = {}
    for name, statement in IMPORTS.items():
        snippet = IMPORT_SNIPPET.format(CLOCKS[clock]) % (PRELUDE.get(name, ""), statement)
        out[name] = min(_run(["-c", snippet], repo) for _ in range(samples))
    for key in COLD:
        argv = [os.path.abspath(__file__), "--child", key, "--clock", clock]
        out["cold start: " + key] = min(_run(argv, repo) for _ in range(samples))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    ap.add_argument("--repo", default=ROOT, help="the s2sad checkout to measure")
    ap.add_argument("--json")
    ap.add_argument("--child", choices=sorted(COLD), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(child_cold(args.child, args.clock))
        return 0
    results = measure(args.samples, os.path.abspath(args.repo), args.clock)
    for name, seconds in results.items():
        print("%-32s %8.1f ms" % (name, seconds * 1e3))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
