"""``jvp`` called inside a function being differentiated (forward mode inside another
transform): its forward-mode program is inlined there, so ``grad`` of code that
calls ``jvp`` and ``jvp`` of ``jvp`` work.  Against closed forms and central
finite differences of the eager ``jvp``.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor

from gradcheck import numeric_grad

X = np.array([0.5, -1.0, 2.0])
ONES = np.ones(3)


def g(x):
    return np.sin(x) * x


def directional(x):
    """sum of g'(x) along ones: the derivative of g, elementwise, summed."""
    return s2sad.jvp(g, (x,), (ONES,))[1].sum()


def test_grad_of_a_function_calling_jvp_is_the_second_derivative():
    want = 2 * np.cos(X) - X * np.sin(X)             # d/dx (x cos x + sin x)
    np.testing.assert_allclose(s2sad.grad(directional)(X), want, rtol=1e-14)

    def eager(x):
        return float(np.sum(s2sad.jvp(g, (x,), (ONES,))[1]))
    np.testing.assert_allclose(s2sad.grad(directional)(X), numeric_grad(eager, (X,), 0),
                               rtol=1e-7)


def tangent_of_g(x):
    return s2sad.jvp(g, (x,), (ONES,))[1]


def test_jvp_of_jvp():
    _, second = s2sad.jvp(tangent_of_g, (X,), (ONES,))
    np.testing.assert_allclose(second, 2 * np.cos(X) - X * np.sin(X), rtol=1e-14)


def hvp_of_two(x, y, v):
    """Forward over reverse inside reverse: a Hessian-vector product of f(x, y), then summed."""
    def f(a, b):
        return (a * a * b).sum() + np.exp(a).sum()
    out, tangent = s2sad.jvp(f, (x, y), (v, v))
    return out + tangent


def test_two_inputs_tangents_and_the_value_through_grad():
    x, y, v = X, np.array([1.0, 2.0, 3.0]), np.array([0.3, -0.2, 0.5])
    dx, dy = s2sad.grad(hvp_of_two, grad_position=(0, 1))(x, y, v)

    def eager(a, b):
        return float(hvp_of_two(a, b, v))
    np.testing.assert_allclose(dx, numeric_grad(eager, (x, y), 0), rtol=1e-7)
    np.testing.assert_allclose(dy, numeric_grad(eager, (x, y), 1), rtol=1e-7)


class Scale(nn.Cell):
    def construct(self, x):
        return x * x * x


class JvpInside(nn.Cell):
    def __init__(self):
        super().__init__()
        self.inner = Scale()

    def construct(self, x):
        return s2sad.jvp(self.inner, (x,), (ONES,))[1].sum()


def test_a_cell_calling_jvp_of_a_sub_cell():
    g_x = s2sad.ops.GradOperation()(JvpInside())(Tensor(X))
    np.testing.assert_allclose(np.asarray(g_x), 6 * X, rtol=1e-14)


def with_aux(x):
    return s2sad.jvp(g, (x,), (ONES,), has_aux=True)[1].sum()


def test_has_aux_inside_is_refused_at_the_users_line():
    with pytest.raises(s2sad.CompileError, match="has_aux=True"):
        s2sad.grad(with_aux)(X)


@s2sad.jit
def jitted_tangent(x):
    return s2sad.jvp(g, (x,), (ONES,))[1]


def test_jvp_inside_jit_is_compiled():
    np.testing.assert_allclose(jitted_tangent(X), np.cos(X) * X + np.sin(X), rtol=1e-15)


def calls_vjp(x):
    out, vjp_fn = s2sad.vjp(g, x)
    (cotangent,) = vjp_fn(x * x)
    return out.sum() + cotangent.sum()


def test_vjp_inside_grad_is_staged_and_differentiated_again():
    # d/dx [sum g(x) + sum(x^2 * g'(x))], g(x) = x sin x, g' = sin x + x cos x
    first = lambda x: np.sum(g(x)) + np.sum(x * x * (np.sin(x) + x * np.cos(x)))  # noqa: E731
    np.testing.assert_allclose(s2sad.grad(calls_vjp)(X), numeric_grad(first, [X], 0),
                               rtol=1e-6, atol=1e-8)


