"""MindSpore's gradient API surface: where the transforms live and what they return.

MindSpore code imports the transforms from ``mindspore.ops`` and
``mindspore.ops.functional`` as well as from ``mindspore``; ``grad`` and
``value_and_grad`` take ``return_ids``, and ``get_grad`` reads one gradient
back from such a result.  Values are checked against closed forms and
central finite differences in float64.
"""
import numpy as np
import pytest

import s2sad
import s2sad as mindspore
from mindspore import nn, ops, Parameter, Tensor, ParameterTuple  # noqa: E402

from gradcheck import numeric_grad


X = np.array([0.5, -1.25, 2.0])
Y = np.array([1.5, 0.75, -0.5])
Z = np.array([-2.0, 0.25, 1.0])


class Bilinear(nn.Cell):
    """sum(w*x*y + b*z): every gradient has a closed form."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([0.3, -0.7, 1.1])), name="w")
        self.b = Parameter(Tensor(np.array([2.0, 0.5, -1.5])), name="b")

    def construct(self, x, y, z):
        return self.w * x * y + self.b * z


def _fd(net, args, i):
    return numeric_grad(lambda *a: np.sum(np.asarray(net(*a))), args, i)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-7, atol=1e-9)


# ------------------------------------------------------------- where they live
@pytest.mark.parametrize("name", ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev",
                                  "get_grad", "vmap"])
def test_transforms_are_exported_by_ops_and_ops_functional(name):
    assert getattr(ops, name) is getattr(s2sad, name)
    assert getattr(ops.functional, name) is getattr(s2sad, name)


def _cube_times(x, y):
    return x ** 3 * y


def test_ops_functional_vjp_and_jvp_match_finite_differences():
    f = _cube_times
    out, vjp_fn = ops.functional.vjp(f, Tensor(X), Tensor(Y))
    gx, gy = vjp_fn(Tensor(np.ones(3)))
    _close(out, X ** 3 * Y)
    _close(gx, numeric_grad(lambda a, b: np.sum(f(a, b)), (X, Y), 0))
    _close(gy, numeric_grad(lambda a, b: np.sum(f(a, b)), (X, Y), 1))
    out, tangent = ops.functional.jvp(f, (Tensor(X), Tensor(Y)),
                                      (Tensor(np.ones(3)), Tensor(np.zeros(3))))
    _close(tangent, 3 * X ** 2 * Y)


# ----------------------------------------------------------------- return_ids
def test_return_ids_pairs_a_single_position_with_its_gradient():
    net = Bilinear()
    pos, g = ops.grad(net, grad_position=0, return_ids=True)(Tensor(X), Tensor(Y), Tensor(Z))
    assert pos == 0 and isinstance(pos, int)
    _close(g, net.w.asnumpy() * Y)
    _close(g, _fd(net, (X, Y, Z), 0))


def test_return_ids_pairs_each_position_of_a_tuple():
    net = Bilinear()
    out = ops.grad(net, grad_position=(1, 2), return_ids=True)(Tensor(X), Tensor(Y), Tensor(Z))
    assert [i for i, _ in out] == [1, 2]
    _close(out[0][1], _fd(net, (X, Y, Z), 1))
    _close(out[1][1], net.b.asnumpy())


def test_return_ids_names_the_weights_single_and_in_a_tuple():
    net = Bilinear()
    args = (Tensor(X), Tensor(Y), Tensor(Z))
    (pos, gx), (name, gw) = ops.grad(net, 0, net.w, return_ids=True)(*args)
    assert (pos, name) == (0, "w")
    _close(gx, net.w.asnumpy() * Y)
    _close(gw, X * Y)
    inputs, weights = ops.grad(net, (0, 2), ParameterTuple(net.trainable_params()),
                               return_ids=True)(*args)
    assert [i for i, _ in inputs] == [0, 2]
    assert [n for n, _ in weights] == ["w", "b"]
    _close(weights[0][1], X * Y)
    _close(weights[1][1], Z)


def test_return_ids_with_weights_only():
    net = Bilinear()
    out = ops.grad(net, None, net.trainable_params(), return_ids=True)(
        Tensor(X), Tensor(Y), Tensor(Z))
    assert [n for n, _ in out] == ["w", "b"]
    _close(out[1][1], Z)


def test_return_ids_with_has_aux_and_value_and_grad():
    def f(x, y):
        return x * y, x + y

    (pos, g), aux = ops.grad(f, 1, has_aux=True, return_ids=True)(Tensor(X), Tensor(Y))
    assert pos == 1
    _close(g, X)
    _close(aux[0], X + Y)
    def square(x):
        return x ** 2

    value, (pos, g) = ops.value_and_grad(square, 0, return_ids=True)(Tensor(X))
    _close(value, X ** 2)
    assert pos == 0
    _close(g, 2 * X)


def test_return_ids_with_only_constant_inputs_gives_an_empty_tuple():
    def add(a, b):
        return a + b

    with pytest.warns(UserWarning):
        assert ops.grad(add, return_ids=True)(1, 2) == ()


def test_return_ids_leaves_the_plain_gradient_function_unchanged():
    net = Bilinear()
    args = (Tensor(X), Tensor(Y), Tensor(Z))
    ops.grad(net, 0, return_ids=True)(*args)
    _close(ops.grad(net, 0)(*args), net.w.asnumpy() * Y)


# ------------------------------------------------------------------- get_grad
def test_get_grad_by_position_and_by_parameter():
    net = Bilinear()
    res = ops.grad(net, (0, 1), net.trainable_params(), return_ids=True)(
        Tensor(X), Tensor(Y), Tensor(Z))
    _close(ops.get_grad(res, 1), _fd(net, (X, Y, Z), 1))
    _close(mindspore.get_grad(res, net.b), Z)
    _close(mindspore.get_grad(res, net.w), X * Y)


def test_get_grad_errors_follow_mindspore_types():
    net = Bilinear()
    res = ops.grad(net, 0, net.w, return_ids=True)(Tensor(X), Tensor(Y), Tensor(Z))
    with pytest.raises(RuntimeError, match="no gradient has the id 2"):
        ops.get_grad(res, 2)
    with pytest.raises(RuntimeError, match="'b'"):
        ops.get_grad(res, net.b)
    with pytest.raises(TypeError, match="'identifier' must be an int"):
        ops.get_grad(res, "w")
    with pytest.raises(TypeError, match="'gradients' must be the tuple"):
        ops.get_grad(Tensor(X), 0)


# ------------------------------------------------------------- argument errors
@pytest.mark.parametrize("api", [s2sad.grad, s2sad.value_and_grad])
def test_empty_grad_position_raises_runtime_error_as_mindspore(api):
    net = Bilinear()
    with pytest.raises(RuntimeError, match="'grad_position' must not be an empty tuple"):
        api(net, grad_position=(), weights=net.w)


# ------------------------------------------------------- older import spellings
def test_mindspore_common_exports_tensor_and_parameters():
    from mindspore.common import Tensor as T, Parameter as P, ParameterTuple as PT
    assert (T, P, PT) == (Tensor, Parameter, ParameterTuple)


def test_tensor_add_is_add_with_its_gradient():
    add = ops.TensorAdd()
    assert isinstance(add, ops.Add)
    gx, gy = ops.GradOperation(get_all=True)(add)(Tensor(X), Tensor(np.array(2.0)))
    _close(gx, np.ones(3))
    _close(gy, 3.0)                 # the broadcast scalar collects every element's slope


# ------------------------------------------------- gradients of gradient cells
class _SquareScaled(nn.Cell):
    """sum(x**2 * w**2)."""

    def __init__(self):
        super().__init__()
        self.mul = ops.Mul()
        self.w = Parameter(Tensor(np.array([2.0, -0.5])), name="w")

    def construct(self, x):
        return self.mul(self.mul(self.mul(x, x), self.w), self.w)


class _WeightGrad(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.params = ParameterTuple(net.trainable_params())
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, x):
        return self.grad(self.net, self.params)(x)


def test_input_gradient_of_a_weight_gradient_cell():
    """d/dx sum(d/dw sum(x^2 w^2)) = d/dx sum(2 x^2 w) = 4 x w."""
    x = np.array([1.5, 3.0])
    net = _SquareScaled()
    (gx,) = ops.GradOperation(get_all=True)(_WeightGrad(net))(Tensor(x))
    _close(gx, 4 * x * net.w.asnumpy())


# --------------------------------------------------------- grad inside @jit
class _JitWeightGrad(nn.Cell):
    """``grad`` with the Cell's Parameters as ``weights``, in a compiled construct."""

    def __init__(self, net, with_value):
        super().__init__()
        self.net = net
        self.weights = net.trainable_params()
        self.with_value = with_value

    @mindspore.jit
    def construct(self, x, y, z):
        if self.with_value:
            return ops.value_and_grad(self.net, 1, self.weights)(x, y, z)
        return ops.grad(self.net, (0, 2), self.weights)(x, y, z)


