"""MindSpore's Tensor methods, eagerly (against NumPy) and inside differentiated
code (gradients against float64 central differences), and Tensor printing
(against strings printed in MindSpore's documentation)."""
import numpy as np
import pytest

import s2sad as ms
from s2sad import nn
from s2sad.tensor import Tensor

from gradcheck import check_jvp, check_vjp

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4))
X32 = X.astype(np.float32)


def T(a):
    return Tensor(np.array(a))


def _same(t, expected, dtype=None):
    assert type(t) is Tensor
    np.testing.assert_allclose(t.asnumpy(), expected, rtol=1e-6, atol=1e-7)
    assert t.shape == np.shape(expected)
    if dtype is not None:
        assert t.dtype == dtype


# ------------------------------------------------------------- construction
def test_tensor_function_is_the_constructor():
    t = ms.tensor([1.0, 2.0])
    assert type(t) is Tensor and t.dtype == ms.float32
    assert ms.tensor([1, 2], ms.float32).dtype == ms.float32
    assert ms.tensor(np.arange(3)).dtype == ms.int64
    assert ms.tensor(input_data=1.5, dtype=ms.float64).dtype == ms.float64


# ---------------------------------------------------------- eager vs NumPy
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin_eager(axis, keepdims):
    x = np.array([[1.0, 5.0, 5.0, 0.0], [7.0, -1.0, 7.0, 2.0]], np.float32)
    _same(Tensor(x).argmax(axis, keepdims), np.argmax(x, axis, keepdims=keepdims), ms.int32)
    _same(Tensor(x).argmin(axis=axis, keepdims=keepdims),
          np.argmin(x, axis, keepdims=keepdims), ms.int32)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keep", [False, True])
def test_any_all_eager(axis, keep):
    x = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])
    _same(Tensor(x).all(axis, keep), np.all(x, axis=axis, keepdims=keep), ms.bool_)
    _same(Tensor(x).any(axis=axis, keep_dims=keep), np.any(x, axis=axis, keepdims=keep),
          ms.bool_)
    b = x > 0
    _same(Tensor(b).all(axis), np.all(b, axis=axis), ms.bool_)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_var_std_eager(axis, ddof, keepdims):
    _same(Tensor(X32).var(axis, ddof, keepdims), np.var(X32, axis, ddof=ddof, keepdims=keepdims))
    _same(Tensor(X32).std(axis=axis, ddof=ddof, keepdims=keepdims),
          np.std(X32, axis, ddof=ddof, keepdims=keepdims))


def test_numpy_functions_on_tensors_call_the_methods():
    t = Tensor(X)
    for np_fn in (np.all, np.any, np.var, np.std, np.argmax, np.argmin):
        np.testing.assert_allclose(np.asarray(np_fn(t)), np_fn(X))
    np.testing.assert_allclose(np.asarray(np.var(t, axis=0, ddof=1)), np.var(X, 0, ddof=1))
    with pytest.raises(ValueError, match="'out' argument is not supported"):
        np.all(t, out=np.zeros(()))


def test_var_doc_example():
    # mindspore.Tensor.var's documented example prints 1.25
    assert float(Tensor(np.array([1., 2., 3., 4.], np.float32)).var()) == 1.25


def test_view_masked_fill_where_to_init_data_eager():
    t = Tensor(X32)
    _same(t.view(4, 3), X32.reshape(4, 3))
    _same(t.view((2, -1)), X32.reshape(2, -1))
    mask = X32 > 0
    _same(t.masked_fill(Tensor(mask), 0.5), np.where(mask, np.float32(0.5), X32), ms.float32)
    _same(t.masked_fill(Tensor(mask[0]), Tensor(np.float32(-2))),
          np.where(mask[0], np.float32(-2), X32), ms.float32)
    _same(t.where(Tensor(mask), Tensor(np.ones((3, 4), np.float32))),
          np.where(mask, X32, 1), ms.float32)
    _same(t.to(ms.int32), X32.astype(np.int32), ms.int32)
    assert t.init_data() is t


