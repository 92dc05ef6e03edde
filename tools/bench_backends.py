"""Benchmark s2sad's generated code on other array libraries against their own AD.

One NumPy-style loss (a tanh MLP with softmax cross-entropy, written once with
``np.*`` calls) is differentiated by s2sad and run on each library present:
NumPy, PyTorch (CPU, and CUDA when a GPU is present), CuPy (GPU) and JAX
(op by op, and with ``s2sad.options(backend_jit=True)``).  Each is compared,
in the same process and interleaved rounds, with that library's own way of
getting the same gradient: a hand-written NumPy/CuPy gradient, ``torch.autograd``
on the same model written with ``torch`` calls, ``jax.grad`` and
``jax.jit(jax.grad)``.  Every gradient is checked against NumPy's before it
is timed; GPU work is synchronised before each clock read.  The ratios are
reported, never asserted (timings are not tests).

    python tools/bench_backends.py [--sizes small,large] [--repeat N] [--dtype float32|float64]
                                   [--gpu-only] [--cells] [--models convnet,lstm,transformer]
                                   [--json out.json]

``--cells`` also times one ``TrainOneStepCell`` step (Momentum) of the same MLP
as an ``nn.Cell`` under each data setting (NumPy; ``array_library="torch"``;
``device_target="GPU"``) against PyTorch's own step on the same weights (the
first step's losses must agree).
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

import s2sad

SIZES = {"small": (64, 784, 256, 10), "large": (4096, 1024, 4096, 1024)}


def mlp_loss(w1, b1, w2, b2, x, y):
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    z = z - np.max(z, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z), axis=1))
    return np.mean(lse - np.sum(z * y, axis=1))


def mlp_grad_by_hand(xp, w1, b1, w2, b2, x, y):
    """The gradient with respect to (w1, b1, w2, b2), written out (NumPy or CuPy)."""
    h = xp.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    z = z - xp.max(z, axis=1, keepdims=True)
    e = xp.exp(z)
    dz = (e / xp.sum(e, axis=1, keepdims=True) - y) / x.shape[0]
    dh = (dz @ w2.T) * (1 - h * h)
    return x.T @ dh, xp.sum(dh, axis=0), h.T @ dz, xp.sum(dz, axis=0)


def make_inputs(size, dtype, seed=0):
    n, d, hidden, k = size
    rng = np.random.default_rng(seed)
    w1 = rng.normal(scale=d ** -0.5, size=(d, hidden))
    w2 = rng.normal(scale=hidden ** -0.5, size=(hidden, k))
    b1, b2 = np.zeros(hidden), np.zeros(k)
    x = rng.normal(size=(n, d))
    y = np.eye(k)[rng.integers(0, k, size=n)]
    return tuple(a.astype(dtype) for a in (w1, b1, w2, b2, x, y))


GRAD = s2sad.grad(mlp_loss, grad_position=(0, 1, 2, 3))


def contenders(args, dtype, gpu_only=False):
    """{(library, name): (callable, to_numpy, sync)} for every library present
    (on a GPU only, with ``gpu_only``)."""
    out = {("numpy", "s2sad"): (lambda: GRAD(*args), np.asarray, None),
           ("numpy", "hand"): (lambda: mlp_grad_by_hand(np, *args), np.asarray, None)}
    out.update(_torch(args))
    out.update(_cupy(args))
    out.update(_jax(args, dtype))
    if gpu_only:
        out = {k: v for k, v in out.items() if not k[0].endswith("cpu") and k[0] != "numpy"}
    return out


def _torch(args):
    try:
        import torch
    except ImportError:
        return {}
    out = {}
    for device in ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",):
        targs = tuple(torch.from_numpy(a).to(device) for a in args)
        sync = torch.cuda.synchronize if device == "cuda" else None

        def eager(targs=targs):
            ws = [a.detach().requires_grad_() for a in targs[:4]]
            x, y = targs[4:]
            z = torch.tanh(x @ ws[0] + ws[1]) @ ws[2] + ws[3]
            z = z - torch.amax(z, dim=1, keepdim=True)
            loss = torch.mean(torch.log(torch.sum(torch.exp(z), dim=1)) - torch.sum(z * y, dim=1))
            return torch.autograd.grad(loss, ws)
        lib = "torch-" + device
        out[(lib, "s2sad")] = (lambda targs=targs: GRAD(*targs), _torch_np, sync)
        out[(lib, "torch.autograd")] = (eager, _torch_np, sync)
    return out


def _torch_np(t):
    return t.detach().cpu().numpy()


def _cupy(args):
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return {}
    cargs = tuple(cupy.asarray(a) for a in args)
    sync = cupy.cuda.Device().synchronize
    return {("cupy", "s2sad"): (lambda: GRAD(*cargs), cupy.asnumpy, sync),
            ("cupy", "hand"): (lambda: mlp_grad_by_hand(cupy, *cargs), cupy.asnumpy, sync)}


def _jax(args, dtype):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    if dtype == np.float64:
        jax.config.update("jax_enable_x64", True)
    jargs = tuple(jnp.asarray(a) for a in args)
    device = str(jargs[0].devices().pop().platform)

    def jloss(w1, b1, w2, b2, x, y):
        z = jnp.tanh(x @ w1 + b1) @ w2 + b2
        z = z - jnp.max(z, axis=1, keepdims=True)
        return jnp.mean(jnp.log(jnp.sum(jnp.exp(z), axis=1)) - jnp.sum(z * y, axis=1))
    jgrad = jax.grad(jloss, argnums=(0, 1, 2, 3))
    jitted = jax.jit(jgrad)
    s2_jit = s2sad.grad(mlp_loss, grad_position=(0, 1, 2, 3))

    def s2sad_jit():
        with s2sad.options(backend_jit=True):
            return s2_jit(*jargs)
    lib = "jax-" + device
    return {(lib, "s2sad"): (lambda: GRAD(*jargs), np.asarray, None),
            (lib, "s2sad backend_jit"): (s2sad_jit, np.asarray, None),
            (lib, "jax.grad"): (lambda: jgrad(*jargs), np.asarray, None),
            (lib, "jax.jit(jax.grad)"): (lambda: jitted(*jargs), np.asarray, None)}


def timed(fn, sync):
    t = time.perf_counter()
    out = fn()
    if sync is not None:
        sync()
    else:
        for g in out:
            getattr(g, "block_until_ready", lambda: None)()
    return time.perf_counter() - t, out


def run(size_name, dtype, repeat, gpu_only=False):
    args = make_inputs(SIZES[size_name], dtype)
    ref = mlp_grad_by_hand(np, *make_inputs(SIZES[size_name], np.float64))
    found = contenders(args, dtype, gpu_only)
    table = {}
    for key, (fn, to_np, sync) in found.items():
        _, got = timed(fn, sync)     # compile and warm up; then check
        tol = 1e-8 if dtype == np.float64 else 2e-3
        for g, r in zip(got, ref):
            if not np.allclose(to_np(g), r, rtol=tol, atol=tol):
                sys.exit("WRONG gradient from %s %s" % key)
        table[key] = []
    for _ in range(repeat):         # interleaved rounds
        for key, (fn, _, sync) in found.items():
            table[key].append(timed(fn, sync)[0])
    return {k: statistics.median(v) for k, v in table.items()}


def report(size_name, medians):
    libs = sorted({lib for lib, _ in medians})
    print("\n### %s %s\n" % (size_name, SIZES[size_name]))
    print("| library | contender | median ms | s2sad / this |")
    print("|---|---|---|---|")
    for lib in libs:
        mine = medians.get((lib, "s2sad"), float("nan"))
        for (l2, name), t in sorted(medians.items()):
            if l2 == lib:
                print("| %s | %s | %.3f | %.2f |" % (lib, name, t * 1e3, mine / t))


def cell_steps(size, dtype=np.float32):
    """{name: (one training step, the first step's loss)} of an MLP Cell trained with
    ``TrainOneStepCell`` and Momentum: s2sad on NumPy, on PyTorch's CPU, on the
    GPU (``device_target="GPU"``), and PyTorch's own step on the same weights."""
    from s2sad import Tensor, context, nn
    n, d, hidden, k = size
    rng = np.random.default_rng(0)
    x_np = rng.normal(size=(n, d)).astype(dtype)
    y_np = rng.integers(0, k, size=n).astype(np.int32)
    settings = [("numpy", dict(device_target="CPU", array_library="numpy"))]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        settings.append(("torch-cpu", dict(device_target="CPU", array_library="torch")))
        if torch.cuda.is_available():
            settings.append(("torch-cuda", dict(device_target="GPU")))
    out, weights = {}, None
    for name, setting in settings:
        context.set_context(**setting)
        s2sad.set_seed(0)
        net = nn.SequentialCell([nn.Dense(d, hidden), nn.Tanh(), nn.Dense(hidden, k)])
        loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                     reduction="mean"))
        step = nn.TrainOneStepCell(loss, nn.Momentum(net.trainable_params(), 0.01, 0.9))
        x, y = Tensor(x_np), Tensor(y_np)
        weights = weights or [np.array(p.asnumpy(), copy=True) for p in net.trainable_params()]
        first = float(step(x, y))
        sync = torch.cuda.synchronize if name == "torch-cuda" else None
        out[(name, "s2sad TrainOneStepCell")] = (lambda step=step, x=x, y=y: step(x, y),
                                                 first, sync)
    context.set_context(device_target="CPU", array_library="numpy")
    if torch is not None:
        for device in ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",):
            out[("torch-" + device, "torch step")] = _torch_step(torch, device, weights, x_np,
                                                                 y_np, hidden, k)
    return out


