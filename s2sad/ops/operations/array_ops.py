"""Shape, layout, indexing and creation primitives.

Each class carries ``formula`` (its gradient, one line) and, where it has
points without a derivative, ``nondifferentiable``; both feed the generated
documentation of the primitives.  Inputs MindSpore passes as inputs (axis,
shape, multiples, begin/size, ...) are inputs here too: compile-time
constants in practice, and they get no gradient.
"""
import numbers

import numpy as np

from ...ir.nodes import Const, Var
from ...ir.primitive import Primitive, constexpr
from ...runtime.rt_array import _basic_index

_NO_GRAD = "no gradient (the result is a shape, an index, a count or a constant)"


def _axis_tuple(axis):
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) for a in axis)
    return (int(axis),)


# ----------------------------------------------------------------- layout
class Reshape(Primitive):
    """Reshape ``x`` to ``shape`` (an input: a tuple, may hold one -1)."""
    linearity = "linear"
    view = True
    formula = "dx = reshape(dout, shape(x))"

    def emit(self, x, shape):
        return "xp.reshape(%s, %s)" % (x, shape)


class Transpose(Primitive):
    """Permute the axes of ``x`` by ``perm`` (an input)."""
    linearity = "linear"
    view = True
    formula = "dx = transpose(dout, inverse(perm))"

    def emit(self, x, perm):
        return "xp.transpose(%s, %s)" % (x, perm)


class TransposeT(Primitive):
    """``x.T``: reverse all axes."""
    linearity = "linear"
    view = True
    formula = "dx = dout.T"

    def emit(self, x):
        return "%s.T" % x


class ExpandDims(Primitive):
    """Insert a size-1 axis at ``axis`` (an input)."""
    linearity = "linear"
    view = True
    formula = "dx = reshape(dout, shape(x))"

    def emit(self, x, axis):
        return "xp.expand_dims(%s, %s)" % (x, axis)


class Squeeze(Primitive):
    """Remove the size-1 axes listed in ``axis`` (``()``: every size-1 axis)."""
    linearity = "linear"
    view = True
    formula = "dx = reshape(dout, shape(x))"

    def __init__(self, axis=()):
        axis = _axis_tuple(axis) or ()
        super().__init__(axis=axis)

    def emit(self, x):
        if not self.axis:
            return "xp.squeeze(%s)" % x
        return "xp.squeeze(%s, axis=%s)" % (x, constexpr(self.axis))


class Flatten(Primitive):
    """Merge dims ``start_dim..end_dim`` into one; MindSpore's default keeps dim 0 (N, -1).

    ``copy=True`` is ``ndarray.flatten``, which copies (``np.ravel`` may not).
    """
    linearity = "linear"
    view = True
    formula = "dx = reshape(dout, shape(x))"

    def __init__(self, start_dim=1, end_dim=-1, copy=False):
        # ``copy``: NumPy's ``x.flatten()`` gives a new array (``ravel`` may not)
        super().__init__(start_dim=int(start_dim), end_dim=int(end_dim), copy=bool(copy))

    def emit(self, x):
        text = "rt.array_flatten(%s, %d, %d)" % (x, self.start_dim, self.end_dim)
        return "xp.copy(%s)" % text if self.copy else text

    def shares_input(self, args, is_boolean):
        return not self.copy


class SwapAxes(Primitive):
    """Exchange axes ``axis1`` and ``axis2`` (``np.swapaxes``; needs no rank while compiling)."""
    linearity = "linear"
    view = True
    formula = "dx = swapaxes(dout, axis1, axis2)"

    def __init__(self, axis1, axis2):
        super().__init__(axis1=int(axis1), axis2=int(axis2))

    def emit(self, x):
        return "xp.swapaxes(%s, %d, %d)" % (x, self.axis1, self.axis2)


class MoveAxis(Primitive):
    """Move axes ``source`` to positions ``destination`` (``np.moveaxis``)."""
    linearity = "linear"
    view = True
    formula = "dx = moveaxis(dout, destination, source)"

    def __init__(self, source, destination):
        super().__init__(source=_axis_tuple(source), destination=_axis_tuple(destination))

    def emit(self, x):
        return "xp.moveaxis(%s, %s, %s)" % (x, constexpr(self.source),
                                            constexpr(self.destination))


