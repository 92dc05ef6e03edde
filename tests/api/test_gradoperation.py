"""GradOperation: result structure, types and values for every flag combination.

Values are compared with central finite differences of the same Cell run
eagerly in float64 (``gradcheck.numeric_grad``).
"""
import itertools

import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, Parameter, ParameterTuple
from s2sad import driver as G

from gradcheck import numeric_grad, weighted_sum

# float32 gradients are compared with float64 finite differences: float32
# rounding (eps ~6e-8) accumulated over the few products and sums of these
# small nets stays well below 1e-5 for O(1) values.
TOL = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-6, atol=1e-6)}

W1 = np.array([0.5, -1.2, 2.0])
B = np.array([[0.1, -0.2, 0.3, 0.4], [1.0, 0.5, -0.7, 0.2]])


class Net(nn.Cell):
    """Two inputs, two Parameters."""

    def __init__(self, dtype=np.float32):
        super().__init__()
        self.matmul = ops.MatMul()
        self.w1 = Parameter(Tensor(W1.astype(dtype)), name='w1')
        self.b = Parameter(Tensor(B.astype(dtype)), name='b')

    def construct(self, x, y):
        h = self.matmul(x * self.w1, y) + self.b
        return ops.sin(h) * y[0]


def inputs(dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3)).astype(dtype)
    y = rng.standard_normal((3, 4)).astype(dtype)
    sens = rng.standard_normal((2, 4)).astype(dtype)
    return x, y, sens


def fd_net_grads(x, y, w1, b, sens):
    """Finite-difference gradients of sum(Net(x, y) * sens) in float64: (dx, dy, dw1, db)."""
    net64 = Net(np.float64)
    args = [np.asarray(a, np.float64) for a in (x, y, w1, b)]
    sens = np.asarray(sens, np.float64)

    def loss(x_, y_, w1_, b_):
        net64.w1.set_data(np.asarray(w1_, np.float64))
        net64.b.set_data(np.asarray(b_, np.float64))
        return weighted_sum(net64(Tensor(x_), Tensor(y_)), sens)

    return [numeric_grad(loss, args, i) for i in range(4)]


def assert_grad(got, expected, dtype, kind):
    """``got`` has the expected container type, dtype and values."""
    if kind == "Tensor":
        assert type(got) is Tensor, type(got)
        assert got.asnumpy().dtype == np.dtype(dtype)
        arr = got.asnumpy()
    else:
        assert type(got) is np.ndarray, type(got)
        assert got.dtype == np.dtype(dtype)
        arr = got
    assert arr.shape == expected.shape
    np.testing.assert_allclose(arr, expected, **TOL[dtype])


FLAGS = list(itertools.product([False, True], [False, True], [False, True]))


@pytest.mark.parametrize("get_all,get_by_list,sens_param", FLAGS,
                         ids=["all=%d-list=%d-sens=%d" % f for f in FLAGS])
@pytest.mark.parametrize("dtype,kind", [(np.float32, "Tensor"), (np.float64, "Tensor"),
                                        (np.float64, "ndarray"), (np.float32, "ndarray")],
                         ids=["f32-Tensor", "f64-Tensor", "f64-ndarray", "f32-ndarray"])
def test_flag_combination(get_all, get_by_list, sens_param, dtype, kind):
    net = Net(dtype)
    x, y, sens = inputs(dtype)
    if not sens_param:
        sens = np.ones((2, 4), dtype)
    wrap = Tensor if kind == "Tensor" else (lambda a: a)
    args = (wrap(x), wrap(y)) + ((wrap(sens),) if sens_param else ())
    op = ops.GradOperation(get_all=get_all, get_by_list=get_by_list, sens_param=sens_param)
    weights = ParameterTuple(net.trainable_params())
    grad_fn = op(net, weights) if get_by_list else op(net)
    result = grad_fn(*args)

    dx, dy, dw1, db = fd_net_grads(x, y, net.w1.asnumpy(), net.b.asnumpy(), sens)
    if get_all and get_by_list:
        assert type(result) is tuple and len(result) == 2
        ins, ws = result
        assert type(ins) is tuple and len(ins) == 2
        assert type(ws) is tuple and len(ws) == 2
        assert_grad(ins[0], dx, dtype, kind)
        assert_grad(ins[1], dy, dtype, kind)
        assert_grad(ws[0], dw1, dtype, "Tensor")
        assert_grad(ws[1], db, dtype, "Tensor")
    elif get_all:
        assert type(result) is tuple and len(result) == 2
        assert_grad(result[0], dx, dtype, kind)
        assert_grad(result[1], dy, dtype, kind)
    elif get_by_list:
        assert type(result) is tuple and len(result) == 2
        assert_grad(result[0], dw1, dtype, "Tensor")
        assert_grad(result[1], db, dtype, "Tensor")
    else:
        # default: the gradient of the first input alone, not in a tuple
        assert_grad(result, dx, dtype, kind)


