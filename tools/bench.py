"""Benchmark: s2sad gradients against hand-written NumPy gradients and other AD tools.

Workloads (``--only`` takes their letters):

- ``a``: 2-layer MLP loss, x[64,784] -> 256 tanh -> 10, softmax cross-entropy on
  integer labels, float32; gradient with respect to W1, b1, W2, b2;
- ``b``: ``sum(cos(sin(x)) * exp(-x*x))`` on 1e6 float64 elements;
- ``c``: an RNN cell ``h = tanh(W @ h + x_t)``, 100 steps, h[16], float64;
  gradient with respect to W (per-operation overhead);
- ``d``: derivatives of ``tanh`` of orders 1-5 (compile time, run time,
  generated lines) and the generated lines of orders 1-5 of the MLP loss of (a)
  with respect to W1 (each order differentiates the sum of the previous one),
  beside the lines of JAX's jaxprs for the same functions;
- ``e``: D2L's ``while``/``if`` function on a[1000], summed;
- ``f``: transformation time of generated straight-line programs of 100, 1,000
  and 10,000 primitive calls, of a ``for`` loop whose body has ~1,000 calls and
  of a 1,000-iteration loop.

Tools: the NumPy forward, a hand-written NumPy gradient, s2sad (first-call
compile time reported apart, for (f)'s straight-line programs the median of
five compiles, the programs taking turns; the second call must not compile
again), and,
when installed, autograd, PyTorch (CPU, eager), JAX (eager and jit; jit
compile time reported apart) and tangent (transformation time reported).  A
tool that is not installed, or that cannot run a workload, is reported as
such.  Everything runs on one thread.  Every gradient is checked against the
hand-written one before it is timed.  Times are medians over ``--repeat``
samples after a warm-up, the samples of all tools interleaved (each sample
repeats a fast call until it lasts a few milliseconds), in CPU time of this
process by default (``--clock wall`` for wall time).  Peak memory
(tracemalloc, so NumPy-based tools only) is measured for (a), (b) and (c).
Targets are printed with PASS/MISS; a MISS never fails the run, a wrong
gradient does (exit status 1).

This is a benchmark, not a test: it asserts correctness, never speed.

    python tools/bench.py [--quick] [--repeat N] [--only a,c] [--peers jax,torch]
                          [--f-peer-max N] [--clock cpu|wall] [--json out.json]
"""
import os

# one thread everywhere, set before NumPy (and any peer) is imported
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"
_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _XLA_FLAGS).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# tangent keeps transformed functions in a disk cache across runs: its
# transformation time is measured from scratch
os.environ["TANGENT_DISK_CACHE"] = "0"

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import s2sad  # noqa: E402
from s2sad import ops  # noqa: E402
from s2sad import driver as _G  # noqa: E402

PEER_NAMES = ("autograd", "torch", "jax", "tangent")
# tool keys in table order; "jax_jit" comes with "jax"
TOOLS = ("hand", "s2sad", "autograd", "torch", "jax", "jax_jit", "tangent")
TOOL_LABELS = {"numpy": "NumPy forward", "hand": "hand-written NumPy", "s2sad": "s2sad",
               "autograd": "autograd", "torch": "PyTorch eager", "jax": "JAX eager",
               "jax_jit": "JAX jit", "tangent": "tangent"}
# (rtol, atol relative to the largest reference element)
TOLERANCES = {"float32": (2e-3, 1e-5), "float64": (1e-8, 1e-11)}
NCLASSES = 10


# ===================================================================== workloads
# The NumPy functions below are what s2sad, autograd (with ``np`` rebound to
# autograd.numpy), JAX (``np`` rebound to jax.numpy) and tangent differentiate:
# s2sad and tangent read their source from this file.

def mlp_loss(W1, b1, W2, b2, x, labels):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    onehot = labels[:, None] == np.arange(NCLASSES)
    return -np.mean(np.sum(logp * onehot, axis=1))


def mlp_grad_hand(W1, b1, W2, b2, x, labels):
    """Backprop of ``mlp_loss`` by hand: ``(dW1, db1, dW2, db2)``."""
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    d_logits = e / np.sum(e, axis=1, keepdims=True)
    n = x.shape[0]
    d_logits[np.arange(n), labels] -= 1.0
    d_logits /= n
    d_a = (d_logits @ W2.T) * (1.0 - h * h)
    return x.T @ d_a, np.sum(d_a, axis=0), h.T @ d_logits, np.sum(d_logits, axis=0)


def elementwise(x):
    return np.sum(np.cos(np.sin(x)) * np.exp(-x * x))


def elementwise_grad_hand(x):
    s = np.sin(x)
    return (-np.sin(s) * np.cos(x) - 2.0 * x * np.cos(s)) * np.exp(-x * x)


def rnn(W, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h)


def rnn_grad_hand(W, xs, h0):
    """Backprop through time of ``rnn``, gradient with respect to ``W`` only."""
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(W @ hs[-1] + xs[t]))
    dW = np.zeros_like(W)
    dh = np.ones_like(h0)
    for t in range(xs.shape[0] - 1, -1, -1):
        da = dh * (1.0 - hs[t + 1] * hs[t + 1])
        dW += np.outer(da, hs[t])
        dh = W.T @ da
    return dW


def tanh_fn(x):
    return np.tanh(x)


def tanh_derivative_hand(x, order):
    """The ``order``-th derivative of tanh: a polynomial in t = tanh(x)."""
    p = np.polynomial.Polynomial([0.0, 1.0])             # tanh itself
    dt = np.polynomial.Polynomial([1.0, 0.0, -1.0])      # d tanh = 1 - t^2
    for _ in range(order):
        p = p.deriv() * dt
    return p(np.tanh(x))


def d2l(a):
    b = a * 2
    while np.linalg.norm(b) < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return np.sum(c)


def d2l_grad_hand(a):
    b = a * 2
    k = 2.0
    while np.linalg.norm(b) < 1000:
        b = b * 2
        k *= 2.0
    if not b.sum() > 0:
        k *= 100.0
    return np.full_like(a, k)


# PyTorch versions (same computations, torch API)
def mlp_loss_torch(W1, b1, W2, b2, x, labels):
    import torch
    h = torch.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - logits.max(dim=1, keepdim=True).values
    logp = z - torch.log(torch.exp(z).sum(dim=1, keepdim=True))
    onehot = labels[:, None] == torch.arange(NCLASSES)
    return -(logp * onehot).sum(dim=1).mean()


def elementwise_torch(x):
    import torch
    return torch.sum(torch.cos(torch.sin(x)) * torch.exp(-x * x))


def rnn_torch(W, xs, h0):
    import torch
    h = h0
    for t in range(xs.shape[0]):
        h = torch.tanh(W @ h + xs[t])
    return torch.sum(h)


def d2l_torch(a):
    import torch
    b = a * 2
    while torch.linalg.norm(b) < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return torch.sum(c)


def rebind_numpy(fn, module):
    """``fn`` with the global ``np`` bound to ``module`` (autograd.numpy, jax.numpy)."""
    g = dict(fn.__globals__)
    g["np"] = module
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


# ================================================================ measurement
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = [time.process_time]


def now():
    """The benchmark clock (``--clock``): this process's CPU time by default.

    Every tool runs on one thread, so on a quiet machine CPU time and wall time
    agree; on a busy one CPU time leaves out the time other processes held the
    core, which wall time would charge to whichever tool was running.
    """
    return _clock[0]()