def _torch_step(torch, device, weights, x_np, y_np, hidden, k):
    model = torch.nn.Sequential(torch.nn.Linear(x_np.shape[1], hidden), torch.nn.Tanh(),
                                torch.nn.Linear(hidden, k)).to(device)
    with torch.no_grad():
        for p, w in zip(model.parameters(), weights):   # MindSpore's Dense is [out, in] too
            p.copy_(torch.from_numpy(w))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.from_numpy(x_np).to(device), torch.from_numpy(y_np).long().to(device)
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        return loss
    first = float(step().detach())
    return step, first, torch.cuda.synchronize if device == "cuda" else None


def run_cells(size_name, repeat):
    found = cell_steps(SIZES[size_name])
    firsts = {k: v[1] for k, v in found.items()}
    ref = firsts[("numpy", "s2sad TrainOneStepCell")]
    for key, first in firsts.items():
        if not np.isclose(first, ref, rtol=1e-3):
            sys.exit("WRONG first loss from %s %s: %r, NumPy's %r" % (key + (first, ref)))
    times = {k: [] for k in found}
    for _ in range(repeat):
        for key, (fn, _, sync) in found.items():
            t = time.perf_counter()
            fn()
            if sync is not None:
                sync()
            times[key].append(time.perf_counter() - t)
    medians = {k: statistics.median(v) for k, v in times.items()}
    print("\n### training step, %s %s\n" % (size_name, SIZES[size_name]))
    print("| library | contender | median ms | s2sad / this |")
    print("|---|---|---|---|")
    for (lib, name), t in sorted(medians.items()):
        mine = medians.get((lib, "s2sad TrainOneStepCell"), float("nan"))
        print("| %s | %s | %.3f | %.2f |" % (lib, name, t * 1e3, mine / t))
    return medians