# ---------------------------------------------------------- weights structure
def test_get_by_list_single_parameter_is_bare():
    net = Net(np.float64)
    x, y, _ = inputs(np.float64)
    g = ops.GradOperation(get_by_list=True)(net, net.w1)(Tensor(x), Tensor(y))
    assert type(g) is Tensor
    _, _, dw1, _ = fd_net_grads(x, y, W1, B, np.ones((2, 4)))
    np.testing.assert_allclose(g.asnumpy(), dw1, **TOL[np.float64])


def test_get_by_list_list_is_tuple_in_given_order():
    net = Net(np.float64)
    x, y, _ = inputs(np.float64)
    g = ops.GradOperation(get_by_list=True)(net, [net.b, net.w1])(Tensor(x), Tensor(y))
    assert type(g) is tuple and len(g) == 2
    _, _, dw1, db = fd_net_grads(x, y, W1, B, np.ones((2, 4)))
    np.testing.assert_allclose(g[0].asnumpy(), db, **TOL[np.float64])
    np.testing.assert_allclose(g[1].asnumpy(), dw1, **TOL[np.float64])


def test_get_by_list_one_item_list_is_one_tuple():
    net = Net(np.float64)
    x, y, _ = inputs(np.float64)
    g = ops.GradOperation(get_by_list=True)(net, ParameterTuple([net.b]))(Tensor(x), Tensor(y))
    assert type(g) is tuple and len(g) == 1
    _, _, _, db = fd_net_grads(x, y, W1, B, np.ones((2, 4)))
    np.testing.assert_allclose(g[0].asnumpy(), db, **TOL[np.float64])


def test_get_by_list_empty_parameter_tuple():
    net = Net(np.float64)
    x, y, _ = inputs(np.float64)
    g = ops.GradOperation(get_by_list=True)(net, ParameterTuple())(Tensor(x), Tensor(y))
    assert g == ()
    both = ops.GradOperation(get_all=True, get_by_list=True)(net, ParameterTuple())(
        Tensor(x), Tensor(y))
    assert type(both) is tuple and len(both) == 2 and both[1] == ()
    dx, dy, _, _ = fd_net_grads(x, y, W1, B, np.ones((2, 4)))
    np.testing.assert_allclose(both[0][0].asnumpy(), dx, **TOL[np.float64])
    np.testing.assert_allclose(both[0][1].asnumpy(), dy, **TOL[np.float64])


class Unused(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([2.0, 3.0])), name='w')
        self.unused = Parameter(Tensor(np.ones((2, 3))), name='unused')

    def construct(self, x):
        return x * self.w


def test_unused_parameter_gets_zeros():
    net = Unused()
    x = np.array([0.5, -1.5])
    gw, gu = ops.GradOperation(get_by_list=True)(net, ParameterTuple(net.trainable_params()))(x)
    np.testing.assert_allclose(gw.asnumpy(), x, rtol=1e-15)  # d/dw sum(x * w) = x
    assert type(gu) is Tensor and gu.shape == (2, 3)
    np.testing.assert_array_equal(gu.asnumpy(), np.zeros((2, 3)))


# -------------------------------------------------------------- scalar types
def f_scalar(x, y):
    return x * x * y + ops.sin(y)


