"""bprop and JVP rules for shape, layout, indexing and creation primitives.

Rules are written with primitives only: s2sad inlines them into the adjoint
program, so every helper primitive a rule uses (TileGrad, SplitLike,
GatherGrad, PadCrop, ...) has rules of its own.  A tuple input (Concat,
Stack) gets a tuple of gradients; the small helpers below walk such tuples
with loops the frontend unrolls while compiling.
"""
import numpy as np

from ..operations import array_ops as A
from ... import dtype as mstype
from ...runtime import inverse_permutation
from ...runtime.rt_array import array_slice_index, array_strided_slice_index, \
    array_is_float_dtype
from .grad_base import bprop_getters, jvp_getters
from .grad_math_ops import binop_grad_common

shape_of = A.Shape()
reshape = A.Reshape()
transpose = A.Transpose()
getitem = A.GetItem()
getitem_grad = A.GetItemGrad()
setitem = A.SetItem()
setitem_value_grad = A.SetItemValueGrad()
unbroadcast = A.Unbroadcast()
broadcast_like = A.BroadcastLike()
zeros_like = A.ZerosLike()
float_dtype_flag = A.FloatDTypeFlag()
tile = A.Tile()
tile_grad = A.TileGrad()
gather = A.Gather()
gather_grad = A.GatherGrad()
gather_nd = A.GatherNd()
scatter_nd = A.ScatterNd()
select = A.Select()
cast_like = A.CastLike()


# ------------------------------------------------------------------ helpers
#: The gradient of an index input: none.  Not ``zeros_like(index)``: an index
#: such as ``(slice(None), [0, 2])`` is no array, and NumPy cannot make zeros
#: of it while compiling.
_NO_GRAD = None

# Plain functions over abstract values: inlined into the rules that call them.
def _count(xs):
    """How many elements the tuple ``xs`` has (known while compiling)."""
    n = 0
    for _x in xs:
        n = n + 1
    return n


def _as_tuple(d, n):
    """The adjoints of a multi-output primitive as a tuple (one output gives a bare value)."""
    if n == 1:
        return (d,)
    return d


def _zeros_each(xs):
    """A tuple of zeros mirroring the tuple ``xs`` (no gradient to any element)."""
    out = ()
    for x in xs:
        out = out + (zeros_like(x),)
    return out


def _or_zeros(t, x):
    """The tangent ``t``, or zeros like ``x`` where ``t`` is a symbolic zero."""
    if t is None:
        return zeros_like(x)
    return t


def _or_zero(t):
    """The tangent ``t``, or the scalar 0 (broadcasts, never promotes) when it is absent."""
    if t is None:
        return 0
    return t


def _tangents_or_zeros(xs, ts):
    """The tangents of the elements of a tuple input, zeros for the absent ones."""
    out = ()
    i = 0
    for x in xs:
        out = out + (_or_zeros(ts[i], x),)
        i = i + 1
    return out


# ------------------------------------------------------------- shared JVPs
# The JVP of each primitive linear in its first input (the tangent is the
# primitive applied to that input's tangent, the other inputs unchanged),
# by number of inputs.  The other JVPs follow their primitive's bprop below.
@jvp_getters.register(A.Squeeze)
@jvp_getters.register(A.Flatten)
@jvp_getters.register(A.SwapAxes)
@jvp_getters.register(A.MoveAxis)
@jvp_getters.register(A.ReverseV2)
@jvp_getters.register(A.BroadcastTo)
@jvp_getters.register(A.Repeat)
@jvp_getters.register(A.Unstack)
@jvp_getters.register(A.Split)
@jvp_getters.register(A.PadCrop)
@jvp_getters.register(A.TransposeT)
def get_jvp_linear1(self):
    def jvp(x, out, tx):
        return self(tx)
    return jvp


