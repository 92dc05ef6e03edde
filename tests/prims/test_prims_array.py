"""Array primitives: bprop and JVP against finite differences, eager results against NumPy.

Every primitive of the array family (shapes, layout, indexing, creation)
appears in ``CASES`` with a small function calling it, float64 inputs and a
NumPy reference; each case runs three checks: ``check_vjp`` (reverse mode),
``check_jvp`` (forward mode) and the eager result.  Integer inputs (indices,
masks) are module constants or closed over, so only float arrays are
differentiated.  The functional forms, NumPy mappings and Tensor methods are
checked the same way further down.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad import dtype as mstype
from s2sad.errors import CompileError
from s2sad.ops import operations as P
from s2sad.ops.primitive import Primitive

from gradcheck import check_vjp, check_jvp


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def distinct(shape, seed):
    """Values far from one another and from 0, for max/min/clip and masks."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = (np.arange(n) - n / 2.0 + 0.5) * 0.7
    return rng.permutation(vals).reshape(shape)


class Case:
    """One primitive use: ``fn(*args)`` should equal ``ref(*args)`` and differentiate."""

    def __init__(self, name, fn, args, ref, vjp=True, jvp=True):
        self.name = name
        self.fn = fn
        self.args = tuple(args)
        self.ref = ref
        self.vjp = vjp
        self.jvp = jvp

    def __repr__(self):
        return self.name


# ----------------------------------------------------------------- layout
expand_dims = P.ExpandDims()
reshape = P.Reshape()
transpose = P.Transpose()
transpose_t = P.TransposeT()
tile = P.Tile()
tile_grad = P.TileGrad()
slice_ = P.Slice()
getitem = P.GetItem()
getitem_grad = P.GetItemGrad()
setitem_value_grad = P.SetItemValueGrad()
setitem = P.SetItem()
gather = P.Gather()
gather_grad = P.GatherGrad()
gather_nd = P.GatherNd()
scatter_nd = P.ScatterNd()
tensor_scatter_add = P.TensorScatterAdd()
tensor_scatter_update = P.TensorScatterUpdate()
select = P.Select()
cast = P.Cast()
cast_like = P.CastLike()
identity = P.Identity()
depend = P.Depend()
unbroadcast = P.Unbroadcast()
broadcast_like = P.BroadcastLike()
check_sens = P.CheckSens()


def make1(prim, *consts):
    """``x -> prim(x, *consts)``."""
    def f_prim(x):
        return prim(x, *consts)
    return f_prim


def f_expand_dims(x):
    return expand_dims(x, 1)


def f_expand_dims_neg(x):
    return expand_dims(x, -1)


def f_reshape(x):
    return reshape(x, (3, -1))


def f_transpose(x):
    return transpose(x, (2, 0, 1))


def f_transpose_t(x):
    return transpose_t(x)


def tile_ref(m):
    return lambda x: np.tile(x, m)


def f_tile_grad(d):
    return tile_grad(d, TILE_X, (2, 1))


TILE_X = np.zeros((2, 3))


def f_repeat_grad(d):
    return P.RepeatGrad(2, 1)(d, TILE_X)