def test_numpy_scalar_input_gives_numpy_scalar_grad():
    x, y = np.float64(1.5), np.float64(-0.7)
    gx, gy = ops.GradOperation(get_all=True)(f_scalar)(x, y)
    assert type(gx) is np.float64 and type(gy) is np.float64
    np.testing.assert_allclose(gx, numeric_grad(f_scalar, (x, y), 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gy, numeric_grad(f_scalar, (x, y), 1), rtol=1e-6, atol=1e-6)
    # closed form too: d/dx = 2xy, d/dy = x^2 + cos(y)
    np.testing.assert_allclose(gx, 2 * 1.5 * -0.7, rtol=1e-14)
    np.testing.assert_allclose(gy, 1.5 ** 2 + np.cos(-0.7), rtol=1e-14)


def test_numpy_scalar_default_flags_is_bare_scalar():
    g = ops.GradOperation()(f_scalar)(np.float64(1.5), np.float64(2.0))
    assert type(g) is np.float64
    np.testing.assert_allclose(g, 2 * 1.5 * 2.0, rtol=1e-14)


def f_with_constants(x, k, flag, nothing, y):
    if flag:
        out = x * k
    else:
        out = x / k
    if nothing is None:
        out = out + y * y
    return out


@pytest.mark.parametrize("flag", [True, False])
def test_python_constants_left_out_of_get_all(flag):
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([0.5, -0.5, 2.0])
    grads = ops.GradOperation(get_all=True)(f_with_constants)(x, 4, flag, None, y)
    assert type(grads) is tuple and len(grads) == 2

    def fx(x_):
        return np.sum(f_with_constants(x_, 4, flag, None, y))

    def fy(y_):
        return np.sum(f_with_constants(x, 4, flag, None, y_))

    np.testing.assert_allclose(grads[0], numeric_grad(fx, (x,), 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grads[1], numeric_grad(fy, (y,), 0), rtol=1e-6, atol=1e-6)


def test_python_float_constant_first_argument_is_an_error():
    # the default result is the first input's gradient: y's would read as k's
    def f(k, y):
        return y * k + y * y

    with pytest.raises(TypeError, match="the input at position 0 \\('k'\\) is a float"):
        ops.GradOperation()(f)(2.5, np.array([1.0, -1.0]))
    (g,) = ops.GradOperation(get_all=True)(f)(2.5, np.array([1.0, -1.0]))
    np.testing.assert_allclose(g, 2.5 + 2 * np.array([1.0, -1.0]), rtol=1e-15)


class NoInputs(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([1.0, 2.0], np.float32)), name='w')

    def construct(self):
        return self.w * 2.0


def test_cell_without_inputs_default_flags():
    assert ops.GradOperation()(NoInputs())() == ()
    assert ops.GradOperation(get_all=True)(NoInputs())() == ()


def test_cell_without_inputs_weights():
    net = NoInputs()
    g = ops.GradOperation(get_by_list=True)(net, net.w)()
    np.testing.assert_array_equal(g.asnumpy(), np.full(2, 2.0, np.float32))


# ----------------------------------------------------------------- tuple output
class TwoOutputs(nn.Cell):
    def construct(self, x, y):
        return ops.sin(x) * y, ops.matmul(x, y.T)


def test_tuple_output_default_sens_sums_outputs():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    gx, gy = ops.GradOperation(get_all=True)(TwoOutputs())(x, y)
    net = TwoOutputs()

    def total(x_, y_):
        a, b = net(Tensor(x_), Tensor(y_))
        return float(np.sum(a.asnumpy()) + np.sum(b.asnumpy()))

    np.testing.assert_allclose(gx, numeric_grad(total, (x, y), 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gy, numeric_grad(total, (x, y), 1), rtol=1e-6, atol=1e-6)


def test_tuple_output_tuple_sens():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    s1, s2 = rng.standard_normal((2, 3)), rng.standard_normal((2, 2))
    gx, gy = ops.GradOperation(get_all=True, sens_param=True)(TwoOutputs())(x, y, (s1, s2))
    net = TwoOutputs()

    def total(x_, y_):
        return weighted_sum(net(Tensor(x_), Tensor(y_)), (s1, s2))

    np.testing.assert_allclose(gx, numeric_grad(total, (x, y), 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gy, numeric_grad(total, (x, y), 1), rtol=1e-6, atol=1e-6)


def test_tuple_output_sens_must_be_tuple():
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="tuple of 2 items"):
        ops.GradOperation(sens_param=True)(TwoOutputs())(x, x, np.ones((2, 3)))


# -------------------------------------------------------------- compile cache
class Act(nn.Cell):
    def __init__(self, act):
        super().__init__()
        self.act = act

    def construct(self, x):
        return self.act(x) * x


def f_shapes(x):
    return np.sum(np.tanh(x) * x, axis=None)


def test_compiled_code_reused_across_shapes():
    grad_fn = ops.GradOperation()(f_shapes)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3))
    b = rng.standard_normal((5, 3))
    s2sad.clear_caches()        # a full LRU would not grow (earlier tests fill it)
    before = len(G.cache)
    ga = grad_fn(a)
    entry = grad_fn.last
    assert len(G.cache) == before + 1
    gb = grad_fn(b)
    assert grad_fn.last is entry and len(G.cache) == before + 1  # compiled once
    np.testing.assert_allclose(ga, numeric_grad(f_shapes, (a,), 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gb, numeric_grad(f_shapes, (b,), 0), rtol=1e-6, atol=1e-6)
    assert ga.shape == (2, 3) and gb.shape == (5, 3)


class Broadcasting(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([0.3, -0.4, 1.1])), name='w')

    def construct(self, x):
        return ops.sin(x * self.w) * x