class ReverseV2(Primitive):
    """Reverse ``x`` along the axes in ``axis`` (``None``: every axis)."""
    linearity = "linear"
    view = True
    formula = "dx = reverse(dout, axis)"

    def __init__(self, axis=None):
        super().__init__(axis=_axis_tuple(axis))

    def emit(self, x):
        return "xp.flip(%s, axis=%s)" % (x, constexpr(self.axis))


class BroadcastTo(Primitive):
    """Broadcast ``x`` to ``shape`` (a -1 keeps x's size in that dim)."""
    linearity = "linear"
    view = True
    formula = "dx = unbroadcast(dout, x) (sum over the broadcast dims)"

    def __init__(self, shape):
        super().__init__(shape=_axis_tuple(shape))

    def emit(self, x):
        return "rt.array_broadcast_to(%s, %s)" % (x, constexpr(self.shape))


class Tile(Primitive):
    """Repeat ``x`` ``multiples[i]`` times along each dim (``multiples`` is an input)."""
    linearity = "linear"
    formula = "dx = sum of dout over the copies (TileGrad)"

    def emit(self, x, multiples):
        return "xp.tile(%s, %s)" % (x, multiples)


class TileGrad(Primitive):
    """Sum ``dout`` over the copies Tile made: the adjoint of Tile (a rule helper)."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "d_dout = tile(dout, multiples)"

    def emit(self, dout, x, multiples):
        return "rt.array_tile_grad(%s, %s, %s)" % (dout, x, multiples)


class Repeat(Primitive):
    """Repeat each element ``repeats`` times along ``axis`` (``np.repeat``; ``None``: flattened)."""
    linearity = "linear"
    formula = "dx = sum of dout over each element's copies (RepeatGrad)"

    def __init__(self, repeats, axis=None):
        if not isinstance(repeats, numbers.Integral):
            raise TypeError("Repeat supports an int 'repeats' only, but got %s"
                            % type(repeats).__name__)
        super().__init__(repeats=int(repeats), axis=None if axis is None else int(axis))

    def emit(self, x):
        return "xp.repeat(%s, %d, axis=%r)" % (x, self.repeats, self.axis)


class RepeatGrad(Primitive):
    """Sum the copies ``Repeat`` made back to x's shape: the adjoint of Repeat (a rule helper)."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "d_dout = repeat(dout, repeats, axis)"

    def __init__(self, repeats, axis=None):
        super().__init__(repeats=int(repeats), axis=None if axis is None else int(axis))

    def emit(self, dout, x):
        return "rt.array_repeat_grad(%s, %s, %d, %r)" % (dout, x, self.repeats, self.axis)


# -------------------------------------------------------- joining, splitting
#: NumPy's stacking functions and concatenating index tricks (``np.r_[a, b]``),
#: which Concat and SplitLike take as their axis
STACKING = ("hstack", "vstack", "dstack", "column_stack", "r_", "c_")


class Concat(Primitive):
    """Join the tuple ``x`` of tensors along ``axis``.

    Besides an int, ``axis`` may name one of NumPy's stacking functions
    (``STACKING``), whose axis depends on the runtime rank.
    """
    linearity = "linear"
    formula = "dx[i] = the piece of dout where x[i] went (SplitLike)"

    def __init__(self, axis=0):
        super().__init__(axis=axis if axis in STACKING else int(axis))

    def emit(self, x):
        if self.axis in ("r_", "c_"):
            return "xp.%s[%s]" % (self.axis, x)
        if self.axis in STACKING:
            return "xp.%s(%s)" % (self.axis, x)
        return "xp.concatenate(%s, axis=%d)" % (x, self.axis)


class SplitLike(Primitive):
    """Split ``x`` into pieces shaped like the tensors of ``likes`` along ``axis``.

    The adjoint of Concat (a rule helper): ``num`` is the number of pieces.
    """
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "dx = concat(dout, axis); no gradient to likes"

    def __init__(self, axis, num):
        super().__init__(axis=axis if axis in STACKING else int(axis), num=int(num))
        self.num_outputs = self.num

    def emit(self, x, likes):
        expr = "rt.array_split_like(%s, %s, %r)" % (x, likes, self.axis)
        return expr + "[0]" if self.num == 1 else expr