LAYOUT = [
    Case("ExpandDims", f_expand_dims, [normal((2, 3), 1)], lambda x: np.expand_dims(x, 1)),
    Case("ExpandDims-neg", f_expand_dims_neg, [normal((2, 3), 1)],
         lambda x: np.expand_dims(x, -1)),
    Case("Reshape", f_reshape, [normal((2, 3, 2), 2)], lambda x: x.reshape(3, -1)),
    Case("Transpose", f_transpose, [normal((2, 3, 4), 3)], lambda x: x.transpose(2, 0, 1)),
    Case("TransposeT", f_transpose_t, [normal((2, 3), 3)], lambda x: x.T),
    Case("Squeeze", make1(P.Squeeze(1)), [normal((2, 1, 3), 4)], lambda x: x[:, 0]),
    Case("Squeeze-all", make1(P.Squeeze()), [normal((1, 3, 1), 4)], np.squeeze),
    Case("Flatten", make1(P.Flatten()), [normal((2, 3, 4), 5)], lambda x: x.reshape(2, -1)),
    Case("Flatten-all", make1(P.Flatten(0, -1)), [normal((2, 3), 5)], np.ravel),
    Case("Flatten-mid", make1(P.Flatten(1, 2)), [normal((2, 3, 2, 2), 5)],
         lambda x: x.reshape(2, 6, 2)),
    Case("SwapAxes", make1(P.SwapAxes(0, 2)), [normal((2, 3, 4), 6)],
         lambda x: np.swapaxes(x, 0, 2)),
    Case("MoveAxis", make1(P.MoveAxis(0, -1)), [normal((2, 3, 4), 7)],
         lambda x: np.moveaxis(x, 0, -1)),
    Case("ReverseV2", make1(P.ReverseV2((0,))), [normal((3, 4), 8)], lambda x: x[::-1]),
    Case("ReverseV2-two", make1(P.ReverseV2((0, 2))), [normal((2, 3, 2), 8)],
         lambda x: x[::-1, :, ::-1]),
    Case("ReverseV2-all", make1(P.ReverseV2(None)), [normal((2, 3), 8)], np.flip),
    Case("BroadcastTo", make1(P.BroadcastTo((2, 3, 4))), [normal((3, 1), 9)],
         lambda x: np.broadcast_to(x, (2, 3, 4))),
    Case("BroadcastTo-keep", make1(P.BroadcastTo((2, -1))), [normal((1, 3), 9)],
         lambda x: np.broadcast_to(x, (2, 3))),
    Case("Tile", make1(tile, (2, 1)), [normal((2, 3), 10)], tile_ref((2, 1))),
    Case("Tile-grow", make1(tile, (2, 2)), [normal((3,), 10)], tile_ref((2, 2))),
    Case("Tile-3d", make1(tile, (1, 2, 3)), [normal((2, 1, 2), 10)], tile_ref((1, 2, 3))),
    Case("TileGrad", f_tile_grad, [normal((4, 3), 11)],
         lambda d: d.reshape(2, 2, 1, 3).sum(axis=(0, 2))),
    Case("Repeat", make1(P.Repeat(2, 1)), [normal((2, 3), 12)],
         lambda x: np.repeat(x, 2, axis=1)),
    Case("Repeat-flat", make1(P.Repeat(3)), [normal((2, 2), 12)], lambda x: np.repeat(x, 3)),
    Case("RepeatGrad", f_repeat_grad, [normal((2, 6), 13)],
         lambda d: d.reshape(2, 3, 2).sum(axis=2)),
    Case("Identity", make1(identity), [normal((2, 3), 14)], lambda x: x),
]


# ------------------------------------------------------ joining, splitting
def f_concat(x, y):
    return P.Concat(1)((x, y))


def f_concat3(x, y, z):
    return P.Concat(0)((x, y, z))


def f_concat_neg(x, y):
    return P.Concat(-1)((x, y))


def f_concat_one(x):
    return P.Concat(0)((x,))


def f_hstack(x, y):
    return P.Concat("hstack")((x, y))


def f_vstack(x, y):
    return P.Concat("vstack")((x, y))


def f_concat_same(x):
    return P.Concat(1)((x, x))


def f_concat_reuse(x):
    # one tensor twice: both pieces of the adjoint add up
    return P.Concat(0)((x, x * 2.0))


def f_concat_const_member(x):
    # a member that is not differentiated: its tangent is a symbolic zero
    return P.Concat(0)((TILE_X, x))


def f_stack_const_member(x):
    return P.Stack(1)((x, TILE_X))


def f_split_like(x, a, b):
    return P.SplitLike(1, 2)(x, (a, b))


def f_split_like_one(x, a):
    return P.SplitLike(0, 1)(x, (a,))


def f_stack(x, y, z):
    return P.Stack(0)((x, y, z))


def f_stack_neg(x, y):
    return P.Stack(-1)((x, y))


def f_unstack(x):
    return P.Unstack(0, 3)(x)


def f_unstack_axis1(x):
    a, b = P.Unstack(1, 2)(x)
    return a * b


def f_unstack_one(x):
    return P.Unstack(0, 1)(x)


def f_split(x):
    return P.Split(1, 3)(x)


def f_split_part(x):
    # only one output used: the others get zero adjoints
    return P.Split(0, 2)(x)[1]