@jvp_getters.register(A.Reshape)
@jvp_getters.register(A.Transpose)
@jvp_getters.register(A.ExpandDims)
@jvp_getters.register(A.Tile)
@jvp_getters.register(A.GetItem)
@jvp_getters.register(A.SetItemValueGrad)
@jvp_getters.register(A.GatherNd)
@jvp_getters.register(A.RepeatGrad)
@jvp_getters.register(A.CastLike)
@jvp_getters.register(A.Unbroadcast)
@jvp_getters.register(A.BroadcastLike)
def get_jvp_linear2(self):
    def jvp(x, other, out, tx, tother):
        if tx is None:
            return None
        return self(tx, other)
    return jvp


@jvp_getters.register(A.GetItemGrad)
@jvp_getters.register(A.ExpandReduced)
@jvp_getters.register(A.TileGrad)
@jvp_getters.register(A.Slice)
@jvp_getters.register(A.Gather)
def get_jvp_linear3(self):
    def jvp(x, a, b, out, tx, ta, tb):
        if tx is None:
            return None
        return self(tx, a, b)
    return jvp


@jvp_getters.register(A.GatherGrad)
@jvp_getters.register(A.StridedSlice)
def get_jvp_linear4(self):
    def jvp(x, a, b, c, out, tx, ta, tb, tc):
        if tx is None:
            return None
        return self(tx, a, b, c)
    return jvp


# ------------------------------------------------------------------- layout
@bprop_getters.register(A.Reshape)
def get_bprop_reshape(self):
    def bprop(x, shape, out, dout):
        return reshape(dout, shape_of(x)), zeros_like(shape)
    return bprop


@bprop_getters.register(A.ExpandDims)
def get_bprop_expand_dims(self):
    def bprop(x, axis, out, dout):
        return reshape(dout, shape_of(x)), zeros_like(axis)
    return bprop


@bprop_getters.register(A.Squeeze)
@bprop_getters.register(A.Flatten)
def get_bprop_reshape_like(self):
    def bprop(x, out, dout):
        return (reshape(dout, shape_of(x)),)
    return bprop


@bprop_getters.register(A.Transpose)
def get_bprop_transpose(self):
    def bprop(x, perm, out, dout):
        return transpose(dout, inverse_permutation(perm)), zeros_like(perm)
    return bprop


@bprop_getters.register(A.TransposeT)
def get_bprop_transpose_t(self):
    transpose_t = A.TransposeT()

    def bprop(x, out, dout):
        return (transpose_t(dout),)
    return bprop


@bprop_getters.register(A.SwapAxes)
@bprop_getters.register(A.ReverseV2)
def get_bprop_self_adjoint(self):
    # swapping the same two axes, or reversing the same axes, undoes itself
    def bprop(x, out, dout):
        return (self(dout),)
    return bprop


@bprop_getters.register(A.Identity)
def get_bprop_identity(self):
    def bprop(x, out, dout):
        return (dout,)
    return bprop


@jvp_getters.register(A.Identity)
def get_jvp_identity(self):
    def jvp(x, out, tx):
        return tx
    return jvp


@bprop_getters.register(A.MoveAxis)
def get_bprop_move_axis(self):
    back = A.MoveAxis(self.destination, self.source)

    def bprop(x, out, dout):
        return (back(dout),)
    return bprop


@bprop_getters.register(A.BroadcastTo)
def get_bprop_broadcast_to(self):
    def bprop(x, out, dout):
        return (unbroadcast(dout, x),)
    return bprop


@bprop_getters.register(A.Fill)
def get_bprop_fill(self):
    def bprop(type_, shape, value, out, dout):
        return (zeros_like(type_), zeros_like(shape),
                cast_like(unbroadcast(dout, value), value))
    return bprop


@jvp_getters.register(A.Fill)
def get_jvp_fill(self):
    def jvp(type_, shape, value, out, ttype, tshape, tvalue):
        if tvalue is None:
            return None
        return self(type_, shape, tvalue)
    return jvp


