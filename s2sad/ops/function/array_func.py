"""Functional forms of array primitives (``ops.reshape``, ``ops.concat``, ...).

These are inlined by the frontend, so they only use what it supports: Python
logic on compile-time constants (axes, sizes, flags), loops over tuples known
while compiling, and primitives.  Anything that depends on a runtime shape is
done inside a primitive, because compiled code is shape-polymorphic; a
misuse is reported through ``array_fail`` (inlined code cannot ``raise``).
"""
import builtins

import numpy as np

from ..operations import array_ops as A
from ..operations import math_ops as M
from ... import dtype as mstype
from ...tensor import Tensor, tensor
from ...runtime.rt_array import array_axis_index, array_fail, array_flat_padding, \
    array_split_sections
from ...runtime import constexpr

_reshape = A.Reshape()
_transpose = A.Transpose()
_transpose_t = A.TransposeT()
_zeros_like = A.ZerosLike()
_ones_like = A.OnesLike()
_shape = A.Shape()
_range = A.Range()
_stop_gradient = A.StopGradient()
_depend = A.Depend()
_expand_dims = A.ExpandDims()
_getitem = A.GetItem()
_setitem = A.SetItem()
_tile = A.Tile()
_slice = A.Slice()
_gather = A.Gather()
_gather_nd = A.GatherNd()
_scatter_nd = A.ScatterNd()
_tensor_scatter_add = A.TensorScatterAdd()
_tensor_scatter_update = A.TensorScatterUpdate()
_select = A.Select()
_cast = A.Cast()
_fill = A.Fill()
_zeros = A.Zeros()
_ones = A.Ones()
_size = A.Size()
_rank = A.Rank()
_identity = A.Identity()
_maximum = M.Maximum()
_minimum = M.Minimum()
_py_slice = builtins.slice


@constexpr
def _section_slices(sizes=None, points=None):
    """Slices of consecutive sections, from section sizes or from NumPy's split points."""
    out = []
    if sizes is not None:
        start = 0
        for s in sizes:
            out.append(_py_slice(start, start + s))
            start += s
        return tuple(out)
    bounds = [0] + list(points) + [None]
    return tuple(_py_slice(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1))


@constexpr
def _np_pad_pairs(pad_width):
    """NumPy's ``pad_width`` as ``((before, after), ...)`` plus whether one pair pads every dim."""
    if isinstance(pad_width, (int, np.integer)):
        return ((int(pad_width), int(pad_width)),), True
    pw = tuple(pad_width)
    if all(isinstance(p, (int, np.integer)) for p in pw):
        if len(pw) == 1:
            return ((int(pw[0]), int(pw[0])),), True
        if len(pw) == 2:
            return ((int(pw[0]), int(pw[1])),), True
        array_fail("np.pad: 'pad_width' of ints must have 1 or 2 entries, but got %r" % (pw,))
    pairs = tuple(tuple(int(v) for v in (p if len(p) == 2 else (p[0], p[0]))) for p in pw)
    return pairs, len(pairs) == 1


@constexpr
def _tuple_arg(values):
    """``f(x, 2, 3)`` and ``f(x, (2, 3))`` alike: the trailing values as one tuple."""
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        return tuple(values[0])
    return tuple(values)


# ------------------------------------------------------------------ layout
def reshape(x, shape):
    return _reshape(x, shape)


def transpose(x, perm):
    return _transpose(x, perm)


def zeros_like(x):
    return _zeros_like(x)


def ones_like(x):
    return _ones_like(x)


def shape(x):
    return _shape(x)


def stop_gradient(x):
    """The value of ``x``, through which no gradient flows."""
    return _stop_gradient(x)


def depend(value, expr):
    """``value``, evaluated after ``expr`` (only an ordering dependency)."""
    return _depend(value, expr)


def expand_dims(input_x, axis):
    return _expand_dims(input_x, axis)


def squeeze(input, axis=None):
    """Remove size-1 axes (``None``: all of them)."""
    return A.Squeeze(() if axis is None else axis)(input)


def flatten(input, order="C", *, start_dim=1, end_dim=-1):
    """Merge dims ``start_dim..end_dim``; the default keeps dim 0 (MindSpore's Flatten)."""
    if order != "C":
        array_fail("For 'flatten', only order='C' is supported by s2sad")
    return A.Flatten(start_dim, end_dim)(input)