def f_split_one(x):
    return P.Split(0, 1)(x)


JOIN = [
    Case("Concat", f_concat, [normal((2, 3), 20), normal((2, 1), 21)],
         lambda x, y: np.concatenate((x, y), 1)),
    Case("Concat-3", f_concat3, [normal((1, 3), 20), normal((2, 3), 21), normal((1, 3), 22)],
         lambda x, y, z: np.concatenate((x, y, z), 0)),
    Case("Concat-neg", f_concat_neg, [normal((2, 2), 20), normal((2, 3), 21)],
         lambda x, y: np.concatenate((x, y), -1)),
    Case("Concat-one", f_concat_one, [normal((2, 3), 20)], lambda x: x),
    Case("Concat-hstack1d", f_hstack, [normal((2,), 20), normal((3,), 21)],
         lambda x, y: np.hstack((x, y))),
    Case("Concat-hstack2d", f_hstack, [normal((2, 1), 20), normal((2, 3), 21)],
         lambda x, y: np.hstack((x, y))),
    Case("Concat-vstack", f_vstack, [normal((3,), 20), normal((2, 3), 21)],
         lambda x, y: np.vstack((x, y))),
    Case("Concat-same", f_concat_same, [normal((2, 3), 20)], lambda x: np.concatenate((x, x), 1)),
    Case("Concat-reuse", f_concat_reuse, [normal((2, 3), 20)],
         lambda x: np.concatenate((x, 2 * x), 0)),
    Case("Concat-const-member", f_concat_const_member, [normal((1, 3), 20)],
         lambda x: np.concatenate((np.zeros((2, 3)), x))),
    Case("Stack-const-member", f_stack_const_member, [normal((2, 3), 20)],
         lambda x: np.stack((x, np.zeros((2, 3))), 1)),
    Case("SplitLike", f_split_like, [normal((2, 5), 23), normal((2, 3), 24), normal((2, 2), 25)],
         lambda x, a, b: (x[:, :3], x[:, 3:])),
    Case("SplitLike-one", f_split_like_one, [normal((2, 3), 23), normal((2, 3), 24)],
         lambda x, a: x),
    Case("Stack", f_stack, [normal((2, 3), 26), normal((2, 3), 27), normal((2, 3), 28)],
         lambda x, y, z: np.stack((x, y, z))),
    Case("Stack-neg", f_stack_neg, [normal((2, 3), 26), normal((2, 3), 27)],
         lambda x, y: np.stack((x, y), -1)),
    Case("Unstack", f_unstack, [normal((3, 2), 29)], lambda x: tuple(x)),
    Case("Unstack-axis1", f_unstack_axis1, [normal((3, 2), 29)], lambda x: x[:, 0] * x[:, 1]),
    Case("Unstack-one", f_unstack_one, [normal((1, 4), 29)], lambda x: x[0]),
    Case("Split", f_split, [normal((2, 6), 30)], lambda x: tuple(np.split(x, 3, 1))),
    Case("Split-part", f_split_part, [normal((4, 3), 30)], lambda x: x[2:]),
    Case("Split-one", f_split_one, [normal((2, 3), 30)], lambda x: x),
]


# ------------------------------------------------------------------ indexing
GATHER_IDX = np.array([[0, 2], [3, 3]])         # a repeated index: the adjoint must add
ND_IDX = np.array([[0, 1], [2, 3], [0, 1]])     # (row, col) pairs, one repeated
ROW_IDX = np.array([[2], [0]])                  # whole rows
UNIQUE_IDX = np.array([[0, 1], [2, 3], [1, 0]])
MASK = np.array([[True, False, True, False], [False, False, True, True],
                 [True, True, False, False]])
INT_IDX = np.array([2, 0])
COND = np.array([[True, False, True], [False, True, True]])
COND_COL = np.array([[True], [False], [True]])
COND_ROW = np.array([True, False, True])


def f_slice(x):
    return slice_(x, (1, 0), (2, -1))


def f_slice_3d(x):
    return slice_(x, (0, 1, 1), (2, 1, 2))


def make_strided(begin, end, strides, **masks):
    op = P.StridedSlice(**masks)

    def f_strided(x):
        return op(x, begin, end, strides)
    return f_strided