MODELS = {"convnet": ("lenet_td", "lenet_data", tuple(range(10))),
          "lstm": ("lstm", "lstm_data", (0, 1, 2)),
          "transformer": ("block", "block_data", tuple(range(6)))}


def model_contenders(name, quick=False):
    """{(library, contender): (callable, to_numpy, sync)} for one of ``tools/bench_models``'
    NumPy models: s2sad's gradient on PyTorch (CPU, CUDA) and JAX arrays, next to
    ``torch.autograd`` of the same function written with ``torch`` calls and
    ``jax.jit(jax.grad)`` of it written with ``jax.numpy``; plus the NumPy reference."""
    import bench as B
    import bench_models as BM
    import bench_models_defs as M
    fn_name, data_name, wrt = MODELS[name]
    fn, args = getattr(M, fn_name), getattr(M, data_name)(quick)
    grad = s2sad.grad(fn, grad_position=wrt)
    out = {("numpy", "s2sad"): (lambda: grad(*args), np.asarray, None)}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        tfn = B.rebind_numpy(fn, BM.torch_numpy(torch))
        for device in ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",):
            targs = tuple(torch.from_numpy(a).to(device) for a in args)
            sync = torch.cuda.synchronize if device == "cuda" else None
            peer = BM._torch_grad_at(torch, tfn, wrt)
            out[("torch-" + device, "s2sad")] = (lambda t=targs: grad(*t), _torch_np, sync)
            out[("torch-" + device, "torch.autograd")] = (lambda t=targs, g=peer: g(*t),
                                                          _torch_np, sync)
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return out
    jargs = tuple(jnp.asarray(a) for a in args)
    jitted = jax.jit(jax.grad(B.rebind_numpy(fn, jnp), argnums=wrt))
    lib = "jax-" + str(jargs[0].devices().pop().platform)

    def s2sad_jit():
        with s2sad.options(backend_jit=True):
            return grad(*jargs)
    out[(lib, "s2sad backend_jit")] = (s2sad_jit, np.asarray, None)
    out[(lib, "jax.jit(jax.grad)")] = (lambda: jitted(*jargs), np.asarray, None)
    return out