class Stack(Primitive):
    """Stack the tuple ``x`` of same-shaped tensors along a new axis ``axis``."""
    linearity = "linear"
    formula = "dx = unstack(dout, axis)"

    def __init__(self, axis=0):
        super().__init__(axis=int(axis))

    def emit(self, x):
        return "xp.stack(%s, axis=%d)" % (x, self.axis)


class Unstack(Primitive):
    """The ``num`` slices of ``x`` along ``axis``, as separate outputs.

    Compiled code is shape-polymorphic, so inside a differentiated function
    ``num`` must be given (eagerly it is inferred from the shape).
    """
    linearity = "linear"
    formula = "dx = stack(dout, axis)"

    def __init__(self, axis=0, num=None):
        super().__init__(axis=int(axis), num=None if num is None else int(num))

    @property
    def num_outputs(self):
        if self.num is None:
            raise ValueError(
                "For 'Unstack', 'num' must be given inside a differentiated function: s2sad "
                "compiles shape-polymorphic code, so the number of outputs cannot come from "
                "the input's shape; use ops.Unstack(axis=%d, num=N) or ops.unstack(x, axis, "
                "num=N)" % self.axis)
        return self.num

    def staged_form(self, args):
        """Without ``num``, in compiled code: ``x`` with ``axis`` moved first.  Its rows
        are the slices, and unpacking (``q, k, v = unstack(x)``, the count checked at
        run time), indexing and iterating read them as they would the tuple."""
        if self.num is not None:
            return self, args
        return (MoveAxis(self.axis, 0) if self.axis != 0 else None), args

    def emit(self, x):
        expr = "rt.array_unstack(%s, %d, %r)" % (x, self.axis, self.num)
        return expr + "[0]" if self.num == 1 else expr


class Split(Primitive):
    """Cut ``x`` into ``output_num`` equal parts along ``axis``."""
    linearity = "linear"
    formula = "dx = concat(dout, axis)"

    def __init__(self, axis=0, output_num=1):
        super().__init__(axis=int(axis), output_num=int(output_num))
        self.num_outputs = self.output_num

    def emit(self, x):
        expr = "rt.array_split(%s, %d, %d)" % (x, self.output_num, self.axis)
        return expr + "[0]" if self.output_num == 1 else expr


# ------------------------------------------------------------------- slicing
class Slice(Primitive):
    """``x[begin[i] : begin[i] + size[i]]`` in each dim (inputs begin, size; -1: to the end)."""
    linearity = "linear"
    view = True
    formula = "dx = zeros like x with dout at the slice"

    def emit(self, x, begin, size):
        return "%s[rt.array_slice_index(%s, %s)]" % (x, begin, size)


class StridedSlice(Primitive):
    """``x[begin:end:strides]`` per dim with MindSpore's bit masks (inputs begin, end, strides).

    ``begin_mask``/``end_mask`` ignore a bound, ``ellipsis_mask`` puts ``...``,
    ``new_axis_mask`` a new axis, ``shrink_axis_mask`` takes the index
    ``begin[i]`` and drops that dim.
    """
    linearity = "linear"
    view = True
    formula = "dx = zeros like x with dout at the slice"

    def __init__(self, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                 shrink_axis_mask=0):
        super().__init__(begin_mask=int(begin_mask), end_mask=int(end_mask),
                         ellipsis_mask=int(ellipsis_mask), new_axis_mask=int(new_axis_mask),
                         shrink_axis_mask=int(shrink_axis_mask))

    def masks(self):
        return (self.begin_mask, self.end_mask, self.ellipsis_mask, self.new_axis_mask,
                self.shrink_axis_mask)

    def emit(self, x, begin, end, strides):
        return "%s[rt.array_strided_slice_index(%s, %s, %s, %d, %d, %d, %d, %d)]" % (
            (x, begin, end, strides) + self.masks())