def f_getitem(x):
    return getitem(x, (slice(None), 1))


def f_getitem_grad(d):
    return getitem_grad(d, TILE_X, (slice(None), slice(1, 3)))


def f_setitem_value_grad(d):
    return setitem_value_grad(d, ([2, 0, -1], slice(1, 3)))    # rows 2 and -1 are one row


def f_setitem_slice(x, v):
    return setitem(x, (slice(None), 1), v)


def f_setitem_scalar(x, v):
    return setitem(x, (1, slice(1, 3)), v)


def f_setitem_int_array(x, v):
    return setitem(x, INT_IDX, v)


def f_setitem_mask(x, v):
    return setitem(x, MASK, v)


def f_setitem_const_value(x):
    return setitem(x, (0, 0), 5.0) * x


def setitem_ref(index):
    def ref(x, v):
        out = x.copy()
        out[index] = v
        return out
    return ref


def f_gather0(p):
    return gather(p, GATHER_IDX, 0)


def f_gather1(p):
    return gather(p, INT_IDX, 1)


def f_gather_neg(p):
    return gather(p, GATHER_IDX, -1)


def f_gather_grad(d):
    return gather_grad(d, TILE_X4, GATHER_IDX, 0)


TILE_X4 = np.zeros((4, 3))


def gather_grad_ref(d):
    out = np.zeros((4, 3))
    np.add.at(out, GATHER_IDX, d)
    return out


def f_gather_nd(x):
    return gather_nd(x, ND_IDX)


def f_gather_nd_rows(x):
    return gather_nd(x, ROW_IDX)


def f_scatter_nd(u):
    return scatter_nd(ND_IDX, u, (3, 4))


def scatter_nd_ref(u):
    out = np.zeros((3, 4))
    np.add.at(out, (ND_IDX[:, 0], ND_IDX[:, 1]), u)
    return out


def f_tensor_scatter_add(x, u):
    return tensor_scatter_add(x, ND_IDX, u)


def f_tensor_scatter_add_rows(x, u):
    return tensor_scatter_add(x, ROW_IDX, u)


def tensor_scatter_add_ref(x, u):
    out = x.copy()
    np.add.at(out, (ND_IDX[:, 0], ND_IDX[:, 1]), u)
    return out


def f_tensor_scatter_update(x, u):
    return tensor_scatter_update(x, UNIQUE_IDX, u)


def tensor_scatter_update_ref(x, u):
    out = x.copy()
    out[UNIQUE_IDX[:, 0], UNIQUE_IDX[:, 1]] = u
    return out


