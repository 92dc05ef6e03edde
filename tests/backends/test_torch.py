"""Generated code run on PyTorch CPU tensors: ``xp`` is the inputs' namespace."""
import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install -e '.[torch]' runs these tests)")
pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")

import s2sad  # noqa: E402
from s2sad import driver as G  # noqa: E402
from s2sad.errors import CompileError  # noqa: E402
from backend_cases import IDS, PROGRAMS, assert_same_gradients, numpy_and_other  # noqa: E402
from catalogue import ENTRIES  # noqa: E402
from gradcheck import numeric_grad  # noqa: E402


def to_numpy(t):
    return t.numpy()


@pytest.mark.parametrize("entry", PROGRAMS, ids=IDS)
def test_catalogue_on_torch_matches_numpy(entry):
    args, expected, got = numpy_and_other(entry, torch.from_numpy)
    assert_same_gradients(args, expected, got, torch.Tensor, to_numpy)
    assert all(g.dtype == torch.float64 for g in got)


def f(x, y):
    return np.sum(np.sin(x) * y + np.tanh(x @ y))


def test_gradients_keep_float32():
    x = torch.linspace(-1, 1, 9, dtype=torch.float32).reshape(3, 3)
    y = torch.tensor([0.5, -0.25, 1.0], dtype=torch.float32)
    gx, gy = s2sad.grad(f, grad_position=(0, 1))(x, y)
    assert gx.dtype == gy.dtype == torch.float32
    ex, ey = s2sad.grad(f, grad_position=(0, 1))(x.numpy(), y.numpy())
    np.testing.assert_allclose(gx.numpy(), ex, rtol=1e-5)
    np.testing.assert_allclose(gy.numpy(), ey, rtol=1e-5)


def test_second_order_and_other_transforms():
    x = torch.linspace(-1, 1, 4, dtype=torch.float64)
    xn = x.numpy()

    def g(x):
        return np.sum(np.sin(x) ** 3)
    h = s2sad.grad(s2sad.grad(g))(x)
    assert isinstance(h, torch.Tensor)
    np.testing.assert_allclose(h.numpy(), s2sad.grad(s2sad.grad(g))(xn), rtol=1e-12)
    value, d = s2sad.value_and_grad(g)(x)
    assert isinstance(value, torch.Tensor) and isinstance(d, torch.Tensor)
    np.testing.assert_allclose(d.numpy(), 3 * np.sin(xn) ** 2 * np.cos(xn), rtol=1e-12)
    out, tangent = s2sad.jvp(g, (x,), (torch.ones_like(x),))
    np.testing.assert_allclose(float(tangent), np.sum(3 * np.sin(xn) ** 2 * np.cos(xn)))
    np.testing.assert_allclose(float(s2sad.jit(g)(x)), g(xn))


def test_the_library_is_part_of_the_cache_key():
    xn = np.linspace(-1, 1, 5)

    def k(x):
        return np.sum(np.exp(x) * x)
    grad_k = s2sad.grad(k)
    s2sad.clear_caches()    # the cache holds at most 256 entries: a full one would not grow
    before = len(G.cache)
    numpy_grad = grad_k(xn)
    numpy_entry = grad_k.__s2sad_compiled__()
    torch_grad = grad_k(torch.from_numpy(xn))
    torch_entry = grad_k.__s2sad_compiled__()
    again = grad_k(xn)
    assert len(G.cache) == before + 2
    assert numpy_entry is not torch_entry
    assert numpy_entry.backend is None
    assert torch_entry.backend.library == "torch"
    assert torch_entry.backend.xp.sin is not np.sin
    assert grad_k.__s2sad_compiled__() is numpy_entry
    assert type(numpy_grad) is np.ndarray and type(again) is np.ndarray
    assert isinstance(torch_grad, torch.Tensor)
    np.testing.assert_allclose(torch_grad.numpy(), numpy_grad, rtol=1e-15)
    source = s2sad.get_source(grad_k, torch.from_numpy(xn))
    assert source.splitlines()[0] == "# runs on torch arrays (cpu), op by op"
    assert not s2sad.get_source(grad_k, xn).startswith("# runs on")


