"""Shape work between values known to be 0-d is dropped (``opt/scalars.py`` ``scalar_shapes``).

The program is RK4 on the Lorenz system, stepped over NumPy-scalar state.
Its gradient is compared with the same gradient compiled without the pass
(same operations, so the same floats) and with central differences of the
function run eagerly; programs where a scalar meets an array keep the
``unbroadcast`` that sums the array's gradient down to the scalar.
"""
import numpy as np
import pytest

import s2sad
from s2sad import driver as G
from s2sad.opt import pipeline

from gradcheck import numeric_grad
from sources import load_source

SOURCE = """
def lorenz(x, y, z, sigma, rho, beta):
    return sigma * (y - x), x * (rho - z) - y, x * y - beta * z


def rk4(state, sigma, rho, beta, dt, n):
    x, y, z = state
    for i in range(n):
        k1x, k1y, k1z = lorenz(x, y, z, sigma, rho, beta)
        k2x, k2y, k2z = lorenz(x + 0.5 * dt * k1x, y + 0.5 * dt * k1y, z + 0.5 * dt * k1z,
                               sigma, rho, beta)
        k3x, k3y, k3z = lorenz(x + 0.5 * dt * k2x, y + 0.5 * dt * k2y, z + 0.5 * dt * k2z,
                               sigma, rho, beta)
        k4x, k4y, k4z = lorenz(x + dt * k3x, y + dt * k3y, z + dt * k3z, sigma, rho, beta)
        x = x + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z = z + dt / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
    return x * y + z


def damped(h, s, a):
    # h starts 0-d and becomes an array on the first step: never assumed 0-d
    for i in range(3):
        h = s * h + a
    return np.sum(h * h)


def scaled_sum(s, a):
    return np.sum(s * a + s * s)


def branch(x, s):
    if x > 0:
        y = x * s
    else:
        y = x + s
    return y * y + np.sum(s)
"""

RK4_WRT = (0, 1, 2, 3)
SHAPE_WORK = ("ShapeOf", "unbroadcast", "accumulate_at", "broadcast_like")


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("scalars"), SOURCE, "scalar_programs")


def rk4_args(rng, steps=20):
    f = np.float64
    state = tuple(f(v) for v in rng.uniform(-2.0, 2.0, 3))
    return (state, f(rng.uniform(8, 12)), f(rng.uniform(20, 30)), f(rng.uniform(2, 3)),
            0.01, steps)


def compiled(fn, args, wrt, disabled=frozenset()):
    """The gradient at ``args`` and its generated source, with ``disabled`` passes off."""
    G.cache.clear()
    with pipeline.options(disabled_passes=disabled):
        g = s2sad.grad(fn, grad_position=wrt)
        return g(*args), s2sad.get_source(g)


def flat(grads):
    out = []
    for g in grads:
        out.extend(flat(g) if isinstance(g, tuple) else [np.asarray(g, dtype=np.float64)])
    return out