class CompileMeter:
    """Counts s2sad compilations and the time spent in them (wraps ``compile_grad`` and
    ``compile_nested``, the Taylor-mode compile of a chain of gradients)."""

    def __init__(self):
        self.calls = 0
        self.seconds = 0.0
        self.last = None
        self._depth = 0
        for name in ("compile_grad", "compile_nested"):
            setattr(_G, name, self._wrap(getattr(_G, name)))

    def _wrap(self, orig):
        def compile_(*args, **kwargs):
            self._depth += 1
            start = now()
            try:
                out = orig(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.seconds += now() - start
            if self._depth == 0 and out is not None:    # None: Taylor mode did not apply
                self.calls += 1
                self.last = out
            return out
        return compile_

    def snapshot(self):
        return self.calls, self.seconds


METER = None


def s2sad_call(grad_fn, args):
    """Call ``grad_fn`` twice.

    Returns ``(result, first_call_s, compile_s, compiles, second_call_compiles,
    compiled entry)``: the first call compiles, the second must find the cache.
    """
    c0, s0 = METER.snapshot()
    start = now()
    result = grad_fn(*args)
    first = now() - start
    c1, s1 = METER.snapshot()
    entry = METER.last if c1 > c0 else None
    grad_fn(*args)
    c2, _ = METER.snapshot()
    return result, first, s1 - s0, c1 - c0, c2 - c1, entry


def s2sad_tool(R, grad_fn, args, ref, dtype, name="s2sad", **kwargs):
    """``R.tool`` for an s2sad gradient function, after its compiling first call and a
    second call that must not compile; an error is recorded (and fails the run) with
    its first and last lines (where a CompileError says what went wrong)."""
    try:
        _, first_s, compile_s, compiles, recompiles, entry = s2sad_call(grad_fn, args)
    except Exception as e:
        lines = str(e).strip().splitlines()
        msg = "error: %s: %s" % (type(e).__name__, " / ".join(lines[:1] + lines[1:][-1:])[:400])
        R.mismatches.append("%s: %s" % (name, msg))
        return {"status": msg, "grad_matches": False}
    extra = {"first_call_s": first_s, "compile_s": compile_s,
             "compiles_on_first_call": compiles, "compiles_on_second_call": recompiles,
             "generated_lines": count_lines(entry.source) if entry is not None else None}
    return R.tool(name, grad_fn, args, ref, dtype, setup_s=compile_s,
                  setup_what="compile (first call)", extra=extra, **kwargs)


def count_lines(source):
    """Lines of generated code that compute: neither blank, comments nor ``del`` releases."""
    return sum(1 for line in source.splitlines()
               if line.strip() and not line.strip().startswith(("#", "del ")))


def _sample(fn, args, number):
    start = now()
    for _ in range(number):
        fn(*args)
    return now() - start


def peak_bytes(fn, args):
    """Peak bytes traced by tracemalloc during one call (after a warm-up call)."""
    fn(*args)
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def to_numpy(x):
    if hasattr(x, "detach"):          # torch
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _flat(x):
    if isinstance(x, (tuple, list)):
        out = []
        for e in x:
            out.extend(_flat(e))
        return out
    return [x]


class Mismatch(AssertionError):
    pass


def compare(got, ref, dtype):
    """Assert ``got`` matches ``ref`` leaf by leaf; return the largest absolute error."""
    rtol, atol = TOLERANCES[dtype]
    got, ref = _flat(got), _flat(ref)
    if len(got) != len(ref):
        raise Mismatch("%d gradients, expected %d" % (len(got), len(ref)))
    worst = 0.0
    for i, (g, r) in enumerate(zip(got, ref)):
        g, r = to_numpy(g), np.asarray(r)
        if g.shape != r.shape:
            raise Mismatch("gradient %d has shape %s, expected %s" % (i, g.shape, r.shape))
        # absolute tolerance relative to the largest reference element
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        scale = scale if scale > 0.0 else 1.0
        try:
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol * scale)
        except AssertionError as e:
            raise Mismatch("gradient %d: %s" % (i, str(e).strip().splitlines()[-3:]))
        if r.size:
            worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - r))))
    return worst


class Runner:
    """Options plus the peers that could be imported."""

    def __init__(self, args):
        self.quick = args.quick
        self.repeat = args.repeat
        self.min_sample = 0.002 if args.quick else 0.02
        self.peers = {}
        self.peer_status = {}
        self.mismatches = []
        self.jobs = []
        self.links = []
        wanted = PEER_NAMES if args.peers == "all" else tuple(
            p for p in args.peers.split(",") if p and p != "none")
        for name in PEER_NAMES:
            if name not in wanted:
                self.peer_status[name] = "disabled (--peers)"
                continue
            try:
                self.peers[name] = _import_peer(name)
                self.peer_status[name] = "ok"
            except Exception as e:   # ImportError, or a broken install
                self.peer_status[name] = "not available (%s: %s)" % (
                    type(e).__name__, str(e).splitlines()[0][:120] if str(e) else "")

    def has(self, name):
        return name in self.peers

    def absent(self, name):
        return {"status": self.peer_status.get(name, "not available")}

    def schedule(self, entry, key, fn, args):
        """Time ``fn(*args)`` at the next ``flush`` into ``entry[key]``."""
        self.jobs.append((entry, key, fn, args))

    def flush(self):
        """Time every scheduled call, interleaved.

        After one warm-up call each, ``repeat`` rounds take one sample of every
        call, in an order shuffled each round (seeded), so load from other
        processes spreads over all tools alike, and so does what a call leaves
        the next (a large gradient's freed memory, page faults for the call
        after it: with a fixed order the tool after the hand-written gradient
        of a convnet paid about 3 ms of them); each result is the median of
        its samples.  A sample repeats a fast call until it lasts about
        ``min_sample`` seconds and is divided by the count.
        """
        jobs, self.jobs = self.jobs, []
        numbers = []
        for entry, key, fn, args in jobs:
            fn(*args)
            first = _sample(fn, args, 1)
            numbers.append(1 if first >= self.min_sample else
                           min(10000, max(1, int(self.min_sample / max(first, 1e-7)))))
        samples = [[] for _ in jobs]
        gc.collect()
        order = random.Random(0)
        for _ in range(self.repeat):
            for i in order.sample(range(len(jobs)), len(jobs)):
                entry, key, fn, args = jobs[i]
                samples[i].append(_sample(fn, args, numbers[i]) / numbers[i])
        for (entry, key, _, _), s in zip(jobs, samples):
            entry[key] = statistics.median(s)
        for entry, source in self.links:
            if "forward_s" in source:
                entry["forward_s"] = source["forward_s"]
        self.links = []
        for entry, _, _, _ in jobs:
            if "grad_s" in entry and "forward_s" in entry:
                entry["grad_over_forward"] = entry["grad_s"] / entry["forward_s"]

    def tool(self, name, grad, args, ref, dtype, forward=None, forward_args=None,
             same_forward=None, memory=False, setup_s=None, setup_what=None,
             forward_peak=None, extra=None):
        """Check ``grad(*args)`` against ``ref`` now; schedule its timing.

        The forward is timed from ``forward`` (this tool's own), or taken from
        the entry ``same_forward`` (the NumPy forward every NumPy-based tool
        shares).  Peak memory is measured now when ``memory``.
        """
        entry = {"status": "ok"}
        if setup_s is not None:
            entry["setup_s"] = setup_s
            entry["setup_what"] = setup_what
        entry.update(extra or {})
        try:
            got = grad(*args)
        except Exception as e:
            entry["status"] = "error: %s: %s" % (
                type(e).__name__, str(e).strip().splitlines()[0][:200] if str(e).strip() else "")
            return entry
        try:
            entry["max_abs_error"] = compare(got, ref, dtype)
            entry["grad_matches"] = True
        except Mismatch as e:
            self.mismatches.append("%s: %s" % (name, e))
            entry.update(status="gradient mismatch", grad_matches=False, detail=str(e))
            return entry
        self.schedule(entry, "grad_s", grad, args)
        if forward is not None:
            self.schedule(entry, "forward_s", forward,
                          forward_args if forward_args is not None else args)
        elif same_forward is not None:
            self.links.append((entry, same_forward))
        if memory:
            entry["grad_peak_bytes"] = peak_bytes(grad, args)
            if forward_peak is not None:
                entry["forward_peak_bytes"] = forward_peak
                entry["memory_ratio"] = entry["grad_peak_bytes"] / max(forward_peak, 1)
        return entry


