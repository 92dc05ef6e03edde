"""The functional API on other frameworks' examples and on loops at higher order.

MindSpore's nested GradOperation, MegEngine's cases and Paddle's training
example, second derivatives through loops in both modes, and the code
``s2sad.grad`` generates; checked against closed forms, central finite
differences and the values those frameworks document.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops, nn, Tensor, Parameter
from s2sad.ops import GradOperation

from test_functional_api import (X3, _fd_param, arr, cos_fn, cos_twice, loop_sin, sin_fn,
                                 sum_of_two_grads)


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
        sizes.append(len(s2sad.driver.cache))
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
