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

from s2sad.ops import operations as P


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