def _import_peer(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "autograd":
            import autograd
            import autograd.numpy as anp
            return types.SimpleNamespace(mod=autograd, np=anp, grad=autograd.grad,
                                         egrad=autograd.elementwise_grad,
                                         version=_version("autograd", autograd))
        if name == "torch":
            import torch
            torch.set_num_threads(1)
            try:
                torch.set_num_interop_threads(1)
            except RuntimeError:
                pass
            return types.SimpleNamespace(mod=torch, version=torch.__version__)
        if name == "jax":
            import jax
            jax.config.update("jax_enable_x64", True)
            import jax.numpy as jnp
            return types.SimpleNamespace(mod=jax, np=jnp, version=jax.__version__)
        if name == "tangent":
            import tangent
            return types.SimpleNamespace(mod=tangent, version=_version("tangent-ad", tangent))
    raise ImportError(name)


def _version(dist, module):
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:
        return getattr(module, "__version__", "?")


def _tangent_grad(tangent, fn, fresh=True, **kwargs):
    """``tangent.grad(fn)`` and the seconds the transformation took.

    ``fresh`` empties tangent's in-memory cache first, so nothing transformed
    earlier is reused (its disk cache is off: ``TANGENT_DISK_CACHE=0``).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if fresh:
            try:
                from tangent.function_cache import clear_cache
                clear_cache()
            except ImportError:
                pass
        start = now()
        g = tangent.grad(fn, **kwargs)
        return g, now() - start


def _jax_compiled(jax, fn, args):
    """``jax.jit(fn)`` lowered and compiled for ``args``; seconds it took."""
    start = now()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, now() - start


def _jax_ready(jax, fn):
    def call(*args):
        return jax.block_until_ready(fn(*args))
    return call


def _torch_grad(torch, loss_fn, n_wrt):
    """Gradient of ``loss_fn`` with respect to its first ``n_wrt`` tensor inputs."""
    def grad(*args):
        wrt = [a.detach().requires_grad_(True) for a in args[:n_wrt]]
        loss = loss_fn(*wrt, *args[n_wrt:])
        return torch.autograd.grad(loss, wrt)
    return grad


def _torch_forward(torch, fn):
    def forward(*args):
        with torch.no_grad():
            return fn(*args)
    return forward


# ============================================================ standard workload
def standard_workload(R, title, dtype, fn, hand, args, wrt, torch_fn, s2sad_grad, memory,
                      jit_note=None):
    """Run every tool on one ``fn(*args)`` differentiated with respect to ``wrt``.

    ``wrt`` are argument positions; ``s2sad_grad`` is the s2sad gradient function.
    """
    ref = hand(*args)
    single = len(wrt) == 1
    res = {"title": title, "dtype": dtype, "tools": {}}
    tools = res["tools"]
    fwd_peak = peak_bytes(fn, args) if memory else None
    numpy_fwd = tools["numpy"] = {"status": "ok"}
    R.schedule(numpy_fwd, "forward_s", fn, args)
    if memory:
        numpy_fwd["forward_peak_bytes"] = fwd_peak
    tools["hand"] = R.tool("hand", hand, args, ref, dtype, same_forward=numpy_fwd,
                           memory=memory, forward_peak=fwd_peak)

    # s2sad: compile on the first call, then nothing on the second
    tools["s2sad"] = s2sad_tool(R, s2sad_grad, args, ref, dtype, same_forward=numpy_fwd,
                                memory=memory, forward_peak=fwd_peak)

    # autograd
    if R.has("autograd"):
        ag = R.peers["autograd"]
        f_ag = rebind_numpy(fn, ag.np)
        g_ag = ag.grad(f_ag, wrt[0] if single else tuple(wrt))
        tools["autograd"] = R.tool("autograd", g_ag, args, ref, dtype, same_forward=numpy_fwd,
                                   memory=memory, forward_peak=fwd_peak)
    else:
        tools["autograd"] = R.absent("autograd")

    # PyTorch eager
    if R.has("torch"):
        torch = R.peers["torch"].mod
        t_args = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in args)
        n = len(wrt)
        assert tuple(wrt) == tuple(range(n)), "torch runner expects the leading inputs"
        g_t = _torch_grad(torch, torch_fn, n)
        g_t1 = (lambda *a: g_t(*a)[0]) if single else g_t
        tools["torch"] = R.tool("torch", g_t1, t_args, ref, dtype,
                                forward=_torch_forward(torch, torch_fn), forward_args=t_args,
                                extra={"memory": "n/a (tracemalloc does not see torch)"}
                                if memory else None)
    else:
        tools["torch"] = R.absent("torch")

    # JAX eager and jit
    if R.has("jax"):
        jax = R.peers["jax"].mod
        f_j = rebind_numpy(fn, R.peers["jax"].np)
        j_args = tuple(jax.device_put(a) for a in args)
        g_j = jax.grad(f_j, argnums=wrt[0] if single else tuple(wrt))
        tools["jax"] = R.tool("jax", _jax_ready(jax, g_j), j_args, ref, dtype,
                              forward=_jax_ready(jax, f_j), forward_args=j_args,
                              extra={"memory": "n/a (tracemalloc does not see JAX)"}
                              if memory else None)
        if jit_note:
            tools["jax_jit"] = {"status": jit_note}
        else:
            try:
                cg, cg_s = _jax_compiled(jax, g_j, j_args)
                cf, _ = _jax_compiled(jax, f_j, j_args)
                tools["jax_jit"] = R.tool("jax_jit", _jax_ready(jax, cg), j_args, ref, dtype,
                                          forward=_jax_ready(jax, cf), forward_args=j_args,
                                          setup_s=cg_s, setup_what="jit trace + compile")
            except Exception as e:
                tools["jax_jit"] = {"status": "error: %s: %s" % (type(e).__name__,
                                                                 str(e).splitlines()[0][:200])}
    else:
        tools["jax"] = R.absent("jax")
        tools["jax_jit"] = R.absent("jax")

    # tangent
    if R.has("tangent"):
        try:
            g_tg, tg_s = _tangent_grad(R.peers["tangent"].mod, fn, wrt=tuple(wrt))
        except Exception as e:
            tools["tangent"] = {"status": "error: %s: %s" % (type(e).__name__,
                                                             str(e).splitlines()[0][:200])}
        else:
            tools["tangent"] = R.tool("tangent", g_tg, args, ref, dtype, same_forward=numpy_fwd,
                                      memory=memory, forward_peak=fwd_peak, setup_s=tg_s,
                                      setup_what="transformation")
    else:
        tools["tangent"] = R.absent("tangent")

    R.flush()
    _ratios(res)
    return res


def _ratios(res):
    """s2sad time over hand and over each peer; gradient peak memory s2sad over hand."""
    tools = res["tools"]
    s = tools.get("s2sad", {})
    ratios = {}
    if "grad_s" in s:
        for name in TOOLS:
            t = tools.get(name, {})
            if name != "s2sad" and "grad_s" in t:
                ratios["s2sad_over_" + name] = s["grad_s"] / t["grad_s"]
        h = tools.get("hand", {})
        if "grad_peak_bytes" in s and "grad_peak_bytes" in h:
            ratios["s2sad_peak_over_hand_peak"] = s["grad_peak_bytes"] / max(
                h["grad_peak_bytes"], 1)
    res["ratios"] = ratios
    res["gradients_match"] = all(t.get("grad_matches", True) for t in tools.values())


# ------------------------------------------------------------------ (a) .. (e)
def workload_a(R):
    batch, din, hidden = (8, 32, 16) if R.quick else (64, 784, 256)
    rng = np.random.default_rng(0)
    f32 = np.float32
    W1 = (rng.standard_normal((din, hidden)) / np.sqrt(din)).astype(f32)
    b1 = (rng.standard_normal(hidden) * 0.1).astype(f32)
    W2 = (rng.standard_normal((hidden, NCLASSES)) / np.sqrt(hidden)).astype(f32)
    b2 = (rng.standard_normal(NCLASSES) * 0.1).astype(f32)
    x = rng.standard_normal((batch, din)).astype(f32)
    labels = rng.integers(0, NCLASSES, batch)
    title = ("(a) MLP loss x[%d,%d] -> %d tanh -> %d, softmax cross-entropy, float32; "
             "gradient w.r.t. W1, b1, W2, b2" % (batch, din, hidden, NCLASSES))
    g = s2sad.grad(mlp_loss, grad_position=(0, 1, 2, 3))
    return standard_workload(R, title, "float32", mlp_loss, mlp_grad_hand,
                             (W1, b1, W2, b2, x, labels), (0, 1, 2, 3), mlp_loss_torch, g,
                             memory=True)


def workload_b(R):
    n = 1000 if R.quick else 1000000
    x = np.random.default_rng(1).standard_normal(n)
    title = "(b) sum(cos(sin(x)) * exp(-x*x)), x[%d] float64" % n
    return standard_workload(R, title, "float64", elementwise, elementwise_grad_hand, (x,),
                             (0,), elementwise_torch, ops.GradOperation()(elementwise),
                             memory=True)


def workload_c(R):
    steps, hidden = (10, 16) if R.quick else (100, 16)
    rng = np.random.default_rng(2)
    W = rng.standard_normal((hidden, hidden)) * (0.9 / np.sqrt(hidden))
    xs = rng.standard_normal((steps, hidden)) * 0.5
    h0 = rng.standard_normal(hidden) * 0.1
    title = ("(c) RNN h = tanh(W @ h + x_t), %d steps, h[%d], float64; gradient w.r.t. W"
             % (steps, hidden))
    return standard_workload(R, title, "float64", rnn, rnn_grad_hand, (W, xs, h0), (0,),
                             rnn_torch, ops.GradOperation()(rnn), memory=True)


def workload_e(R):
    n = 10 if R.quick else 1000
    a = np.random.default_rng(3).standard_normal(n)
    title = ("(e) D2L while/if: b = 2a; double b while |b| < 1000; c = b or 100 b; sum(c), "
             "a[%d]" % n)
    return standard_workload(
        R, title, "float64", d2l, d2l_grad_hand, (a,), (0,), d2l_torch,
        ops.GradOperation()(d2l), memory=False,
        jit_note="n/a: the loop and branch depend on values (a Python while cannot be traced "
                 "by jit, and reverse mode of lax.while_loop is not supported)")


def workload_d(R):
    n = 100 if R.quick else 10000
    x = np.linspace(-2.0, 2.0, n)
    orders = range(1, 6)
    res = {"title": "(d) derivatives of tanh, orders 1-5, x[%d] float64 (elementwise: each "
                    "order differentiates the sum of the previous one)" % n,
           "dtype": "float64", "orders": {}}
    fwd = res["forward"] = {"status": "ok"}
    R.schedule(fwd, "forward_s", tanh_fn, (x,))
    jax = R.peers["jax"].mod if R.has("jax") else None
    torch = R.peers["torch"].mod if R.has("torch") else None
    for k in orders:
        ref = tanh_derivative_hand(x, k)
        row = {}
        row["hand"] = R.tool("hand", lambda v, k=k: tanh_derivative_hand(v, k), (x,), ref,
                             "float64", same_forward=fwd)
        g = tanh_fn
        for _ in range(k):
            g = ops.GradOperation()(g)
        row["s2sad"] = s2sad_tool(R, g, (x,), ref, "float64", same_forward=fwd)
        if R.has("autograd"):
            ag = R.peers["autograd"]
            f = rebind_numpy(tanh_fn, ag.np)
            for _ in range(k):
                f = ag.egrad(f)
            row["autograd"] = R.tool("autograd", f, (x,), ref, "float64", same_forward=fwd)
        else:
            row["autograd"] = R.absent("autograd")
        if torch is not None:
            xt = torch.from_numpy(x)
            row["torch"] = R.tool("torch", lambda v, k=k: _torch_nth(torch, v, k), (xt,), ref,
                                  "float64", forward=_torch_forward(torch, torch.tanh),
                                  forward_args=(xt,))
        else:
            row["torch"] = R.absent("torch")
        if jax is not None:
            jnp = R.peers["jax"].np
            f = jnp.tanh
            for _ in range(k):
                f = _jax_sum_grad(jax, jnp, f)
            xj = jax.device_put(x)
            row["jax"] = R.tool("jax", _jax_ready(jax, f), (xj,), ref, "float64",
                                forward=_jax_ready(jax, jnp.tanh), forward_args=(xj,))
            cf, cs = _jax_compiled(jax, f, (xj,))
            row["jax_jit"] = R.tool("jax_jit", _jax_ready(jax, cf), (xj,), ref, "float64",
                                    setup_s=cs, setup_what="jit trace + compile")
        else:
            row["jax"] = row["jax_jit"] = R.absent("jax")
        if R.has("tangent"):
            try:
                f, total = tanh_fn, 0.0
                for i in range(k):
                    f, s = _tangent_grad(R.peers["tangent"].mod, f, fresh=i == 0)
                    total += s
                row["tangent"] = R.tool("tangent", f, (x,), ref, "float64", same_forward=fwd,
                                        setup_s=total, setup_what="transformation")
            except Exception as e:
                row["tangent"] = {"status": "error: %s: %s" % (type(e).__name__,
                                                               str(e).splitlines()[0][:200])}
        else:
            row["tangent"] = R.absent("tangent")
        res["orders"][str(k)] = row

    # generated lines of orders 1-5 of the MLP loss w.r.t. W1
    rng = np.random.default_rng(4)
    din, hidden, batch = (32, 16, 8) if R.quick else (784, 256, 64)
    f32 = np.float32
    margs = ((rng.standard_normal((din, hidden)) / np.sqrt(din)).astype(f32),
             np.zeros(hidden, f32),
             (rng.standard_normal((hidden, NCLASSES)) / np.sqrt(hidden)).astype(f32),
             np.zeros(NCLASSES, f32), rng.standard_normal((batch, din)).astype(f32),
             rng.integers(0, NCLASSES, batch))
    mlp = {}
    g = mlp_loss
    for k in MLP_ORDERS:
        g = ops.GradOperation()(g)
        try:
            result, first_s, compile_s, compiles, recompiles, entry = s2sad_call(g, margs)
        except Exception as e:
            msg = "error: %s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:300])
            R.mismatches.append("s2sad MLP order %d: %s" % (k, msg))
            mlp[str(k)] = {"status": msg, "finite_and_shaped": False}
            break
        ok = np.shape(result) == margs[0].shape and bool(np.all(np.isfinite(result)))
        mlp[str(k)] = {"generated_lines": count_lines(entry.source), "compile_s": compile_s,
                       "first_call_s": first_s, "compiles_on_second_call": recompiles,
                       "finite_and_shaped": ok}
        R.schedule(mlp[str(k)], "run_s", g, margs)
    if R.has("jax"):
        # the order-2 result checked against JAX (same function, same seed of ones)
        jnp = R.peers["jax"].np
        f = rebind_numpy(mlp_loss, jnp)
        j2 = _jax_sum_grad(jax, jnp, lambda w: jax.grad(f)(w, *margs[1:]))
        try:
            compare(ops.GradOperation()(ops.GradOperation()(mlp_loss))(*margs),
                    j2(jax.device_put(margs[0])), "float32")
            mlp["order2_matches_jax"] = True
        except Exception as e:      # a mismatch, or s2sad failing (recorded above)
            mlp["order2_matches_jax"] = False
            R.mismatches.append("mlp order 2 vs JAX: %s" % e)
        fm = rebind_numpy(mlp_loss, jnp)
        res["jaxpr_lines"] = {
            "tanh": _jaxpr_lines(jax, jnp, jnp.tanh, x[:3], orders),
            "mlp": _jaxpr_lines(jax, jnp, lambda w: fm(w, *margs[1:]), margs[0], MLP_ORDERS)}
    res["mlp_orders"] = mlp
    R.flush()
    res["gradients_match"] = all(
        t.get("grad_matches", True) for row in res["orders"].values() for t in row.values()) and \
        mlp.get("order2_matches_jax", True) and all(
            v["finite_and_shaped"] for k, v in mlp.items() if k.isdigit())
    return res


MLP_ORDERS = range(1, 6)


def _jaxpr_lines(jax, jnp, f, x, orders):
    """Equations in JAX's jaxpr of each order (each differentiates the sum of the last)."""
    out = {}
    for k in orders:
        f = _jax_sum_grad(jax, jnp, f)
        out[str(k)] = len(jax.make_jaxpr(f)(x).eqns)
    return out


def _torch_nth(torch, x, k):
    x = x.detach().requires_grad_(True)
    y = torch.tanh(x)
    for i in range(k):
        (y,) = torch.autograd.grad(y.sum(), x, create_graph=i < k - 1)
    return y


def _jax_sum_grad(jax, jnp, f):
    def d(x):
        return jax.grad(lambda y: jnp.sum(f(y)))(x)
    return d


# ===================================================================== (f)
UNARY = ("sin", "cos", "tanh")
POOL = 4
INPUTS = ("x", "y")


def random_body(n, rng):
    """``n`` statements ``(target, op, b, c)`` over the pool variables v0..v3.

    Each statement reads the variable it overwrites (``v1 = np.sin(v1)``,
    ``v2 = v2 * v0``), so every value is live and dead-code elimination cannot
    shrink the program; the other operand of + and * is a pool variable or (one
    time in seven) an input, so the gradient neither vanishes nor overflows.
    """
    def operand():
        if rng.random() < 1.0 / 7.0:
            return rng.choice(INPUTS)
        return "v%d" % rng.randrange(POOL)

    stmts = []
    for _ in range(n):
        a = rng.randrange(POOL)
        target = "v%d" % a
        r = rng.random()
        if r < 0.6:
            stmts.append((a, rng.choice(UNARY), target, None))
        elif r < 0.85:
            stmts.append((a, "add", target, operand()))
        else:
            stmts.append((a, "mul", target, operand()))
    return stmts


def _pool_line(stmt, indent):
    a, op, b, c = stmt
    if op == "add":
        return "%sv%d = %s + %s" % (indent, a, b, c)
    if op == "mul":
        return "%sv%d = %s * %s" % (indent, a, b, c)
    return "%sv%d = np.%s(%s)" % (indent, a, op, b)


def _ssa_forward(stmts, names, prefix, indent):
    """SSA lines of ``stmts`` starting from pool names ``names``; final names, defs."""
    cur = {"v%d" % k: name for k, name in enumerate(names)}
    lines, defs = [], []
    for i, (a, op, b, c) in enumerate(stmts):
        s = "%s%d" % (prefix, i)
        b = cur.get(b, b)
        c = cur.get(c, c) if c is not None else None
        if op == "add":
            expr = "%s + %s" % (b, c)
        elif op == "mul":
            expr = "%s * %s" % (b, c)
        else:
            expr = "np.%s(%s)" % (op, b)
        lines.append("%s%s = %s" % (indent, s, expr))
        defs.append((s, op, b, c))
        cur["v%d" % a] = s
    return lines, [cur["v%d" % k] for k in range(POOL)], defs


def _ssa_adjoint(defs, seeds, indent):
    """Reverse-mode lines for SSA ``defs`` given ``[(name, adjoint expr)]``.

    Returns the lines and ``{name: adjoint variable}`` (named ``a_<name>``).
    """
    adj = {}
    lines = []

    def contrib(name, expr):
        if name in adj:
            lines.append("%s%s = %s + %s" % (indent, adj[name], adj[name], expr))
        else:
            adj[name] = "a_" + name
            lines.append("%s%s = %s" % (indent, adj[name], expr))

    for name, expr in seeds:
        contrib(name, expr)
    for s, op, b, c in reversed(defs):
        if s not in adj:
            continue
        g = adj[s]
        if op == "sin":
            contrib(b, "%s * np.cos(%s)" % (g, b))
        elif op == "cos":
            contrib(b, "-%s * np.sin(%s)" % (g, b))
        elif op == "tanh":
            contrib(b, "%s * (1.0 - %s * %s)" % (g, s, s))
        elif op == "add":
            contrib(b, g)
            contrib(c, g)
        else:
            contrib(b, "%s * %s" % (g, c))
            contrib(c, "%s * %s" % (g, b))
    return lines, adj


_INIT = ("v0 = np.sin(x)", "v1 = np.cos(y)", "v2 = x * y", "v3 = np.tanh(x)")


def _init_adjoint(pool_adj, extra_x, extra_y, indent):
    """Lines returning the gradients of x and y: through v0..v3's initial values
    (adjoints ``pool_adj[k]``) plus the terms ``extra_x`` / ``extra_y``."""
    gx, gy = list(extra_x), list(extra_y)
    a = pool_adj
    if a.get(0):
        gx.append("%s * np.cos(x)" % a[0])
    if a.get(1):
        gy.append("-%s * np.sin(y)" % a[1])
    if a.get(2):
        gx.append("%s * y" % a[2])
        gy.append("%s * x" % a[2])
    if a.get(3):
        gx.append("%s * (1.0 - p3 * p3)" % a[3])
    return ["%sg_x = %s" % (indent, " + ".join(gx) or "np.zeros_like(x)"),
            "%sg_y = %s" % (indent, " + ".join(gy) or "np.zeros_like(y)"),
            "%sreturn g_x, g_y" % indent]


def _hand_init(indent):
    return ["%sp%d = %s" % (indent, k, s.split(" = ", 1)[1]) for k, s in enumerate(_INIT)]


def straight_program(n, seed):
    """Source of ``prog(x, y)`` with ``n`` primitive calls and of its hand adjoint."""
    body = random_body(n - len(_INIT), random.Random(seed))
    src = ["import numpy as np", "", "", "def prog(x, y):"]
    src += ["    " + s for s in _INIT]
    src += [_pool_line(s, "    ") for s in body]
    src += ["    return np.sum(v0 + v1 + v2 + v3)", "", ""]
    src += ["def prog_hand(x, y):"] + _hand_init("    ")
    fwd, final, defs = _ssa_forward(body, ["p0", "p1", "p2", "p3"], "s", "    ")
    src += fwd
    src.append("    ones = np.ones_like(x)")
    bwd, adj = _ssa_adjoint(defs, [(name, "ones") for name in final], "    ")
    src += bwd
    src += _init_adjoint({k: adj.get("p%d" % k) for k in range(POOL)},
                         [adj["x"]] if "x" in adj else [], [adj["y"]] if "y" in adj else [],
                         "    ")
    return "\n".join(src) + "\n"


def loop_program(n, seed):
    """``prog(x, y, steps)``: a runtime ``for`` whose body has ``n`` primitive calls."""
    body = random_body(n, random.Random(seed))
    src = ["import numpy as np", "", "", "def prog(x, y, steps):"]
    src += ["    " + s for s in _INIT]
    src += ["    for t in range(steps.shape[0]):"]
    src += [_pool_line(s, "        ") for s in body]
    src += ["    return np.sum(v0 + v1 + v2 + v3)", "", ""]
    src += ["def prog_hand(x, y, steps):"] + _hand_init("    ")
    src += ["    q0, q1, q2, q3 = p0, p1, p2, p3", "    tape = []",
            "    for t in range(steps.shape[0]):"]
    fwd, final, defs = _ssa_forward(body, ["q0", "q1", "q2", "q3"], "s", "        ")
    src += fwd
    names = ["q0", "q1", "q2", "q3"] + [d[0] for d in defs]
    src += ["        tape.append((%s,))" % ", ".join(names),
            "        q0, q1, q2, q3 = %s" % ", ".join(final),
            "    d0 = d1 = d2 = d3 = np.ones_like(x)",
            "    acc_x = np.zeros_like(x)", "    acc_y = np.zeros_like(y)",
            "    for t in range(steps.shape[0]):",
            "        %s, = tape.pop()" % ", ".join(names)]
    bwd, adj = _ssa_adjoint(defs, [(name, "d%d" % k) for k, name in enumerate(final)],
                            "        ")
    src += bwd
    for v in INPUTS:
        if v in adj:
            src.append("        acc_%s = acc_%s + %s" % (v, v, adj[v]))
    src += ["        d%d = %s" % (k, adj.get("q%d" % k, "np.zeros_like(x)")) for k in range(POOL)]
    src += _init_adjoint({k: "d%d" % k for k in range(POOL)}, ["acc_x"], ["acc_y"], "    ")
    return "\n".join(src) + "\n"


def long_loop_program(iterations):
    src = ["import numpy as np", "", "", "def prog(x, y):", "    v = x",
           "    for t in range(%d):" % iterations,
           "        v = np.sin(v) * y + x",
           "    return np.sum(v)", "", "",
           "def prog_hand(x, y):", "    v = x", "    tape = []",
           "    for t in range(%d):" % iterations,
           "        tape.append(v)", "        v = np.sin(v) * y + x",
           "    d = np.ones_like(x)", "    g_x = np.zeros_like(x)", "    g_y = np.zeros_like(y)",
           "    for t in range(%d):" % iterations,
           "        v = tape.pop()", "        g_x += d", "        g_y += d * np.sin(v)",
           "        d = d * y * np.cos(v)",
           "    return g_x + d, g_y"]
    return "\n".join(src) + "\n"


class TempModules:
    """Generated programs as importable .py files (s2sad and tangent read source)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="s2sad_bench_")
        self.count = 0

    def load(self, source, stem):
        self.count += 1
        name = "s2sad_bench_%s_%d" % (stem, self.count)
        path = os.path.join(self.dir, name + ".py")
        with open(path, "w") as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def _finite_program(make, n, seed, args):
    """The first generated program (from ``seed`` on) whose values and gradient are finite."""
    for s in range(seed, seed + 50):
        src = make(n, s)
        ns = {}
        exec(compile(src, "<check>", "exec"), ns)
        with np.errstate(all="ignore"):
            try:
                ok = np.isfinite(ns["prog"](*args)) and all(
                    np.all(np.isfinite(g)) and np.max(np.abs(g)) < 1e6
                    for g in ns["prog_hand"](*args))
            except (OverflowError, FloatingPointError):
                ok = False
        if ok:
            return src
    raise RuntimeError("no finite program found")


# compiles of each straight-line program of (f); its compile time is their median
COMPILE_SAMPLES = 5


def _forget_compiled():
    """Empty the cache of compiled gradients and that of parsed sources: a compile
    from scratch, as a function's first gradient call makes it."""
    from s2sad.frontend import parse
    _G.cache.clear()
    parse._cache.clear()


def _compile_once(fn, args):
    """Seconds of one compile of ``fn``'s gradient, from empty caches."""
    _forget_compiled()
    c0, s0 = METER.snapshot()
    ops.GradOperation(get_all=True)(fn)(*args)
    c1, s1 = METER.snapshot()
    if c1 != c0 + 1:
        raise RuntimeError("expected one compile, measured %d" % (c1 - c0))
    return s1 - s0


def _compile_samples(programs):
    """``{key: [seconds, ...]}``: ``COMPILE_SAMPLES`` compiles of each ``(key, fn, args)``.

    The programs take turns, round after round, before any other tool runs:
    the target is a ratio of two of these times, so both are sampled in the
    same state of the process (a peer compiling a large program in between
    once made the next compiles 40% slower).
    """
    samples = {key: [] for key, _, _ in programs}
    for _ in range(COMPILE_SAMPLES):
        for key, fn, args in programs:
            samples[key].append(_compile_once(fn, args))
    return samples


def workload_f(R, tmp, peer_max):
    sizes = (100, 300, 1000) if R.quick else (100, 1000, 10000)
    body_n = 100 if R.quick else 1000
    iters = 100 if R.quick else 1000
    x = np.linspace(-1.0, 1.0, 16)
    y = np.linspace(0.5, 1.5, 16)
    res = {"title": "(f) transformation time of generated programs (random mixes of sin, cos, "
                    "tanh, + and * over 4 variables; x[16], y[16] float64)",
           "dtype": "float64", "sizes": list(sizes), "programs": {}}
    progs = [("straight_%d" % n, "straight-line, %d calls" % n, n,
              _finite_program(straight_program, n, 0, (x, y)), (x, y)) for n in sizes]
    steps = np.zeros(3)
    progs.append(("loop_body_%d" % body_n, "for loop (3 iterations), body of %d calls" % body_n,
                  body_n, _finite_program(loop_program, body_n, 0, (x, y, steps)),
                  (x, y, steps)))
    progs.append(("loop_iters_%d" % iters, "for loop of %d iterations, 3-call body" % iters,
                  3, long_loop_program(iters), (x, y)))
    mods = {key: tmp.load(src, key) for key, _, _, src, _ in progs}
    samples = _compile_samples([(key, mods[key].prog, args) for key, _, _, _, args in progs
                                if key.startswith("straight")])
    for key, label, n, src, args in progs:
        mod = mods[key]
        ref = mod.prog_hand(*args)
        entry = {"label": label, "primitive_calls": n}
        gf = ops.GradOperation(get_all=True)(mod.prog)
        want = ref if len(args) == 2 else (ref[0], ref[1], np.zeros_like(steps))
        fwd = entry["numpy"] = {"status": "ok"}
        R.schedule(fwd, "forward_s", mod.prog, args)
        straight = key.startswith("straight")
        _forget_compiled()
        entry["s2sad"] = s2sad_tool(R, gf, args, want, "float64", same_forward=fwd)
        if straight and entry["s2sad"].get("compile_s") is not None:
            # one compile is one sample, and the ratio of two of them is the
            # target: the median of those sampled above (this one came after
            # other tools ran)
            entry["s2sad"]["compile_s_samples"] = samples[key]
            entry["s2sad"]["compile_s"] = statistics.median(samples[key])
        entry["hand"] = R.tool("hand", mod.prog_hand, args, ref, "float64", same_forward=fwd)
        if straight and R.has("tangent"):
            if n <= peer_max:
                try:
                    g, s = _tangent_grad(R.peers["tangent"].mod, mod.prog, wrt=(0, 1))
                    entry["tangent"] = R.tool("tangent", g, args, ref, "float64", setup_s=s,
                                              setup_what="transformation")
                except Exception as e:
                    entry["tangent"] = {"status": "error: %s: %s" % (
                        type(e).__name__, str(e).splitlines()[0][:200])}
            else:
                entry["tangent"] = {"status": "skipped (more than --f-peer-max=%d calls)"
                                              % peer_max}
        elif straight:
            entry["tangent"] = R.absent("tangent")
        if straight and R.has("jax"):
            if n <= peer_max:
                jax = R.peers["jax"].mod
                f = rebind_numpy(mod.prog, R.peers["jax"].np)
                j_args = tuple(jax.device_put(a) for a in args)
                cg, cs = _jax_compiled(jax, jax.grad(f, argnums=(0, 1)), j_args)
                entry["jax_jit"] = R.tool("jax_jit", _jax_ready(jax, cg), j_args, ref, "float64",
                                          setup_s=cs, setup_what="jit trace + compile")
            else:
                entry["jax_jit"] = {"status": "skipped (more than --f-peer-max=%d calls)"
                                              % peer_max}
        elif straight:
            entry["jax_jit"] = R.absent("jax")
        R.flush()
        res["programs"][key] = entry
    s = [res["programs"]["straight_%d" % n]["s2sad"].get("compile_s") for n in sizes]
    if None not in s:
        res["compile_ratio_largest_over_middle"] = s[2] / s[1]
        res["size_ratio_largest_over_middle"] = sizes[2] / sizes[1]
    res["gradients_match"] = all(
        t.get("grad_matches", True) for p in res["programs"].values() for t in p.values()
        if isinstance(t, dict))
    return res


# ===================================================================== targets
def targets(results):
    """``(description, value text, PASS/MISS/n/a)`` for every target."""
    out = []

    def tool(w, name):
        return results.get(w, {}).get("tools", {}).get(name, {})

    def add(desc, value, ok, fmt="%.2f"):
        if value is None:
            out.append({"target": desc, "value": None, "result": "n/a"})
        else:
            out.append({"target": desc, "value": value,
                        "result": "PASS" if ok(value) else "MISS", "text": fmt % value})

    for w, limit in (("a", 1.10), ("b", 1.10), ("e", 1.10), ("c", 1.5)):
        if w in results:
            add("(%s) s2sad gradient <= %.2fx hand-written" % (w, limit),
                results[w].get("ratios", {}).get("s2sad_over_hand"), lambda v, l=limit: v <= l, "%.2fx")
    if "c" in results:
        ag = results["c"].get("ratios", {}).get("s2sad_over_autograd")
        add("(c) s2sad >= 5x faster than autograd", None if ag is None else 1.0 / ag,
            lambda v: v >= 5.0, "%.1fx faster")
        for peer, label in (("torch", "PyTorch eager"), ("jax", "JAX eager")):
            r = results["c"].get("ratios", {}).get("s2sad_over_" + peer)
            add("(c) s2sad faster than %s" % label, None if r is None else 1.0 / r,
                lambda v: v > 1.0, "%.2fx faster")
    for w in ("a", "b", "c"):
        if w in results:
            add("(%s) s2sad gradient / NumPy forward <= 3" % w,
                tool(w, "s2sad").get("grad_over_forward"), lambda v: v <= 3.0, "%.2f")
    if "d" in results:
        d = results["d"]
        lines = [row["s2sad"].get("generated_lines") for row in d["orders"].values()]
        mlp = [v.get("generated_lines") for k, v in d["mlp_orders"].items() if k.isdigit()]
        for what, ls in (("tanh", lines), ("MLP loss", mlp)):
            ok = len(ls) >= 3 and None not in ls
            n = len(ls)
            add("(d) %s: generated lines of order %d <= %dx order 1 (linear growth)"
                % (what, n, n), ls[-1] / ls[0] if ok else None,
                lambda v, n=n: v <= n, "%.1fx")
    if "programs" in results.get("f", {}):
        f = results["f"]
        r = f.get("compile_ratio_largest_over_middle")
        sizes = f["sizes"]
        limit = 1.2 * sizes[2] / sizes[1]
        add("(f) compile time %d-call program <= %.0fx the %d-call one (linear)"
            % (sizes[2], limit, sizes[1]), r, lambda v: v <= limit, "%.1fx")
        mid = f["programs"]["straight_%d" % sizes[1]]["s2sad"].get("compile_s")
        add("(f) compile time of the %d-call program < 1 s" % sizes[1], mid,
            lambda v: v < 1.0, "%.3f s")
    recompiles = []
    for w, r in results.items():
        for entry in _s2sad_entries(r):
            if "compiles_on_second_call" in entry:
                recompiles.append(entry["compiles_on_second_call"])
    add("cache: the second call compiles nothing (%d gradient functions)" % len(recompiles),
        sum(recompiles) if recompiles else None, lambda v: v == 0, "%d recompilations")
    for w in ("a", "b"):
        if w in results:
            add("(%s) s2sad gradient peak memory <= 1.2x hand-written" % w,
                results[w].get("ratios", {}).get("s2sad_peak_over_hand_peak"), lambda v: v <= 1.2,
                "%.2fx")
    return out


def _s2sad_entries(r):
    if "tools" in r:
        yield r["tools"].get("s2sad", {})
    for row in r.get("orders", {}).values():
        yield row.get("s2sad", {})
    for row in r.get("mlp_orders", {}).values():
        if isinstance(row, dict):
            yield row
    for row in r.get("programs", {}).values():
        yield row.get("s2sad", {})


# ===================================================================== output
def _ms(v):
    if v is None:
        return ""
    if v >= 100:
        return "%.0f" % (v * 1e3)
    return "%.3g" % (v * 1e3)


def _x(v, fmt="%.2f"):
    return "" if v is None else fmt % v


def _table(head, rows):
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    lines = [" | ".join(str(h).ljust(w) if i == 0 else str(h).rjust(w)
                        for i, (h, w) in enumerate(zip(head, widths)))]
    lines.append("-+-".join("-" * w for w in widths))
    for r in rows:
        lines.append(" | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(line.rstrip() for line in lines)


def _status_notes(entries):
    """One line per distinct non-ok status (``entries``: ``(label, entry)`` pairs)."""
    seen = {}
    for label, e in entries:
        status = e.get("status", "ok")
        if status == "ok":
            continue
        text = status + (" (%s)" % e["detail"] if "detail" in e else "")
        seen.setdefault(text, []).append(label)
    return ["%s: %s" % (", ".join(labels) if len(labels) <= 3 else
                        "%s and %d more" % (", ".join(labels[:3]), len(labels) - 3), text)
            for text, labels in seen.items()]


def _short(status):
    """A status short enough for a table cell (the full text goes in the notes)."""
    if status.startswith("n/a"):
        return "n/a"
    if status.startswith("not available"):
        return "not installed"
    if status.startswith("skipped"):
        return "skipped"
    if status.startswith("error"):
        return "error"
    return status[:24]


def format_standard(res):
    tools = res["tools"]
    s = tools.get("s2sad", {})
    memory = "forward_peak_bytes" in tools.get("numpy", {})
    head = ["tool", "grad ms", "fwd ms", "grad/fwd", "s2sad/tool", "setup ms"]
    if memory:
        head += ["peak grad/fwd"]
    rows = [["NumPy forward", "", _ms(tools["numpy"]["forward_s"]), "", "", ""]
            + ([""] if memory else [])]
    notes = []
    for name in TOOLS:
        t = tools.get(name)
        if t is None:
            continue
        if "grad_s" not in t:
            status = t.get("status", "")
            rows.append([TOOL_LABELS[name], _short(status)] + [""] * (len(head) - 2))
            if status != _short(status) or "detail" in t:
                notes.append("%s: %s%s" % (TOOL_LABELS[name], status,
                                           " (%s)" % t["detail"] if "detail" in t else ""))
            continue
        setup = ""
        if "setup_s" in t:
            setup = "%s (%s)" % (_ms(t["setup_s"]), t["setup_what"])
        row = [TOOL_LABELS[name], _ms(t["grad_s"]), _ms(t.get("forward_s")),
               _x(t.get("grad_over_forward")),
               _x(s["grad_s"] / t["grad_s"]) if "grad_s" in s else "", setup]
        if memory:
            row.append(_x(t.get("memory_ratio")) if "memory_ratio" in t
                       else ("n/a" if name in ("torch", "jax", "jax_jit") else ""))
        rows.append(row)
    out = [res["title"], _table(head, rows)]
    if "compiles_on_second_call" in s:
        notes.append("s2sad: first call %s ms (compile %s ms), %d generated lines, "
                     "second call compiled %d time(s)"
                     % (_ms(s["first_call_s"]), _ms(s["compile_s"]), s["generated_lines"] or 0,
                        s["compiles_on_second_call"]))
    r = res["ratios"]
    if "s2sad_peak_over_hand_peak" in r:
        notes.append("s2sad gradient peak memory / hand-written gradient peak: %.2f (%.1f / %.1f "
                     "MiB)" % (r["s2sad_peak_over_hand_peak"], s["grad_peak_bytes"] / 2 ** 20,
                               tools["hand"]["grad_peak_bytes"] / 2 ** 20))
    if memory:
        notes.append("peak memory: tracemalloc during one call; it does not see PyTorch or "
                     "JAX allocations (n/a)")
    notes.append("gradients match the hand-written one: %s" % res["gradients_match"])
    return "\n".join(out + notes)


def format_d(res):
    head = ["order", "hand ms", "s2sad ms", "s2sad compile ms", "s2sad lines", "autograd ms",
            "torch ms", "jax ms", "jax jit ms (compile)", "tangent ms (transform)"]
    rows = []
    for k, row in res["orders"].items():
        def t(name, key="grad_s"):
            e = row.get(name, {})
            return _ms(e[key]) if key in e else _short(e.get("status", ""))
        s = row["s2sad"]
        jj = row.get("jax_jit", {})
        tg = row.get("tangent", {})
        rows.append([k, t("hand"), t("s2sad"), _ms(s.get("compile_s")),
                     s.get("generated_lines", ""), t("autograd"), t("torch"), t("jax"),
                     "%s (%s)" % (_ms(jj["grad_s"]), _ms(jj["setup_s"])) if "grad_s" in jj
                     else _short(jj.get("status", "")),
                     "%s (%s)" % (_ms(tg["grad_s"]), _ms(tg["setup_s"])) if "grad_s" in tg
                     else _short(tg.get("status", ""))])
    out = [res["title"], "tanh forward (NumPy): %s ms" % _ms(res["forward"].get("forward_s")),
           _table(head, rows)]
    out += _status_notes((TOOL_LABELS[name] + " order " + k, e)
                         for k, row in res["orders"].items() for name, e in row.items())
    jl = res.get("jaxpr_lines", {})
    if jl:
        out.append("tanh, JAX jaxpr equations by order: %s" % ", ".join(
            "%s: %d" % kv for kv in jl["tanh"].items()))
    mh = ["MLP loss (a) w.r.t. W1, order", "generated lines", "JAX jaxpr equations",
          "compile ms", "run ms"]
    mrows = [[k, v.get("generated_lines", ""), jl.get("mlp", {}).get(k, "n/a"),
              _ms(v.get("compile_s")), _ms(v.get("run_s"))]
             if "status" not in v else [k, _short(v["status"]), "", "", ""]
             for k, v in res["mlp_orders"].items() if k.isdigit()]
    out.append(_table(mh, mrows))
    if "order2_matches_jax" in res["mlp_orders"]:
        out.append("MLP order 2 matches JAX: %s" % res["mlp_orders"]["order2_matches_jax"])
    out.append("gradients match the hand-written ones: %s" % res["gradients_match"])
    return "\n".join(out)


def format_f(res):
    head = ["program", "s2sad compile ms", "lines", "2nd call compiles", "s2sad run ms",
            "hand run ms", "s2sad/hand", "tangent transform ms", "jax jit compile ms"]
    rows = []
    for key, p in res["programs"].items():
        s = p["s2sad"]
        h = p["hand"]

        def setup(name):
            e = p.get(name)
            if e is None:
                return ""
            return _ms(e["setup_s"]) if "setup_s" in e else _short(e.get("status", ""))
        rows.append([p["label"], _ms(s.get("compile_s")), s.get("generated_lines", ""),
                     s.get("compiles_on_second_call", ""), _ms(s.get("grad_s")),
                     _ms(h.get("grad_s")),
                     _x(s["grad_s"] / h["grad_s"]) if "grad_s" in s and "grad_s" in h else "",
                     setup("tangent"), setup("jax_jit")])
    out = [res["title"], _table(head, rows)]
    out += _status_notes((TOOL_LABELS[name] + ", " + p["label"], e)
                         for p in res["programs"].values() for name, e in p.items()
                         if isinstance(e, dict))
    if "compile_ratio_largest_over_middle" in res:
        out.append("s2sad compile time ratio, %d calls / %d calls: %.1fx (sizes ratio %.0fx; "
                   "compile times of straight-line programs: medians of %d compiles)"
                   % (res["sizes"][2], res["sizes"][1], res["compile_ratio_largest_over_middle"],
                      res["size_ratio_largest_over_middle"], COMPILE_SAMPLES))
    out.append("gradients match the hand-written ones: %s" % res["gradients_match"])
    return "\n".join(out)


def format_targets(ts):
    head = ["target", "measured", "result"]
    rows = [[t["target"], t.get("text", "n/a"), t["result"]] for t in ts]
    return "Targets\n" + _table(head, rows)


def machine_info(R):
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "s2sad": s2sad.__version__, "platform": platform.platform(),
            "threads": 1, "xla_flags": os.environ.get("XLA_FLAGS", "")}
    try:
        info["load_average_at_start"] = list(os.getloadavg())
    except OSError:
        pass
    for name in PEER_NAMES:
        info[name] = R.peers[name].version if R.has(name) else R.peer_status[name]
    return info


WORKLOADS = {"a": workload_a, "b": workload_b, "c": workload_c, "d": workload_d,
             "e": workload_e}


def main(argv=None):
    global METER
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (for CI)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timed samples per measurement (default 21, 3 with --quick)")
    parser.add_argument("--only", default="a,b,c,d,e,f",
                        help="comma-separated workloads among a,b,c,d,e,f (default all)")
    parser.add_argument("--peers", default="all",
                        help="peers to use: 'all' (default), 'none' or a comma-separated list "
                             "of %s" % ", ".join(PEER_NAMES))
    parser.add_argument("--f-peer-max", type=int, default=None,
                        help="largest program of (f) given to tangent and JAX jit "
                             "(default 1000, 100 with --quick)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="what a time is: this process's CPU time (default) or wall time")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 3 if args.quick else 21
    if args.repeat < 1:
        parser.error("--repeat must be positive")
    if args.f_peer_max is None:
        args.f_peer_max = 100 if args.quick else 1000
    only = [w.strip() for w in args.only.split(",") if w.strip()]
    bad = [w for w in only if w not in "abcdef" or len(w) != 1]
    if bad:
        parser.error("unknown workload(s): %s" % ", ".join(bad))

    _clock[0] = CLOCKS[args.clock]
    METER = CompileMeter()
    R = Runner(args)
    info = machine_info(R)
    print("s2sad benchmark%s: %s, %s cores, Python %s, NumPy %s, one thread; %s time, median "
          "of %d interleaved samples" % (" (--quick)" if args.quick else "", info["cpu"],
                                         info["cores"], info["python"], info["numpy"],
                                         "CPU" if args.clock == "cpu" else "wall", args.repeat))
    print("peers: " + ", ".join("%s %s" % (n, info[n]) for n in PEER_NAMES))
    if "load_average_at_start" in info:
        print("load average at start: %.2f" % info["load_average_at_start"][0])
    print()
    start = time.perf_counter()
    results = {}
    tmp = TempModules()
    try:
        for w in "abcdef":
            if w not in only:
                continue
            t0 = time.perf_counter()
            try:
                if w == "f":
                    results[w] = workload_f(R, tmp, args.f_peer_max)
                    print(format_f(results[w]))
                else:
                    results[w] = WORKLOADS[w](R)
                    print(format_d(results[w]) if w == "d" else format_standard(results[w]))
            except Exception:
                # a crash in one workload is reported, the others still run
                R.jobs, R.links = [], []
                text = traceback.format_exc()
                results[w] = {"error": text, "gradients_match": False}
                R.mismatches.append("workload (%s) crashed: %s"
                                    % (w, text.strip().splitlines()[-1]))
                print("(%s) crashed:\n%s" % (w, text))
            results[w]["seconds"] = time.perf_counter() - t0
            print()
            sys.stdout.flush()
    finally:
        tmp.close()
    ts = targets(results)
    print(format_targets(ts))
    ok = all(r.get("gradients_match", False) for r in results.values()) and not R.mismatches
    print()
    print("all gradients match: %s; total %.0f s" % (ok, time.perf_counter() - start))
    for m in R.mismatches:
        print("FAILED " + m)
    if args.json:
        out = {"machine": info, "options": {"quick": args.quick, "repeat": args.repeat,
                                            "clock": args.clock,
                                            "only": only, "f_peer_max": args.f_peer_max},
               "workloads": results, "targets": ts, "all_gradients_match": ok,
               "total_s": time.perf_counter() - start}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2, sort_keys=True, default=_json_default)
            f.write("\n")
    return 0 if ok else 1


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.bool_):
        return bool(o)
    return str(o)


if __name__ == "__main__":
    sys.exit(main())