def test_rk4_gradient_has_no_shape_work(mod):
    args = rk4_args(np.random.default_rng(0))
    _, src = compiled(mod.rk4, args, RK4_WRT)
    _, before = compiled(mod.rk4, args, RK4_WRT, {"scalar_shapes"})
    for name in SHAPE_WORK[:3]:
        assert name in before           # what the pass has to remove
        assert name not in src, name
    # the loop pushes values only, one tuple of NumPy scalars per step
    push = [line for line in src.splitlines() if "stack.append" in line]
    assert len(push) == 1 and "ShapeOf" not in push[0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rk4_same_as_without_pass_and_fd(mod, seed):
    args = rk4_args(np.random.default_rng(seed))
    got, _ = compiled(mod.rk4, args, RK4_WRT)
    want, _ = compiled(mod.rk4, args, RK4_WRT, {"scalar_shapes"})
    for a, b in zip(flat(got), flat(want)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
    state, rest = args[0], args[1:]
    fd = [numeric_grad(lambda x0, *r: mod.rk4((x0,) + state[1:], *r), (state[0],) + rest, 0),
          numeric_grad(lambda x2, *r: mod.rk4(state[:2] + (x2,), *r), (state[2],) + rest, 0)]
    fd += [numeric_grad(lambda *a: mod.rk4(state, *a), rest, i) for i in range(3)]
    g = flat(got)
    for k, want_k in zip((0, 2, 3, 4, 5), fd):
        np.testing.assert_allclose(g[k], want_k, rtol=1e-6, atol=1e-6)
    assert all(type(v) is np.float64 for v in got[0] + got[1:])


def test_mutable_python_numbers_are_0d(mod):
    m = s2sad.mutable
    args = ((0.5, -0.3, 1.2), m(10.0), m(28.0), 8.0 / 3.0, 0.01, 5)
    got, src = compiled(mod.rk4, args, (1, 2))
    want, _ = compiled(mod.rk4, args, (1, 2), {"scalar_shapes"})
    assert "unbroadcast" not in src and "ShapeOf" not in src
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    fd = [numeric_grad(lambda s, r: mod.rk4(args[0], s, r, *args[3:]), (10.0, 28.0), i)
          for i in range(2)]
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6)
    # a mutable array is another compile, whose shapes are not assumed
    got, src = compiled(mod.rk4, ((0.5, -0.3, 1.2), m(np.array([10.0, 11.0])), m(28.0),
                                  8.0 / 3.0, 0.01, 5), (1, 2))
    assert np.shape(got[0]) == (2,) and "unbroadcast" in src


def test_scalar_meeting_array_keeps_its_unbroadcast(mod):
    rng = np.random.default_rng(4)
    s, a = np.float64(0.7), rng.standard_normal((2, 3))
    got, src = compiled(mod.scaled_sum, (s, a), (0, 1))
    assert "rt.unbroadcast(" in src
    assert np.shape(got[0]) == () and np.shape(got[1]) == (2, 3)
    for i in range(2):
        np.testing.assert_allclose(got[i], numeric_grad(mod.scaled_sum, (s, a), i),
                                   rtol=1e-6, atol=1e-8)


def test_loop_value_that_grows_into_an_array(mod):
    rng = np.random.default_rng(5)
    args = (np.float64(0.3), np.float64(0.9), rng.standard_normal(4))
    got, src = compiled(mod.damped, args, (0, 1, 2))
    want, _ = compiled(mod.damped, args, (0, 1, 2), {"scalar_shapes"})
    assert "unbroadcast" in src
    assert [np.shape(v) for v in got] == [(), (), (4,)]
    for i in range(3):
        np.testing.assert_allclose(got[i], want[i], rtol=1e-13, atol=0)
        np.testing.assert_allclose(got[i], numeric_grad(mod.damped, args, i),
                                   rtol=1e-6, atol=1e-8)


def test_0d_array_input_is_not_assumed_0d(mod):
    """An ndarray of shape () compiles to code that also serves larger arrays."""
    a = np.arange(3.0)
    got, src = compiled(mod.scaled_sum, (np.array(0.7), a), (0, 1))
    assert "rt.unbroadcast(" in src
    g = s2sad.grad(mod.scaled_sum, grad_position=(0, 1))
    bigger = (np.array([0.7, 0.2, -1.0]), a)
    for i in range(2):
        np.testing.assert_allclose(g(*bigger)[i], numeric_grad(mod.scaled_sum, bigger, i),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("x", [1.5, -1.5])
def test_branches_of_scalars(mod, x):
    args = (np.float64(x), np.float64(0.4))
    got, src = compiled(mod.branch, args, (0, 1))
    want, _ = compiled(mod.branch, args, (0, 1), {"scalar_shapes"})
    assert "unbroadcast" not in src
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    for i in range(2):
        np.testing.assert_allclose(got[i], numeric_grad(mod.branch, args, i),
                                   rtol=1e-6, atol=1e-8)


def test_second_order_of_a_scalar_loop(mod):
    """Grad of grad through the loop agrees with differences of the first gradient."""
    f = np.float64
    state = (f(0.5), f(-0.3), f(1.2))

    def d_sigma(sigma, rho):
        return s2sad.grad(mod.rk4, grad_position=1)(state, sigma, rho, f(8 / 3), 0.01, 4)

    got = s2sad.grad(d_sigma, grad_position=(0, 1))(f(10.0), f(28.0))
    for i in range(2):
        np.testing.assert_allclose(got[i], numeric_grad(d_sigma, (f(10.0), f(28.0)), i),
                                   rtol=1e-5, atol=1e-7)