def run_models(names, repeat, quick=False):
    """Time ``model_contenders`` of each model, interleaved; print the ratios."""
    results = {}
    for name in names:
        found = model_contenders(name, quick)
        ref = found[("numpy", "s2sad")][0]()
        times = {}
        for key, (fn, to_np, sync) in found.items():
            try:
                _, got = timed(fn, sync)
            except Exception as e:      # noqa: BLE001 (reported, not fatal)
                print("%s %s: %s: %s" % (key + (type(e).__name__, str(e).splitlines()[0][:120])))
                continue
            for g, r in zip(got, ref):
                if not np.allclose(to_np(g), r, rtol=2e-3, atol=2e-4):
                    sys.exit("WRONG gradient from %s %s on %s" % (key + (name,)))
            times[key] = []
        for _ in range(repeat):
            for key in times:
                fn, _, sync = found[key]
                times[key].append(timed(fn, sync)[0])
        medians = {k: statistics.median(v) for k, v in times.items()}
        print("\n### %s (tools/bench_models_defs.py)\n" % name)
        print("| library | contender | median ms | s2sad / this |")
        print("|---|---|---|---|")
        for (lib, who), t in sorted(medians.items()):
            mine = medians.get((lib, "s2sad"), medians.get((lib, "s2sad backend_jit")))
            print("| %s | %s | %.3f | %.2f |" % (lib, who, t * 1e3,
                                                  (mine or float("nan")) / t))
        results[name] = {"%s/%s" % k: v for k, v in medians.items()}
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="small")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--gpu-only", action="store_true",
                        help="time the GPU libraries only (NumPy still gives the reference)")
    parser.add_argument("--cells", action="store_true",
                        help="also time a TrainOneStepCell step of an MLP Cell on each setting")
    parser.add_argument("--models", default="",
                        help="also time bench_models' convnet,lstm,transformer on each library")
    parser.add_argument("--json")
    opts = parser.parse_args()
    dtype = np.dtype(opts.dtype).type
    results = {}
    for size_name in opts.sizes.split(","):
        medians = run(size_name, dtype, opts.repeat, opts.gpu_only)
        report(size_name, medians)
        results[size_name] = {"%s/%s" % k: v for k, v in medians.items()}
        if opts.cells:
            cells = run_cells(size_name, opts.repeat)
            results[size_name + "-cells"] = {"%s/%s" % k: v for k, v in cells.items()}
    if opts.models:
        sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
        results.update(run_models(opts.models.split(","), opts.repeat))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
