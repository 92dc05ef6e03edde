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
from s2sad.ad.api import jvp_by_double_vjp


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
    size = len(s2sad.ad.grad.cache)
    for shape in [(2,), (4, 3), ()]:
        x = Tensor(RNG.standard_normal(shape))
        np.testing.assert_allclose(arr(s2sad.grad(s2sad.grad(sin_fn))(x)), -np.sin(arr(x)))
    assert len(s2sad.ad.grad.cache) == size


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


# ------------------------------------------- nested GradOperation (MindSpore)
class Cube(nn.Cell):
    def construct(self, x):
        return x * x * x


class GradOfCube(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x):
        return GradOperation()(self.net)(x)


def test_nested_grad_operation_in_cell():
    x = Tensor(np.array([1., 2., -0.5]))
    first = GradOfCube(Cube())
    np.testing.assert_allclose(arr(first(x)), 3 * arr(x) ** 2)
    second = GradOperation()(first)
    np.testing.assert_allclose(arr(second(x)), 6 * arr(x))
    # and once more, with s2sad.grad around the Cell
    np.testing.assert_allclose(arr(s2sad.grad(second)(x)), 6 * np.ones(3))


# ------------------------------------------------------------ MegEngine cases
def test_megengine_grad_grad_cos():
    np.testing.assert_allclose(arr(s2sad.grad(s2sad.grad(cos_fn))(X3)), -np.cos(arr(X3)))


def test_megengine_two_first_order_grads_add_up():
    np.testing.assert_allclose(arr(s2sad.grad(cos_twice)(X3)), -2 * np.sin(arr(X3)))
    np.testing.assert_allclose(arr(sum_of_two_grads(X3)), -2 * np.sin(arr(X3)))
    # the sum of two inlined gradients is differentiable again
    np.testing.assert_allclose(arr(s2sad.grad(sum_of_two_grads)(X3)), -2 * np.cos(arr(X3)))


# ----------------------------------------------------- Paddle training example
class TanhLayer(nn.Cell):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(3)
        self.w = Parameter(Tensor(rng.standard_normal((2, 2))), name="w")
        self.b = Parameter(Tensor(rng.standard_normal((2,))), name="b")

    def construct(self, x):
        return ops.tanh(x @ self.w + self.b)