def ravel(input):
    return _reshape(input, (-1,))


def swapaxes(input, axis0, axis1):
    return A.SwapAxes(axis0, axis1)(input)


def moveaxis(x, source, destination):
    return A.MoveAxis(source, destination)(x)


def broadcast_to(input, shape):
    return A.BroadcastTo(shape)(input)


def tile(input, dims):
    return _tile(input, dims)


def repeat_elements(x, rep, axis=0):
    return A.Repeat(rep, axis)(x)


def flip(input, dims):
    return A.ReverseV2(dims)(input)


def reverse(x, axis):
    return A.ReverseV2(axis)(x)


def identity(x):
    return _identity(x)


# ------------------------------------------------------- joining, splitting
def concat(tensors, axis=0):
    return A.Concat(axis)(tensors)


def cat(tensors, axis=0):
    return A.Concat(axis)(tensors)


def stack(tensors, axis=0):
    return A.Stack(axis)(tensors)


def unstack(input_x, axis=0, num=None):
    """The slices along ``axis`` as a tuple; give ``num`` inside differentiated code."""
    out = A.Unstack(axis, num)(input_x)
    if num == 1:
        return (out,)
    return out


def _sections(x, slices, axis):
    out = ()
    for s in slices:
        out = out + (_getitem(x, array_axis_index(axis, s)),)
    return out


def split(tensor, split_size_or_sections, axis=0):
    """Chunks of ``split_size_or_sections`` (an int size, or a tuple of sizes) along ``axis``.

    An int size needs the input's shape, so inside a differentiated function
    pass the tuple of section sizes.
    """
    sizes = split_size_or_sections
    if isinstance(sizes, int):
        sizes = array_split_sections(_shape(tensor), sizes, axis)
    return _sections(tensor, _section_slices(sizes, None), axis)


# ------------------------------------------------------------------- slicing
def slice(input_x, begin, size):
    return _slice(input_x, begin, size)


def strided_slice(input_x, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0):
    op = A.StridedSlice(begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)
    return op(input_x, begin, end, strides)


def gather(input_params, input_indices, axis, batch_dims=0):
    return A.Gather(batch_dims)(input_params, input_indices, axis)


def gather_nd(input_x, indices):
    return _gather_nd(input_x, indices)


def scatter_nd(indices, updates, shape):
    return _scatter_nd(indices, updates, shape)


def tensor_scatter_add(input_x, indices, updates):
    return _tensor_scatter_add(input_x, indices, updates)


def tensor_scatter_update(input_x, indices, updates):
    return _tensor_scatter_update(input_x, indices, updates)


def setitem(x, index, value):
    """A copy of ``x`` with ``value`` written at ``index`` (functional ``x[index] = value``)."""
    return _setitem(x, index, value)


def select(cond, x, y):
    return _select(cond, x, y)


def where(condition, x, y):
    return _select(condition, x, y)


def clip_by_value(x, clip_value_min=None, clip_value_max=None):
    """``x`` limited to ``[clip_value_min, clip_value_max]`` (either bound may be ``None``)."""
    out = x
    if clip_value_min is not None:
        out = _maximum(out, clip_value_min)
    if clip_value_max is not None:
        out = _minimum(out, clip_value_max)
    return out


def clamp(input, min=None, max=None):
    return clip_by_value(input, min, max)


def pad(input_x, padding, mode="constant", value=None):
    """Constant padding; ``padding`` lists (before, after) from the last dim backwards."""
    if mode != "constant":
        array_fail("For 'pad', only mode='constant' is supported by s2sad, but got %r" % mode)
    return A.Pad(array_flat_padding(padding), 0 if value is None else value)(input_x)


def one_hot(indices, depth, on_value=1, off_value=0, axis=-1):
    return A.OneHot(axis)(indices, depth, on_value, off_value)


# ----------------------------------------------------------- dtypes, creation
def cast(input, dtype):
    return _cast(input, dtype)


def fill(type, shape, value):
    return _fill(type, shape, value)


def zeros(size, dtype=None):
    return _zeros(size, mstype.float32 if dtype is None else dtype)


def ones(shape, dtype=None):
    return _ones(shape, mstype.float32 if dtype is None else dtype)


def eye(n, m=None, dtype=None):
    return A.Eye()(n, n if m is None else m, mstype.float32 if dtype is None else dtype)


def size(input_x):
    return _size(input_x)


