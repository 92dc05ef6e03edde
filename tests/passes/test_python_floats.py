"""0-d float64 values as Python floats (``opt/floats.py``), and 0-d arrays compiled apart.

Every result is compared with the same program compiled with the pass off
and with central finite differences; the generated source shows whether
the inputs were converted.
"""
import numpy as np
import pytest

import s2sad
from gradcheck import numeric_grad



def _off():
    from s2sad.opt.options import options
    return options(disabled_passes={"python_floats"})


def lorenz(s, r, b, x, y, z):
    """A few RK2 steps of the Lorenz system, scalars only."""
    h = 0.01
    for _ in range(20):
        kx, ky, kz = s * (y - x), x * (r - z) - y, x * y - b * z
        x2, y2, z2 = x + 0.5 * h * kx, y + 0.5 * h * ky, z + 0.5 * h * kz
        x = x + h * (s * (y2 - x2))
        y = y + h * (x2 * (r - z2) - y2)
        z = z + h * (x2 * y2 - b * z2)
    return x + y + z


def _args(make):
    return tuple(make(v) for v in (10.0, 28.0, 8.0 / 3.0, 1.0, 1.0, 1.05))


def _fd(f, args, k):
    """Central difference of ``f`` in argument ``k``, in float64."""
    return numeric_grad(f, [np.array(float(a)) for a in args], k)


@pytest.mark.parametrize("make", [lambda v: np.array(v), np.float64], ids=["0-d array", "np.float64"])
def test_scalar_loop_runs_on_python_floats(make):
    args = _args(make)
    g = s2sad.grad(lorenz, grad_position=(0, 1, 2, 3))
    got = g(*args)
    src = s2sad.get_source(g, *args)
    assert "= float(s)" in src and "= float(x)" in src
    with _off():
        ref = s2sad.grad(lambda *a: lorenz(*a), grad_position=(0, 1, 2, 3))(*args)
    for k, (a, b) in enumerate(zip(got, ref)):
        assert type(a) is type(args[k]) and a.dtype == np.float64
        np.testing.assert_allclose(a, b, rtol=1e-13)
        np.testing.assert_allclose(a, _fd(lorenz, args, k), rtol=1e-6)


def test_value_keeps_numpys_type():
    args = _args(np.float64)
    value, grads = s2sad.value_and_grad(lorenz, grad_position=0)(*args)
    assert type(value) is np.float64
    np.testing.assert_allclose(value, lorenz(*args), rtol=1e-13)


def test_float32_scalars_stay_numpy():
    args = _args(np.float32)
    g = s2sad.grad(lorenz, grad_position=(0, 1))
    got = g(*args)
    assert "float(" not in s2sad.get_source(g, *args)
    assert all(type(v) is np.float32 for v in got)


def f_mixed(s, a):
    """A 0-d float64 meeting a float32 array: NumPy 2 promotes to float64."""
    return np.sum((s * s) * a)


def test_operand_of_other_dtype_keeps_numpy_scalar():
    s, a = np.array(1.5), np.arange(3, dtype=np.float32)
    g = s2sad.grad(f_mixed, grad_position=(0, 1))
    ds, da = g(s, a)
    assert "float(s)" not in s2sad.get_source(g, s, a)
    np.testing.assert_allclose(ds, 2 * 1.5 * a.astype(np.float64).sum(), rtol=1e-6)
    assert da.dtype == np.float32


def f_div(x, y):
    return x / y + x * y


def test_division_keeps_numpy_semantics():
    """A Python float divided by zero raises; NumPy's gives inf: no conversion."""
    g = s2sad.grad(f_div, grad_position=(0, 1))
    x, y = np.array(2.0), np.array(0.0)
    assert "float(y)" not in s2sad.get_source(g, x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        dx, dy = g(x, y)
    assert np.isinf(dx)


def f_unary(x, y):
    for _ in range(3):
        x = np.sin(x) * y + x
    return x


def test_unary_ufuncs_take_floats():
    args = (np.array(0.3), np.array(1.7))
    g = s2sad.grad(f_unary, grad_position=(0, 1))
    got = g(*args)
    assert "float(x)" in s2sad.get_source(g, *args)
    for k in range(2):
        np.testing.assert_allclose(got[k], _fd(f_unary, args, k), rtol=1e-7)


def f_while(x):
    while x < 10.0:
        x = x * 1.5
    return x * x


def test_comparisons_keep_numpy_scalars():
    g = s2sad.grad(f_while)
    x = np.array(1.0)
    assert "float(x)" not in s2sad.get_source(g, x)
    np.testing.assert_allclose(g(x), _fd(f_while, (x,), 0), rtol=1e-6)


def f_scale(s, v):
    return np.sum(s * v) * s


def test_zero_d_code_is_not_reused_for_arrays():
    """0-d arrays compile apart (no shape work); a later call with arrays of
    another shape gets code that broadcasts, on every call path."""
    g = s2sad.grad(f_scale, grad_position=(0, 1))
    for _ in range(3):
        ds, dv = g(np.array(2.0), np.array(3.0))
        np.testing.assert_allclose((ds, dv), (12.0, 4.0))
    s, v = np.array([2.0]), np.array([3.0, 4.0])
    for _ in range(3):
        ds, dv = g(s, v)
        np.testing.assert_allclose(ds, [2 * 2.0 * 7.0])
        np.testing.assert_allclose(dv, [4.0, 4.0])
    ds, dv = g(np.array(2.0), v)
    np.testing.assert_allclose(ds, 2 * 2.0 * 7.0)
    np.testing.assert_allclose(dv, [4.0, 4.0])


def f_index(x, c):
    for i in range(6):
        x = x * c + i * x - i
    return x


def test_loop_index_is_a_number():
    args = (np.array(0.7), np.array(0.5))
    g = s2sad.grad(f_index, grad_position=(0, 1))
    got = g(*args)
    assert "float(x)" in s2sad.get_source(g, *args)
    for k in range(2):
        np.testing.assert_allclose(got[k], _fd(f_index, args, k), rtol=1e-7)