class GetItem(Primitive):
    """``x[index]`` for any NumPy index; the index is a compile-time input."""
    linearity = "linear"
    view = True
    formula = "dx = zeros like x with dout added at index (GetItemGrad)"

    def emit(self, x, index):
        return "%s[%s]" % (x, index)

    def shares_input(self, args, is_boolean):
        """Basic indexing gives a view; an index with a list, an array or a boolean
        part (advanced indexing) gives a copy, as in NumPy."""
        parts = args[1] if isinstance(args[1], tuple) else (args[1],)
        return not any(_advanced(p, is_boolean) for p in parts)


def _advanced(part, is_boolean):
    """Whether one part of an index makes NumPy index with arrays (a copy).

    A runtime part counts only when known to be a boolean array; an integer
    array computed at run time is taken for a possible view (the safe side).
    """
    if isinstance(part, Const):
        value = part.value
        parts = value if isinstance(value, tuple) else (value,)
        return any(isinstance(v, (list, np.ndarray, bool, np.bool_)) for v in parts)
    return isinstance(part, Var) and is_boolean(part)


class GetItemGrad(Primitive):
    """Zeros shaped like ``x`` with ``dout`` added at ``index`` (adjoint of GetItem)."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    output_shape_of = 1
    shape_only_inputs = (1,)
    formula = "d_dout = d[index]"

    def emit(self, dout, x, index):
        return "rt.getitem_grad(%s, %s, %s)" % (dout, x, index)


class SetItem(Primitive):
    """A copy of ``x`` with ``value`` written at ``index`` (functional ``x[index] = value``).

    ``index`` is any NumPy index (slices, ints, None, Ellipsis, integer
    arrays, boolean masks); ``value`` broadcasts to ``x[index]``.  With an
    integer-array index naming one position twice, the write NumPy keeps (the
    last) is the only one that reaches the output, and the only one with a
    gradient.
    """
    linearity = "linear"
    formula = ("dx = dout with zeros at index, "
               "dvalue = unbroadcast(SetItemValueGrad(dout, index), value)")

    def emit(self, x, index, value):
        return "rt.array_setitem(%s, %s, %s)" % (x, index, value)


class SetItemValueGrad(Primitive):
    """``dout[index]`` with zeros at the writes of ``x[index] = value`` that a later write
    to the same position overwrote (SetItem's adjoint for ``value``)."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "d_dout = zeros like dout with d written at index (SetItem)"

    def emit(self, dout, index):
        return "rt.array_setitem_value_grad(%s, %s)" % (dout, index)


class Gather(Primitive):
    """``params`` taken at the integer ``indices`` along ``axis`` (inputs; ``np.take``)."""
    linearity = "linear"
    formula = "dparams = zeros like params with dout added at indices along axis"

    def __init__(self, batch_dims=0):
        if batch_dims != 0:
            raise ValueError("For 'Gather', only batch_dims=0 is supported by s2sad")
        super().__init__(batch_dims=0)

    def emit(self, params, indices, axis):
        return "xp.take(%s, %s, axis=%s)" % (params, indices, axis)


class GatherGrad(Primitive):
    """Zeros like params with ``dout`` added at ``indices`` along ``axis`` (Gather's adjoint)."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "d_dout = gather(d, indices, axis)"

    def emit(self, dout, params, indices, axis):
        return "rt.array_gather_grad(%s, %s, %s, %s)" % (dout, params, indices, axis)


class GatherNd(Primitive):
    """``x`` at the index tuples held in the last axis of ``indices``."""
    linearity = "linear"
    formula = "dx = scatter_nd(indices, dout, shape(x))"

    def emit(self, x, indices):
        return "rt.array_gather_nd(%s, %s)" % (x, indices)


class ScatterNd(Primitive):
    """Zeros of ``shape`` with ``updates`` added at ``indices`` (duplicates add up)."""
    linearity = "linear"
    formula = "dupdates = gather_nd(dout, indices)"

    def emit(self, indices, updates, shape):
        return "rt.array_scatter_nd(%s, %s, %s)" % (indices, updates, shape)


class TensorScatterAdd(Primitive):
    """A copy of ``input_x`` with ``updates`` added at ``indices`` (duplicates add up)."""
    linearity = "linear"
    formula = "dx = dout, dupdates = gather_nd(dout, indices)"

    def emit(self, x, indices, updates):
        return "rt.array_tensor_scatter_add(%s, %s, %s)" % (x, indices, updates)


class TensorScatterUpdate(Primitive):
    """A copy of ``input_x`` with the entries at ``indices`` replaced by ``updates``.

    The gradient assumes ``indices`` names each position once.
    """
    linearity = "linear"
    formula = ("dx = dout with zeros at indices, dupdates = gather_nd(dout, indices)")

    def emit(self, x, indices, updates):
        return "rt.array_tensor_scatter_update(%s, %s, %s)" % (x, indices, updates)


class Select(Primitive):
    """``x`` where ``cond`` is true, else ``y``, with NumPy broadcasting (``np.where``)."""
    linearity = "linear"
    formula = "dx = unbroadcast(where(cond, dout, 0)), dy = unbroadcast(where(cond, 0, dout))"

    def emit(self, cond, x, y):
        return "xp.where(%s, %s, %s)" % (cond, x, y)


class Pad(Primitive):
    """``x`` padded with a constant by ``paddings``, ``(before, after)`` pairs.

    The pairs cover the last ``len(paddings)`` dims (MindSpore passes one per
    dim); with ``broadcast`` one pair pads every dim, as NumPy's
    ``pad_width=n``.  ``value`` is the constant (MindSpore's Pad uses 0).
    """
    linearity = "linear"
    formula = "dx = dout with the padding cropped off"

    def __init__(self, paddings, value=0, broadcast=False):
        pairs = tuple((int(b), int(a)) for b, a in paddings)
        if any(b < 0 or a < 0 for b, a in pairs):
            raise ValueError("For 'Pad', the paddings must be non-negative, but got %r"
                             % (pairs,))
        if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
            value = value.item()    # a NumPy scalar would render as ``np.float64(...)``
        super().__init__(paddings=pairs, value=value, broadcast=bool(broadcast))

    def emit(self, x):
        return "rt.array_pad(%s, %s, %s, %r)" % (x, constexpr(self.paddings),
                                                 constexpr(self.value), self.broadcast)


class PadCrop(Primitive):
    """``x`` with the padding of ``Pad(paddings)`` removed: the adjoint of Pad (a rule helper)."""
    linearity = "linear"
    formula = "dx = pad(dout, paddings) with zeros"

    def __init__(self, paddings, broadcast=False):
        super().__init__(paddings=tuple((int(b), int(a)) for b, a in paddings),
                         broadcast=bool(broadcast))

    def emit(self, x):
        return "rt.array_pad_crop(%s, %s, %r)" % (x, constexpr(self.paddings), self.broadcast)


class OneHot(Primitive):
    """``on_value`` at each index of a new ``depth``-long axis ``axis``, ``off_value`` elsewhere.

    Inputs ``(indices, depth, on_value, off_value)``; no gradient to indices.
    """
    taylor = "nested"   # not classified for Taylor mode
    formula = "don_value = sum(dout where hit), doff_value = sum(dout elsewhere)"

    def __init__(self, axis=-1):
        super().__init__(axis=int(axis))

    def emit(self, indices, depth, on_value, off_value):
        return "rt.array_one_hot(%s, %s, %s, %s, %d)" % (indices, depth, on_value, off_value,
                                                          self.axis)


# -------------------------------------------------------------------- dtypes
class Cast(Primitive):
    """``x`` converted to ``dtype`` (an input: a ``s2sad.dtype`` Type or NumPy dtype)."""
    linearity = "linear"
    formula = "dx = cast(dout, dtype of x) for a float target; no gradient for other targets"

    def emit(self, x, dtype):
        return "rt.array_cast(%s, %s)" % (x, dtype)


class CastLike(Primitive):
    """``a`` converted to the dtype of ``x`` (the adjoint of Cast; a rule helper)."""
    linearity = "linear"
    formula = "da = cast(dout, dtype of a)"

    def emit(self, a, x):
        return "rt.array_cast_like(%s, %s)" % (a, x)


# ------------------------------------------------------------------ creation
class _Creation(Primitive):
    """Creation primitives return Tensors eagerly, as in MindSpore, whatever their inputs."""
    differentiable = False
    formula = _NO_GRAD

    def __call__(self, *args):
        from ...tensor import Tensor
        out = super().__call__(*args)
        return out if isinstance(out, Tensor) else Tensor(out)


class Fill(_Creation):
    """An array of ``shape`` filled with ``value``, of dtype ``type`` (inputs).

    Differentiable in ``value`` (``np.full(shape, x)`` with a traced ``x``):
    every element is a copy of it (or of its broadcast elements).
    """
    differentiable = True
    linearity = "linear"
    formula = "dvalue = sum of dout over the copies (unbroadcast), in value's dtype"

    def emit(self, type_, shape, value):
        return "rt.array_fill(%s, %s, %s)" % (type_, shape, value)


class Zeros(_Creation):
    """Zeros of ``shape`` and dtype ``type`` (inputs; no gradient)."""

    def emit(self, shape, type_):
        return "rt.array_zeros(%s, %s)" % (shape, type_)


class Ones(_Creation):
    """Ones of ``shape`` and dtype ``type`` (inputs; no gradient)."""

    def emit(self, shape, type_):
        return "rt.array_ones(%s, %s)" % (shape, type_)


class Range(_Creation):
    """``arange(start, limit, delta)`` (inputs may be runtime numbers; no gradient)."""

    def emit(self, start, limit, delta):
        return "xp.arange(%s, %s, %s)" % (start, limit, delta)


class Eye(_Creation):
    """The ``n`` x ``m`` matrix of dtype ``t`` with ones on diagonal ``k`` (no gradient)."""

    def __init__(self, k=0):
        super().__init__(k=int(k))

    def emit(self, n, m, t):
        return "rt.array_eye(%s, %s, %s, %d)" % (n, m, t, self.k)


class ZerosLike(Primitive):
    """Zeros of x's shape and dtype (no gradient)."""
    output_shape_of = 0
    differentiable = False
    formula = _NO_GRAD

    def emit(self, x):
        return "xp.zeros_like(%s)" % x


class OnesLike(Primitive):
    """Ones of x's shape and dtype (no gradient)."""
    output_shape_of = 0
    differentiable = False
    formula = _NO_GRAD

    def emit(self, x):
        return "xp.ones_like(%s)" % x


class SumSeed(Primitive):
    """Ones of x's shape in the dtype ``sum(x)`` has: the default seed of a full sum
    reaching ``x``, as a read-only view of one element (no gradient)."""
    output_shape_of = 0
    differentiable = False
    formula = _NO_GRAD

    def emit(self, x):
        return "rt.sum_seed(%s)" % x


class ReductionSeed(Primitive):
    """Ones of the dtype a full sum or mean of x has, 0-d: the default seed of a
    scalar output such a reduction makes, without computing it (no gradient)."""
    small_result = True
    differentiable = False
    formula = _NO_GRAD

    def __init__(self, kind="sum"):
        super().__init__(kind=kind)

    def emit(self, x):
        return "rt.reduction_seed(%s, %r)" % (x, self.kind)


class MeanSeed(Primitive):
    """What each element of ``v`` gets from the default seed of ``±mean(v)``:
    ``sign / v.size`` in the mean's dtype, 0-d; ``v`` is x, or ``sum(x, axis)``
    when an axis is given (no gradient)."""
    small_result = True
    differentiable = False
    formula = _NO_GRAD

    def __init__(self, sign=1):
        super().__init__(sign=sign)

    def emit(self, x, axis=None):
        extra = "" if axis is None else ", %s" % axis
        return "rt.mean_seed(%s, %r%s)" % (x, self.sign, extra)


# ------------------------------------------------------------ shape queries
class Shape(Primitive):
    """The shape of x as a tuple (no gradient)."""
    small_result = True
    differentiable = False
    formula = _NO_GRAD

    def emit(self, x):
        return "xp.shape(%s)" % x


class DType(Primitive):
    """``x.dtype``, read at run time (no gradient): specs key on whether an array is
    complex, not on its dtype, so the dtype is not known while compiling."""
    small_result = True
    differentiable = False
    formula = _NO_GRAD

    def emit(self, x):
        return "%s.dtype" % x


class FloatDTypeFlag(Primitive):
    """1.0 when a cast to ``dtype`` carries a gradient, else 0.0 (no gradient): the
    Cast rules' factor when the dtype is a run-time value such as ``x.dtype``."""
    small_result = True
    differentiable = False
    formula = _NO_GRAD

    def emit(self, dtype):
        return "rt.array_float_flag(%s)" % dtype


class UnpackTuple(Primitive):
    """The ``num`` items of a tuple known only at run time, such as a shape
    (``b, n, c = x.shape``); a different length raises at run time (no gradient)."""
    small_result = True
    differentiable = False
    formula = _NO_GRAD

    def __init__(self, num):
        super().__init__(num=int(num))
        self.num_outputs = self.num

    def emit(self, x):
        return "rt.array_unpack(%s, %d)" % (x, self.num)


class TupleConcat(Primitive):
    """``a + b`` where a tuple is known only at run time (``x.shape[:2] + (-1,)``;
    no gradient)."""
    small_result = True
    differentiable = False
    formula = _NO_GRAD

    def emit(self, a, b):
        return "tuple(%s) + tuple(%s)" % (a, b)


class Size(Primitive):
    """The number of elements of x, a Python int (no gradient)."""
    small_result = True
    differentiable = False
    formula = _NO_GRAD

    def emit(self, x):
        return "xp.size(%s)" % x


class Rank(Primitive):
    """The number of dimensions of x, a Python int (no gradient)."""
    differentiable = False
    formula = _NO_GRAD

    def emit(self, x):
        return "xp.ndim(%s)" % x


# ------------------------------------------------------------------ identity
class Identity(Primitive):
    """A copy of ``x``."""
    linearity = "linear"
    formula = "dx = dout"

    def emit(self, x):
        return "xp.copy(%s)" % x


class StopGradient(Primitive):
    """Identity whose output carries no gradient."""
    view = True
    differentiable = False
    formula = "no gradient (blocks it)"

    def emit(self, x):
        return x


class Depend(Primitive):
    """Returns ``value``; ``expr`` is only an ordering dependency."""
    view = True
    taylor = "nested"   # not classified for Taylor mode
    formula = "dvalue = dout, no gradient to expr"

    def emit(self, value, expr):
        return value


# --------------------------------------------------------- AD helpers
class Unbroadcast(Primitive):
    """Sum ``dx`` down to the shape of ``x``: the adjoint of broadcasting."""
    linearity = "linear"
    output_shape_of = 1
    shape_only_inputs = (1,)
    formula = "d_dx = broadcast_like(dout, dx)"

    def emit(self, dx, x):
        return "rt.unbroadcast(%s, %s)" % (dx, x)


class BroadcastLike(Primitive):
    """Broadcast ``a`` to the shape of ``x``: the adjoint of Unbroadcast."""
    linearity = "linear"
    output_shape_of = 1
    shape_only_inputs = (1,)
    formula = "da = unbroadcast(dout, a)"

    def emit(self, a, x):
        return "rt.broadcast_like(%s, %s)" % (a, x)


class ExpandReduced(Primitive):
    """Reinsert the axes a reduction over ``axis`` removed (adjoint helper)."""
    linearity = "linear"
    shape_only_inputs = (1,)
    formula = "d_dout = reshape(dout, shape(d))"

    def __init__(self, keep_dims=False):
        super().__init__(keep_dims=bool(keep_dims))

    def emit(self, dout, x, axis):
        if self.keep_dims:
            return dout
        return "rt.expand_reduced(%s, %s, %s, False)" % (dout, x, axis)


class ReducedCount(Primitive):
    """How many elements of ``x`` each value of a reduction over ``axis`` covers."""
    small_result = True
    shape_only_inputs = (0,)
    differentiable = False
    formula = _NO_GRAD

    def emit(self, x, axis):
        return "rt.reduced_count(%s, %s)" % (x, axis)


class CheckSens(Primitive):
    """Identity on ``sens`` that first checks it has the shape of ``out``."""
    taylor = "nested"   # reverse mode's seed check, not classified for Taylor mode
    output_shape_of = 0
    formula = "dsens = dout"

    def emit(self, sens, out, what):
        return "rt.check_sens(%s, %s, %s)" % (sens, out, what)


__all__ = [_n for _n, _v in list(globals().items())
           if isinstance(_v, type) and issubclass(_v, Primitive) and _v is not Primitive
           and not _n.startswith("_")]
