"""The functional forms, item assignment syntax, NumPy mappings and Tensor methods
that stage the array primitives, and their errors and limits.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad import dtype as mstype
from s2sad.errors import CompileError

from gradcheck import check_vjp, check_jvp
from test_prims_array import (COND, GATHER_IDX, INT_IDX, MASK, ND_IDX, ROW_IDX, UNIQUE_IDX,
                              distinct, normal, setitem)
from test_prims_array_select import ONE_HOT_IDX


# ---------------------------------------------------------- functional forms
def f_ops_layout(x):
    a = ops.expand_dims(x, 0)
    b = ops.squeeze(a, 0)
    c = ops.flatten(ops.reshape(b, (2, 3, 1)))
    return ops.broadcast_to(ops.tile(c, (1, 2)), (3, 2, 6)) * ops.flip(x, (0,))[0, 0]


def f_ops_concat(x, y):
    return ops.concat((x, y), 1) + ops.cat([y, x], 1)


def f_ops_stack_unstack(x, y):
    a, b = ops.unstack(ops.stack((x, y), 0), 0, 2)
    return a * b


def f_ops_split(x):
    a, b = ops.split(x, (1, 3), 1)
    return ops.concat((b, a * 3.0), 1)


def f_ops_split_neg(x):
    a, b, c = ops.split(x, (1, 1, 2), -2)
    return a * c[0:1] + b


def f_ops_slicing(x):
    return ops.slice(x, (0, 1), (2, 2)) + ops.strided_slice(x, (1, 0), (3, 4), (1, 2))


def f_ops_gather(p):
    return ops.gather(p, GATHER_IDX, 0) * ops.gather_nd(p, ROW_IDX)[0]


def f_ops_scatter(x, u):
    a = ops.tensor_scatter_add(x, ND_IDX, u)
    b = ops.tensor_scatter_update(x, UNIQUE_IDX, u)
    return a * b + ops.scatter_nd(ND_IDX, u * u, (3, 4))


def f_ops_select(x, y):
    return ops.select(COND, x, y) + ops.where(COND, y, x * 2.0)


def f_ops_pad(x):
    return ops.pad(x, (1, 2, 0, 1)) + ops.pad(x, (1, 2, 0, 1), value=2.0)


def f_ops_one_hot(on, off):
    return ops.one_hot(ONE_HOT_IDX, 3, on, off, 0)


def f_ops_cast(x):
    return ops.cast(x, mstype.float64) * ops.reverse(x, (1,))


def f_ops_misc(x):
    return ops.swapaxes(x, 0, 1) * ops.size(x) + ops.moveaxis(x, 0, 1) * ops.rank(x) + \
        ops.repeat_elements(ops.identity(x), 2, 0)[::2].T


def f_ops_setitem(x, v):
    return ops.setitem(x, (slice(None), slice(0, 2)), v)


def f_ops_clamp_creation(x):
    ones = ops.ones((2, 3), mstype.float64)
    return ops.clamp(x, -0.5, 0.5) * (ops.zeros((2, 3)) + ones + ops.fill(mstype.float64, (2, 3),
                                                                         2.0) + ops.eye(2, 3))


FUNCTIONAL = [
    (f_ops_clamp_creation, [(2, 3)]),
    (f_ops_layout, [(2, 3)]), (f_ops_concat, [(2, 3), (2, 1)]),
    (f_ops_stack_unstack, [(2, 3), (2, 3)]), (f_ops_split, [(2, 4)]),
    (f_ops_split_neg, [(4, 3)]), (f_ops_slicing, [(3, 4)]), (f_ops_gather, [(4, 3)]),
    (f_ops_scatter, [(3, 4), (3,)]), (f_ops_select, [(2, 3), (3,)]), (f_ops_pad, [(2, 3)]),
    (f_ops_one_hot, [(), ()]), (f_ops_cast, [(2, 3)]), (f_ops_misc, [(2, 3)]),
    (f_ops_setitem, [(3, 4), (1, 2)]),
]


@pytest.mark.parametrize("fn,shapes", FUNCTIONAL, ids=lambda v: getattr(v, "__name__", ""))
def test_functional_forms(fn, shapes):
    args = tuple(normal(s, 100 + i) for i, s in enumerate(shapes))
    check_vjp(fn, args)
    check_jvp(fn, args)


def test_functional_eager_values():
    x = normal((2, 4), 110)
    a, b = ops.split(s2sad.Tensor(x), (1, 3), 1)
    np.testing.assert_array_equal(a.asnumpy(), x[:, :1])
    parts = ops.split(s2sad.Tensor(x), 3, 1)       # an int chunk size works eagerly
    assert [p.shape for p in parts] == [(2, 3), (2, 1)]
    np.testing.assert_array_equal(ops.pad(x, (1, 2, 0, 1)), np.pad(x, ((0, 1), (1, 2))))
    np.testing.assert_array_equal(ops.flatten(normal((2, 3, 4), 1)).shape, (2, 12))
    (single,) = ops.unstack(x[:1], 0, 1)
    np.testing.assert_array_equal(single, x[0])
    np.testing.assert_array_equal(ops.unstack(s2sad.Tensor(x))[1].asnumpy(), x[1])


# --------------------------------------------------- item assignment syntax
def f_assign_slice(x, v):
    y = x * 1.0
    y[:, 1] = v
    return y * x


def f_assign_mask(x, v):
    y = x + 0.0
    y[MASK] = v * 2.0
    return y


def f_assign_add(x, v):
    y = x * 2.0
    y[1:, ::2] += v
    return y


def f_assign_twice(x, v):
    y = x * 1.0
    y[0] = v
    y[2, 1:3] = v[:2] * v[1:3]
    return y


@pytest.mark.parametrize("fn,shapes", [
    (f_assign_slice, [(3, 4), (3,)]), (f_assign_mask, [(3, 4), ()]),
    (f_assign_add, [(3, 4), (2, 2)]), (f_assign_twice, [(3, 4), (4,)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_item_assignment_syntax(fn, shapes):
    """``x[i] = v`` and ``x[i] += v`` stage SetItem: a functional update."""
    args = tuple(normal(s, 170 + i) for i, s in enumerate(shapes))
    before = args[0].copy()
    check_vjp(fn, args)
    check_jvp(fn, args)
    np.testing.assert_array_equal(args[0], before)


# ------------------------------------------------------------ NumPy mappings
def f_np_layout(x):
    a = np.expand_dims(x, 0)
    b = np.squeeze(a, axis=0)
    c = np.swapaxes(np.moveaxis(np.expand_dims(b, -1), -1, 0), 1, 2)
    return np.ravel(c) * np.ravel(np.flip(b, axis=1))


def f_np_join(x, y):
    a = np.concatenate((x, y), axis=1)
    b = np.stack([x, x * 2.0], axis=-1)
    return np.sum(a) + np.sum(b * b) + np.sum(np.concatenate((x, y), axis=None))


def f_np_hvstack(x, y, v):
    h = np.hstack((x, y))
    return np.vstack((v, h[:, :3])) * np.hstack((v, v))[:3]


def f_np_split(x):
    a, b = np.split(x, 2, axis=1)
    c, d, e = np.split(x, [1, 3])
    return a * b + np.sum(c) + np.sum(d * e[0])


def f_np_tile_broadcast(x):
    return np.tile(x, 2)[:, :3] * np.tile(x, (2, 1))[1:3] + np.broadcast_to(x[0], (2, 3))


def f_np_where_take(x, y):
    return np.where(COND, x, y) + np.take(x, INT_IDX, axis=1)[:, 0:1] + np.take(y, 1)


def f_np_pad(x):
    return np.pad(x, ((1, 0), (0, 2))) + np.pad(x, 1, constant_values=0.5)[:3, :5]


def f_np_pad_pair(x):
    return np.pad(x, (1, 2))


def f_np_repeat(x):
    return np.repeat(x, 2, axis=0) + np.repeat(x, 2)[:3]


def f_np_creation(x):
    return x * (np.zeros((2, 3)) + np.ones((2, 3)) + np.full((2, 3), 2.0) + np.eye(2, 3, k=1))


def f_np_size(x):
    return x * np.size(x) + np.ndim(x)


NUMPY_FNS = [
    (f_np_layout, [(2, 3)]), (f_np_join, [(2, 3), (2, 2)]),
    (f_np_hvstack, [(3, 2), (3, 1), (3,)]), (f_np_split, [(4, 2)]),
    (f_np_tile_broadcast, [(2, 3)]), (f_np_where_take, [(2, 3), (2, 3)]),
    (f_np_pad, [(2, 3)]), (f_np_pad_pair, [(2, 3)]), (f_np_repeat, [(2, 3)]),
    (f_np_creation, [(2, 3)]), (f_np_size, [(2, 3)]),
]


@pytest.mark.parametrize("fn,shapes", NUMPY_FNS, ids=lambda v: getattr(v, "__name__", ""))
def test_numpy_mappings(fn, shapes):
    args = tuple(normal(s, 120 + i) for i, s in enumerate(shapes))
    check_vjp(fn, args)
    check_jvp(fn, args)


def f_np_where_one_arg(x):
    return np.where(x)


def test_numpy_where_one_argument_is_rejected():
    with pytest.raises(CompileError, match="three-argument"):
        ops.GradOperation()(f_np_where_one_arg)(normal((2, 3), 130))


# ------------------------------------------------------------ Tensor methods
def f_methods_layout(x):
    a = x.expand_dims(0).squeeze(0)
    b = a.swapaxes(0, 1).flatten() * a.ravel()
    return b.tile((2,)) * b.tile(2).broadcast_to((3, 12))


def f_methods_index(x):
    return x.take(INT_IDX, axis=1) * x.flip(dims=(0,))[:, 1:] + x.gather(INT_IDX, 1) + \
        x.repeat(2, axis=1)[:, :4:2]


def f_methods_cast(x):
    return x.astype(mstype.float64) * x.moveaxis(0, 1).T + x.clip(-0.5, 0.5)


def f_methods_properties(x):
    return x * x.size + x.ndim * x


METHOD_FNS = [(f_methods_layout, (2, 3)), (f_methods_index, (2, 3)),
              (f_methods_cast, (2, 3)), (f_methods_properties, (2, 3))]


@pytest.mark.parametrize("fn,shape", METHOD_FNS, ids=lambda v: getattr(v, "__name__", ""))
def test_tensor_methods(fn, shape):
    x = s2sad.Tensor(distinct(shape, 140) * 0.3)
    check_vjp(fn, (x,))
    check_jvp_tensor(fn, x)


def check_jvp_tensor(fn, x, eps=1e-6):
    """``s2sad.jvp`` on a Tensor against central differences run on Tensors."""
    t = normal(x.shape, 141)
    _, t_out = s2sad.jvp(fn, (x,), (s2sad.Tensor(t),))
    plus = fn(s2sad.Tensor(x.asnumpy() + eps * t)).asnumpy()
    minus = fn(s2sad.Tensor(x.asnumpy() - eps * t)).asnumpy()
    np.testing.assert_allclose(t_out.asnumpy(), (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-6)


def f_ndarray_methods(x):
    return x.flatten() * x.ravel() + x.swapaxes(0, 1).ravel() + x.clip(-0.5, 0.5).ravel() + \
        x.take(INT_IDX, axis=1).repeat(3)[:6] + x.astype(np.float64).ravel()


def test_ndarray_methods():
    check_vjp(f_ndarray_methods, (distinct((2, 3), 141) * 0.3,))


# ------------------------------------------------------------- errors, limits
def f_unstack_no_num(x):
    a, b = ops.unstack(x)
    return a + b


def test_unstack_without_num_inside_differentiated_code_unpacks_the_rows():
    x = normal((2, 3), 150)
    a, b = ops.unstack(x)          # eagerly the count comes from the shape
    np.testing.assert_array_equal(a, x[0])
    # compiled, the count comes from the assignment and is checked at run time
    g = ops.GradOperation()(f_unstack_no_num)(x)        # d(a + b) with a sens of ones
    np.testing.assert_array_equal(g, np.ones((2, 3)))
    with pytest.raises(ValueError, match="size of axis 0 is 3, but 'num' is 2"):
        ops.GradOperation()(f_unstack_no_num)(normal((3, 3), 152))


def f_split_int(x):
    a, b = ops.split(x, 2, 0)
    return a + b


def test_split_with_an_int_size_needs_a_static_shape():
    with pytest.raises(CompileError, match="array_split_sections"):
        ops.GradOperation()(f_split_int)(normal((4, 3), 151))


def f_setitem_tuple_with_array(x, v):
    return setitem(x, (slice(None), INT_IDX), v)


def f_getitem_tuple_with_array(x):
    return x[0, INT_IDX]


@pytest.mark.parametrize("fn,args", [
    (f_setitem_tuple_with_array, [normal((3, 4), 160), normal((3, 2), 161)]),
    (f_getitem_tuple_with_array, [normal((3, 4), 162)]),
], ids=["setitem", "getitem"])
def test_index_tuple_holding_an_array(fn, args):
    check_vjp(fn, args)


def f_setitem_tuple_jvp(x, v):
    return setitem(x, (slice(None), INT_IDX), v)


def test_index_tuple_holding_an_array_forward_mode():
    x, v = normal((3, 4), 163), normal((3, 2), 164)
    check_jvp(f_setitem_tuple_jvp, (x, v))
    out = f_setitem_tuple_jvp(x, v)
    want = x.copy()
    want[:, INT_IDX] = v
    np.testing.assert_array_equal(out, want)