@bprop_getters.register(A.Tile)
def get_bprop_tile(self):
    def bprop(x, multiples, out, dout):
        return tile_grad(dout, x, multiples), zeros_like(multiples)
    return bprop


@bprop_getters.register(A.TileGrad)
def get_bprop_tile_grad(self):
    def bprop(d, x, multiples, out, dout):
        return tile(dout, multiples), zeros_like(x), zeros_like(multiples)
    return bprop


@bprop_getters.register(A.Repeat)
def get_bprop_repeat(self):
    repeat_grad = A.RepeatGrad(self.repeats, self.axis)

    def bprop(x, out, dout):
        return (repeat_grad(dout, x),)
    return bprop


@bprop_getters.register(A.RepeatGrad)
def get_bprop_repeat_grad(self):
    repeat = A.Repeat(self.repeats, self.axis)

    def bprop(d, x, out, dout):
        return repeat(dout), zeros_like(x)
    return bprop


# ------------------------------------------------------- joining, splitting
@bprop_getters.register(A.Concat)
def get_bprop_concat(self):
    axis = self.axis

    def bprop(x, out, dout):
        n = _count(x)
        pieces = A.SplitLike(axis, n)(dout, x)
        return (_as_tuple(pieces, n),)
    return bprop


@bprop_getters.register(A.SplitLike)
def get_bprop_split_like(self):
    concat = A.Concat(self.axis)
    n = self.num

    def bprop(x, likes, out, dout):
        return concat(_as_tuple(dout, n)), _zeros_each(likes)
    return bprop


@jvp_getters.register(A.SplitLike)
def get_jvp_split_like(self):
    def jvp(x, likes, out, tx, tlikes):
        return self(_or_zeros(tx, x), likes)
    return jvp


@bprop_getters.register(A.Stack)
def get_bprop_stack(self):
    axis = self.axis

    def bprop(x, out, dout):
        n = _count(x)
        return (_as_tuple(A.Unstack(axis, n)(dout), n),)
    return bprop


@jvp_getters.register(A.Concat)
@jvp_getters.register(A.Stack)
def get_jvp_join(self):
    def jvp(x, out, tx):
        return self(_tangents_or_zeros(x, tx))
    return jvp


@bprop_getters.register(A.Unstack)
def get_bprop_unstack(self):
    stack = A.Stack(self.axis)
    n = self.num

    def bprop(x, out, dout):
        return (stack(_as_tuple(dout, n)),)
    return bprop


@bprop_getters.register(A.Split)
def get_bprop_split(self):
    concat = A.Concat(self.axis)
    n = self.output_num

    def bprop(x, out, dout):
        return (concat(_as_tuple(dout, n)),)
    return bprop


# ------------------------------------------------------------------ indexing
@bprop_getters.register(A.GetItem)
def get_bprop_getitem(self):
    def bprop(x, index, out, dout):
        return getitem_grad(dout, x, index), _NO_GRAD
    return bprop


@bprop_getters.register(A.GetItemGrad)
def get_bprop_getitem_grad(self):
    def bprop(dout_, x, index, out, dout):
        return getitem(dout, index), zeros_like(x), _NO_GRAD
    return bprop


@bprop_getters.register(A.SetItem)
def get_bprop_setitem(self):
    def bprop(x, index, value, out, dout):
        # dout read before it is zeroed: then the zeroing is its last read and
        # may write into it (codegen's in-place setitem)
        dvalue = unbroadcast(setitem_value_grad(dout, index), value)
        dx = setitem(dout, index, 0)
        return dx, _NO_GRAD, dvalue
    return bprop


@jvp_getters.register(A.SetItem)
def get_jvp_setitem(self):
    def jvp(x, index, value, out, tx, tindex, tvalue):
        if tvalue is None:
            return self(tx, index, 0)
        return self(_or_zeros(tx, x), index, tvalue)
    return jvp