def test_methods_already_present_match_numpy():
    t = Tensor(X32)
    _same(t.mean(), X32.mean())
    _same(t.mean(axis=1, keep_dims=True), X32.mean(axis=1, keepdims=True))
    _same(t.clip(-0.5, 0.5), np.clip(X32, -0.5, 0.5))
    _same(t.expand_dims(1), np.expand_dims(X32, 1))
    _same(Tensor(X32[:, None]).squeeze(1), X32)
    _same(t.flatten(), X32.reshape(-1))
    _same(Tensor(np.ones((2, 3, 4))).flatten(start_dim=1), np.ones((2, 12)))
    _same(t.repeat(2, axis=0), np.repeat(X32, 2, axis=0))
    _same(t.tile((2, 1)), np.tile(X32, (2, 1)))
    _same(t.gather(Tensor(np.array([2, 0])), 1), X32[:, [2, 0]])
    _same(t.astype(ms.float64), X32.astype(np.float64), ms.float64)
    c = t.copy()
    c[0, 0] = 100.0
    assert t.asnumpy()[0, 0] == X32[0, 0]
    assert isinstance(t.asnumpy(), np.ndarray)
    assert Tensor(np.float32(2.5)).item() == 2.5 and t.item(1, 2) == X32[1, 2]
    assert len(t) == 3
    with pytest.raises(TypeError, match="0-d"):
        len(Tensor(1.0))


def test_comparisons_are_bool_tensors_usable_in_if():
    t = Tensor(np.array([1.0, 2.0]))
    lt = t < 1.5
    assert lt.dtype == ms.bool_ and lt.asnumpy().tolist() == [True, False]
    assert bool(t[1] > 1.5) is True and bool(Tensor([[0.0]]) > 0) is False
    if (t > 0).all():
        pass
    else:
        raise AssertionError("all() of a true Tensor read as False")
    with pytest.raises(ValueError, match="ambiguous"):
        bool(t > 0)


# ------------------------------------------------ differentiated (construct)
class _MethodNet(nn.Cell):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, x):
        return self.fn(x)


def _grad_matches(fn, x=X):
    """The method called in ``construct`` gives NumPy's value and a VJP
    matching central differences in float64."""
    net = _MethodNet(fn)
    check_vjp(net, (Tensor(x),))


# One function per method (the compiler reads each one's source).
def m_var(x):
    return x.var()


def m_var0(x):
    return x.var(0)


def m_var_ddof_keep(x):
    return x.var(axis=1, ddof=1, keepdims=True)


def m_var_positional(x):
    return x.var((0, 1), True)


def m_std(x):
    return x.std()


def m_std_ddof(x):
    return x.std(axis=-1, ddof=1)


def m_std_keep(x):
    return x.std(0, 0, True)


def m_view(x):
    return x.view(4, 3) * x.view((4, 3))


def m_masked_fill(x):
    return x.masked_fill(x > 0.3, 2.0) ** 2


def m_masked_fill_tensor_value(x):
    return x.masked_fill((x > 0)[0], x[1, 1]) * x


def m_where(x):
    return x.where(x < 0, x * x)


def m_where_scalar(x):
    return x.where(x < 0, 0.5)


def m_to(x):
    return x.to(ms.float64) * 3


def m_init_data(x):
    return x.init_data() * x


def m_copy(x):
    return x.copy() * x


def m_mean(x):
    return x.mean(axis=0, keep_dims=True) * x


def m_clip(x):
    return x.clip(-0.5, 0.5) * x


def m_expand_squeeze_flatten(x):
    return x.expand_dims(0).squeeze(0).flatten() ** 2


def m_repeat_tile(x):
    return x.repeat(2, axis=1).tile((2, 1)) ** 2


IDX = Tensor(np.array([3, 0, 0]))


def m_gather(x):
    return x.gather(IDX, 1) ** 2


def m_astype(x):
    return x.astype(ms.float64) ** 3


def m_argmax_argmin(x):
    return x * x.argmax(axis=1, keepdims=True) + x.argmin()


def m_any_all(x):
    return x * x.any(axis=1, keep_dims=True) + x * x.all()


METHOD_FNS = [v for k, v in sorted(globals().items()) if k.startswith("m_")]


@pytest.mark.filterwarnings("ignore::s2sad.RecompileWarning")  # one Cell class, many fns
@pytest.mark.parametrize("fn", METHOD_FNS, ids=[f.__name__[2:] for f in METHOD_FNS])
def test_method_gradients_in_construct(fn):
    _grad_matches(fn)
    # the compiled value is the eager one
    expected = fn(Tensor(X))
    np.testing.assert_allclose(_MethodNet(fn)(Tensor(X)).asnumpy(), expected.asnumpy())


def _var_fwd(x):
    return x.var(axis=0, ddof=1)


def _std_fwd(x):
    return x.std(1)


def test_var_std_forward_mode():
    check_jvp(_var_fwd, (X,))
    check_jvp(_std_fwd, (X,))


def test_argmax_keepdims_without_axis_in_construct():
    out = _MethodNet(lambda x: x.argmax(keepdims=True))(Tensor(X))
    np.testing.assert_array_equal(out.asnumpy(), np.argmax(X, keepdims=True))