def rank(input_x):
    return _rank(input_x)


# --------------------------------------------------------------- NumPy forms
def _np_reshape(a, newshape=None, order="C", *, shape=None):
    return reshape(a, newshape if shape is None else shape)


def _np_transpose(a, axes=None):
    return _transpose_t(a) if axes is None else transpose(a, tuple(axes))


def _np_expand_dims(a, axis):
    return _expand_dims(a, axis)


def _np_squeeze(a, axis=None):
    return squeeze(a, axis)


def _np_concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if axis is None:
        flat = ()
        for a in arrays:
            flat = flat + (ravel(a),)
        return A.Concat(0)(flat)
    return A.Concat(axis)(arrays)


def _np_stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    return A.Stack(axis)(arrays)


def _np_split(ary, indices_or_sections, axis=0):
    """``np.split``: an int is a number of equal parts, a list the split points."""
    if isinstance(indices_or_sections, int):
        out = A.Split(axis, indices_or_sections)(ary)
        if indices_or_sections == 1:
            return (out,)
        return out
    return _sections(ary, _section_slices(None, indices_or_sections), axis)


def _np_tile(A_, reps):
    if isinstance(reps, int):
        return _tile(A_, (reps,))
    return _tile(A_, tuple(reps))


def _np_broadcast_to(array, shape, subok=False):
    return A.BroadcastTo(shape)(array)


def _np_where(condition, x=None, y=None):
    if x is None or y is None:
        array_fail("np.where with one argument gives indices of runtime size; s2sad "
                   "supports the three-argument form np.where(condition, x, y)")
    return _select(condition, x, y)


def _np_take(a, indices, axis=None, out=None, mode="raise"):
    if axis is None:
        return _gather(ravel(a), indices, 0)
    return _gather(a, indices, axis)


def _np_flip(m, axis=None):
    return A.ReverseV2(axis)(m)


def _np_pad(array, pad_width, mode="constant", constant_values=0):
    if mode != "constant":
        array_fail("np.pad: only mode='constant' is supported by s2sad, but got %r" % mode)
    pairs, everywhere = _np_pad_pairs(pad_width)
    return A.Pad(pairs, constant_values, everywhere)(array)


def _np_ravel(a, order="C"):
    return ravel(a)


def _np_swapaxes(a, axis1, axis2):
    return A.SwapAxes(axis1, axis2)(a)


def _np_moveaxis(a, source, destination):
    return A.MoveAxis(source, destination)(a)


def _np_zeros(shape, dtype=float, order="C", *, like=None):
    return _zeros(shape, dtype)


def _np_ones(shape, dtype=None, order="C", *, like=None):
    return _ones(shape, float if dtype is None else dtype)


def _np_full(shape, fill_value, dtype=None, order="C", *, like=None):
    return _fill(dtype, shape, fill_value)


def arange(start=0, end=None, step=1, dtype=None):
    """``ops.arange``: ``[start, end)`` in steps of ``step`` (``arange(n)`` counts from 0)."""
    if end is None:
        return _range(0, start, step)
    return _range(start, end, step)


def _np_arange(start, stop=None, step=1, dtype=None, *, like=None):
    return arange(start, stop, step)


def _np_eye(N, M=None, k=0, dtype=float, order="C", *, like=None):
    return A.Eye(k)(N, N if M is None else M, dtype)


def _np_clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    lo = a_min if min is None else min
    hi = a_max if max is None else max
    return clip_by_value(a, lo, hi)


def _np_size(a, axis=None):
    if axis is not None:
        array_fail("np.size with an axis is not supported by s2sad; use x.shape[axis]")
    return _size(a)


def _np_ndim(a):
    return _rank(a)


# ------------------------------------------------------------ Tensor methods
def _method_reshape(x, *shape):
    # not _tuple_arg: the sizes may be known only at run time (``x.reshape(b, -1)``)
    return reshape(x, shape[0] if len(shape) == 1 else shape)


def _method_transpose(x, *axes):
    if not axes:
        return _transpose_t(x)
    return transpose(x, _tuple_arg(axes))


def _property_t(x):
    return _transpose_t(x)


def _method_flatten(x, order="C", *, start_dim=0, end_dim=-1):
    # ndarray.flatten / Tensor.flatten merge every dim by default, into a new array
    if order != "C":
        array_fail("For 'flatten', only order='C' is supported by s2sad")
    return A.Flatten(start_dim, end_dim, copy=True)(x)