@bprop_getters.register(A.SetItemValueGrad)
def get_bprop_setitem_value_grad(self):
    # each position written gets the gradient of the one write that survived there
    def bprop(dout_, index, out, dout):
        return setitem(zeros_like(dout_), index, dout), _NO_GRAD
    return bprop


@bprop_getters.register(A.Slice)
def get_bprop_slice(self):
    def bprop(x, begin, size, out, dout):
        index = array_slice_index(begin, size)
        return getitem_grad(dout, x, index), zeros_like(begin), zeros_like(size)
    return bprop


@bprop_getters.register(A.StridedSlice)
def get_bprop_strided_slice(self):
    masks = self.masks()

    def bprop(x, begin, end, strides, out, dout):
        index = array_strided_slice_index(begin, end, strides, *masks)
        return (getitem_grad(dout, x, index), zeros_like(begin), zeros_like(end),
                zeros_like(strides))
    return bprop


@bprop_getters.register(A.Gather)
def get_bprop_gather(self):
    def bprop(params, indices, axis, out, dout):
        return gather_grad(dout, params, indices, axis), zeros_like(indices), zeros_like(axis)
    return bprop


@bprop_getters.register(A.GatherGrad)
def get_bprop_gather_grad(self):
    def bprop(d, params, indices, axis, out, dout):
        return (gather(dout, indices, axis), zeros_like(params), zeros_like(indices),
                zeros_like(axis))
    return bprop


@bprop_getters.register(A.GatherNd)
def get_bprop_gather_nd(self):
    def bprop(x, indices, out, dout):
        return scatter_nd(indices, dout, shape_of(x)), zeros_like(indices)
    return bprop


@bprop_getters.register(A.ScatterNd)
def get_bprop_scatter_nd(self):
    def bprop(indices, updates, shape, out, dout):
        return zeros_like(indices), gather_nd(dout, indices), zeros_like(shape)
    return bprop


@jvp_getters.register(A.ScatterNd)
def get_jvp_scatter_nd(self):
    def jvp(indices, updates, shape, out, tindices, tupdates, tshape):
        if tupdates is None:
            return None
        return self(indices, tupdates, shape)
    return jvp


@bprop_getters.register(A.TensorScatterAdd)
def get_bprop_tensor_scatter_add(self):
    def bprop(x, indices, updates, out, dout):
        return dout, zeros_like(indices), gather_nd(dout, indices)
    return bprop


@jvp_getters.register(A.TensorScatterAdd)
def get_jvp_tensor_scatter_add(self):
    def jvp(x, indices, updates, out, tx, tindices, tupdates):
        if tupdates is None:
            return tx
        return self(_or_zeros(tx, x), indices, tupdates)
    return jvp


@bprop_getters.register(A.TensorScatterUpdate)
def get_bprop_tensor_scatter_update(self):
    def bprop(x, indices, updates, out, dout):
        dx = self(dout, indices, zeros_like(updates))
        return dx, zeros_like(indices), gather_nd(dout, indices)
    return bprop


@jvp_getters.register(A.TensorScatterUpdate)
def get_jvp_tensor_scatter_update(self):
    def jvp(x, indices, updates, out, tx, tindices, tupdates):
        return self(_or_zeros(tx, x), indices, _or_zeros(tupdates, updates))
    return jvp


@bprop_getters.register(A.Select)
def get_bprop_select(self):
    def bprop(cond, x, y, out, dout):
        dx, dy = binop_grad_common(x, y, select(cond, dout, 0), select(cond, 0, dout))
        return zeros_like(cond), dx, dy
    return bprop


@jvp_getters.register(A.Select)
def get_jvp_select(self):
    def jvp(cond, x, y, out, tcond, tx, ty):
        return broadcast_like(select(cond, _or_zero(tx), _or_zero(ty)), out)
    return jvp