def test_grad_with_parameter_weights_inside_jit():
    net = Bilinear()
    args = (Tensor(X), Tensor(Y), Tensor(Z))
    (gx, gz), (gw, gb) = _JitWeightGrad(net, False)(*args)
    _close(gx, _fd(net, (X, Y, Z), 0))
    _close(gz, net.b.asnumpy())
    _close(gw, X * Y)
    _close(gb, Z)
    value, (gy, (gw, gb)) = _JitWeightGrad(net, True)(*args)
    _close(value, net(*args).asnumpy())
    _close(gy, net.w.asnumpy() * X)
    _close(gb, Z)


def test_grad_inside_jit_with_the_weights_in_a_closure_variable():
    net = Bilinear()
    weights = net.trainable_params()     # read by the compiled function through its closure

    @mindspore.jit
    def user_fn(x, y, z):
        return ops.grad(net, 0, weights)(x, y, z)

    gx, (gw, gb) = user_fn(Tensor(X), Tensor(Y), Tensor(Z))
    _close(gx, _fd(net, (X, Y, Z), 0))
    _close(gw, X * Y)
    _close(gb, Z)


def test_return_ids_and_get_grad_inside_jit():
    net = Bilinear()
    weights = net.trainable_params()

    @mindspore.jit
    def user_fn(x, y, z):
        res = ops.grad(net, (0, 1), weights, return_ids=True)(x, y, z)
        return res, ops.get_grad(res, 1), ops.get_grad(res, net.b)

    res, gy, gb = user_fn(Tensor(X), Tensor(Y), Tensor(Z))
    ((i0, gx), (i1, gy_paired)), ((nw, gw), (nb, gb_paired)) = res
    assert (i0, i1, nw, nb) == (0, 1, "w", "b")
    _close(gx, _fd(net, (X, Y, Z), 0))
    _close(gy, _fd(net, (X, Y, Z), 1))
    _close(gy_paired, gy)
    _close(gw, X * Y)
    _close(gb, Z)
    _close(gb_paired, Z)