def test_cell_reused_for_new_batch_size():
    net = Broadcasting()
    grad_fn = ops.GradOperation(get_by_list=True)(net, net.w)
    grad_x = ops.GradOperation()(net)
    rng = np.random.default_rng(6)
    x1, x2 = rng.standard_normal((2, 3)), rng.standard_normal((5, 3))
    n0 = len(G.cache)
    gx1 = grad_x(x1)
    e1 = grad_x.last
    gx2 = grad_x(x2)
    assert grad_x.last is e1 and len(G.cache) == n0 + 1

    def fx(x_):
        return float(np.sum(net(Tensor(x_)).asnumpy()))

    np.testing.assert_allclose(gx1, numeric_grad(fx, (x1,), 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gx2, numeric_grad(fx, (x2,), 0), rtol=1e-6, atol=1e-6)

    def fw(w_, x_):
        net.w.set_data(w_)
        return float(np.sum(net(Tensor(x_)).asnumpy()))

    w0 = net.w.asnumpy().copy()
    gw1 = grad_fn(x1).asnumpy()
    gw2 = grad_fn(x2).asnumpy()
    exp1 = numeric_grad(fw, (w0, x1), 0)
    exp2 = numeric_grad(fw, (w0, x2), 0)
    net.w.set_data(w0)
    np.testing.assert_allclose(gw1, exp1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gw2, exp2, rtol=1e-6, atol=1e-6)


def test_instances_with_different_primitives_get_their_own_gradient():
    x = np.array([0.3, -1.1, 2.0])
    g_sin = ops.GradOperation()(Act(ops.Sin()))(x)
    g_cos = ops.GradOperation()(Act(ops.Cos()))(x)
    # closed forms: d/dx sin(x) x = cos(x) x + sin(x); d/dx cos(x) x = -sin(x) x + cos(x)
    np.testing.assert_allclose(g_sin, np.cos(x) * x + np.sin(x), rtol=1e-14)
    np.testing.assert_allclose(g_cos, -np.sin(x) * x + np.cos(x), rtol=1e-14)
    # and again in the other order, through one shared GradOperation
    grad_op = ops.GradOperation()
    a, b = Act(ops.Cos()), Act(ops.Sin())
    np.testing.assert_allclose(grad_op(a)(x), -np.sin(x) * x + np.cos(x), rtol=1e-14)
    np.testing.assert_allclose(grad_op(b)(x), np.cos(x) * x + np.sin(x), rtol=1e-14)


def test_attribute_changed_after_compiling_is_seen():
    net = Act(ops.Sin())
    grad_fn = ops.GradOperation()(net)
    x = np.array([0.3, -1.1, 2.0])
    np.testing.assert_allclose(grad_fn(x), np.cos(x) * x + np.sin(x), rtol=1e-14)
    net.act = ops.Exp()
    np.testing.assert_allclose(grad_fn(x), np.exp(x) * x + np.exp(x), rtol=1e-14)


def test_parameter_value_read_on_every_call():
    net = Broadcasting()
    grad_x = ops.GradOperation()(net)
    x = np.array([[1.0, 2.0, 3.0]])
    w = net.w.asnumpy().copy()
    g1 = grad_x(x)
    np.testing.assert_allclose(g1, np.cos(x * w) * w * x + np.sin(x * w), rtol=1e-14)
    net.w.set_data(2 * w)
    g2 = grad_x(x)
    np.testing.assert_allclose(g2, np.cos(x * 2 * w) * 2 * w * x + np.sin(x * 2 * w),
                               rtol=1e-14)


def test_gradoperation_repr_and_weights_required():
    assert repr(ops.GradOperation(True, False, True)) == \
        "GradOperation(get_all=True, get_by_list=False, sens_param=True)"
    with pytest.raises(TypeError, match="weights"):
        ops.GradOperation(get_by_list=True)(Net())
    assert isinstance(s2sad.ops.GradOperation, type)


# ------------------------------------------------------ more argument structure
def f_tuple_arg(xs, y):
    a, b = xs
    return ops.sin(a) * b * y


def test_tuple_argument_gradient_mirrors_structure():
    rng = np.random.default_rng(7)
    a, b, y = (rng.standard_normal(3) for _ in range(3))
    grads = ops.GradOperation(get_all=True)(f_tuple_arg)((a, b), y)
    assert type(grads) is tuple and len(grads) == 2
    assert type(grads[0]) is tuple and len(grads[0]) == 2

    def total(a_, b_, y_):
        return float(np.sum(f_tuple_arg((a_, b_), y_)))

    for got, i in ((grads[0][0], 0), (grads[0][1], 1), (grads[1], 2)):
        np.testing.assert_allclose(got, numeric_grad(total, (a, b, y), i), rtol=1e-6, atol=1e-6)


class Shared(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([2.0, 3.0])), name='w')

    def construct(self, x):
        return x * self.w * self.w