@bprop_getters.register(A.OneHot)
def get_bprop_one_hot(self):
    def bprop(indices, depth, on_value, off_value, out, dout):
        mask = self(indices, depth, True, False)
        return (zeros_like(indices), zeros_like(depth),
                unbroadcast(select(mask, dout, 0), on_value),
                unbroadcast(select(mask, 0, dout), off_value))
    return bprop


@jvp_getters.register(A.OneHot)
def get_jvp_one_hot(self):
    def jvp(indices, depth, on_value, off_value, out, tindices, tdepth, ton, toff):
        mask = self(indices, depth, True, False)
        return broadcast_like(select(mask, _or_zero(ton), _or_zero(toff)), out)
    return jvp


@bprop_getters.register(A.Pad)
def get_bprop_pad(self):
    crop = A.PadCrop(self.paddings, self.broadcast)

    def bprop(x, out, dout):
        return (crop(dout),)
    return bprop


@jvp_getters.register(A.Pad)
def get_jvp_pad(self):
    # the padding is a constant: its tangent is zero
    pad = A.Pad(self.paddings, 0, self.broadcast)

    def jvp(x, out, tx):
        return pad(tx)
    return jvp


@bprop_getters.register(A.PadCrop)
def get_bprop_pad_crop(self):
    pad = A.Pad(self.paddings, 0, self.broadcast)

    def bprop(x, out, dout):
        return (pad(dout),)
    return bprop


# -------------------------------------------------------------------- dtypes
def _dtype_known(dtype):
    """Whether a cast's dtype is known while compiling (``x.dtype`` is read at run time)."""
    return dtype is None or isinstance(dtype, (type, str, np.dtype, mstype.Type))


@bprop_getters.register(A.Cast)
def get_bprop_cast(self):
    def bprop(x, dtype, out, dout):
        if not _dtype_known(dtype):
            return cast_like(dout * float_dtype_flag(dtype), x), zeros_like(dtype)
        if array_is_float_dtype(dtype):
            return cast_like(dout, x), zeros_like(dtype)
        return zeros_like(x), zeros_like(dtype)
    return bprop


@jvp_getters.register(A.Cast)
def get_jvp_cast(self):
    def jvp(x, dtype, out, tx, tdtype):
        if not _dtype_known(dtype):
            return self(tx * float_dtype_flag(dtype), dtype)
        if array_is_float_dtype(dtype):
            return self(tx, dtype)
        return None
    return jvp


@bprop_getters.register(A.CastLike)
def get_bprop_cast_like(self):
    def bprop(a, x, out, dout):
        return cast_like(dout, a), zeros_like(x)
    return bprop


# --------------------------------------------------------------- AD helpers
@bprop_getters.register(A.Depend)
def get_bprop_depend(self):
    def bprop(value, expr, out, dout):
        return dout, zeros_like(expr)
    return bprop


@jvp_getters.register(A.Depend)
def get_jvp_depend(self):
    def jvp(value, expr, out, tvalue, texpr):
        return tvalue
    return jvp


@bprop_getters.register(A.Unbroadcast)
def get_bprop_unbroadcast(self):
    def bprop(dx, x, out, dout):
        return broadcast_like(dout, dx), zeros_like(x)
    return bprop


@bprop_getters.register(A.BroadcastLike)
def get_bprop_broadcast_like(self):
    def bprop(a, x, out, dout):
        return unbroadcast(dout, a), zeros_like(x)
    return bprop


@bprop_getters.register(A.ExpandReduced)
def get_bprop_expand_reduced(self):
    def bprop(d, x, axis, out, dout):
        return reshape(dout, shape_of(d)), zeros_like(x), zeros_like(axis)
    return bprop


@bprop_getters.register(A.CheckSens)
def get_bprop_check_sens(self):
    def bprop(sens, out_, what, out, dout):
        return dout, zeros_like(out_), zeros_like(what)
    return bprop


@jvp_getters.register(A.CheckSens)
def get_jvp_check_sens(self):
    def jvp(sens, out_, what, out, tsens, tout, twhat):
        return tsens
    return jvp