INDEXING = [
    Case("Slice", f_slice, [normal((3, 4), 40)], lambda x: x[1:3, 0:]),
    Case("Slice-3d", f_slice_3d, [normal((2, 3, 4), 40)], lambda x: x[0:2, 1:2, 1:3]),
    Case("StridedSlice", make_strided((0, 1), (4, 5), (2, 2)), [normal((4, 5), 41)],
         lambda x: x[0:4:2, 1:5:2]),
    Case("StridedSlice-masks", make_strided((1, 1), (3, 3), (1, 1), begin_mask=1, end_mask=2),
         [normal((4, 5), 41)], lambda x: x[:3, 1:]),
    Case("StridedSlice-negative", make_strided((3, 0), (0, 5), (-1, 2)),
         [normal((4, 5), 41)], lambda x: x[3:0:-1, 0:5:2]),
    Case("StridedSlice-shrink", make_strided((1, 0), (2, 5), (1, 1), shrink_axis_mask=1),
         [normal((4, 5), 41)], lambda x: x[1, 0:5]),
    Case("StridedSlice-newaxis", make_strided((0, 0, 1), (1, 4, 3), (1, 1, 1),
                                              new_axis_mask=1),
         [normal((4, 5), 41)], lambda x: x[None, 0:4, 1:3]),
    Case("StridedSlice-ellipsis", make_strided((0, 1), (1, 3), (1, 1), ellipsis_mask=1),
         [normal((2, 3, 4), 41)], lambda x: x[..., 1:3]),
    Case("GetItem", f_getitem, [normal((3, 4), 42)], lambda x: x[:, 1]),
    Case("GetItemGrad", f_getitem_grad, [normal((2, 2), 43)],
         lambda d: np.pad(d, ((0, 0), (1, 0)))),
    Case("SetItemValueGrad", f_setitem_value_grad, [normal((3, 4), 43)],
         lambda d: d[[2, 0, -1], 1:3] * np.array([[0.0], [1.0], [1.0]])),
    Case("SetItem-slice", f_setitem_slice, [normal((3, 4), 44), normal((3,), 45)],
         setitem_ref((slice(None), 1))),
    Case("SetItem-broadcast", f_setitem_scalar, [normal((3, 4), 44), normal((), 45)],
         setitem_ref((1, slice(1, 3)))),
    Case("SetItem-int-array", f_setitem_int_array, [normal((3, 4), 44), normal((1, 4), 45)],
         setitem_ref(INT_IDX)),
    Case("SetItem-mask", f_setitem_mask, [normal((3, 4), 44), normal((6,), 45)],
         setitem_ref(MASK)),
    Case("SetItem-const-value", f_setitem_const_value, [normal((3, 4), 44)],
         lambda x: setitem_ref((0, 0))(x, 5.0) * x),
    Case("Gather", f_gather0, [normal((4, 3), 46)], lambda p: np.take(p, GATHER_IDX, 0)),
    Case("Gather-axis1", f_gather1, [normal((4, 3), 46)], lambda p: np.take(p, INT_IDX, 1)),
    Case("Gather-neg", f_gather_neg, [normal((2, 4), 46)], lambda p: np.take(p, GATHER_IDX, -1)),
    Case("GatherGrad", f_gather_grad, [normal((2, 2, 3), 47)], gather_grad_ref),
    Case("GatherNd", f_gather_nd, [normal((3, 4), 48)],
         lambda x: x[ND_IDX[:, 0], ND_IDX[:, 1]]),
    Case("GatherNd-rows", f_gather_nd_rows, [normal((3, 4), 48)], lambda x: x[[2, 0]]),
    Case("ScatterNd", f_scatter_nd, [normal((3,), 49)], scatter_nd_ref),
    Case("TensorScatterAdd", f_tensor_scatter_add, [normal((3, 4), 50), normal((3,), 51)],
         tensor_scatter_add_ref),
    Case("TensorScatterAdd-rows", f_tensor_scatter_add_rows,
         [normal((3, 4), 50), normal((2, 4), 51)],
         lambda x, u: x + np.stack([u[1], np.zeros(4), u[0]])),
    Case("TensorScatterUpdate", f_tensor_scatter_update, [normal((3, 4), 52), normal((3,), 53)],
         tensor_scatter_update_ref),
]


# -------------------------------------------------- select, pad, one-hot, cast
def make_select(cond):
    def f_select(x, y):
        return select(cond, x, y)
    return f_select


# (cond, shape of x, shape of y): scalars, (3,1) with (1,4), batch dims (2,1,3) with (4,3)
SELECT_SHAPES = [
    (COND, (2, 3), (2, 3)),
    (COND, (), (2, 3)),
    (COND, (2, 3), ()),
    (np.ones((3, 4), bool) & (np.arange(4) % 2 == 0), (3, 1), (1, 4)),
    (COND_ROW, (2, 1, 3), (4, 3)),
    (COND_COL, (3, 1), (1, 4)),
]

SELECT = [Case("Select-%s-%s" % (sx, sy), make_select(c), [normal(sx, 60), normal(sy, 61)],
               (lambda c: lambda x, y: np.where(c, x, y))(c))
          for c, sx, sy in SELECT_SHAPES]

ONE_HOT_IDX = np.array([[0, 2], [1, 1]])


def f_one_hot(on, off):
    return P.OneHot()(ONE_HOT_IDX, 3, on, off)


def f_one_hot_axis0(on, off):
    return P.OneHot(0)(ONE_HOT_IDX, 3, on, off) * OH_WEIGHT


OH_WEIGHT = np.arange(12.0).reshape(3, 2, 2)


def one_hot_ref(axis):
    def ref(on, off):
        mask = ONE_HOT_IDX[..., None] == np.arange(3)
        if axis != -1:
            mask = np.moveaxis(mask, -1, axis)
        return np.where(mask, on, off)
    return ref


