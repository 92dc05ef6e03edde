"""NumPy's further elementwise functions (``fabs``, ``hypot``, ``fmax``, ``sinc``,
``cbrt``, ``copysign``, ``heaviside``, ``nan_to_num``, ``real``...), the
``operator`` functions and ``functools.reduce``: reverse and forward mode
against float64 central differences, second order, broadcasting, and values
and dtypes against NumPy's own.
"""
import functools
import math
import operator

import numpy as np
import pytest

import s2sad
from s2sad.ops.composite import GradOperation

from gradcheck import check_jvp, check_vjp

RNG = np.random.default_rng(27)
X = RNG.uniform(0.2, 0.9, (3, 4))
NEG = RNG.uniform(-0.9, -0.1, (3, 4))
ROW = RNG.uniform(0.3, 1.2, (4,))
MIXED = np.where(RNG.standard_normal((3, 4)) > 0, 1.0, -1.0) * RNG.uniform(0.3, 1.5, (3, 4))


def f_fabs(x):
    return np.fabs(x) * x


def f_hypot(x, y):
    return np.hypot(x, y)


def f_fmax(x, y):
    return np.fmax(x, y)


def f_fmin(x, y):
    return np.fmin(x, y)


def f_logaddexp2(x, y):
    return np.logaddexp2(x, y)


def f_sinc(x):
    return np.sinc(x)


def f_angles(x):
    return np.deg2rad(x) + np.rad2deg(x) * np.radians(x) - np.degrees(x)


def f_nan_to_num(x):
    return np.nan_to_num(x) * x


def f_cbrt(x):
    return np.cbrt(x)


def f_copysign(x, y):
    return np.copysign(x, y)


def f_heaviside(x, h):
    return np.heaviside(x, h) * 2.0 + x


def f_float_power(x, y):
    return np.float_power(x, y)


def f_expm1_log1p(x):
    return np.expm1(x) * np.log1p(x)


def f_real_parts(x):
    return np.real(x) * 2.0 + np.imag(x) + np.conj(x) * np.conjugate(x)


def f_real_attributes(x):
    return x.real * x + x.imag + x.conj()


def f_clip_traced(x, lo):
    return np.clip(x, lo, 0.6)


def f_operators(x, y):
    return (operator.add(x, y) * operator.mul(x, y) - operator.sub(x, y) / operator.truediv(x, 2.0)
            + operator.neg(x) + operator.pow(x, 2.0) + operator.mod(x, 0.3) + operator.pos(y))


def f_operator_matmul(x, y):
    return operator.matmul(x, y.T)


def f_reduce_mul(x):
    return functools.reduce(operator.mul, [x, x + 1.0, x * 2.0])


def f_reduce_initial(x):
    return functools.reduce(operator.add, (x, x * x), 1.0)


def f_sign_exp2_logs(x):
    return np.sign(x) * x + np.exp2(x) + np.log2(x) + np.log10(x)


# (name, function, arguments): broadcasting pairs use a (3, 4) and a (4,) input
CASES = [
    ("fabs", f_fabs, (MIXED,)),
    ("hypot", f_hypot, (X, NEG)),
    ("hypot_broadcast", f_hypot, (MIXED, ROW)),
    ("fmax", f_fmax, (X, NEG + 0.8)),
    ("fmax_broadcast", f_fmax, (X, ROW)),
    ("fmin", f_fmin, (X, NEG + 0.8)),
    ("fmin_broadcast", f_fmin, (ROW, X)),
    ("logaddexp2", f_logaddexp2, (X, ROW)),
    ("sinc", f_sinc, (MIXED,)),
    ("angles", f_angles, (MIXED,)),
    ("nan_to_num", f_nan_to_num, (MIXED,)),
    ("cbrt", f_cbrt, (MIXED,)),
    ("copysign", f_copysign, (MIXED, NEG)),
    ("copysign_broadcast", f_copysign, (MIXED, ROW - 0.7)),
    ("heaviside", f_heaviside, (MIXED, ROW)),
    ("float_power", f_float_power, (X, MIXED)),
    ("expm1_log1p", f_expm1_log1p, (X,)),
    ("real_imag_conj", f_real_parts, (MIXED,)),
    ("real_attributes", f_real_attributes, (MIXED,)),
    ("clip_traced_bound", f_clip_traced, (X, np.float64(0.4))),
    ("operator", f_operators, (X, X + 1.0)),
    ("operator_matmul", f_operator_matmul, (X, MIXED)),
    ("reduce_mul", f_reduce_mul, (MIXED,)),
    ("reduce_initial", f_reduce_initial, (MIXED,)),
    ("sign_exp2_logs", f_sign_exp2_logs, (X,)),
]


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_reverse_mode_against_finite_differences(name, fn, args):
    check_vjp(fn, args)


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_forward_mode_against_finite_differences(name, fn, args):
    check_jvp(fn, args)


