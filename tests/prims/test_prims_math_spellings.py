"""The functional forms, NumPy mappings and Tensor methods that stage the math
primitives, inside differentiated functions, against finite differences and
NumPy.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.ops import operations as P
from s2sad.ops.composite import GradOperation

from gradcheck import check_jvp, check_vjp
from test_prims_math import away_from_zero, distinct, normal, uniform, unit, well_conditioned


# ============================================== functional forms, NumPy, methods
def f_ops_elementwise(x, y):
    return (ops.abs(x) + ops.atan2(x, y) + ops.erf(x) + ops.erfc(y) + ops.maximum(x, y)
            + ops.minimum(x, y) + ops.tan(x * 0.3) + ops.sinh(x) + ops.cosh(y)
            + ops.asinh(x) + ops.atan(y) + ops.expm1(x) + ops.reciprocal(y * y + 1.0)
            + ops.rsqrt(y * y + 1.0) + ops.log1p(x * x) + ops.sign(x) * x
            + ops.floor(x) + ops.ceil(y) + ops.round(x))


def f_ops_unit(x):
    return ops.asin(x) + ops.acos(x) + ops.atanh(x) + ops.arcsin(x) + ops.acosh(x * x + 1.5)


def f_ops_reductions(x):
    values, indices = ops.max(x, 1)
    low, _ = ops.min(x, axis=0, keepdims=True)
    flat_max, flat_index = ops.max(x)
    return (ops.sum(values) + ops.sum(low) + flat_max + ops.amax(x) + ops.amin(x, 1).sum()
            + ops.prod(x, 1).sum() + ops.cumsum(x, 1).sum() + ops.logsumexp(x, 0).sum()
            + ops.reduce_max(x, 0).sum() + ops.reduce_prod(x, (), True).sum())


def f_ops_linalg(a, b):
    return (ops.dot(a, b).sum() + ops.outer(a[0], b[:, 0]).sum()
            + ops.tensordot(a, b, 1).sum() + ops.det(a @ b) + ops.inverse(a @ b).sum()
            + ops.bmm(a, b).sum() + ops.batch_matmul(a, b, transpose_a=True,
                                                     transpose_b=True).sum()
            + ops.matmul(a, b).sum())


def f_np_elementwise(x, y):
    return (np.abs(x) + np.absolute(y) + np.sign(x) * y + np.reciprocal(y * y + 1.0)
            + np.expm1(x) + np.log1p(x * x) + np.tan(x * 0.3) + np.arctan(x)
            + np.arctan2(x, y) + np.sinh(x) + np.cosh(y) + np.arcsinh(x)
            + np.maximum(x, y) + np.minimum(x, y) + np.floor(x) + np.ceil(y) + np.round(x)
            + np.floor_divide(x, 0.7) + np.mod(x, 0.7) + np.log2(y * y + 1.0)
            + np.log10(x * x + 1.0) + np.exp2(x) + np.logaddexp(x, y))


def f_np_unit(x):
    return np.arcsin(x) + np.arccos(x) + np.arctanh(x) + np.arccosh(x * x + 1.5)


def f_np_reductions(x):
    return (np.max(x, axis=1).sum() + np.amax(x) + np.min(x, 0, keepdims=True).sum()
            + np.amin(x) + np.prod(x, axis=1).sum() + np.prod(x) + np.cumsum(x).sum()
            + (np.cumsum(x, axis=0) * x).sum())


def f_np_linalg(a, b):
    return (np.dot(a, b).sum() + np.inner(a, a).sum() + np.outer(a, b).sum()
            + np.tensordot(a, b, axes=1).sum() + np.tensordot(a, b, ([0], [1])).sum()
            + np.linalg.det(a @ b) + np.linalg.inv(a @ b).sum() + np.matmul(a[0], b).sum())


def f_methods_numpy(x):
    # method names ndarray and Tensor share, so both run eagerly too
    return (x.max() + x.max(axis=1).sum() + x.min(0, keepdims=True).sum() + x.prod(1).sum()
            + x.prod(keepdims=True).sum() + x.cumsum(axis=1).sum() + x.cumsum().sum()
            + x.round().sum() + x.dot(x[0]).sum() + x.dot(x.T).sum())


def f_methods_mindspore(x):
    # MindSpore Tensor methods ndarray lacks
    return (x.abs().sum() + (x.sign() * x).sum() + x.floor().sum() + x.ceil().sum()
            + x.matmul(x.T).sum() + x.logsumexp(1).sum() + x.norm() + x.erf().sum()
            + x.maximum(x * 0.5).sum() + x.amax(0).sum())


def f_tensor_norm_args(x):
    return x.norm(1, 0)


def f_tensor_max_keep_dims(x, w):
    return x.max(1, keep_dims=True) * w


def f_builtin_abs(x):
    return abs(x) * 2.0


FORMS = [
    (f_ops_elementwise, [away_from_zero, away_from_zero], [(2, 3), (2, 3)]),
    (f_ops_unit, [unit], [(2, 3)]),
    (f_ops_reductions, [distinct], [(3, 4)]),
    (f_ops_linalg, [well_conditioned, well_conditioned], [(3, 3), (3, 3)]),
    (f_np_elementwise, [uniform(0.1, 0.6), away_from_zero], [(2, 3), (2, 3)]),
    (f_np_unit, [unit], [(2, 3)]),
    (f_np_reductions, [distinct], [(3, 4)]),
    (f_np_linalg, [well_conditioned, well_conditioned], [(3, 3), (3, 3)]),
    (f_methods_numpy, [distinct], [(3, 4)]),
    (f_builtin_abs, [away_from_zero], [(2, 3)]),
]


@pytest.mark.parametrize("fn,gens,shapes", FORMS, ids=lambda v: getattr(v, "__name__", ""))
def test_functional_numpy_and_methods(fn, gens, shapes):
    args = tuple(g(s, 40 + i) * (0.25 if g is distinct else 1.0)
                 for i, (g, s) in enumerate(zip(gens, shapes)))
    check_vjp(fn, args, rtol=1e-5, atol=1e-5)
    check_jvp(fn, args)


@pytest.mark.parametrize("wrap", ["ndarray", "Tensor"])
def test_methods_on_tensors_and_arrays(wrap):
    x = distinct((3, 4), 41) * 0.25
    arg = s2sad.Tensor(x) if wrap == "Tensor" else x
    grads = check_vjp(f_methods_numpy, (arg,), rtol=1e-5, atol=1e-5)
    assert np.shape(grads[0]) == (3, 4)


def test_mindspore_methods_on_tensors():
    x = distinct((3, 4), 41) * 0.25
    grads = check_vjp(f_methods_mindspore, (s2sad.Tensor(x),), rtol=1e-5, atol=1e-5)
    assert isinstance(grads[0], s2sad.Tensor)


def test_tensor_norm_method_with_arguments_eager():
    x = distinct((3, 4), 46) * 0.25
    check_vjp(f_tensor_norm_args, (s2sad.Tensor(x),))


def test_tensor_max_keep_dims_eager():
    x = s2sad.Tensor(distinct((3, 4), 47) * 0.25)
    assert x.max(1, keep_dims=True).shape == (3, 1)


def test_functional_forms_eager():
    x = distinct((3, 4), 42) * 0.25
    t = s2sad.Tensor(x)
    values, indices = ops.max(t, 1)
    np.testing.assert_allclose(values.asnumpy(), x.max(1), rtol=1e-6)
    np.testing.assert_array_equal(indices.asnumpy(), x.argmax(1))
    value, index = ops.min(x)
    assert value == x.min() and index == x.argmin()
    np.testing.assert_allclose(ops.amax(x, 0), x.max(0), rtol=1e-15)
    np.testing.assert_allclose(ops.prod(x, 1, keep_dims=True), x.prod(1, keepdims=True))
    np.testing.assert_allclose(ops.cumsum(x, 0), np.cumsum(x, 0), rtol=1e-15)
    np.testing.assert_allclose(ops.logaddexp(x, x.T[:3, :1]), np.logaddexp(x, x.T[:3, :1]),
                               rtol=1e-14)
    np.testing.assert_allclose(ops.exp2(x), np.exp2(x), rtol=1e-14)
    np.testing.assert_allclose(ops.log2(x * x + 1), np.log2(x * x + 1), rtol=1e-14)
    np.testing.assert_allclose(ops.log10(x * x + 1), np.log10(x * x + 1), rtol=1e-14)
    np.testing.assert_allclose(ops.round(x, decimals=1), np.round(x, 1), rtol=1e-14)
    np.testing.assert_allclose(ops.inner(x, x), np.inner(x, x), rtol=1e-14)
    np.testing.assert_allclose(t.prod(1).asnumpy(), x.prod(1), rtol=1e-6)
    np.testing.assert_allclose(t.cumsum(0).asnumpy(), np.cumsum(x, 0), rtol=1e-6)
    np.testing.assert_allclose(t.sign().asnumpy(), np.sign(x))
    # NumPy functions on a Tensor call its methods (with out=None)
    np.testing.assert_allclose(np.asarray(np.prod(t, axis=0)), x.prod(0), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(np.cumsum(t, axis=1)), np.cumsum(x, 1), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(np.round(t, 1)), np.round(x, 1), rtol=1e-14)
    assert P.Div is P.RealDiv and P.FloorMod is P.Mod


def test_unsupported_arguments_are_compile_errors():
    with pytest.raises(s2sad.CompileError, match="out"):
        GradOperation()(f_np_max_out)(normal((2, 3), 43))
    with pytest.raises(ValueError, match="dtype"):
        ops.prod(normal((2, 3), 43), dtype=np.float32)


def f_np_max_out(x):
    return np.max(x, 0, np.zeros(3))