def test_mixed_libraries_are_refused():
    x = torch.ones(3, dtype=torch.float64)
    with pytest.raises(TypeError, match="mix torch arrays with a NumPy array.*torch.as_tensor"):
        s2sad.grad(f, grad_position=(0, 1))(torch.ones(3, 3, dtype=torch.float64), np.ones(3))
    with pytest.raises(TypeError, match="different libraries or devices"):
        s2sad.grad(f, grad_position=(0, 1))(torch.ones(3, 3, device="meta"), x)


def test_a_primitive_without_a_torch_helper_is_refused_while_compiling():
    def tiled(x):
        return np.sum(np.tile(x, 2) * x[0])
    with pytest.raises(CompileError) as err:
        s2sad.grad(tiled)(torch.ones(3, dtype=torch.float64))
    message = str(err.value)
    assert "TileGrad" in message and "torch arrays" in message and "rt.array_tile_grad" in message
    assert "np.tile(x, 2)" in message        # the user's line, with a caret


def test_a_cell_holding_numpy_parameters_is_refused():
    net = next(e for e in ENTRIES if e.name == "small_net").fn
    with pytest.raises(TypeError, match="reads NumPy data.*torch arrays"):
        s2sad.grad(net)(torch.ones(2, 3, dtype=torch.float64))


def test_a_global_numpy_array_is_refused():
    idx = np.array([0, 2])

    def gather(x):
        return np.sum(x[idx])
    assert s2sad.grad(gather)(np.ones(3)).tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(TypeError, match="reads NumPy data.*convert that data"):
        s2sad.grad(gather)(torch.ones(3, dtype=torch.float64))


def test_an_unsupported_library_is_named():
    fake = type("Tensor", (), {"__module__": "tensorflow", "shape": (3,), "device": "gpu"})()
    with pytest.raises(TypeError, match="tensorflow arrays yet"):
        s2sad.grad(lambda x: x)(fake)


def test_jacobians_say_they_take_numpy():
    with pytest.raises(TypeError, match="'jacrev'.*torch array.*use grad, vjp or jvp"):
        s2sad.jacrev(np.sin)(torch.ones(3, dtype=torch.float64))


def test_repeated_positions_add_up_and_repeated_writes_are_refused():
    idx = torch.tensor([0, 0, 2])     # a closure's array of the arguments' library

    def gather(x):
        return np.sum(x[idx] * np.array([1.0, 2.0, 3.0]))
    g = s2sad.grad(gather)(torch.zeros(3, dtype=torch.float64))
    np.testing.assert_allclose(g.numpy(), [3.0, 0.0, 3.0])

    def overwrite(x, v):
        y = x * 1.0
        y[idx] = v
        return np.sum(y)
    with pytest.raises(ValueError, match="several times"):
        s2sad.grad(overwrite, grad_position=(0, 1))(torch.zeros(3, dtype=torch.float64),
                                                     torch.ones(3, dtype=torch.float64))


def test_arrays_made_from_numbers_go_to_the_arguments_device():
    """``xp.arange(0, n, 1)`` in generated code (a pooling window's positions) must be
    made on the device the code runs on (CUDA on a GPU): checked with PyTorch's
    ``meta`` device, which has no data."""
    from s2sad.backend.namespaces import backend_for
    xp = backend_for("torch", "meta").xp
    assert xp.arange(0, 4, 1).device.type == "meta"
    assert xp.zeros((2,), dtype=torch.float32).device.type == "meta"
    assert xp.zeros((2,), device="cpu").device.type == "cpu"
    assert backend_for("torch", "cpu").xp.arange(3).device.type == "cpu"