def f_one_hot_mixed(on):
    return P.OneHot()(ONE_HOT_IDX, 3, on, 0.0)


def f_pad(x):
    return P.Pad(((1, 0), (2, 1)))(x)


def f_pad_value(x):
    return P.Pad(((1, 2),), 1.5)(x)


def f_pad_broadcast(x):
    return P.Pad(((1, 1),), 0, True)(x)


def f_pad_crop(x):
    return P.PadCrop(((1, 0), (2, 1)))(x)


def f_cast(x):
    return cast(x, mstype.float64)


def f_cast_np(x):
    return cast(x, np.float64) * 2.0


def f_cast_like(a):
    return cast_like(a, TILE_X)


OTHER = SELECT + [
    Case("OneHot", f_one_hot, [np.float64(0.7), np.float64(-0.3)], one_hot_ref(-1)),
    Case("OneHot-axis0", f_one_hot_axis0, [np.float64(0.7), np.float64(-0.3)],
         lambda on, off: one_hot_ref(0)(on, off) * OH_WEIGHT),
    Case("OneHot-mixed", f_one_hot_mixed, [np.float64(1.3)],
         lambda on: one_hot_ref(-1)(on, 0.0)),
    Case("Pad", f_pad, [normal((2, 3), 62)], lambda x: np.pad(x, ((1, 0), (2, 1)))),
    Case("Pad-value", f_pad_value, [normal((2, 3), 62)],
         lambda x: np.pad(x, ((0, 0), (1, 2)), constant_values=1.5)),
    Case("Pad-broadcast", f_pad_broadcast, [normal((2, 3), 62)], lambda x: np.pad(x, 1)),
    Case("PadCrop", f_pad_crop, [normal((3, 6), 63)], lambda x: x[1:, 2:5]),
    Case("Cast", f_cast, [normal((2, 3), 64)], lambda x: x),
    Case("Cast-npdtype", f_cast_np, [normal((2, 3), 64)], lambda x: 2 * x),
    Case("CastLike", f_cast_like, [normal((2, 3), 65)], lambda a: a),
]


# ------------------------------------------------------------ AD helpers
def f_depend(a, b):
    return depend(a * 3.0, b)


def f_unbroadcast(dx):
    return unbroadcast(dx, TILE_X[:, :1])


def f_broadcast_like(a):
    return broadcast_like(a, TILE_X)


def f_expand_reduced(d):
    return P.ExpandReduced(False)(d, np.zeros((2, 3, 4)), 1)


def f_check_sens(s):
    return check_sens(s, TILE_X, "output")


HELPERS = [
    Case("Depend", f_depend, [normal((2, 3), 70), normal((4,), 71)], lambda a, b: 3 * a),
    Case("Unbroadcast", f_unbroadcast, [normal((2, 3), 72)],
         lambda d: d.sum(axis=1, keepdims=True)),
    Case("BroadcastLike", f_broadcast_like, [normal((2, 1), 73)],
         lambda a: np.broadcast_to(a, (2, 3))),
    Case("ExpandReduced", f_expand_reduced, [normal((2, 4), 74)], lambda d: d[:, None]),
    Case("CheckSens", f_check_sens, [normal((2, 3), 75)], lambda s: s),
]

CASES = LAYOUT + JOIN + INDEXING + OTHER + HELPERS