SECOND_ORDER = ["hypot", "hypot_broadcast", "fmax", "sinc", "cbrt", "copysign", "float_power",
                "angles", "reduce_mul"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_reverse_and_forward_over_reverse(name):
    fn, args = {c[0]: (c[1], c[2]) for c in CASES}[name]
    assert s2sad.check_grads(fn, args, order=2) < 1e-5


# ------------------------------------------------- values and dtypes as NumPy's
def v_fabs(x):
    return np.fabs(x)


def v_hypot(x):
    return np.hypot(x, x * 2)


def v_fmax(x):
    return np.fmax(x, x[0])


def v_sinc(x):
    return np.sinc(x)


def v_cbrt(x):
    return np.cbrt(x)


def v_copysign(x):
    return np.copysign(x, -x[0])


def v_heaviside(x):
    return np.heaviside(x, 0.5)


def v_angles(x):
    return np.deg2rad(x) + np.rad2deg(x)


def v_float_power(x):
    return np.float_power(x, 2.0)


def v_nan_to_num(x):
    return np.nan_to_num(x / x[0], posinf=7.0)


def v_imag(x):
    return np.imag(x)


VALUES = [v_fabs, v_hypot, v_fmax, v_sinc, v_cbrt, v_copysign, v_heaviside, v_angles,
          v_float_power, v_nan_to_num, v_imag]


@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", VALUES, ids=lambda f: f.__name__)
def test_values_and_dtypes_are_numpys(fn, dtype):
    x = np.array([[0.0, -1.5, 2.0], [0.5, -0.25, 3.0]], dtype=dtype)
    want = fn(x)
    got = s2sad.jit(fn)(x)
    assert np.asarray(got).dtype == want.dtype
    # deg2rad's constant pi/180 is rounded to float32 by NumPy's C code and
    # by NumPy's casting here: the two may differ in the last bit
    np.testing.assert_allclose(got, want, rtol=2 * np.finfo(dtype).eps, atol=0)


def test_float_power_computes_in_float64():
    x = np.array([1.5, 2.0], dtype=np.float32)
    grads = GradOperation()(f_float_power)(x, np.array([2.0, 0.5], dtype=np.float32))
    assert s2sad.jit(f_float_power)(x, x).dtype == np.float64
    np.testing.assert_allclose(grads, [3.0, 0.5 / math.sqrt(2.0)], rtol=1e-6)


# ----------------------------------------------------------------- NaN, kinks
def sum_fmax(x, y):
    return np.sum(np.fmax(x, y))


def sum_fmin(x, y):
    return np.sum(np.fmin(x, y))


@pytest.mark.parametrize("fn,np_fn", [(sum_fmax, np.fmax), (sum_fmin, np.fmin)])
def test_fmax_fmin_ignore_nan_as_numpy_and_send_the_gradient_to_the_number(fn, np_fn):
    x = np.array([1.0, np.nan, 3.0, np.nan, 2.0])
    y = np.array([2.0, 5.0, np.nan, np.nan, 2.0])
    np.testing.assert_array_equal(s2sad.jit(lambda a, b: np_fn(a, b))(x, y), np_fn(x, y))
    dx, dy = GradOperation(get_all=True)(fn)(x, y)
    took_x = np_fn(x, y) == x
    np.testing.assert_array_equal(dx[:3], [float(took_x[0]), 0.0, 1.0])
    np.testing.assert_array_equal(dy[:3], [1.0 - took_x[0], 1.0, 0.0])
    assert dx[4] == dy[4] == 0.5          # a tie is split evenly, as np.maximum's
    assert not np.isnan(dx).any() and not np.isnan(dy).any()


def sum_sinc(x):
    return np.sum(np.sinc(x))


def test_sinc_derivatives_at_zero_are_the_limits():
    grad1 = GradOperation()(sum_sinc)

    def first(x):
        return np.sum(grad1(x))
    grad2 = GradOperation()(first)

    def second(x):
        return np.sum(grad2(x))
    grad3 = GradOperation()(second)
    x = np.array([0.0, 0.7])
    t = math.pi * 0.7
    # closed forms of sinc's derivatives at 0.7 (from sin(t) / t, t = pi x)
    d1 = math.pi * (math.cos(t) / t - math.sin(t) / t ** 2)
    d2 = math.pi ** 2 * (-math.sin(t) / t - 2 * math.cos(t) / t ** 2 + 2 * math.sin(t) / t ** 3)
    np.testing.assert_allclose(grad1(x), [0.0, d1], atol=1e-12)
    np.testing.assert_allclose(grad2(x), [-math.pi ** 2 / 3, d2], atol=1e-12)
    assert grad3(x)[0] == 0.0     # sinc is even: its third derivative at 0 is 0


def sum_heaviside(x, h):
    return np.sum(np.heaviside(x, h) * 3.0)


def test_heaviside_has_no_gradient_in_x_and_passes_h_where_x_is_zero():
    dx, dh = GradOperation(get_all=True)(sum_heaviside)(np.array([-1.0, 0.0, 2.0]),
                                                        np.array([0.5, 0.25, 0.5]))
    np.testing.assert_array_equal(dx, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(dh, [0.0, 3.0, 0.0])


def sum_nan_to_num(x):
    return np.sum(np.nan_to_num(x, nan=1.0, posinf=9.0, neginf=-9.0) * 2.0)


def test_nan_to_num_gives_replaced_elements_no_gradient():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    np.testing.assert_array_equal(GradOperation()(sum_nan_to_num)(x), [2.0, 0, 0, 0, 2.0])


def sum_copysign(x, y):
    return np.sum(np.copysign(x, y))


def test_copysign_slope_follows_both_sign_bits():
    x = np.array([2.0, -2.0, 2.0, -2.0])
    y = np.array([1.0, 1.0, -0.0, -3.0])
    dx, dy = GradOperation(get_all=True)(sum_copysign)(x, y)
    np.testing.assert_array_equal(dx, [1.0, -1.0, -1.0, 1.0])
    np.testing.assert_array_equal(dy, [0.0, 0.0, 0.0, 0.0])


def real_of_complex(x):
    return np.sum(np.real(x * (1.0 + 0.0j)))


def test_real_of_a_complex_value_is_a_clear_error():
    with pytest.raises(TypeError, match="np.real: complex input"):
        GradOperation()(real_of_complex)(X)


def methods_expm1_log1p(x):
    return (x.expm1() * x.log1p()).sum()


def test_expm1_log1p_as_tensor_methods_in_both_modes():
    x = s2sad.Tensor(X)
    check_vjp(methods_expm1_log1p, (x,))
    t = RNG.standard_normal(X.shape)
    _, tangent = s2sad.jvp(methods_expm1_log1p, (x,), (s2sad.Tensor(t),))
    want = np.sum((np.exp(X) * np.log1p(X) + np.expm1(X) / (1 + X)) * t)
    np.testing.assert_allclose(np.asarray(tangent.asnumpy() if hasattr(tangent, "asnumpy")
                                          else tangent), want, rtol=1e-10)