# ------------------- Jacobians and vmap inside: staged as run-time loops
def calls_jacrev(x):
    return s2sad.jacrev(g)(x).sum()


def calls_hessian(x):
    return s2sad.hessian(cubes)(x).sum()


def cubes(v):
    return (v ** 3).sum()


def calls_vmap(x):
    return s2sad.vmap(np.sin)(x).sum()


JAC_MADE_OUTSIDE = s2sad.jacfwd(g)


def calls_a_jacobian_made_outside(x):
    return JAC_MADE_OUTSIDE(x).sum()


@pytest.mark.parametrize("fn", [calls_jacrev, calls_hessian, calls_vmap,
                                calls_a_jacobian_made_outside],
                         ids=["jacrev", "hessian", "vmap", "jacfwd-made-outside"])
def test_transforms_called_inside_grad_are_staged(fn):
    np.testing.assert_allclose(s2sad.grad(fn)(X), numeric_grad(fn, [X], 0), rtol=1e-6,
                               atol=1e-8)


def calls_hessian_of_a_lambda(x):
    return s2sad.hessian(lambda v: (v ** 3).sum())(x).sum()


def test_a_transform_that_cannot_take_a_lambda_made_inside_says_so_at_the_users_call():
    with pytest.raises(s2sad.CompileError) as info:
        s2sad.grad(calls_hessian_of_a_lambda)(X)
    message = str(info.value)
    assert "s2sad.hessian needs arguments known while compiling" in message
    assert "test_composed_transforms.py" in message.splitlines()[0]
    assert "'raise'" not in message and "'try'" not in message


def test_a_jacobian_of_a_jacobian_function():
    want = np.diag(2 * np.cos(X) - X * np.sin(X))[:, :, None] * np.eye(3)  # d2 g_i / dx_i^2
    np.testing.assert_allclose(s2sad.jacfwd(s2sad.jacrev(g))(X), want, rtol=1e-12, atol=1e-14)


def _list_inner(xs):
    return np.sum(xs[0] ** 2 * xs[1])


_list_inner_grad = ops.GradOperation()(_list_inner)


def _list_outer(xs):
    g = _list_inner_grad(xs)      # a list argument: its gradient is a tuple
    return np.sum(g[0] * g[1])


def test_gradient_of_a_list_argument_staged_inside_a_gradient():
    """Staged, the inner gradient of a list was () (its arrays were not found), so the
    outer gradient was wrong or refused; it is the eager call's tuple."""
    xs = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    got = s2sad.grad(_list_outer)(xs)
    # d/dx0 sum(2 x0^3 x1) = 6 x0^2 x1, d/dx1 = 2 x0^3
    np.testing.assert_allclose(got[0], 6 * xs[0] ** 2 * xs[1])
    np.testing.assert_allclose(got[1], 2 * xs[0] ** 3)
    both = ops.GradOperation(get_all=True)(_list_outer)(xs)[0]
    np.testing.assert_allclose(both[0], got[0])


U6 = np.arange(36.0).reshape(6, 6) / 7.0 - 2.0


def diag_weighted(x):
    return np.sum(np.diag(x, 1) * U6)


def diag_gradient_sum(x):
    """sum(2 * grad): the gradient of a linear function reads x for its shape only."""
    return np.sum(s2sad.grad(diag_weighted)(x) * 2.0)


def test_forward_over_reverse_of_a_linear_function_has_a_zero_tangent():
    x = np.array([0.3, -1.0, 2.0, 0.7, 1.5])
    value, tangent = s2sad.jvp(diag_gradient_sum, (x,), (np.ones(5),))
    np.testing.assert_allclose(value, 2.0 * np.sum(np.diag(U6, 1)))
    np.testing.assert_allclose(tangent, 0.0)


@pytest.mark.parametrize("fn, x", [
    (lambda x: np.diag(x, -1), np.array([0.3, -1.0, 2.0])),
    (lambda x: np.einsum("abcd->bd", x), np.arange(36.0).reshape(3, 2, 3, 2) / 5.0),
])
def test_second_order_forward_over_reverse_through_shape_only_inputs(fn, x):
    s2sad.check_grads(fn, (x,), order=2, modes=("fwd",))