def _heads(x, w):
    n, t, d = x.shape
    q = np.transpose((x @ w).reshape(n, t, 2, d // 2), (0, 2, 1, 3))
    return np.sum(np.tanh(q / np.sqrt(d // 2)))


def _unstacked(x):
    a, b, c = np.stack([x, 2 * x, x * x])
    return np.sum(a * b + c)


def test_numpy_transpose_axes_sqrt_of_a_shape_and_unstacking_run_on_torch():
    """``np.transpose(x, axes)`` (PyTorch's transpose swaps two dims), ``np.sqrt`` of a
    run-time int from a shape (PyTorch's sqrt takes tensors only), and unpacking an
    array into rows: each ran on NumPy only (a raw TypeError, or a refusal)."""
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 4))
    for fn, args in ((_heads, (x, w)), (_unstacked, (x,))):
        positions = tuple(range(len(args)))
        want = s2sad.grad(fn, grad_position=positions)(*args)
        got = s2sad.grad(fn, grad_position=positions)(*map(torch.from_numpy, args))
        for g, e in zip(got, want):
            np.testing.assert_allclose(g.numpy(), e, rtol=1e-12)


def _conv_by_tensordot(x, c):
    cols = np.stack([x[:, i:i + 3, :] for i in range(2)], axis=2)
    return np.sum(np.tanh(np.tensordot(cols, c, axes=([2, 3], [0, 1]))))


def test_tensordot_over_two_axes_and_its_gradients_run_on_torch():
    """im2col by slicing + ``np.tensordot(cols, c, axes=([2, 3], [0, 1]))``: the
    gradients' helpers existed for NumPy only (refused), and the forward call
    passed ``axes`` by position, which PyTorch's array-API ``tensordot`` refuses."""
    rng = np.random.default_rng(4)
    x, c = rng.normal(size=(2, 4, 5)), rng.normal(size=(2, 5, 3))
    want = s2sad.grad(_conv_by_tensordot, grad_position=(0, 1))(x, c)
    got = s2sad.grad(_conv_by_tensordot, grad_position=(0, 1))(torch.from_numpy(x),
                                                                torch.from_numpy(c))
    for g, e in zip(got, want):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-12)


def _selected_fast(g):
    """The packed gradient function behind ``s2sad.grad(..., grad_position=...)``."""
    from s2sad.api.functional import _SelectedGrad
    cells = [c.cell_contents for c in g.__closure__ or ()]
    return next(c for c in cells if isinstance(c, _SelectedGrad))._fast_packed


def test_prepared_call_path_on_torch_tensors():
    """After the first call, torch tensors of the same devices skip specs and the cache
    lookup; what it returns equals finite differences of the NumPy function, and a
    call with NumPy arrays or another number of arguments takes the general path."""
    g = s2sad.grad(f, grad_position=(0, 1))
    rng = np.random.default_rng(5)
    x0, y0 = rng.standard_normal((3, 3)), rng.standard_normal(3)
    g(torch.from_numpy(x0), torch.from_numpy(y0))
    assert _selected_fast(g) is not None
    for _ in range(2):
        x, y = rng.standard_normal((3, 3)), rng.standard_normal(3)
        gx, gy = g(torch.from_numpy(x), torch.from_numpy(y))
        assert type(gx) is torch.Tensor and gx.dtype == torch.float64
        np.testing.assert_allclose(gx.numpy(), numeric_grad(f, [x, y], 0), rtol=1e-6)
        np.testing.assert_allclose(gy.numpy(), numeric_grad(f, [x, y], 1), rtol=1e-6)
    ex, ey = g(x, y)                    # NumPy arrays: NumPy's code, NumPy results
    assert type(ex) is np.ndarray
    np.testing.assert_allclose(ex, gx.numpy(), rtol=1e-12)
    gx32, _ = g(torch.from_numpy(x).float(), torch.from_numpy(y).float())
    assert gx32.dtype == torch.float32
    np.testing.assert_allclose(gx32.numpy(), ex, rtol=1e-4)
