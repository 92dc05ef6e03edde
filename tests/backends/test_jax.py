"""Generated code run on JAX CPU arrays, op by op and under ``jax.jit``."""
import numpy as np
import pytest

jax = pytest.importorskip(
    "jax", reason="JAX is not installed (pip install -e '.[jax]' runs these tests)")
pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")

import jax.numpy as jnp  # noqa: E402

import s2sad  # noqa: E402
from backend_cases import IDS, PROGRAMS, assert_same_gradients, numpy_and_other  # noqa: E402
from catalogue import ENTRIES  # noqa: E402
from s2sad.backend.namespaces import device_of  # noqa: E402

#: JAX's default device: ``cpu:0`` here, ``cuda:0`` on a machine with a GPU
DEVICE = device_of(jnp.zeros(1))


@pytest.fixture(autouse=True)
def float64():
    """JAX keeps float64 only when asked; NumPy's results are float64."""
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("entry", PROGRAMS, ids=IDS)
def test_catalogue_on_jax_matches_numpy(entry):
    args, expected, got = numpy_and_other(entry, jnp.asarray)
    assert_same_gradients(args, expected, got, jax.Array, np.asarray)
    assert all(g.dtype == jnp.float64 for g in got)


@pytest.mark.parametrize("name", ["mlp", "softmax_cross_entropy", "slices", "gather_rows"])
def test_straight_line_programs_run_under_jax_jit(name):
    entry = next(e for e in ENTRIES if e.name == name)
    args, expected, _ = numpy_and_other(entry, jnp.asarray)
    grad_fn = s2sad.grad(entry.fn, grad_position=tuple(range(len(args))))
    with s2sad.options(backend_jit=True):
        got = grad_fn(*map(jnp.asarray, args))
        again = grad_fn(*map(jnp.asarray, args))
    assert s2sad.get_source(grad_fn).splitlines()[0] == "# runs on jax arrays (%s), jax.jit" % DEVICE
    assert_same_gradients(args, expected, got, jax.Array, np.asarray)
    assert_same_gradients(args, expected, again, jax.Array, np.asarray)


def test_control_flow_on_values_falls_back_to_op_by_op():
    entry = next(e for e in ENTRIES if e.name == "branch_positive")
    args, expected, _ = numpy_and_other(entry, jnp.asarray)
    grad_fn = s2sad.grad(entry.fn, grad_position=(0,))
    with s2sad.options(backend_jit=True):
        got = grad_fn(*map(jnp.asarray, args))
        again = grad_fn(*map(jnp.asarray, args))
    source = s2sad.get_source(grad_fn)
    assert source.startswith("# runs on jax arrays (%s), op by op: jax.jit cannot trace" % DEVICE)
    assert_same_gradients(args, expected, got, jax.Array, np.asarray)
    assert_same_gradients(args, expected, again, jax.Array, np.asarray)


def test_without_the_option_code_runs_op_by_op():
    x = jnp.linspace(-1.0, 1.0, 4)

    def f(x):
        return np.sum(np.tanh(x) * x)
    grad_f = s2sad.grad(f)
    g = grad_f(x)
    assert s2sad.get_source(grad_f).splitlines()[0] == "# runs on jax arrays (%s), op by op" % DEVICE
    xn = np.asarray(x)
    np.testing.assert_allclose(np.asarray(g), np.tanh(xn) + xn / np.cosh(xn) ** 2, rtol=1e-12)


def test_mixing_jax_and_torch_is_refused():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")

    def f(x, y):
        return np.sum(x * y)
    with pytest.raises(TypeError, match="different libraries or devices"):
        s2sad.grad(f, grad_position=(0, 1))(jnp.ones(3), torch.ones(3, dtype=torch.float64))


def _weights_of_batched_rows(x, w, b):
    return np.sum(np.tanh(x @ w + b) ** 2)


@pytest.mark.parametrize("shape", [(3, 5, 4), (2, 3, 2, 4), (0, 2, 4)])
def test_matrix_gradient_of_batched_rows_is_exact(shape):
    """``x @ W`` with a batched ``x``: the gradient of ``W`` (the rows stacked into
    one product) equals NumPy's and finite differences, op by op and under jax.jit."""
    from gradcheck import numeric_grad
    rng = np.random.default_rng(3)
    x, w, b = rng.normal(size=shape), rng.normal(size=(4, 6)), rng.normal(size=6)
    grad_fn = s2sad.grad(_weights_of_batched_rows, grad_position=(0, 1, 2))
    expected = s2sad.grad(_weights_of_batched_rows, grad_position=(0, 1, 2))(x, w, b)
    for jit in (False, True):
        with s2sad.options(backend_jit=jit):
            got = grad_fn(*map(jnp.asarray, (x, w, b)))
        assert_same_gradients((x, w, b), expected, got, jax.Array, np.asarray)
    for i in range(3):
        np.testing.assert_allclose(np.asarray(got[i]),
                                   numeric_grad(_weights_of_batched_rows, (x, w, b), i),
                                   rtol=1e-6, atol=1e-8)


def test_matrix_gradient_of_batched_rows_is_one_unbatched_product():
    """What ``jax.jit`` compiles for ``W``'s gradient: one 2-D product of the stacked
    rows (as ``jax.grad`` gives), no batched product summed over the batch, which
    XLA keeps as it is (1.6x the time of ``jax.jit(jax.grad)`` on a transformer block)."""
    grad_fn = s2sad.grad(_weights_of_batched_rows, grad_position=(1,))
    jaxpr = jax.make_jaxpr(grad_fn)(jnp.ones((3, 5, 4)), jnp.ones((4, 6)), jnp.ones(6))
    eqns = jaxpr.jaxpr.eqns
    batched = [e for e in eqns if e.primitive.name == "dot_general"
               and e.params["dimension_numbers"][1][0]]
    assert batched == []
    assert [e for e in eqns if e.primitive.name == "reduce_sum"] == []