def test_parameter_read_twice_accumulates():
    net = Shared()
    x = np.array([1.5, -0.5])
    g = ops.GradOperation(get_by_list=True)(net, net.w)(x)
    np.testing.assert_allclose(g.asnumpy(), 2 * x * np.array([2.0, 3.0]), rtol=1e-15)


class Dense(nn.Cell):
    def __init__(self, w):
        super().__init__()
        self.weight = Parameter(Tensor(np.array(w)), name='weight')

    def construct(self, x):
        return ops.matmul(x, self.weight)


class Stack(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = Dense([[1.0, 2.0], [3.0, -4.0]])
        self.fc2 = Dense([[0.5], [-1.0]])

    def construct(self, x):
        return self.fc2(ops.tanh(self.fc1(x)))


def test_nested_cells_weights():
    net = Stack()
    x = np.array([[0.1, 0.2], [-0.3, 0.4]])
    params = ParameterTuple(net.trainable_params())
    assert [p.name for p in params] == ['fc1.weight', 'fc2.weight']
    (gx,), (g1, g2) = ops.GradOperation(get_all=True, get_by_list=True)(net, params)(x)
    w1, w2 = net.fc1.weight.asnumpy().copy(), net.fc2.weight.asnumpy().copy()

    def total(x_, w1_, w2_):
        return float(np.sum(np.tanh(x_ @ w1_) @ w2_))

    np.testing.assert_allclose(gx, numeric_grad(total, (x, w1, w2), 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g1.asnumpy(), numeric_grad(total, (x, w1, w2), 1),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g2.asnumpy(), numeric_grad(total, (x, w1, w2), 2),
                               rtol=1e-6, atol=1e-6)


class Scale(nn.Cell):
    def __init__(self, s):
        super().__init__()
        self.s = s

    def construct(self, x):
        return x * self.s


def test_constant_attribute_change_is_seen():
    net = Scale(2.0)
    grad_fn = ops.GradOperation()(net)
    x = np.array([1.0, -1.0])
    np.testing.assert_array_equal(grad_fn(x), [2.0, 2.0])
    net.s = 3.0
    np.testing.assert_array_equal(grad_fn(x), [3.0, 3.0])


class MM(nn.Cell):
    def __init__(self, transpose_b):
        super().__init__()
        self.mm = ops.MatMul(transpose_b=transpose_b)

    def construct(self, x, y):
        return self.mm(x, y)


def test_instances_with_different_primitive_attributes():
    x = np.arange(6.0).reshape(2, 3)
    y = np.arange(12.0).reshape(3, 4)
    grad_op = ops.GradOperation(get_all=True)
    dx, dy = grad_op(MM(False))(x, y)
    dxt, dyt = grad_op(MM(True))(x, y.T.copy())
    # closed forms for sum(x @ y): dx = 1 @ y.T, dy = x.T @ 1
    np.testing.assert_allclose(dx, np.ones((2, 4)) @ y.T, rtol=1e-15)
    np.testing.assert_allclose(dy, x.T @ np.ones((2, 4)), rtol=1e-15)
    np.testing.assert_allclose(dxt, np.ones((2, 4)) @ y.T, rtol=1e-15)
    np.testing.assert_allclose(dyt, (x.T @ np.ones((2, 4))).T, rtol=1e-15)


def f_constant_output(x):
    return 3.0 + 0.0 * 1.0


def test_output_independent_of_input_gives_zeros():
    g = ops.GradOperation()(f_constant_output)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, np.zeros(2))


def f_scalar_out(x):
    return (x * x).sum()


@pytest.mark.parametrize("sens", [np.float64(2.0), np.array(2.0)], ids=["np.float64", "0-d"])
def test_sens_for_scalar_output(sens):
    x = np.array([1.0, -2.0])
    g = ops.GradOperation(sens_param=True)(f_scalar_out)(x, sens)
    np.testing.assert_allclose(g, 2.0 * 2 * x, rtol=1e-15)


# ---------------------------------------------- a NumPy function or a primitive
def test_gradient_of_a_numpy_function_or_primitive_itself():
    """``GradOperation()(np.tanh)`` and ``GradOperation()(ops.Sin())``: closed forms."""
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(ops.GradOperation()(np.tanh)(x), 1 - np.tanh(x) ** 2,
                               rtol=1e-15)   # the same float64 operations in another order
    np.testing.assert_allclose(ops.GradOperation()(ops.GradOperation()(np.sin))(x), -np.sin(x),
                               rtol=1e-15)   # as above
    g = ops.GradOperation()(ops.Sin())
    np.testing.assert_array_equal(g(x), np.cos(x))
    assert "def Sin_grad(x):" in g.last.source
    dx, dy = ops.GradOperation(get_all=True)(np.multiply)(x, 3 * x)
    np.testing.assert_array_equal(dx, 3 * x)
    np.testing.assert_array_equal(dy, x)


# ------------------------------------------------------ weights given as None
class _ScaledByW(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([6.0, -1.5])), name="w")

    def construct(self, x):
        return (self.w * x * x).sum()