def test_if_on_tensor_condition_in_construct():
    def f(x):
        if (x > 0).all():
            return x.var()
        return x.std()
    for x in (np.abs(X) + 0.1, X):
        expected = np.var(x) if (x > 0).all() else np.std(x)
        np.testing.assert_allclose(_MethodNet(f)(Tensor(x)).asnumpy(), expected)
        _grad_matches(f, x)


# ------------------------------------------------------------------ printing
def test_repr_float_arrays_as_mindspore_prints_them():
    # https://www.mindspore.cn/docs/en/r2.9.0/api_python/ops/mindspore.ops.ones.html
    assert repr(ms.ops.ones(4)) == (
        "Tensor(shape=[4], dtype=Float32, value= [ 1.00000000e+00,  1.00000000e+00,  "
        "1.00000000e+00,  1.00000000e+00])")
    assert repr(ms.ops.ones((2, 3))) == (
        "Tensor(shape=[2, 3], dtype=Float32, value=\n"
        "[[ 1.00000000e+00,  1.00000000e+00,  1.00000000e+00],\n"
        " [ 1.00000000e+00,  1.00000000e+00,  1.00000000e+00]])")
    # mindspore.scipy.sparse.linalg.cg's example: negative entries keep the width
    assert repr(Tensor(np.array([-1.0, 1.0], np.float32))) == \
        "Tensor(shape=[2], dtype=Float32, value= [-1.00000000e+00,  1.00000000e+00])"


def test_repr_other_dtypes_as_mindspore_prints_them():
    # mindspore.ops.Print's example (r2.1 and later)
    assert repr(Tensor(np.ones([2, 1]).astype(np.int32))) == \
        "Tensor(shape=[2, 1], dtype=Int32, value=\n[[1],\n [1]])"
    # mindspore.Tensor.all's example
    assert repr(Tensor([False, True])) == "Tensor(shape=[2], dtype=Bool, value= [False,  True])"


def test_repr_scalars_as_mindspore_prints_them():
    # 0-d values in MindSpore's model zoo logs and docstrings ("outputs are
    # (Tensor(shape=[], dtype=Float32, value= 1.71943), Tensor(shape=[],
    # dtype=Bool, value= False), Tensor(shape=[], dtype=Float32, value= 1024))"),
    # nn.L1Loss's "Tensor(shape=[], dtype=Float32, value= 1.5)", a d2l port's
    # "value= 0" and "value= 3.18133e-05"
    assert repr(Tensor(np.float32(1.7194312))) == "Tensor(shape=[], dtype=Float32, value= 1.71943)"
    assert repr(Tensor(False)) == "Tensor(shape=[], dtype=Bool, value= False)"
    assert repr(Tensor(1024.0)) == "Tensor(shape=[], dtype=Float32, value= 1024)"
    assert repr(Tensor(1.5)) == "Tensor(shape=[], dtype=Float32, value= 1.5)"
    assert repr(Tensor(0.0)) == "Tensor(shape=[], dtype=Float32, value= 0)"
    assert repr(Tensor(np.float32(3.18133e-05))) == \
        "Tensor(shape=[], dtype=Float32, value= 3.18133e-05)"
    assert repr(Tensor(np.int32(7))) == "Tensor(shape=[], dtype=Int32, value= 7)"


def test_str_as_mindspore_prints_it():
    # mindspore.Tensor's example (r1.8 to r2.5): print(Tensor(0.1)) shows 0.1,
    # print(Tensor((1, 2))) shows [1 2]; the tensor guide prints
    # [[1 2]\n [3 4]], True and [4. 5. 6.]
    assert str(Tensor(0.1)) == "0.1"
    assert str(Tensor((1, 2))) == "[1 2]"
    assert str(Tensor(np.array([[1, 2], [3, 4]]), ms.int32)) == "[[1 2]\n [3 4]]"
    assert str(Tensor(True, ms.bool_)) == "True"
    assert str(Tensor([4.0, 5.0, 6.0], ms.float64)) == "[4. 5. 6.]"


# ------------------------------------- Tensor(...) of a run-time value in construct
class _WrapsRuntimeValues(nn.Cell):
    def construct(self, x):
        y = Tensor(x * 2, ms.float64)          # a cast
        z = ms.tensor(x)                       # x itself
        return (y * z * z).sum()


def test_tensor_of_a_runtime_value_inside_construct_is_differentiated():
    x = np.array([0.5, -1.0, 2.0])
    g = ms.ops.GradOperation()(_WrapsRuntimeValues())(Tensor(x))
    np.testing.assert_allclose(np.asarray(g), 6 * x ** 2, rtol=1e-15)
