"""Integer, bool, complex, Python-number and list inputs (docs/semantics.md, "Input types").

A gradient is returned in its input's dtype only when no value changes in
the cast: an exact integer gradient of an integer input is kept (as
MindSpore's own tests expect), a fractional one raises a TypeError naming
the argument instead of coming back truncated.  Complex inputs are refused
in every API.  Expected values are closed forms or float64 central finite
differences of the same function.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, Parameter

from gradcheck import numeric_grad


def half_sin(x):
    return np.sum(np.sin(x) * 0.5)


def sin_half(x):
    return np.sin(x) * 0.5


def product(x, y):
    return x * y


def square(x):
    return x * x


def twice_sum(x):
    return np.sum(x * 2.0)


def sum_sq(x):
    return np.sum(x * x)


def times3(k):
    return k * 3.0


def abs_first(t):
    return np.abs(t[0])


INT = np.array([1, 2])
INT_F = INT.astype(np.float64)
TRUNCATE = "the gradient of the input at position 0 \\('x'\\) is not exact in its dtype int64"


# ----------------------------------------------------- integer and bool inputs
def test_grad_of_integer_input_with_fractional_gradient_raises():
    with pytest.raises(TypeError, match=TRUNCATE):
        s2sad.grad(half_sin)(INT)


def test_grad_of_bool_input_raises():
    with pytest.raises(TypeError, match="not exact in its dtype bool"):
        s2sad.grad(half_sin)(np.array([True, False]))


def test_grad_of_integer_input_names_the_position():
    def f(a, x):
        return np.sum(a * np.sin(x))
    with pytest.raises(TypeError, match="position 1 \\('x'\\)"):
        s2sad.grad(f, (0, 1))(np.array([1.0, 2.0]), INT)


def test_exact_integer_gradients_are_kept():
    # MindSpore's GradOperation on int32 Tensors of x * y: exact int32 gradients
    x = Tensor(np.array([2, 3], np.int32))
    y = Tensor(np.array([4, 5], np.int32))
    gx, gy = ops.GradOperation(get_all=True)(product)(x, y)
    assert gx.asnumpy().dtype == np.int32 and gy.asnumpy().dtype == np.int32
    np.testing.assert_array_equal(gx.asnumpy(), [4, 5])
    np.testing.assert_array_equal(gy.asnumpy(), [2, 3])
    g = s2sad.grad(twice_sum)(INT)     # 2.0 survives the cast
    assert g.dtype == np.int64
    np.testing.assert_array_equal(g, [2, 2])


def test_gradoperation_integer_input_raises_on_fast_path_too():
    gf = ops.GradOperation()(half_sin)
    np.testing.assert_allclose(gf(INT_F), 0.5 * np.cos(INT_F))
    gf(INT_F)                                   # now the prepared path is used
    with pytest.raises(TypeError, match=TRUNCATE):
        gf(INT)


def test_value_and_grad_integer_input():
    with pytest.raises(TypeError, match=TRUNCATE):
        s2sad.value_and_grad(half_sin)(INT)
    value, g = s2sad.value_and_grad(sum_sq)(INT)
    assert value == 5
    np.testing.assert_array_equal(g, [2, 4])


def test_vjp_integer_input():
    _, vjp_fn = s2sad.vjp(sin_half, INT)
    with pytest.raises(TypeError, match=TRUNCATE):
        vjp_fn(np.ones(2))
    _, vjp_fn = s2sad.vjp(square, INT)
    (g,) = vjp_fn(np.array([1, 1]))
    np.testing.assert_array_equal(g, [2, 4])


def test_jvp_and_jacfwd_of_integer_inputs_are_not_truncated():
    # forward mode never casts to the input's dtype: J @ v is computed as is
    _, t = s2sad.jvp(sin_half, (INT,), (np.array([1, 1]),))
    np.testing.assert_allclose(t, 0.5 * np.cos(INT_F), rtol=1e-15)
    jac = s2sad.jacfwd(sin_half)(INT)
    np.testing.assert_allclose(jac, np.diag(0.5 * np.cos(INT_F)), rtol=1e-15)
    np.testing.assert_array_equal(s2sad.jacfwd(square)(INT), np.diag([2, 4]))


def test_jacrev_integer_input():
    with pytest.raises(TypeError, match=TRUNCATE):
        s2sad.jacrev(sin_half)(INT)
    np.testing.assert_array_equal(s2sad.jacrev(square)(INT), np.diag([2, 4]))


def test_numpy_integer_scalar_and_mutable_int():
    with pytest.raises(TypeError, match="not exact in its dtype int64"):
        s2sad.grad(half_sin)(np.int64(1))
    with pytest.raises(TypeError, match="not exact in its dtype int64"):
        ops.GradOperation()(half_sin)(s2sad.mutable(1))
    assert ops.GradOperation()(times3)(s2sad.mutable(2)) == 3


class IntWeight(nn.Cell):
    def __init__(self, scale):
        super().__init__()
        self.w = Parameter(Tensor(np.array([1, 2], np.int32)), name="w")
        self.scale = scale

    def construct(self, x):
        return (self.w * x * self.scale).sum()


def test_integer_parameter_gradient():
    net = IntWeight(0.5)
    x = Tensor(np.array([1.0, 3.0]))
    with pytest.raises(TypeError, match="Parameter 'w' is not exact in its dtype int32"):
        ops.GradOperation(get_by_list=True)(net, net.trainable_params())(x)
    net = IntWeight(2)
    (g,) = ops.GradOperation(get_by_list=True)(net, net.trainable_params())(
        Tensor(np.array([1, 3], np.int32)))
    assert g.asnumpy().dtype == np.int32
    np.testing.assert_array_equal(g.asnumpy(), [2, 6])


def test_float_gradients_are_unchanged():
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(s2sad.grad(half_sin)(x), numeric_grad(half_sin, (x,), 0),
                               rtol=1e-6, atol=1e-8)
    g = s2sad.grad(half_sin)(x.astype(np.float32))
    assert g.dtype == np.float32


# ------------------------------------------------------------- complex inputs
# (values: tests/api/test_complex.py; here which inputs are accepted and refused)
Z = np.array([3 + 4j])
COMPLEX = "is complex \\(complex128\\), and s2sad differentiates complex values only"


def abs_sq(z):
    return np.sum(np.abs(z * z))


def test_complex_array_accepted_by_grad_apis():
    expect = 2 * np.conj(Z)       # |z * z| = x ** 2 + y ** 2
    np.testing.assert_allclose(s2sad.grad(abs_sq)(Z), expect)
    np.testing.assert_allclose(s2sad.value_and_grad(abs_sq)(Z)[1], expect)
    np.testing.assert_allclose(ops.GradOperation()(abs_sq)(Z), expect)
    np.testing.assert_allclose(s2sad.vjp(abs_sq, Z)[1](np.array(1.0))[0], expect)
    with pytest.raises(TypeError, match="pass holomorphic=True"):
        s2sad.jacrev(np.abs)(Z)


def test_complex_after_real_calls_on_the_prepared_path():
    gf = ops.GradOperation()(abs_sq)
    gf(np.array([1.0]))
    gf(np.array([1.0]))
    np.testing.assert_allclose(gf(Z), [6 - 8j])
    np.testing.assert_allclose(gf(np.array([-1.0])), [-2.0])


def test_complex_tensors_and_mutables_refused():
    np.testing.assert_allclose(s2sad.grad(abs_sq)(np.complex128(3 + 4j)), 6 - 8j)
    with pytest.raises(TypeError, match="complex"):
        s2sad.grad(abs_sq)(Tensor(Z))
    with pytest.raises(TypeError, match=COMPLEX):
        ops.GradOperation()(abs_sq)(s2sad.mutable(3 + 4j))
    np.testing.assert_allclose(s2sad.grad(abs_first)((Z,))[0], [(3 - 4j) / 5])


def test_complex_sens_and_tangents_of_real_inputs_refused():
    with pytest.raises(TypeError, match="the sens \\(the last argument\\) is complex"):
        ops.GradOperation(sens_param=True)(square)(np.array([1.0]), Z)
    _, t = s2sad.jvp(np.abs, (Z,), (np.array([1.0 + 0j]),))
    np.testing.assert_allclose(t, [0.6])
    with pytest.raises(TypeError, match="For 'jvp', the tangent at position 0 is complex"):
        s2sad.jvp(square, (np.array([1.0]),), (np.array([1j]),))
    with pytest.raises(TypeError, match="For 'jacfwd', .*is complex"):
        s2sad.jacfwd(np.abs)(Z)


# ---------------------------------------------------------- tangent shapes
def test_jvp_tangent_of_the_wrong_shape():
    with pytest.raises(ValueError, match="the tangent at position 1 has shape \\[2\\] and the "
                                         "input has shape \\[3\\]"):
        s2sad.jvp(product, (np.ones(3), np.ones(3)), (np.ones(3), np.ones(2)))


def test_sens_of_the_wrong_shape():
    with pytest.raises(ValueError, match="the shape of sens \\(\\[2\\]\\) must be the same as "
                                         "the shape of the output \\(\\[3\\]\\)"):
        ops.GradOperation(sens_param=True)(square)(np.ones(3), np.ones(2))


# ------------------------------------------------ Python numbers and lists
class AddNet(nn.Cell):
    def construct(self, x, y):
        return x + y


def weighted(xs, y):
    """sum(2 xs[0] + 3 xs[1]) * y: the gradients of xs and y differ everywhere."""
    return np.sum((xs[0] * 2.0 + xs[1] * 3.0) * y)


def weighted_swapped(y, xs):
    return weighted(xs, y)


def k_times_y(k, y):
    return np.sum(y * k + y * y)


XS = [np.array([1.0, -2.0]), np.array([0.5, 4.0])]
YV = np.array([3.0, -1.5])


def test_python_numbers_are_constants_with_a_warning():
    # MindSpore: grad(Net())(1, 2) == () for Python numbers
    with pytest.warns(UserWarning, match="every gradient asked for is of a constant.*"
                                         "position 0 \\('x'\\).*s2sad.mutable"):
        assert s2sad.grad(AddNet())(1, 2) == ()
    with pytest.warns(UserWarning, match="position 0 \\('x'\\), the input at position 1"):
        assert ops.GradOperation()(AddNet())(1, 2) == ()
    with pytest.warns(UserWarning, match="every gradient asked for is of a constant"):
        assert ops.GradOperation(get_all=True)(AddNet())(3, 4) == ()
    with pytest.warns(UserWarning, match="every gradient asked for is of a constant"):
        assert s2sad.value_and_grad(AddNet(), (0, 1))(1, 2) == (3, ())


def test_constant_warning_points_at_the_callers_line_once():
    gf = ops.GradOperation()(AddNet())
    with pytest.warns(UserWarning) as record:
        gf(1.0, 2.0)
        gf(1.0, 2.0)
    assert len(record) == 1
    assert record[0].filename == __file__


def test_mutable_numbers_get_gradients():
    g = ops.GradOperation(get_all=True)(AddNet())(s2sad.mutable(1.0), s2sad.mutable(2.0))
    assert g == (1.0, 1.0)


def test_constant_first_input_never_returns_another_inputs_gradient():
    with pytest.raises(TypeError, match="the input at position 0 \\('k'\\) is a float.*"
                                        "get_all=True"):
        ops.GradOperation()(k_times_y)(2.5, YV)
    with pytest.raises(TypeError, match="position 0 \\('xs'\\) is a list"):
        ops.GradOperation()(weighted)([1.0, 2.0], YV)
    with pytest.raises(TypeError, match="grad_position 0 refers to a list"):
        s2sad.grad(weighted, (0, 1))([1.0, 2.0], YV)
    # get_all leaves constants out (MindSpore): only y's gradient, closed form 2y + k
    (gy,) = ops.GradOperation(get_all=True)(k_times_y)(2.5, YV)
    np.testing.assert_allclose(gy, 2 * YV + 2.5, rtol=1e-15)


def _fd_weighted():
    dxs = [numeric_grad(lambda a: weighted([a, XS[1]], YV), (XS[0],), 0),
           numeric_grad(lambda b: weighted([XS[0], b], YV), (XS[1],), 0)]
    dy = numeric_grad(lambda y: weighted(XS, y), (YV,), 0)
    return dxs, dy


def test_list_of_arrays_is_differentiated_like_a_tuple():
    dxs, dy = _fd_weighted()
    (gx0, gx1), gy = ops.GradOperation(get_all=True)(weighted)(XS, YV)
    for g, want in ((gx0, dxs[0]), (gx1, dxs[1]), (gy, dy)):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    gx0, gx1 = ops.GradOperation()(weighted)(XS, YV)
    np.testing.assert_allclose(gx0, dxs[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gx1, dxs[1], rtol=1e-6, atol=1e-8)


def test_list_positions_map_exactly():
    dxs, dy = _fd_weighted()
    np.testing.assert_allclose(s2sad.grad(weighted, 1)(XS, YV), dy, rtol=1e-6, atol=1e-8)
    gxs = s2sad.grad(weighted, 0)(XS, YV)
    assert len(gxs) == 2
    np.testing.assert_allclose(gxs[1], dxs[1], rtol=1e-6, atol=1e-8)
    gy, gxs = s2sad.grad(weighted_swapped, (0, 1))(YV, XS)
    np.testing.assert_allclose(gy, dy, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gxs[0], dxs[0], rtol=1e-6, atol=1e-8)
    (g,) = s2sad.vjp(weighted, XS, YV)[1](np.array(1.0))[1:]
    np.testing.assert_allclose(g, dy, rtol=1e-6, atol=1e-8)