class SecondDerivativeNorm(nn.Cell):
    """``norm(grad(grad(y, x), x))``: d/dx sum(d/dx sum(y)), then its 2-norm."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x):
        g2 = s2sad.grad(s2sad.grad(self.net))(x)
        return np.sqrt(np.sum(g2 * g2))


class FirstGradSum(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x):
        return GradOperation()(self.net)(x)


class SecondDerivativeNormGradOp(nn.Cell):
    """The same loss written with nested GradOperation only."""

    def __init__(self, net):
        super().__init__()
        self.first = FirstGradSum(net)

    def construct(self, x):
        g2 = GradOperation()(self.first)(x)
        return np.sqrt(np.sum(g2 * g2))


def _second_derivative_closed_form(x, w, b):
    # y = tanh(z), z = x W + b.  g1 = d sum(y)/dx = (1 - t^2) W^T, and
    # sum(g1) = sum_j (1 - t_j^2) c_j with c = column sums of W^T, so
    # d sum(g1)/dx = (-2 t (1 - t^2) c) W^T
    t = np.tanh(x @ w + b)
    c = w.sum(axis=0)
    return (-2 * t * (1 - t ** 2) * c) @ w.T


def test_paddle_second_derivative_training_with_adam():
    net = TanhLayer()
    loss = SecondDerivativeNorm(net)
    params = net.trainable_params()
    grad_fn = s2sad.grad(loss, None, params)
    x0 = Tensor(np.random.default_rng(0).standard_normal((2, 2)))
    # both formulations agree with the closed form
    g2 = _second_derivative_closed_form(arr(x0), net.w.asnumpy(), net.b.asnumpy())
    assert loss(x0) == pytest.approx(np.linalg.norm(g2), rel=1e-12)
    assert SecondDerivativeNormGradOp(net)(x0) == pytest.approx(np.linalg.norm(g2), rel=1e-12)
    # the gradient of the loss with respect to W, against finite differences
    gw, gb = grad_fn(x0)
    ref = GradOperation(get_by_list=True)(SecondDerivativeNormGradOp(net), params)(x0)
    np.testing.assert_allclose(arr(gw), arr(ref[0]), rtol=1e-10)
    np.testing.assert_allclose(arr(gw), _fd_param(loss, net.w, x0), rtol=1e-5, atol=1e-8)

    lr, beta1, beta2, eps = 0.01, 0.9, 0.999, 1e-8
    m = [np.zeros(p.shape) for p in params]
    v = [np.zeros(p.shape) for p in params]
    step = 0
    sizes = []
    for rows in (2, 3, 4, 5):
        x = Tensor(np.random.default_rng(rows).standard_normal((rows, 2)))
        losses = []
        for _ in range(10):
            step += 1
            value = loss(x)
            assert np.isfinite(value)
            losses.append(float(value))
            grads = grad_fn(x)
            for k, (p, g) in enumerate(zip(params, grads)):
                g = arr(g)
                assert np.all(np.isfinite(g))
                m[k] = beta1 * m[k] + (1 - beta1) * g
                v[k] = beta2 * v[k] + (1 - beta2) * g * g
                m_hat = m[k] / (1 - beta1 ** step)
                v_hat = v[k] / (1 - beta2 ** step)
                p.set_data(Tensor(p.asnumpy() - lr * m_hat / (np.sqrt(v_hat) + eps)))
        assert losses[-1] < losses[0]
        sizes.append(len(s2sad.ad.grad.cache))
    # one compiled adjoint serves every batch size: nothing is rebuilt per shape
    assert sizes == [sizes[0]] * 4


# -------------------------------------------------------- loops at higher order
def test_second_derivative_through_a_loop_by_forward_over_reverse():
    x = np.array([0.5, 1.0])
    s1 = np.sin(x)
    # f = sin(sin x); f' = cos(sin x) cos x; f'' = -sin(sin x) cos^2 x - cos(sin x) sin x
    want = -np.sin(s1) * np.cos(x) ** 2 - np.cos(s1) * np.sin(x)
    grad_fn = s2sad.grad(loop_sin)
    _, second = s2sad.jvp(lambda_free_grad(grad_fn), (x,), (np.ones(2),))
    np.testing.assert_allclose(second, want, rtol=1e-12)


def lambda_free_grad(grad_fn):
    def first(x):
        return grad_fn(x, 2)
    return first


def test_second_and_third_derivative_through_a_loop_by_reverse_over_reverse():
    x = np.array([0.5, 1.0])
    s1 = np.sin(x)
    want = -np.sin(s1) * np.cos(x) ** 2 - np.cos(s1) * np.sin(x)
    second = s2sad.grad(s2sad.grad(loop_sin))
    np.testing.assert_allclose(second(x, 2), want, rtol=1e-12)
    # the third derivative against central differences of the (checked) second
    h = 1e-6
    fd = (second(x + h, 2) - second(x - h, 2)) / (2 * h)
    np.testing.assert_allclose(s2sad.grad(second)(x, 2), fd, rtol=1e-6)


def loop_mix(x):
    s = x * 1.0
    for i in range(3):
        if s.sum() > 1.0:
            s = s * np.sin(s)
        else:
            s = s + np.cos(x)
        j = 0
        while j < 2:
            s = s * 0.9 + x * s
            j = j + 1
    return np.sum(s * s)


def loop_break(x):
    s = x
    for i in range(10):
        s = np.tanh(s * 1.5) + x
        if s.sum() > 2.5:
            break
    return np.sum(s)


@pytest.mark.parametrize("fn", [loop_mix, loop_break], ids=lambda f: f.__name__)
def test_second_order_through_loops_in_both_modes(fn):
    x = np.random.default_rng(2).uniform(0.2, 0.6, 3)
    s2sad.check_grads(fn, (x,), order=2, modes=("rev", "fwd"))



# ------------------------------------------------- known bugs outside the API
def branch_defines_sin(x):
    if x.sum() > 0:
        y = ops.sin(x) * x
    else:
        y = x
    return y


def test_second_derivative_through_runtime_if_taken_branch():
    x = Tensor(np.array([0.5, 1.0]))
    xa = arr(x)
    np.testing.assert_allclose(arr(s2sad.grad(s2sad.grad(branch_defines_sin))(x)),
                               2 * np.cos(xa) - xa * np.sin(xa))


def test_second_derivative_through_runtime_if_other_branch():
    x = Tensor(np.array([-0.5, -1.0]))
    np.testing.assert_allclose(arr(s2sad.grad(s2sad.grad(branch_defines_sin))(x)), 0.0)


class StoresGrad(nn.Cell):
    def __init__(self, fn):
        super().__init__()
        self.d = s2sad.grad(fn)

    def construct(self, x):
        return self.d(x)


def test_cells_storing_different_grad_functions_do_not_share_code():
    x = Tensor(np.array([0.5]))
    np.testing.assert_allclose(arr(GradOperation()(StoresGrad(sin_fn))(x)), -np.sin(0.5))
    np.testing.assert_allclose(arr(GradOperation()(StoresGrad(cos_fn))(x)), -np.cos(0.5))


def tuple_concat(x):
    t = (2.0,) + (3.0,)
    t = t + (x,)
    return t[2] * t[0] + t[1]


def test_constant_tuple_concatenated_with_runtime_tuple():
    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(GradOperation()(tuple_concat)(x), [2.0, 2.0])


def test_gradoperation_of_a_gradient_function():
    x = np.array([0.3, 0.9])
    second = GradOperation()(GradOperation()(sin_fn))(x)
    np.testing.assert_allclose(second, -np.sin(x), rtol=1e-12)


# ------------------------------------------------- the code s2sad.grad generates
def affine_loss(W, b, x):
    return np.sum(np.tanh(x @ W + b))


class Affine(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.full((2, 3), 0.5)), name="w")

    def construct(self, x, shift):
        return ops.tanh(ops.matmul(x, self.w) + shift).sum()


def test_generated_code_is_named_after_the_users_function():
    rng = np.random.default_rng(0)
    W, b, x = rng.standard_normal((2, 3)), rng.standard_normal(3), rng.standard_normal((4, 2))
    g = s2sad.grad(affine_loss, grad_position=(0, 2))
    dW, dx = g(W, b, x)
    d = 1 - np.tanh(x @ W + b) ** 2                     # closed form
    np.testing.assert_allclose(dW, x.T @ d, rtol=1e-12)
    np.testing.assert_allclose(dx, d @ W.T, rtol=1e-12)
    source = s2sad.get_source(g, W, b, x)
    # selected inputs first, then the rest, each with its parameter's name
    assert "def affine_loss_grad(W, x, b):" in source
    assert "gradient of affine_loss (" in source and "sel_0" not in source

    net = Affine()
    xs, shift = Tensor(rng.standard_normal((4, 2))), Tensor(rng.standard_normal(3))
    gc = s2sad.grad(net, grad_position=1, weights=net.w)
    dshift, dw = gc(xs, shift)
    d = 1 - np.tanh(arr(xs) @ arr(net.w) + arr(shift)) ** 2
    # a closed form in float64, the same values by other ops: rounding only (both lines)
    np.testing.assert_allclose(arr(dshift), d.sum(0), rtol=1e-12)
    np.testing.assert_allclose(arr(dw), arr(xs).T @ d, rtol=1e-12)
    source = s2sad.get_source(gc, xs, shift)
    assert "def Affine_construct_grad(shift, x, self_w):" in source
    assert "gradient of Affine.construct (" in source