def _method_ravel(x, order="C"):
    return ravel(x)


def _method_astype(x, dtype, copy=True):
    return _cast(x, dtype)


def _method_tile(x, *reps):
    return _tile(x, _tuple_arg(reps))


def _method_broadcast_to(x, shape):
    return A.BroadcastTo(shape)(x)


def _method_clip(x, min=None, max=None):
    return clip_by_value(x, min, max)


def _method_take(x, indices, axis=None, mode="raise"):
    return _np_take(x, indices, axis)


def _method_flip(x, dims=None, axis=None):
    return A.ReverseV2(axis if dims is None else dims)(x)


def _method_gather(x, input_indices, axis, batch_dims=0):
    return gather(x, input_indices, axis, batch_dims)


def _method_expand_dims(x, axis):
    return _expand_dims(x, axis)


def _method_squeeze(x, axis=None):
    return squeeze(x, axis)


def _method_swapaxes(x, axis0, axis1):
    return A.SwapAxes(axis0, axis1)(x)


def _method_moveaxis(x, source, destination):
    return A.MoveAxis(source, destination)(x)


def _method_masked_fill(x, mask, value):
    """``Tensor.masked_fill``: ``value`` where ``mask`` is true, else ``x``, in x's dtype."""
    return _select(mask, A.CastLike()(value, x), x)


def _method_where(x, condition, y):
    """``Tensor.where``: ``x`` where ``condition`` is true, else ``y``."""
    return _select(condition, x, y)


def _method_to(x, dtype):
    return _cast(x, dtype)


def _method_copy(x, order="C"):
    return A.Identity()(x)


def _np_copy(a, order="K", subok=False):
    return A.Identity()(a)


def _method_init_data(x, slice_index=None, shape=None, opt_shard_group=None):
    """``Tensor.init_data``: data is never deferred here, so the tensor itself."""
    return x


#: NumPy functions met in differentiated code -> the functional form to inline
NUMPY = {
    np.reshape: _np_reshape, np.transpose: _np_transpose, np.shape: shape,
    np.expand_dims: _np_expand_dims, np.squeeze: _np_squeeze, np.concatenate: _np_concatenate, np.stack: _np_stack,
    np.split: _np_split, np.tile: _np_tile,
    np.broadcast_to: _np_broadcast_to, np.where: _np_where, np.take: _np_take,
    np.flip: _np_flip, np.ravel: _np_ravel, np.swapaxes: _np_swapaxes,
    np.moveaxis: _np_moveaxis, np.zeros: _np_zeros, np.ones: _np_ones,
    np.full: _np_full, np.eye: _np_eye, np.arange: _np_arange, np.clip: _np_clip, np.size: _np_size,
    np.ndim: _np_ndim, np.copy: _np_copy,
}
if hasattr(np, "concat"):
    NUMPY[np.concat] = _np_concatenate

#: Tensor/ndarray methods met in differentiated code -> function(self, ...)
TENSOR_METHODS = {
    "reshape": _method_reshape, "transpose": _method_transpose,
    "expand_dims": _method_expand_dims, "squeeze": _method_squeeze,
    "flatten": _method_flatten, "ravel": _method_ravel, "astype": _method_astype,
    "swapaxes": _method_swapaxes, "moveaxis": _method_moveaxis, "tile": _method_tile,
    "broadcast_to": _method_broadcast_to, "clip": _method_clip, "take": _method_take,
    "flip": _method_flip, "gather": _method_gather,
    "view": _method_reshape, "masked_fill": _method_masked_fill, "where": _method_where,
    "to": _method_to, "copy": _method_copy, "init_data": _method_init_data,
}

#: Tensor/ndarray attributes -> function(self)
TENSOR_PROPERTIES = {"shape": shape, "T": _property_t, "ndim": rank, "size": size}


def _tensor_at_run_time(input_data=None, dtype=None):
    """``Tensor(x, dtype)`` / ``s2sad.tensor(x)`` on a value known only at run time
    (MindSpore's graph mode allows it): ``x`` itself, cast when a dtype is given."""
    return input_data if dtype is None else cast(input_data, dtype)


#: callables applied to runtime values -> a replacement over primitives
BUILTINS = {Tensor: _tensor_at_run_time, tensor: _tensor_at_run_time}

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v)
           and getattr(_v, "__module__", None) == __name__]