def test_get_grad_of_a_missing_id_inside_jit_is_a_compile_error():
    net = Bilinear()

    @mindspore.jit
    def user_fn(x, y, z):
        return ops.get_grad(ops.grad(net, 0, return_ids=True)(x, y, z), 2)

    with pytest.raises(s2sad.errors.CompileError, match="no gradient has the id 2"):
        user_fn(Tensor(X), Tensor(Y), Tensor(Z))


def test_vjp_inside_jit_matches_finite_differences():
    v = np.array([1.0, -2.0, 0.5])

    @mindspore.jit
    def user_fn(x, y, v):
        out, vjp_fn = ops.vjp(_cube_times, x, y)
        return out, vjp_fn(v)

    out, (gx, gy) = user_fn(Tensor(X), Tensor(Y), Tensor(v))
    _close(out, X ** 3 * Y)
    weighted = lambda a, b: np.sum(v * _cube_times(a, b))  # noqa: E731
    _close(gx, numeric_grad(weighted, (X, Y), 0))
    _close(gy, numeric_grad(weighted, (X, Y), 1))


class _Shape(nn.Cell):
    def __init__(self):
        super().__init__()
        self.shape = ops.Shape()

    def construct(self, x):
        return self.shape(x)


def test_sens_for_a_cell_returning_a_shape_gives_zeros_as_mindspore():
    x = Tensor(np.arange(8).astype(np.int32))
    net = _Shape()
    sens = net(x)                                # a tuple of Python ints: (8,)
    (g,) = ops.GradOperation(get_all=True, sens_param=True)(net)(x, sens)
    np.testing.assert_array_equal(g.asnumpy(), np.zeros(8, np.int32))
    assert g.dtype == mindspore.int32
    with pytest.raises(ValueError, match="the sens must be a Tensor matching the output"):
        ops.GradOperation(sens_param=True)(_cube_times)(Tensor(X), Tensor(Y), (1.0,))


# ----------------------------------------------------------------------- vmap
def _sin_times(x):
    return ops.sin(x) * x


def test_vmap_maps_over_the_leading_axis_by_default():
    m = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    out = ops.vmap(_sin_times)(Tensor(m))
    assert isinstance(out, Tensor)
    _close(out, np.sin(m) * m)


def test_vmap_of_grad_gives_per_row_gradients():
    m = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    out = ops.vmap(ops.grad(_sin_times), 0, 0)(Tensor(m))
    _close(out, np.sin(m) + m * np.cos(m))
    _close(out[1], numeric_grad(lambda r: np.sum(np.sin(r) * r), (m[1],), 0))


def _scaled_pair(a, b):
    return a * b, a + b


def test_vmap_axes_per_input_and_per_output():
    m = np.arange(6.0).reshape(3, 2)
    v = np.array([1.0, 2.0, 3.0])
    prod, total = ops.vmap(_scaled_pair, (1, None), (1, 0))(Tensor(m), Tensor(v))
    _close(prod, m * v[:, None])          # column j times v, stacked back as column j
    _close(total, (m + v[:, None]).T)     # stacked on axis 0: one row per column of m


def test_vmap_errors_name_the_argument():
    with pytest.raises(ValueError, match="mapped axes must have one size"):
        ops.vmap(_scaled_pair)(Tensor(np.ones((3, 2))), Tensor(np.ones((2, 2))))
    with pytest.raises(ValueError, match="'in_axes' has 1 items but there are 2 inputs"):
        ops.vmap(_scaled_pair, (0,))(Tensor(np.ones(3)), Tensor(np.ones(3)))
    with pytest.raises(ValueError, match="'in_axes' is all None"):
        ops.vmap(_sin_times, None)(Tensor(np.ones(3)))
    with pytest.raises(TypeError, match="'fn' must be a function or a Cell"):
        ops.vmap(3)
