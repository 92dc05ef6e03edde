"""Benchmark on real models: s2sad against hand-written NumPy gradients and other AD tools.

Workloads (``--only`` takes their letters), with the method of ``tools/bench.py``
(one thread, interleaved samples, medians, every gradient checked against the
hand-written one before it is timed, targets printed as PASS/MISS that never
fail the run; a wrong gradient does, exit status 1):

- ``g``: a LeNet-5 sized convnet on x[32,32,32,1] (NHWC), float32: two 5x5
  convolutions (tanh, 2x2 average pooling) and three dense layers, softmax
  cross-entropy; the convolutions as im2col by slicing + ``np.tensordot``, the
  same with ``np.einsum``, and s2sad's ``nn.Conv2d`` in a Cell;
- ``h``: an LSTM, 50 steps, batch 16, input 32, hidden 64, float32: a cell
  written in NumPy (gates by slicing) and s2sad's ``nn.LSTM``;
- ``i``: a transformer block (4-head self-attention, residual, layer norm,
  tanh feed-forward) on x[8,64,128], float32, on NumPy arrays and (with
  PyTorch installed) on PyTorch tensors beside PyTorch eager on the same ones;
- ``j``: a Hessian-vector product of an MLP loss with respect to W1 (float64)
  and the full 50x50 Hessian of an L2-regularised logistic-regression loss
  (float64);
- ``k``: RK4 on the Lorenz system, 1,000 steps on scalars, gradient of
  ``x + y + z`` at the end with respect to (sigma, rho, beta), float64;
- ``l``: one training step (``TrainOneStepCell`` with SGD) of an MLP
  x[64,784] -> 256 tanh -> 10, against a hand-written NumPy step.

Peers (when installed and named in ``--peers``): PyTorch eager, JAX eager and
jit, autograd; the NumPy model functions are rebound to ``jax.numpy``,
``autograd.numpy`` or a small PyTorch namespace.  The ``nn`` rows are compared
with PyTorch's own layers (``conv2d``, ``nn.LSTM``) on the same weights.  JAX
jit of (k) runs the loop as ``lax.fori_loop``, and JAX eager of (k) is timed on
one call (about a minute each).  Peak memory (tracemalloc)
of s2sad's gradient and the hand-written one; cold start (building the
gradient function and its first call, in a fresh process) for each network;
the time of ``import s2sad`` in a fresh process; both with bytecode cached
(what an installed package gets, the one the targets read) and compiled from
source (``PYTHONDONTWRITEBYTECODE=1``), as in ``tools/bench_startup.py``.

    python tools/bench_models.py [--quick] [--repeat N] [--only g,h] [--peers torch,jax,autograd]
                                 [--clock cpu|wall] [--json out.json]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (sets the one-thread environment before NumPy loads)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

import numpy as np  # noqa: E402

import s2sad  # noqa: E402

import bench_models_defs as M  # noqa: E402
import bench_startup as S  # noqa: E402

PEERS = ("torch", "jax", "autograd")
WORKLOAD_LETTERS = "ghijkl"


# ================================================================ PyTorch shim
def torch_numpy(torch):
    """The few NumPy functions the model functions call, written with PyTorch, so one
    model function serves NumPy, autograd, JAX and PyTorch."""
    def _axis(kw):
        return {"dim": kw["axis"]} if kw.get("axis") is not None else {}

    def reduce_(name):
        def f(x, axis=None, keepdims=False):
            if axis is None:
                return getattr(torch, name)(x)
            return getattr(torch, name)(x, dim=axis, keepdim=keepdims)
        return f

    def amax(x, axis=None, keepdims=False):
        return torch.amax(x, dim=axis, keepdim=keepdims)

    def sqrt(x):
        return torch.sqrt(x) if torch.is_tensor(x) else math.sqrt(x)

    return types.SimpleNamespace(
        tanh=torch.tanh, exp=torch.exp, log=torch.log, sqrt=sqrt,
        sum=reduce_("sum"), mean=reduce_("mean"), max=amax,
        stack=lambda xs, axis=0: torch.stack(list(xs), **_axis({"axis": axis})),
        tensordot=lambda a, b, axes: torch.tensordot(a, b, dims=axes),
        einsum=torch.einsum, transpose=lambda x, axes: x.permute(*axes),
        float32=torch.float32, float64=torch.float64)


# ================================================================ tools
def cell_tool(R, label, grad, args, ref, dtype, forward_peak=None):
    """An s2sad row: first call compiles, the second must not, then checked and timed
    as ``R.tool``, with peak memory (tracemalloc's: NumPy arrays only)."""
    numpy_args = all(isinstance(a, np.ndarray) or np.isscalar(a) for a in args)
    return B.s2sad_tool(R, grad, args, ref, dtype, name=label, memory=numpy_args,
                        forward_peak=forward_peak if numpy_args else None)


def peer_tools(R, fn, args, wrt, ref, dtype, tools, jit=True, torch_fn=None, jax_eager=True):
    """PyTorch eager, JAX eager and jit, autograd on ``fn`` (gradient w.r.t. ``wrt``).

    Without ``jax_eager`` JAX eager is checked and timed on one call only (not
    interleaved): the scalar loop takes about a minute per call.
    """
    single = len(wrt) == 1
    if R.has("autograd"):
        ag = R.peers["autograd"]
        g = ag.grad(B.rebind_numpy(fn, ag.np), wrt[0] if single else tuple(wrt))
        tools["autograd"] = _safe(R, "autograd", lambda: R.tool("autograd", g, args, ref, dtype))
    if R.has("torch"):
        torch = R.peers["torch"].mod
        t_args = tuple(torch.from_numpy(np.array(a, order="C")) for a in args)   # 0-d stays 0-d
        tf = torch_fn or B.rebind_numpy(fn, torch_numpy(torch))
        g = _torch_grad_at(torch, tf, wrt)
        tools["torch"] = _safe(R, "torch", lambda: R.tool("torch", g, t_args, ref, dtype))
    if R.has("jax"):
        jax = R.peers["jax"].mod
        f = B.rebind_numpy(fn, R.peers["jax"].np)
        j_args = tuple(jax.device_put(a) for a in args)
        g = jax.grad(f, argnums=wrt[0] if single else tuple(wrt))
        if jax_eager:
            tools["jax"] = _safe(R, "jax", lambda: R.tool("jax", B._jax_ready(jax, g), j_args,
                                                          ref, dtype))
        else:
            tools["jax"] = _safe(R, "jax", lambda: _one_call(R, B._jax_ready(jax, g), j_args,
                                                             ref, dtype))
        if jit:
            tools["jax_jit"] = _safe(R, "jax_jit", lambda: jit_tool(R, jax, g, j_args, ref, dtype))


def _one_call(R, grad, args, ref, dtype):
    """Check ``grad`` and time a single call of it (a tool too slow to sample)."""
    start = B.now()
    got = grad(*args)
    entry = {"status": "ok", "grad_s": B.now() - start, "note": "one call, not interleaved"}
    try:
        entry["max_abs_error"] = B.compare(got, ref, dtype)
        entry["grad_matches"] = True
    except B.Mismatch as e:
        R.mismatches.append("jax: %s" % e)
        entry.update(status="gradient mismatch", grad_matches=False, detail=str(e))
        del entry["grad_s"]
    return entry


def jit_tool(R, jax, g, j_args, ref, dtype):
    cg, cg_s = B._jax_compiled(jax, g, j_args)
    return R.tool("jax_jit", B._jax_ready(jax, cg), j_args, ref, dtype, setup_s=cg_s,
                  setup_what="jit trace + compile")


def _safe(R, name, make):
    try:
        return make()
    except Exception as e:   # noqa: BLE001  (a peer that cannot run is reported)
        return {"status": "error: %s: %s" % (type(e).__name__,
                                             str(e).strip().splitlines()[0][:160]
                                             if str(e).strip() else "")}


def _torch_grad_at(torch, fn, wrt):
    def grad(*args):
        args = [a.detach().requires_grad_(True) if i in wrt else a for i, a in enumerate(args)]
        out = torch.autograd.grad(fn(*args), [args[i] for i in wrt])
        return out[0] if len(wrt) == 1 else out
    return grad


def function_workload(R, title, dtype, fn, hand, args, wrt, rows, jit=True, torch_fn=None,
                      jax_eager=True):
    """Hand-written, s2sad rows ``{label: (grad_fn, args, ref_map)}`` and the peers on ``fn``.

    ``ref_map`` turns the hand-written gradient into the layout of that row's
    result (a Cell's parameters), or is None.
    """
    ref = hand(*args)
    res = {"title": title, "dtype": dtype, "tools": {}}
    tools = res["tools"]
    fwd_peak = B.peak_bytes(fn, args)
    numpy_fwd = tools["numpy"] = {"status": "ok", "forward_peak_bytes": fwd_peak}
    R.schedule(numpy_fwd, "forward_s", fn, args)
    tools["hand"] = R.tool("hand", hand, args, ref, dtype, same_forward=numpy_fwd, memory=True,
                           forward_peak=fwd_peak)
    for label, (grad, g_args, ref_map) in rows.items():
        tools[label] = cell_tool(R, label, grad, g_args, ref_map(ref) if ref_map else ref,
                                 dtype, forward_peak=fwd_peak)
    peer_tools(R, fn, args, wrt, ref, dtype, tools, jit=jit, torch_fn=torch_fn,
               jax_eager=jax_eager)
    R.flush()
    ratios(res)
    return res


def ratios(res):
    """Every s2sad row over hand-written, PyTorch, JAX eager and jit; peak memory over hand."""
    tools = res["tools"]
    out = {}
    h = tools.get("hand", {})
    for label, t in tools.items():
        if not label.startswith("s2sad") or "grad_s" not in t:
            continue
        for peer in ("hand", "torch", "torch_nn", "jax", "jax_jit", "autograd"):
            if "grad_s" in tools.get(peer, {}):
                out["%s/%s" % (label, peer)] = t["grad_s"] / tools[peer]["grad_s"]
        if "grad_peak_bytes" in t and "grad_peak_bytes" in h:
            out["%s peak/hand peak" % label] = t["grad_peak_bytes"] / max(h["grad_peak_bytes"], 1)
    res["ratios"] = out
    res["gradients_match"] = all(t.get("grad_matches", True) for t in tools.values())


# ================================================================ workloads
def workload_g(R):
    args = M.lenet_data(R.quick)
    n = args[-2].shape[0]
    title = ("(g) LeNet-5 sized convnet, x[%d,32,32,1], float32; gradient w.r.t. all 10 "
             "weights" % n)
    net, grad_net, cell_args, to_cell = M.lenet_cell(args)
    wrt = tuple(range(10))
    rows = {"s2sad": (s2sad.grad(M.lenet_td, grad_position=wrt), args, None),
            "s2sad_einsum": (s2sad.grad(M.lenet_es, grad_position=wrt), args, None),
            "s2sad_nn": (grad_net, cell_args, to_cell)}
    res = function_workload(R, title, "float32", M.lenet_td, M.lenet_hand, args, wrt, rows)
    if R.has("torch"):   # PyTorch's conv2d beside s2sad's nn.Conv2d
        res["tools"]["torch_nn"] = _safe(R, "torch_nn", lambda: M.torch_lenet_tool(
            R, args, M.lenet_hand(*args)))
        R.flush()
        ratios(res)
    return res


def workload_h(R):
    args = M.lstm_data(R.quick)
    title = ("(h) LSTM, %d steps, batch %d, input %d, hidden %d, float32; gradient w.r.t. W, U, b"
             % (args[3].shape[0], args[3].shape[1], args[3].shape[2], args[1].shape[0]))
    grad_net, cell_args, to_cell = M.lstm_cell(args)
    rows = {"s2sad": (s2sad.grad(M.lstm, grad_position=(0, 1, 2)), args, None),
            "s2sad_nn": (grad_net, cell_args, to_cell)}
    res = function_workload(R, title, "float32", M.lstm, M.lstm_hand, args, (0, 1, 2), rows)
    if R.has("torch"):   # PyTorch's own nn.LSTM beside s2sad's
        t = _safe(R, "torch_nn", lambda: M.torch_lstm_tool(R, args, M.lstm_hand(*args)))
        res["tools"]["torch_nn"] = t
        R.flush()
        ratios(res)
    return res


def workload_i(R):
    args = M.block_data(R.quick)
    title = ("(i) transformer block, x%s, %d heads, float32; gradient w.r.t. Wq, Wk, Wv, Wo, "
             "W1, W2" % (list(args[-1].shape), M.HEADS))
    wrt = tuple(range(6))
    rows = {"s2sad": (s2sad.grad(M.block, grad_position=wrt), args, None)}
    if R.has("torch"):      # the same function on PyTorch's tensors, beside PyTorch eager
        torch = R.peers["torch"].mod
        t_args = tuple(torch.from_numpy(np.array(a, order="C")) for a in args)
        rows["s2sad_torch"] = (s2sad.grad(M.block, grad_position=wrt), t_args, None)
    return function_workload(R, title, "float32", M.block, M.block_hand, args, wrt, rows)


def workload_j(R):
    out = {"title": "(j) second order, float64", "parts": {}}
    args = M.hvp_data(R.quick)
    title = ("(j1) Hessian-vector product of an MLP loss w.r.t. W1%s, float64"
             % list(args[0].shape))
    res = {"title": title, "dtype": "float64", "tools": {}}
    tools = res["tools"]
    ref = M.hvp_hand(*args)
    tools["hand"] = R.tool("hand", M.hvp_hand, args, ref, "float64", memory=True)
    tools["s2sad"] = cell_tool(R, "s2sad", M.hvp_s2sad(), args, ref, "float64")
    M.hvp_peers(R, args, ref, tools, _safe)
    R.flush()
    ratios(res)
    out["parts"]["hvp"] = res

    args = M.logreg_data(R.quick)
    title = "(j2) full %dx%d Hessian of a logistic-regression loss, X%s, float64" % (
        args[0].size, args[0].size, list(args[1].shape))
    res = {"title": title, "dtype": "float64", "tools": {}}
    tools = res["tools"]
    ref = M.logreg_hessian_hand(*args)
    tools["hand"] = R.tool("hand", M.logreg_hessian_hand, args, ref, "float64", memory=True)
    tools["s2sad"] = cell_tool(R, "s2sad", s2sad.hessian(M.logreg), args, ref, "float64")
    M.hessian_peers(R, args, ref, tools, _safe)
    R.flush()
    ratios(res)
    out["parts"]["hessian"] = res
    out["gradients_match"] = all(p["gradients_match"] for p in out["parts"].values())
    return out


def workload_k(R):
    M.LORENZ["steps"] = 10 if R.quick else 1000
    args = M.lorenz_data()
    title = ("(k) RK4 on the Lorenz system, %d scalar steps, float64; gradient of x+y+z w.r.t. "
             "sigma, rho, beta" % M.LORENZ["steps"])
    rows = {"s2sad": (s2sad.grad(M.lorenz, grad_position=(0, 1, 2)), args, None)}
    res = function_workload(R, title, "float64", M.lorenz, M.lorenz_hand, args, (0, 1, 2), rows,
                            jit=False, torch_fn=M.lorenz, jax_eager=R.quick)
    if R.has("jax"):   # jit of a 1,000-step unrolled loop takes minutes: fori_loop instead
        res["tools"]["jax_jit"] = _safe(R, "jax_jit", lambda: M.lorenz_jax_jit(
            R, args, M.lorenz_hand(*args), jit_tool))
        R.flush()
        ratios(res)
    return res


def workload_l(R):
    data = M.train_data(R.quick)
    title = ("(l) one training step (TrainOneStepCell, SGD) of an MLP x%s -> %d tanh -> %d, "
             "float32" % (list(data["x"].shape), data["W1"].shape[0], data["W2"].shape[0]))
    res = {"title": title, "dtype": "float32", "tools": {}}
    tools = res["tools"]
    hand_step, hand_args, s2_step, s2_args, check = M.train_steps(data)
    ok, detail = check()
    for name, fn, a in (("hand", hand_step, hand_args), ("s2sad", s2_step, s2_args)):
        entry = tools[name] = {"status": "ok" if ok else "update mismatch", "grad_matches": ok}
        if not ok:
            entry["detail"] = detail
            continue
        R.schedule(entry, "grad_s", fn, a)
        entry["grad_peak_bytes"] = B.peak_bytes(fn, a)
    if not ok:
        R.mismatches.append("s2sad training step: " + detail)
    R.flush()
    ratios(res)
    return res


WORKLOADS = {"g": workload_g, "h": workload_h, "i": workload_i, "j": workload_j,
             "k": workload_k, "l": workload_l}


# ================================================================ cold start
def cold_child(key, quick, clock):
    """In a fresh process: seconds (``--clock``) to build ``key``'s gradient function and
    call it once; the data are made before the clock starts."""
    B._clock[0] = B.CLOCKS[clock]
    run = M.COLD[key](quick)
    start = B.now()
    run()
    return B.now() - start


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(argv, env):
    return subprocess.run([sys.executable] + argv, capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env=env)


def _samples(argv, samples, env, warm):
    """Seconds printed by ``samples`` fresh processes (after an untimed one when ``warm``),
    or the last line of the error of the first that failed."""
    times = []
    for i in range(samples + bool(warm)):
        p = _child(argv, env)
        if p.returncode != 0:
            return "error: " + (p.stderr.strip().splitlines() or ["?"])[-1]
        times.append(float(p.stdout.strip().splitlines()[-1]))
    return times[bool(warm):]


def cold_starts(keys, quick, samples, clock, env, warm=False):
    """Median seconds of build + first call per network, each in a fresh process."""
    out = {}
    for key in keys:
        times = _samples([os.path.abspath(__file__), "--cold", key, "--clock", clock]
                         + (["--quick"] if quick else []), samples, env, warm)
        out[key] = ({"status": times} if isinstance(times, str)
                    else {"status": "ok", "seconds": statistics.median(times)})
    return out


IMPORT_SNIPPET = ("import time, numpy; clock = time.%s; t = clock(); import s2sad; "
                  "print(clock() - t)")


def import_time(samples, clock, env, warm=False):
    """Median seconds of ``import s2sad`` (NumPy already imported) in fresh processes."""
    times = _samples(["-c", IMPORT_SNIPPET % B.CLOCKS[clock].__name__], samples, env, warm)
    return None if isinstance(times, str) else statistics.median(times)


def start_up(keys, quick, samples, clock):
    """{mode: (cold starts, import seconds)} for bytecode cached (what an installed package
    gets; the targets) and compiled from source (``PYTHONDONTWRITEBYTECODE``)."""
    out = {}
    with S.Bytecode(ROOT) as cache:
        for mode in (S.CACHED, S.SOURCE):
            env, warm = cache.env(mode), mode == S.CACHED
            out[mode] = (cold_starts(keys, quick, samples, clock, env, warm),
                         import_time(samples, clock, env, warm))
    return out


def start_up_table(modes):
    """Cold starts and import time, one column per bytecode mode."""
    def cell(c):
        return B._ms(c["seconds"]) if "seconds" in c else c["status"]
    keys = list(modes[S.CACHED][0])
    rows = [[k] + [cell(modes[m][0][k]) for m in modes] for k in keys]
    rows.append(["import s2sad"] + [B._ms(modes[m][1]) for m in modes])
    return B._table(["network", "ms, " + S.CACHED, "ms, " + S.SOURCE], rows)


# ================================================================ output
TARGETS = {  # workload: [(row, over, limit)]
    "g": [("s2sad", "hand", 1.15), ("s2sad_einsum", "hand", 1.15), ("s2sad_nn", "hand", 1.15),
          ("s2sad", "torch", 1.3), ("s2sad_nn", "torch_nn", 1.3)],
    "h": [("s2sad", "hand", 1.15), ("s2sad_nn", "hand", 1.15), ("s2sad", "torch", 1.0),
          ("s2sad_nn", "torch_nn", 1.0)],
    "i": [("s2sad", "hand", 1.15), ("s2sad", "torch", 1.0), ("s2sad_torch", "torch", 1.0)],
    "hvp": [("s2sad", "hand", 1.2)],
    "hessian": [("s2sad", "jax_jit", 2.0)],
    "k": [("s2sad", "hand", 2.0), ("s2sad", "torch", 1.0)],
}
MEMORY_TARGETS = ("g", "h", "i")
COLD_LIMIT = 0.050
IMPORT_LIMIT = 0.25


def targets(results, colds, import_s):
    out = []

    def add(desc, value, limit, fmt):
        if value is None:
            out.append({"target": desc, "value": None, "result": "n/a"})
        else:
            out.append({"target": desc, "value": value, "text": fmt % value,
                        "result": "PASS" if value <= limit else "MISS"})

    parts = _parts(results)
    for key, rows in TARGETS.items():
        res = parts.get(key)
        if res is None:
            continue
        for row, over, limit in rows:
            add("(%s) %s / %s <= %.2fx" % (key, row, over, limit),
                res["ratios"].get("%s/%s" % (row, over)), limit, "%.2fx")
    for key in MEMORY_TARGETS:
        if key in parts:
            for row in [r for r, t in parts[key]["tools"].items()
                        if r.startswith("s2sad") and "grad_peak_bytes" in t]:
                add("(%s) %s gradient peak memory <= 1.2x hand-written" % (key, row),
                    parts[key]["ratios"].get("%s peak/hand peak" % row), 1.2, "%.2fx")
    for key, c in colds.items():
        add("cold start (build + first call) of %s <= %.0f ms" % (key, COLD_LIMIT * 1e3),
            c.get("seconds"), COLD_LIMIT, "%.3f s")
    if import_s is not None or colds:
        add("import s2sad <= %.2f s" % IMPORT_LIMIT, import_s, IMPORT_LIMIT, "%.3f s")
    return out


def _parts(results):
    parts = {}
    for w, r in results.items():
        if "parts" in r:
            parts.update(r["parts"])
        elif "tools" in r:
            parts[w] = r
    return parts


LABELS = dict(B.TOOL_LABELS, s2sad_einsum="s2sad (einsum)", s2sad_nn="s2sad (nn Cell)",
              s2sad_torch="s2sad (PyTorch tensors)", torch_nn="PyTorch layers")
COLUMNS = ("hand", "torch", "jax_jit")


def _columns(name, r):
    """The peers a row is divided by: an ``nn`` row by PyTorch's own layers when timed."""
    if name == "s2sad_nn" and "s2sad_nn/torch_nn" in r:
        return ("hand", "torch_nn", "jax_jit")
    return COLUMNS


def _setup(t):
    """Compile or jit time; a forward-mode compile (HVP, Hessian) is not metered apart:
    the first call's time includes it."""
    if t.get("compiles_on_first_call") == 0:
        return "in 1st call"
    return B._ms(t["setup_s"]) if "setup_s" in t else ""


def format_part(res):
    tools = res["tools"]
    head = ["tool", "grad ms", "setup ms", "peak MiB", "/hand", "/torch", "/jax.jit"]
    rows, notes = [], []
    for name, t in tools.items():
        if name == "numpy":
            rows.append(["NumPy forward", B._ms(t.get("forward_s")) + " (fwd)", "",
                         "%.1f" % (t["forward_peak_bytes"] / 2 ** 20), "", "", ""])
            continue
        if "grad_s" not in t:
            rows.append([LABELS.get(name, name), B._short(t.get("status", ""))] + [""] * 5)
            notes.append("%s: %s %s" % (LABELS.get(name, name), t.get("status", ""),
                                        t.get("detail", "")))
            continue
        peak = "%.1f" % (t["grad_peak_bytes"] / 2 ** 20) if "grad_peak_bytes" in t else ""
        r = res["ratios"]
        rows.append([LABELS.get(name, name), B._ms(t["grad_s"]), _setup(t), peak]
                    + [B._x(r.get("%s/%s" % (name, c))) for c in _columns(name, r)])
        if "compiles_on_second_call" in t:
            notes.append("%s: first call %s ms, %s generated lines, second call compiled %d "
                         "time(s)" % (LABELS.get(name, name), B._ms(t["first_call_s"]),
                                      t.get("generated_lines"), t["compiles_on_second_call"]))
    notes.append("gradients match the hand-written one: %s" % res["gradients_match"])
    return "\n".join([res["title"], B._table(head, rows)] + notes)


def format_result(res):
    if "parts" in res:
        return "\n\n".join(format_part(p) for p in res["parts"].values())
    return format_part(res)


def summary_table(results):
    """One row per s2sad variant: the ratios the issue's table reports."""
    head = ["model", "s2sad / hand", "s2sad / torch", "s2sad / jax.jit", "peak / hand"]
    rows = []
    for key, res in _parts(results).items():
        for name in [n for n in res["tools"] if n.startswith("s2sad")]:
            r = res["ratios"]
            rows.append(["%s %s" % (key, LABELS.get(name, name))]
                        + [B._x(r.get("%s/%s" % (name, c))) for c in _columns(name, r)]
                        + [B._x(r.get("%s peak/hand peak" % name))])
    return "Summary (ratios: below 1 means s2sad is faster or smaller)\n" + B._table(head, rows)


# ================================================================ main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (for CI)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timed samples per measurement (default 11, 3 with --quick)")
    parser.add_argument("--only", default=",".join(WORKLOAD_LETTERS),
                        help="comma-separated workloads among g,h,i,j,k,l (default all)")
    parser.add_argument("--peers", default=",".join(PEERS),
                        help="'none' or a comma-separated list of torch, jax, autograd")
    parser.add_argument("--cold-samples", type=int, default=None,
                        help="fresh processes per cold-start measurement (default 3, 1 with "
                             "--quick; 0 skips cold start and import time)")
    parser.add_argument("--clock", choices=sorted(B.CLOCKS), default="cpu")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--cold", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold:
        print(cold_child(args.cold, args.quick, args.clock))
        return 0
    args.repeat = args.repeat or (3 if args.quick else 11)
    cold_samples = args.cold_samples if args.cold_samples is not None else (
        1 if args.quick else 3)
    only = [w.strip() for w in args.only.split(",") if w.strip()]
    bad = [w for w in only if w not in WORKLOAD_LETTERS or len(w) != 1]
    if bad:
        parser.error("unknown workload(s): %s" % ", ".join(bad))
    args.peers = ",".join(p for p in args.peers.split(",") if p in PEERS) or "none"
    return run(args, only, cold_samples)


def run(args, only, cold_samples):
    B._clock[0] = B.CLOCKS[args.clock]
    B.METER = B.CompileMeter()
    R = B.Runner(args)
    info = B.machine_info(R)
    print("s2sad model benchmark%s: %s, %s cores, Python %s, NumPy %s, one thread; %s time, "
          "median of %d interleaved samples" % (" (--quick)" if args.quick else "", info["cpu"],
                                                info["cores"], info["python"], info["numpy"],
                                                args.clock, args.repeat))
    print("peers: " + ", ".join("%s %s" % (n, info[n]) for n in PEERS))
    print("load average at start: %s\n" % " ".join("%.2f" % v
                                                   for v in info.get("load_average_at_start", [])))
    start = time.perf_counter()
    results = {}
    for w in WORKLOAD_LETTERS:
        if w not in only:
            continue
        t0 = time.perf_counter()
        try:
            results[w] = WORKLOADS[w](R)
            print(format_result(results[w]))
        except Exception:   # noqa: BLE001  (one crash is reported, the others still run)
            R.jobs, R.links = [], []
            text = traceback.format_exc()
            results[w] = {"error": text, "gradients_match": False}
            R.mismatches.append("workload (%s) crashed: %s" % (w, text.strip().splitlines()[-1]))
            print("(%s) crashed:\n%s" % (w, text))
        results[w]["seconds"] = time.perf_counter() - t0
        print()
        sys.stdout.flush()
    keys = [k for k in M.COLD if k[0] in only] if cold_samples else []
    modes = start_up(keys, args.quick, cold_samples, args.clock) if cold_samples else {}
    colds, import_s = modes.get(S.CACHED, ({}, None))
    if modes:
        print("Cold start: build + first call in a fresh process, %s time, median of %d; "
              "import s2sad with NumPy imported" % (args.clock, cold_samples))
        print(start_up_table(modes))
        print()
    print(summary_table(results))
    print()
    ts = targets(results, colds, import_s)
    print(B.format_targets(ts))
    ok = all(r.get("gradients_match", False) for r in results.values()) and not R.mismatches
    try:
        load_end = os.getloadavg()[0]
    except OSError:
        load_end = None
    print("\nall gradients match: %s; total %.0f s; load average at end: %s"
          % (ok, time.perf_counter() - start, load_end))
    for m in R.mismatches:
        print("FAILED " + m)
    if args.json:
        out = {"machine": info, "options": {"quick": args.quick, "repeat": args.repeat,
                                            "clock": args.clock, "only": only},
               "workloads": results, "cold_start": colds, "import_s": import_s,
               "from_source": {"cold_start": modes[S.SOURCE][0], "import_s": modes[S.SOURCE][1]}
               if modes else None,
               "targets": ts, "all_gradients_match": ok, "load_at_end": load_end}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2, sort_keys=True, default=B._json_default)
            f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
