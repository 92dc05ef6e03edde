"""Generated code on a GPU: PyTorch CUDA tensors, CuPy arrays, JAX on its GPU.

Skipped where no GPU is present (the default CI machine has none).  On a
machine with one, run ``python -m pytest -q tests/backends`` (docs/backends.md
says how); each library present with a working device is checked: the
program catalogue's gradients equal NumPy's, come back on the inputs'
device and dtype, and mixing devices is refused.
"""
import numpy as np
import pytest

import s2sad
from backend_cases import IDS, PROGRAMS, assert_same_gradients, numpy_and_other


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _cupy():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception:       # not installed, or no driver / device
        return None
    return cupy


torch = _torch_cuda()
cupy = _cupy()
needs_torch = pytest.mark.skipif(
    torch is None, reason="PyTorch sees no CUDA GPU on this machine: these checks run where one is "
    "(docs/backends.md, 'GPUs')")
needs_cupy = pytest.mark.skipif(
    cupy is None, reason="CuPy with a working CUDA device is not installed: these checks run where "
    "one is (docs/backends.md, 'GPUs')")


def loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2) + np.mean(np.exp(-w * w))


@needs_torch
@pytest.mark.parametrize("entry", PROGRAMS, ids=IDS)
def test_catalogue_on_torch_cuda_matches_numpy(entry):
    args, expected, got = numpy_and_other(entry, lambda a: torch.from_numpy(a).cuda())
    assert_same_gradients(args, expected, got, torch.Tensor, lambda t: t.cpu().numpy())
    assert all(g.is_cuda and g.dtype == torch.float64 for g in got)


@needs_torch
def test_torch_cuda_float32_second_order_and_device_mixing():
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(4, 3)), rng.normal(size=(5, 4))
    wt, xt = (torch.tensor(a, dtype=torch.float32, device="cuda") for a in (w, x))
    dw = s2sad.grad(loss)(wt, xt)
    assert dw.is_cuda and dw.dtype == torch.float32
    np.testing.assert_allclose(dw.cpu().numpy(), s2sad.grad(loss)(w, x), rtol=2e-4, atol=1e-5)
    assert "(cuda:0)" in s2sad.get_source(s2sad.grad(loss), wt, xt).splitlines()[0]

    def g(v):
        return np.sum(np.sin(v) ** 3)
    v = torch.linspace(-1, 1, 7, dtype=torch.float64, device="cuda")
    h = s2sad.grad(s2sad.grad(g))(v)
    np.testing.assert_allclose(h.cpu().numpy(), s2sad.grad(s2sad.grad(g))(v.cpu().numpy()),
                               rtol=1e-12)
    with pytest.raises(TypeError, match="device"):
        s2sad.grad(loss)(wt, xt.cpu())


@needs_cupy
@pytest.mark.parametrize("entry", PROGRAMS, ids=IDS)
def test_catalogue_on_cupy_matches_numpy(entry):
    args, expected, got = numpy_and_other(entry, cupy.asarray)
    assert_same_gradients(args, expected, got, cupy.ndarray, cupy.asnumpy)
    assert all(g.dtype == cupy.float64 for g in got)


@needs_cupy
def test_cupy_repeated_positions_add_up_and_constants_move_to_the_device():
    idx = cupy.asarray([0, 0, 2])

    def gather(x):
        return np.sum(x[idx] * np.array([1.0, 2.0, 3.0]))
    g = s2sad.grad(gather)(cupy.zeros(3))
    assert isinstance(g, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(g), [3.0, 0.0, 3.0])
    with pytest.raises(TypeError):
        s2sad.grad(loss)(cupy.ones((4, 3)), np.ones((5, 4)))
