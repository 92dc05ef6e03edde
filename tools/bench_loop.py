"""Benchmark: gradient of an RNN-style loop, s2sad against the plain NumPy forward.

The function is ``h = np.tanh(W @ h + xs[t])`` for ``T`` steps (h of size 16, W 16x16,
float64), returning ``np.sum(h)``.  Measured, each after a warm-up call (which also
compiles the gradient):

- the forward pass alone: ``rnn(W, xs, h0)`` called directly, plain NumPy;
- the s2sad gradient: ``GradOperation(get_all=True)(rnn)(W, xs, h0)``.

For each: the median wall time over ``--repeat`` runs (``time.perf_counter``) and the
peak traced memory of one call (``tracemalloc``).  Before timing, the gradient is
checked against a hand-written NumPy backprop-through-time.

This is a benchmark, not a test: it asserts correctness, never speed.

    python tools/bench_loop.py [--steps 1000] [--repeat 20] [--json out.json]
"""
import os

# single-threaded BLAS, set before NumPy is imported
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

import s2sad  # noqa: E402
from s2sad import ops  # noqa: E402

HIDDEN = 16


def rnn(W, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h)


def bptt(W, xs, h0):
    """Hand-written backprop through time of ``rnn``: ``(dW, dxs, dh0)``."""
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(W @ hs[-1] + xs[t]))
    dW = np.zeros_like(W)
    dxs = np.zeros_like(xs)
    dh = np.ones_like(h0)
    for t in range(xs.shape[0] - 1, -1, -1):
        da = dh * (1.0 - hs[t + 1] ** 2)
        dW += np.outer(da, hs[t])
        dxs[t] = da
        dh = W.T @ da
    return dW, dxs, dh


def make_inputs(steps, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((HIDDEN, HIDDEN)) * (0.9 / np.sqrt(HIDDEN))
    xs = rng.standard_normal((steps, HIDDEN)) * 0.5
    h0 = rng.standard_normal(HIDDEN) * 0.1
    return W, xs, h0


def median_time(fn, args, repeat):
    fn(*args)  # warm-up (compiles the gradient on its first call)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_memory(fn, args):
    fn(*args)  # warm-up outside the measurement
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def run(steps, repeat, seed=0):
    W, xs, h0 = make_inputs(steps, seed)
    grad_fn = ops.GradOperation(get_all=True)(rnn)

    got = grad_fn(W, xs, h0)
    expected = bptt(W, xs, h0)
    max_err = 0.0
    for name, g, e in zip(("W", "xs", "h0"), got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12,
                                   err_msg="gradient of %s differs from BPTT" % name)
        max_err = max(max_err, float(np.max(np.abs(g - e))))
    np.testing.assert_allclose(float(rnn(W, xs, h0)),
                               float(np.sum(_forward_states(W, xs, h0))), rtol=1e-12)

    args = (W, xs, h0)
    fwd_time = median_time(rnn, args, repeat)
    grad_time = median_time(grad_fn, args, repeat)
    fwd_peak = peak_memory(rnn, args)
    grad_peak = peak_memory(grad_fn, args)
    return {
        "steps": steps,
        "hidden": HIDDEN,
        "repeat": repeat,
        "dtype": "float64",
        "forward_time_s": fwd_time,
        "grad_time_s": grad_time,
        "time_ratio": grad_time / fwd_time,
        "forward_peak_bytes": fwd_peak,
        "grad_peak_bytes": grad_peak,
        "memory_ratio": grad_peak / max(fwd_peak, 1),
        "max_abs_error_vs_bptt": max_err,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "s2sad": s2sad.__version__,
    }


def _forward_states(W, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return h


def table(r):
    rows = [
        ("forward (NumPy)", "%.3f" % (r["forward_time_s"] * 1e3),
         "%.1f" % (r["forward_peak_bytes"] / 1024)),
        ("gradient (s2sad)", "%.3f" % (r["grad_time_s"] * 1e3),
         "%.1f" % (r["grad_peak_bytes"] / 1024)),
        ("ratio grad/fwd", "%.2fx" % r["time_ratio"], "%.2fx" % r["memory_ratio"]),
    ]
    head = ("", "median time (ms)", "peak memory (KiB)")
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(3)]
    fmt = "%-*s | %*s | %*s"
    lines = ["RNN loop: T=%d steps, hidden=%d, float64, median of %d runs"
             % (r["steps"], r["hidden"], r["repeat"]),
             fmt % (widths[0], head[0], widths[1], head[1], widths[2], head[2]),
             "-+-".join("-" * w for w in widths)]
    for row in rows:
        lines.append(fmt % (widths[0], row[0], widths[1], row[1], widths[2], row[2]))
    lines.append("gradient checked against hand-written BPTT (max abs error %.1e)"
                 % r["max_abs_error_vs_bptt"])
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000, help="loop length T (default 1000)")
    parser.add_argument("--repeat", type=int, default=20,
                        help="timed runs per measurement, after one warm-up (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON here")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.repeat < 1:
        parser.error("--steps and --repeat must be positive")
    result = run(args.steps, args.repeat, args.seed)
    print(table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
