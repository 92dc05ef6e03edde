"""The functional AD API: grad, value_and_grad, vjp, jvp, jacfwd, jacrev, hessian.

Checked against closed forms, central finite differences and the values the
MindSpore, Paddle and MegEngine documentation and tests give, including
higher-order derivatives through ``s2sad.grad`` and nested ``GradOperation``.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops, nn, Tensor, Parameter, ParameterTuple
from s2sad.ops import GradOperation
from s2sad.api.vjp_jvp import jvp_by_double_vjp


# --------------------------------------------------------------- functions
def tanh_fn(x):
    return ops.tanh(x)


def sin_fn(x):
    return ops.sin(x)


def cos_fn(x):
    return ops.cos(x)


def cos_twice(x):
    return ops.cos(x) + ops.cos(x)


def xyz(x, y, z):
    return x * y * z


def exp_pow_aux(x, y, z):
    return x * ops.exp(y) * ops.pow(z, 2), z


def scaled(x, n, y):
    return x * n + y * y


def cube_plus(x, y):
    return x ** 3 + y


def lin_aux(x, y):
    return 2 * x + y, y ** 3


def two_outputs(x, y):
    return ops.sin(x) * y, x * y.sum()


def squares_and_product(x, y, z):
    return x ** 2 + y ** 2 + z ** 2, x * y * z


def mlp(x, w1, w2):
    return ops.tanh(x @ w1) @ w2


def scalar_poly(x, y):
    return (x ** 3).sum() * y.sum() + (x * y).sum()


def loop_sin(x, n):
    y = x
    for _ in range(n):
        y = ops.sin(y)
    return y


def sum_of_two_grads(x):
    return s2sad.grad(cos_fn)(x) + s2sad.grad(cos_fn)(x)


def not_a_tuple(x):
    return x * 2


# ----------------------------------------------------------------- helpers
def arr(t):
    return np.asarray(t.asnumpy() if isinstance(t, Tensor) else t)


def fd_grad(fn, args, i, eps=1e-6):
    """Central differences of ``sum(fn(*args))`` with respect to ``args[i]``."""
    base = [arr(a).astype(np.float64) for a in args]
    g = np.zeros_like(base[i])
    for k in np.ndindex(*base[i].shape):
        plus = [b.copy() for b in base]
        minus = [b.copy() for b in base]
        plus[i][k] += eps
        minus[i][k] -= eps
        fp = np.sum(arr(fn(*[Tensor(p) for p in plus])))
        fm = np.sum(arr(fn(*[Tensor(m) for m in minus])))
        g[k] = (fp - fm) / (2 * eps)
    return g


def fd_jacobian(fn, args, i, eps=1e-6):
    """``out.shape + args[i].shape`` by central differences."""
    base = [arr(a).astype(np.float64) for a in args]
    out_shape = arr(fn(*[Tensor(b) for b in base])).shape
    jac = np.zeros(out_shape + base[i].shape)
    for k in np.ndindex(*base[i].shape):
        plus = [b.copy() for b in base]
        minus = [b.copy() for b in base]
        plus[i][k] += eps
        minus[i][k] -= eps
        d = (arr(fn(*[Tensor(p) for p in plus])) - arr(fn(*[Tensor(m) for m in minus])))
        jac[(Ellipsis,) + k] = d / (2 * eps)
    return jac


RNG = np.random.default_rng(1234)
X3 = Tensor(RNG.uniform(-1.5, 1.5, size=(3,)))


# -------------------------------------------------------- grad, any order
def test_grad_tanh_orders_1_to_4_closed_forms():
    x = X3
    t = np.tanh(arr(x))
    closed = [1 - t ** 2,
              -2 * t * (1 - t ** 2),
              -2 * (1 - t ** 2) * (1 - 3 * t ** 2),
              8 * t * (1 - t ** 2) * (2 - 3 * t ** 2)]
    g = tanh_fn
    for order, expected in enumerate(closed, 1):
        g = s2sad.grad(g)
        got = g(x)
        assert isinstance(got, Tensor) and got.dtype == s2sad.float64
        np.testing.assert_allclose(arr(got), expected, rtol=1e-10, atol=1e-12,
                                   err_msg="order %d" % order)


def test_grad_tanh_paddle_seed_values_float32():
    x = Tensor(np.array([1.0], np.float32))
    d1 = s2sad.grad(tanh_fn)
    d2 = s2sad.grad(d1)
    d3 = s2sad.grad(d2)
    for fn, expected in ((d1, 0.41997433), (d2, -0.6397), (d3, 0.6216267)):
        got = fn(x)
        assert got.dtype == s2sad.float32
        np.testing.assert_allclose(arr(got), [expected], rtol=1e-5)


@pytest.mark.parametrize("fn, expected", [(sin_fn, lambda v: -np.sin(v)),
                                          (cos_fn, lambda v: -np.cos(v))])
def test_second_derivative_of_sin_and_cos(fn, expected):
    np.testing.assert_allclose(arr(s2sad.grad(s2sad.grad(fn))(X3)), expected(arr(X3)),
                               rtol=1e-12, atol=1e-14)


def test_grad_of_grad_is_memoized_and_reuses_compiled_code():
    assert s2sad.grad(sin_fn) is s2sad.grad(sin_fn)
    d2 = s2sad.grad(s2sad.grad(sin_fn))
    d2(X3)
    size = len(s2sad.driver.cache)
    for shape in [(2,), (4, 3), ()]:
        x = Tensor(RNG.standard_normal(shape))
        np.testing.assert_allclose(arr(s2sad.grad(s2sad.grad(sin_fn))(x)), -np.sin(arr(x)))
    assert len(s2sad.driver.cache) == size


# ----------------------------------------------------- positions & errors
def test_grad_positions_mindspore_example():
    x = Tensor([1., 2.])
    y = Tensor([-2., 3.])
    z = Tensor([0., 3.])
    gy, gz = s2sad.grad(xyz, grad_position=(1, 2))(x, y, z)
    np.testing.assert_allclose(arr(gy), [0., 6.])
    np.testing.assert_allclose(arr(gz), [-2., 6.])
    g0 = s2sad.grad(xyz)(x, y, z)
    assert isinstance(g0, Tensor)
    np.testing.assert_allclose(arr(g0), arr(y) * arr(z))
    (g2,) = s2sad.grad(xyz, grad_position=(2,))(x, y, z)
    np.testing.assert_allclose(arr(g2), arr(x) * arr(y))


def test_grad_positions_count_python_constants():
    x, y = Tensor([1., 2.]), Tensor([3., -1.])
    gx, gy = s2sad.grad(scaled, (0, 2))(x, 3.0, y)
    np.testing.assert_allclose(arr(gx), [3., 3.])
    np.testing.assert_allclose(arr(gy), 2 * arr(y))
    np.testing.assert_allclose(arr(s2sad.grad(scaled, 2)(x, 3.0, y)), 2 * arr(y))
    # the same position with another layout of constants is compiled separately
    np.testing.assert_allclose(arr(s2sad.grad(scaled, 0)(x, 5.0, y)), [5., 5.])


def test_grad_both_none_is_value_error():
    with pytest.raises(ValueError, match="'grad_position' and 'weights' cannot both be None"):
        s2sad.grad(xyz, grad_position=None)
    with pytest.raises(ValueError, match="cannot both be None"):
        s2sad.value_and_grad(xyz, grad_position=None, weights=None)


def test_grad_position_out_of_range_is_index_error():
    x = Tensor([1., 2.])
    with pytest.raises(IndexError, match=r"grad_position 3 is out of range: .* with 3 inputs"):
        s2sad.grad(xyz, grad_position=3)(x, x, x)
    with pytest.raises(IndexError, match=r"grad_position 1 is out of range: .* with 1 input$"):
        s2sad.grad(sin_fn, grad_position=(0, 1))(x)


def test_grad_position_validation():
    with pytest.raises(ValueError, match="duplicate"):
        s2sad.grad(xyz, (1, 1))
    with pytest.raises(ValueError, match=">= 0"):
        s2sad.grad(xyz, -1)
    with pytest.raises(TypeError, match="'grad_position' must be an int"):
        s2sad.grad(xyz, 1.0)
    with pytest.raises(TypeError, match="has_aux"):
        s2sad.grad(xyz, has_aux=1)
    x = Tensor([1., 2.])
    # a Python number is a constant: no gradient, as MindSpore (docs/semantics.md)
    with pytest.warns(UserWarning, match="the input at position 1 \\('n'\\); the result is"):
        assert s2sad.grad(scaled, 1)(x, 2.0, x) == ()
    with pytest.raises(TypeError, match="grad_position 1 refers to a float"):
        s2sad.grad(scaled, (0, 1))(x, 2.0, x)


def test_grad_of_mutable_python_scalar():
    x = Tensor([1., 2.])
    g = s2sad.grad(scaled, 1)(x, s2sad.mutable(2.0), x)
    assert g == pytest.approx(3.0)


# ------------------------------------------------------------------ has_aux
def test_grad_has_aux_mindspore_example():
    x = Tensor([3., 3.])
    y = Tensor([0., 0.])
    z = Tensor([5., 5.])
    grads, aux = s2sad.grad(exp_pow_aux, (1, 2), None, True)(x, y, z)
    np.testing.assert_allclose(arr(grads[0]), [75., 75.])
    np.testing.assert_allclose(arr(grads[1]), [30., 30.])
    assert isinstance(aux, tuple) and len(aux) == 1
    np.testing.assert_allclose(arr(aux[0]), [5., 5.])
    # only the first output is differentiated: z's gradient has no aux term
    g, (aux_z,) = s2sad.grad(exp_pow_aux, 2, has_aux=True)(x, y, z)
    np.testing.assert_allclose(arr(g), [30., 30.])


def test_grad_has_aux_needs_a_tuple_output():
    x = Tensor([1., 2.])
    with pytest.raises(ValueError, match="'has_aux' is True, 'fn' must return a tuple"):
        s2sad.grad(not_a_tuple, has_aux=True)(x)
    with pytest.raises(ValueError, match="at least two items"):
        s2sad.vjp(not_a_tuple, x, has_aux=True)


def test_value_and_grad_returns_full_value():
    x, y, z = Tensor([3., 3.]), Tensor([0., 0.]), Tensor([5., 5.])
    value, grads = s2sad.value_and_grad(exp_pow_aux, (1, 2), None, True)(x, y, z)
    assert isinstance(value, tuple) and len(value) == 2
    np.testing.assert_allclose(arr(value[0]), [75., 75.])
    np.testing.assert_allclose(arr(value[1]), [5., 5.])
    np.testing.assert_allclose(arr(grads[0]), [75., 75.])
    np.testing.assert_allclose(arr(grads[1]), [30., 30.])
    value, g = s2sad.value_and_grad(xyz, 1)(Tensor([1., 2.]), Tensor([-2., 3.]),
                                             Tensor([0., 3.]))
    np.testing.assert_allclose(arr(value), [-0., 18.])
    np.testing.assert_allclose(arr(g), [0., 6.])


# ------------------------------------------------------------------ weights
class Dense(nn.Cell):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(7)
        self.w = Parameter(Tensor(rng.standard_normal((3, 2))), name="w")
        self.b = Parameter(Tensor(rng.standard_normal((2,))), name="b")

    def construct(self, x):
        return ops.tanh(x @ self.w + self.b)


def _fd_param(cell, param, x, eps=1e-6):
    base = param.asnumpy().copy()
    g = np.zeros_like(base)
    for k in np.ndindex(*base.shape):
        for sign in (1, -1):
            d = base.copy()
            d[k] += sign * eps
            param.set_data(Tensor(d))
            g[k] += sign * np.sum(arr(cell(x))) / (2 * eps)
    param.set_data(Tensor(base))
    return g


def test_grad_weights_structures():
    net = Dense()
    x = Tensor(RNG.standard_normal((4, 3)))
    params = net.trainable_params()
    gw, gb = s2sad.grad(net, None, params)(x)
    np.testing.assert_allclose(arr(gw), _fd_param(net, net.w, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(arr(gb), _fd_param(net, net.b, x), rtol=1e-6, atol=1e-8)
    ref = GradOperation(get_by_list=True)(net, params)(x)
    np.testing.assert_allclose(arr(gw), arr(ref[0]))
    # ParameterTuple / single Parameter
    gws = s2sad.grad(net, None, ParameterTuple(params))(x)
    assert isinstance(gws, tuple) and len(gws) == 2
    single = s2sad.grad(net, None, net.b)(x)
    assert isinstance(single, Tensor)
    np.testing.assert_allclose(arr(single), arr(gb))
    # inputs and weights: (input_grads, weight_grads)
    gx, (gw2, gb2) = s2sad.grad(net, 0, params)(x)
    np.testing.assert_allclose(arr(gx), fd_grad(net, (x,), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(arr(gw2), arr(gw))
    (gx2,), gb3 = s2sad.grad(net, (0,), net.b)(x)
    np.testing.assert_allclose(arr(gx2), arr(gx))
    np.testing.assert_allclose(arr(gb3), arr(gb))
    value, (gx3, gws3) = s2sad.value_and_grad(net, 0, params)(x)
    np.testing.assert_allclose(arr(value), arr(net(x)))
    np.testing.assert_allclose(arr(gws3[1]), arr(gb))


# ---------------------------------------------------------------------- vjp
def test_vjp_mindspore_example():
    x = Tensor(np.array([[1., 2.], [3., 4.]], np.float32))
    y = Tensor(np.array([[1., 2.], [3., 4.]], np.float32))
    v = Tensor(np.ones((2, 2), np.float32))
    out, vjp_fn = s2sad.vjp(cube_plus, x, y)
    np.testing.assert_allclose(arr(out), [[2., 10.], [30., 68.]])
    grads = vjp_fn(v)
    assert isinstance(grads, tuple) and len(grads) == 2
    np.testing.assert_allclose(arr(grads[0]), [[3., 12.], [27., 48.]])
    np.testing.assert_allclose(arr(grads[1]), np.ones((2, 2)))
    out, vjp_fn, aux = s2sad.vjp(lin_aux, x, y, has_aux=True)
    np.testing.assert_allclose(arr(out), [[3., 6.], [9., 12.]])
    np.testing.assert_allclose(arr(aux), [[1., 8.], [27., 64.]])
    gx, gy = vjp_fn(v)
    np.testing.assert_allclose(arr(gx), 2 * np.ones((2, 2)))
    np.testing.assert_allclose(arr(gy), np.ones((2, 2)))


def test_vjp_single_input_is_a_tuple():
    out, vjp_fn = s2sad.vjp(sin_fn, X3)
    v = Tensor(RNG.standard_normal(3))
    (g,) = vjp_fn(v)
    np.testing.assert_allclose(arr(g), np.cos(arr(X3)) * arr(v))


# ---------------------------------------------------------------------- jvp
def test_jvp_has_aux():
    x, y = Tensor(RNG.standard_normal(3)), Tensor(RNG.standard_normal(3))
    v = Tensor(RNG.standard_normal(3))
    out, t, aux = s2sad.jvp(lin_aux, (x, y), (v, v), has_aux=True)
    np.testing.assert_allclose(arr(out), 2 * arr(x) + arr(y))
    np.testing.assert_allclose(arr(t), 3 * arr(v))
    np.testing.assert_allclose(arr(aux), arr(y) ** 3)
    with pytest.raises(ValueError, match="at least two items"):
        s2sad.jvp(not_a_tuple, x, v, has_aux=True)


def test_double_vjp_jvp_of_cos_matches_central_differences():
    x = Tensor(RNG.uniform(-3, 3, size=(5,)))
    v = Tensor(RNG.standard_normal(5))
    out, t = jvp_by_double_vjp(cos_fn, x, v)
    eps = 1e-4
    fd = (np.cos(arr(x) + eps * arr(v)) - np.cos(arr(x) - eps * arr(v))) / (2 * eps)
    np.testing.assert_allclose(arr(t), fd, atol=1e-3)
    np.testing.assert_allclose(arr(out), np.cos(arr(x)))
    _, t_fwd = s2sad.jvp(cos_fn, x, v)
    np.testing.assert_allclose(arr(t), arr(t_fwd), rtol=1e-12)


def test_double_vjp_and_forward_mode_agree_on_mlp():
    xs = (Tensor(RNG.standard_normal((4, 3))), Tensor(RNG.standard_normal((3, 5))),
          Tensor(RNG.standard_normal((5, 2))))
    vs = tuple(Tensor(RNG.standard_normal(a.shape)) for a in xs)
    out_f, t_f = s2sad.jvp(mlp, xs, vs)
    out_r, t_r = jvp_by_double_vjp(mlp, xs, vs)
    np.testing.assert_allclose(arr(out_f), arr(out_r))
    np.testing.assert_allclose(arr(t_f), arr(t_r), rtol=1e-10, atol=1e-12)
    eps = 1e-6
    plus = mlp(*[Tensor(arr(a) + eps * arr(d)) for a, d in zip(xs, vs)])
    minus = mlp(*[Tensor(arr(a) - eps * arr(d)) for a, d in zip(xs, vs)])
    np.testing.assert_allclose(arr(t_f), (arr(plus) - arr(minus)) / (2 * eps), rtol=1e-6,
                               atol=1e-8)


# ------------------------------------------------------------ jacobians
def test_jacfwd_jacrev_shapes_and_values():
    x = Tensor(RNG.standard_normal((2, 3)))
    y = Tensor(RNG.standard_normal((3,)))
    for jac in (s2sad.jacfwd, s2sad.jacrev):
        (j0x, j0y), (j1x, j1y) = jac(two_outputs, (0, 1))(x, y)
        assert j0x.shape == (2, 3, 2, 3) and j0y.shape == (2, 3, 3)
        assert j1x.shape == (2, 3, 2, 3) and j1y.shape == (2, 3, 3)
        first = lambda a, b: two_outputs(a, b)[0]  # noqa: E731  (called eagerly only)
        second = lambda a, b: two_outputs(a, b)[1]  # noqa: E731
        np.testing.assert_allclose(arr(j0x), fd_jacobian(first, (x, y), 0), atol=1e-7)
        np.testing.assert_allclose(arr(j0y), fd_jacobian(first, (x, y), 1), atol=1e-7)
        np.testing.assert_allclose(arr(j1x), fd_jacobian(second, (x, y), 0), atol=1e-7)
        np.testing.assert_allclose(arr(j1y), fd_jacobian(second, (x, y), 1), atol=1e-7)
        single = jac(sin_fn)(X3)
        assert isinstance(single, Tensor) and single.shape == (3, 3)
        np.testing.assert_allclose(arr(single), np.diag(np.cos(arr(X3))))


def test_jacfwd_jacrev_has_aux_mindspore_example():
    x = Tensor(np.array([[1, 2], [3, 4]]).astype(np.float32))
    y = Tensor(np.array([[1, 2], [3, 4]]).astype(np.float32))
    z = Tensor(np.array([[1, 1], [1, 1]]).astype(np.float32))
    expected = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            expected[i, j, i, j] = 2 * arr(x)[i, j]
    for jac in (s2sad.jacfwd, s2sad.jacrev):
        j, aux = jac(squares_and_product, grad_position=0, has_aux=True)(x, y, z)
        np.testing.assert_allclose(arr(j), expected)
        np.testing.assert_allclose(arr(aux), [[1., 4.], [9., 16.]])


def test_jacobian_errors():
    x = Tensor([1., 2.])
    with pytest.raises(IndexError, match="grad_position 2 is out of range"):
        s2sad.jacrev(xyz, 2)(x, x)
    with pytest.raises(TypeError, match="must be a Tensor or an array"):
        s2sad.jacfwd(scaled, 1)(x, 2.0, x)


def test_hessian_against_closed_form():
    x = Tensor(RNG.standard_normal(3))
    y = Tensor(RNG.standard_normal(3))
    sy = np.sum(arr(y))
    h = s2sad.hessian(scalar_poly)(x, y)
    assert h.shape == (3, 3)
    np.testing.assert_allclose(arr(h), np.diag(6 * arr(x) * sy), atol=1e-12)
    (hxx, hxy), (hyx, hyy) = s2sad.hessian(scalar_poly, (0, 1))(x, y)
    np.testing.assert_allclose(arr(hxy), 3 * arr(x)[:, None] ** 2 * np.ones((3, 3))
                               + np.eye(3), atol=1e-12)
    np.testing.assert_allclose(arr(hyx), arr(hxy).T, atol=1e-12)
    np.testing.assert_allclose(arr(hyy), np.zeros((3, 3)), atol=1e-12)
    np.testing.assert_allclose(arr(hxx), arr(h))


def test_hessian_requires_scalar_output():
    with pytest.raises(ValueError, match=r"must return a scalar.*shape \[3\].*\.sum\(\).*"
                                         r"'jacrev'"):
        s2sad.hessian(sin_fn)(X3)