def _compare(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
        return
    got = got.asnumpy() if isinstance(got, s2sad.Tensor) else np.asarray(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_eager_matches_numpy(case):
    _compare(case.fn(*case.args), case.ref(*case.args))


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_eager_on_tensors(case):
    out = case.fn(*[s2sad.Tensor(a) for a in case.args])
    leaves = out if isinstance(out, tuple) else (out,)
    assert all(isinstance(t, s2sad.Tensor) for t in leaves)
    _compare(tuple(t.asnumpy() for t in leaves) if isinstance(out, tuple) else out.asnumpy(),
             case.ref(*case.args))


@pytest.mark.parametrize("case", [c for c in CASES if c.vjp], ids=repr)
def test_vjp(case):
    grads = check_vjp(case.fn, case.args)
    for g, a in zip(grads, case.args):
        assert np.shape(g) == np.shape(a)


@pytest.mark.parametrize("case", [c for c in CASES if c.jvp], ids=repr)
def test_jvp(case):
    check_jvp(case.fn, case.args)


# -------------------------------------------- closed forms and dtypes
def f_cast32(x):
    return cast(x, mstype.float32)


def f_cast_int(x, y):
    return cast(x, mstype.int32) * y


def test_cast_gradient_keeps_the_input_dtype():
    x = normal((2, 3), 80).astype(np.float32)
    sens = normal((2, 3), 81)
    (g,) = ops.GradOperation(get_all=True, sens_param=True)(lambda_free_cast64)(x, sens)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, sens.astype(np.float32), rtol=1e-6)
    out = f_cast32(normal((2, 3), 82))
    assert out.dtype == np.float32


def lambda_free_cast64(x):
    return cast(x, mstype.float64)


def test_cast_to_int_has_no_gradient():
    x = normal((2, 3), 83) * 5
    y = normal((2, 3), 84)
    gx, gy = ops.GradOperation(get_all=True)(f_cast_int)(x, y)
    np.testing.assert_array_equal(gx, np.zeros((2, 3)))
    np.testing.assert_array_equal(gy, x.astype(np.int32))
    _, t = s2sad.jvp(f_cast_int, (x, y), (np.ones((2, 3)), np.zeros((2, 3))))
    np.testing.assert_array_equal(t, np.zeros((2, 3)))


def f32_select(x, y):
    return select(COND, x, y * 2.0)


def f32_pad(x):
    return P.Pad(((1, 1), (0, 2)), 0.5)(x)


def f32_one_hot(on, off):
    return P.OneHot()(ONE_HOT_IDX, 3, on, off)


def f32_setitem(x, v):
    return setitem(x, (slice(None), 0), v)


def f32_clip(x):
    return ops.clip_by_value(x, -0.5, 0.5)


def f32_concat(x, y):
    return P.Concat(1)((x, y))


def f32_gather(p):
    return gather(p, GATHER_IDX, 0)


def f32_cast_roundtrip(x):
    return cast(cast(x, mstype.float64) * 2.0, mstype.float32)


def f32_pad_npvalue(x):
    return P.Pad(((1, 1),), np.float64(0.5))(x)


@pytest.mark.parametrize("fn,shapes", [
    (f32_cast_roundtrip, [(2, 3)]), (f32_pad_npvalue, [(2, 3)]),
    (f32_select, [(2, 3), (2, 3)]), (f32_pad, [(2, 3)]), (f32_one_hot, [(), ()]),
    (f32_setitem, [(2, 3), (2,)]), (f32_clip, [(2, 3)]), (f32_concat, [(2, 3), (2, 1)]),
    (f32_gather, [(4, 3)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_float32_stays_float32(fn, shapes):
    """Rules and templates never promote float32 (Python constants stay weak)."""
    args = tuple(normal(s, 85).astype(np.float32) for s in shapes)
    out, t = s2sad.jvp(fn, args, tuple(np.ones_like(a) for a in args))
    assert np.asarray(out).dtype == np.float32
    assert np.asarray(t).dtype == np.float32
    sens = np.ones(np.shape(out), np.float32)
    grads = ops.GradOperation(get_all=True, sens_param=True)(fn)(*args, sens)
    entry = ops.GradOperation(get_all=True, sens_param=True)(fn).compiled(*args, sens)
    raw = entry.fn(*args, *entry.inputs.read(None), sens)
    for g, r in zip(grads, raw):
        assert g.dtype == np.float32
        assert np.asarray(r).dtype == np.float32, fn.__name__


# ---------------------------------------------------- non-differentiable
def f_creation(x):
    z = P.Zeros()((2, 3), mstype.float64)
    o = P.Ones()((2, 3), mstype.float64)
    f = P.Fill()(mstype.float64, (2, 3), 2.5)
    e = P.Eye()(2, 3, mstype.float64)
    return x * (z + o + f + e)


def f_sizes(x):
    return x * P.Size()(x) + x * P.Rank()(x)


def f_zeros_runtime_shape(x):
    return x + P.Zeros()(ops.shape(x), mstype.float64)


def test_creation_primitives_are_constants():
    x = normal((2, 3), 90)
    g = ops.GradOperation()(f_creation)(x)
    np.testing.assert_allclose(g, 3.5 + np.eye(2, 3))
    check_vjp(f_creation, (x,))
    check_jvp(f_creation, (x,))
    np.testing.assert_allclose(ops.GradOperation()(f_zeros_runtime_shape)(x), np.ones((2, 3)))


def test_creation_results():
    for out, want in [(P.Zeros()((2, 3), mstype.float32), np.zeros((2, 3), np.float32)),
                      (P.Ones()(4, mstype.int32), np.ones(4, np.int32)),
                      (P.Fill()(mstype.float16, (2,), 1.5), np.full(2, 1.5, np.float16)),
                      (P.Eye(1)(3, 3, mstype.float64), np.eye(3, k=1)),
                      (ops.zeros((2, 2)), np.zeros((2, 2), np.float32)),
                      (ops.ones(3, mstype.float64), np.ones(3)),
                      (ops.fill(mstype.int64, (2,), 7), np.full(2, 7)),
                      (ops.eye(2), np.eye(2, dtype=np.float32))]:
        assert isinstance(out, s2sad.Tensor)
        assert out.asnumpy().dtype == want.dtype
        np.testing.assert_array_equal(out.asnumpy(), want)


def test_size_and_rank():
    x = normal((2, 3, 4), 91)
    assert P.Size()(x) == 24 and P.Rank()(x) == 3
    assert ops.size(s2sad.Tensor(x)) == 24 and ops.rank(s2sad.Tensor(x)) == 3
    g = ops.GradOperation()(f_sizes)(x)
    np.testing.assert_allclose(g, np.full((2, 3, 4), 27.0))


def test_non_differentiable_classes():
    for cls in (P.Fill, P.Zeros, P.Ones, P.Eye, P.Size, P.Rank, P.Shape, P.ZerosLike,
                P.OnesLike, P.SumSeed, P.ReductionSeed, P.StopGradient, P.ReducedCount):
        assert not cls.differentiable


def test_every_array_primitive_documents_itself():
    from s2sad.ops.operations import array_ops
    for name in array_ops.__all__:
        cls = getattr(array_ops, name)
        assert issubclass(cls, Primitive)
        assert cls.__doc__ and cls.__doc__.strip(), name
        assert isinstance(getattr(cls, "formula", None), str) and cls.formula, name


# ------------------------------------------------------------- clip_by_value
LO = np.array([-0.6, -0.2, -1.5])


def f_clip(x, hi):
    return ops.clip_by_value(x, LO, hi)


def f_clip_scalar(x):
    return ops.clip_by_value(x, -1.0, 1.2)


def f_clip_min_only(x):
    return ops.clip_by_value(x, clip_value_min=0.1)


def f_np_clip(x):
    return np.clip(x, -0.5, 0.9)


def f_method_clip(x):
    return x.clip(-0.4, 0.4)


@pytest.mark.parametrize("fn,args", [
    (f_clip, [distinct((2, 3), 92) * 0.6, np.array([0.25, 0.55, 1.15])]),
    (f_clip_scalar, [distinct((2, 3), 93)]),
    (f_clip_min_only, [distinct((3, 2), 94) * 0.3]),
    (f_np_clip, [distinct((2, 3), 95) * 0.6]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_clip(fn, args):
    check_vjp(fn, args)
    check_jvp(fn, args)


def test_clip_values():
    x = distinct((2, 3), 96)
    np.testing.assert_allclose(f_clip_scalar(x), np.clip(x, -1.0, 1.2))
    np.testing.assert_allclose(f_clip_min_only(x), np.maximum(x, 0.1))
    check_vjp(f_method_clip, (s2sad.Tensor(distinct((2, 3), 97) * 0.3),))


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


def test_unstack_needs_num_inside_differentiated_code():
    x = normal((2, 3), 150)
    a, b = ops.unstack(x)          # eagerly the count comes from the shape
    np.testing.assert_array_equal(a, x[0])
    with pytest.raises(ValueError, match="'num' must be given"):
        ops.GradOperation()(f_unstack_no_num)(x)


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