class _GradOfInnerWithNone(nn.Cell):
    """``grad_op(self.net, None)`` inside ``construct``, as MindSpore's tests write it."""

    def __init__(self, net, get_all):
        super().__init__()
        self.net = net
        self.grad_op = ops.GradOperation(get_all=get_all, get_by_list=True)

    def construct(self, x):
        return self.grad_op(self.net, None)(x)


@pytest.mark.parametrize("inside", [False, True], ids=["eager", "inside-construct"])
def test_get_by_list_with_weights_none_gives_an_empty_weights_part(inside):
    """Explicit ``None`` (like ``[]``) means no weights: ``()``, and ``((dx,), ())`` with get_all."""
    x = np.array([0.5, 2.0])
    net = _ScaledByW()
    only = (_GradOfInnerWithNone(net, False)(Tensor(x)) if inside
            else ops.GradOperation(get_by_list=True)(net, None)(Tensor(x)))
    assert only == ()
    both = (_GradOfInnerWithNone(net, True)(Tensor(x)) if inside
            else ops.GradOperation(get_all=True, get_by_list=True)(net, None)(Tensor(x)))
    (dx,), weights_part = both
    assert weights_part == ()
    expected = numeric_grad(lambda v: float(np.sum(net.w.asnumpy() * v * v)), (x,), 0)
    np.testing.assert_allclose(dx.asnumpy(), expected, rtol=1e-7)


def test_get_by_list_with_weights_left_out_still_raises():
    with pytest.raises(TypeError, match="'weights' must be given when 'get_by_list' is True"):
        ops.GradOperation(get_by_list=True)(_ScaledByW())
