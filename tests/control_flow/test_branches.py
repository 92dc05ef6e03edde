"""Runtime and compile-time branches: if/elif/else, ternaries, and/or/not, Python flags.

Every gradient is compared with an independent value: a float64 central
finite difference of the original function run eagerly (``gradcheck``), or a
closed form.  Nothing is compared with s2sad itself.
"""
import numpy as np
import pytest

from s2sad import nn, ops, Tensor, Parameter, ParameterTuple

from gradcheck import check_vjp, numeric_grad, weighted_sum
from cf_common import V, code_lines, forward_source, grad_of


# =================================================================== branches
def f_if_elif_else(x):
    if x.sum() > 0:
        y = x * x
    elif x.sum() > -1:
        y = np.sin(x)
    else:
        y = x * 3
    return y


def f_ternary(x):
    return x * x if x.sum() > 0 else np.sin(x)


def f_and_or(x, y):
    if x.sum() > 0 and y.sum() > 0:
        z = x * y
    elif not (x.sum() > 0) or y.sum() < -5:
        z = x + y * y
    else:
        z = np.exp(x)
    return z


def f_not(x):
    if not x.sum() > 0:
        return x * 3
    return x * x


def f_bool_value(x, y):
    c = x.sum() > 0 and y.sum() > 0
    d = x.sum() > 5 or c
    if d:
        return x * y
    return x - y


def f_shape_cond(x):
    if x.shape[0] > 2:
        return x * x
    return np.sin(x)


def f_int_arg(x, n):
    if n > 2:
        return x * x
    return np.sin(x) * n


@pytest.mark.parametrize("scale", [1.0, -0.5, -3.0], ids=["if", "elif", "else"])
def test_if_elif_else(scale):
    check_vjp(f_if_elif_else, (V * scale,))


@pytest.mark.parametrize("scale", [1.0, -1.0], ids=["then", "else"])
def test_ternary(scale):
    check_vjp(f_ternary, (V * scale,))


@pytest.mark.parametrize("sx,sy", [(1, 1), (1, -1), (-1, 1), (-1, -1)])
def test_and_or(sx, sy):
    check_vjp(f_and_or, (V * sx, (V + 0.2) * sy))


@pytest.mark.parametrize("scale", [1.0, -1.0])
def test_not(scale):
    check_vjp(f_not, (V * scale,))


@pytest.mark.parametrize("sx,sy", [(1, 1), (1, -1), (-1, 1)])
def test_and_or_as_values(sx, sy):
    check_vjp(f_bool_value, (V * sx, (V + 0.2) * sy))


def test_tensor_condition_keeps_if_in_source():
    g = grad_of(f_if_elif_else)
    fwd = code_lines(forward_source(g, V))
    assert sum(line.startswith("if ") for line in fwd) >= 2, fwd  # the if and the elif
    assert any(line == "else:" for line in fwd)


def test_shape_condition_same_grad_fn_both_shapes():
    g = grad_of(f_shape_cond)
    for x in (V, V[:2], V, np.arange(1.0, 5.0) / 4):
        np.testing.assert_allclose(g(x), numeric_grad(lambda a: np.sum(f_shape_cond(a)), (x,), 0),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [3, 1])
def test_python_int_argument_condition(n):
    check_vjp(f_int_arg, (V, n))


class FlagNet(nn.Cell):
    def __init__(self, flag):
        super().__init__()
        self.flag = flag
        self.w = Parameter(Tensor(np.array([0.5, -0.3, 0.8])), name='w')

    def construct(self, x):
        if self.flag:
            return x * self.w * x
        return np.sin(x) + self.w * self.w


def fd_cell(net_factory, x, w_names, sens=None):
    """FD gradients of ``sum(net(x) * sens)`` w.r.t. ``x`` and the named Parameters."""
    net = net_factory()
    params = [getattr(net, n) for n in w_names]
    vals = [np.array(p.asnumpy(), np.float64) for p in params]
    if sens is None:
        sens = np.ones_like(np.asarray(net(x)), dtype=np.float64)

    def loss(x_, *ws):
        for p, w in zip(params, ws):
            p.set_data(np.asarray(w, np.float64))
        return weighted_sum(net(x_), sens)

    args = [x] + vals
    return [numeric_grad(loss, args, i) for i in range(len(args))]


def test_cell_python_flag_two_instances():
    nets = {True: FlagNet(True), False: FlagNet(False)}
    op = ops.GradOperation(get_all=True, get_by_list=True)
    grads = {}
    # interleaved, so a cached adjoint for one instance is never reused for the other
    for flag in (True, False, True, False):
        net = nets[flag]
        (dx,), (dw,) = op(net, ParameterTuple(net.trainable_params()))(V)
        grads[flag] = (dx, dw.asnumpy())
    for flag in (True, False):
        ex, ew = fd_cell(lambda: FlagNet(flag), V, ["w"])
        np.testing.assert_allclose(grads[flag][0], ex, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(grads[flag][1], ew, rtol=1e-6, atol=1e-6)
    # closed forms too
    np.testing.assert_allclose(grads[True][0], 2 * V * nets[True].w.asnumpy(), rtol=1e-14)
    np.testing.assert_allclose(grads[False][0], np.cos(V), rtol=1e-14)


# --------------------------------------------- isinstance with a tuple of types
def f_isinstance_tuple(x, scale):
    if isinstance(scale, (int, float)):
        return np.sum(x * scale)
    return np.sum(x * scale * scale)


def test_isinstance_with_a_tuple_of_types():
    """Decided while compiling: a Python number is an int or float, a runtime array is not."""
    x = np.array([1.0, -2.0])
    g = ops.GradOperation()(f_isinstance_tuple)
    np.testing.assert_array_equal(g(x, 3.0), [3.0, 3.0])
    np.testing.assert_array_equal(g(x, np.array(3.0)), [9.0, 9.0])
