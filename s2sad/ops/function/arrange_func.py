"""Building, joining, splitting and rearranging arrays as NumPy does.

``np.array([a, b, 1.0])`` of traced values stacks them; the stacking and
splitting functions whose axis depends on the runtime rank, ``np.roll``,
``np.pad``'s copying modes and ``sliding_window_view`` are one ``Rearrange``
each; ``np.sort`` and ``np.partition`` read ``x`` along a permutation that
carries no gradient (stable: tied values keep their order, so each gets the
cotangent of the position it lands on).  Like every functional form these
are inlined, so they only branch on what is known while compiling.
"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..operations import arrange_ops as R
from ..operations import array_ops as A
from ...runtime import constexpr
from ...runtime.rt_array import array_fail
from .array_func import _np_pad, _np_split

_stack = A.Stack(0)
_identity = A.Identity()
_cast = A.Cast()
_cast_like = A.CastLike()
_broadcast_like = A.BroadcastLike()
_zeros_like = A.ZerosLike()
_ones_like = A.OnesLike()
_select = A.Select()
_setitem = A.SetItem()
_expand_last = A.ExpandDims()
_ravel_shape = (-1,)
_reshape = A.Reshape()

#: np.pad modes that only copy elements (the adjoint sums them back)
_COPYING_PADS = ("edge", "reflect", "symmetric", "wrap")


# ----------------------------------------------------------------- building
def _row(items):
    """A list of values (each a number or an array of one shape) stacked into one array."""
    parts = ()
    for v in items:
        if isinstance(v, (list, tuple)):
            v = _row(v)
        parts = parts + (v,)
    return _stack(parts)


def _np_array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    if ndmin != 0:
        array_fail("np.array: 'ndmin' is not supported by s2sad; reshape the result")
    out = _row(object) if isinstance(object, (list, tuple)) else _identity(object)
    return out if dtype is None else _cast(out, dtype)


def _np_asarray(a, dtype=None, order=None, **kwargs):
    # an array is returned as is: NumPy's asarray does not copy it either
    if dtype is None:
        return array_of(a)
    return _cast(array_of(a), dtype)


def array_of(a):
    """``a``, or the array NumPy makes of a list or tuple of arrays and numbers.

    No local name holds ``a`` here: inlined, a name given to the user's value
    would rename it in the generated code."""
    if isinstance(a, (list, tuple)):
        return _row(a)
    return a


def _np_copy(a, order="K", subok=False):
    return _row(a) if isinstance(a, (list, tuple)) else _identity(a)


def _like(a, value, dtype):
    out = _broadcast_like(_cast_like(value, a), a)
    return out if dtype is None else _cast(out, dtype)


def _np_full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    if shape is not None:
        array_fail("np.full_like: 'shape' is not supported by s2sad; use np.full")
    return _like(a, fill_value, dtype)


def _np_zeros_like(a, dtype=None, order="K", subok=True, shape=None):
    if shape is not None:
        array_fail("np.zeros_like: 'shape' is not supported by s2sad; use np.zeros")
    return _zeros_like(a) if dtype is None else _cast(_zeros_like(a), dtype)


def _np_ones_like(a, dtype=None, order="K", subok=True, shape=None):
    if shape is not None:
        array_fail("np.ones_like: 'shape' is not supported by s2sad; use np.ones")
    return _ones_like(a) if dtype is None else _cast(_ones_like(a), dtype)


# ------------------------------------------------------- joining, splitting
def _stacking(tup, mode, dtype=None):
    """NumPy's ``mode`` stack of a sequence, or of a single array's rows."""
    if isinstance(tup, (list, tuple)):
        out = A.Concat(mode)(tup)
    else:
        out = R.Rearrange(mode)(tup)
    return out if dtype is None else _cast(out, dtype)


def _np_vstack(tup, *, dtype=None, casting="same_kind"):
    return _stacking(tup, "vstack", dtype)


def _np_hstack(tup, *, dtype=None, casting="same_kind"):
    return _stacking(tup, "hstack", dtype)


def _np_dstack(tup):
    return _stacking(tup, "dstack")


def _np_column_stack(tup):
    return _stacking(tup, "column_stack")


@constexpr
def _num_pieces(indices_or_sections):
    if isinstance(indices_or_sections, (int, np.integer)):
        return int(indices_or_sections)
    return len(indices_or_sections) + 1


def _np_array_split(ary, indices_or_sections, axis=0):
    n = _num_pieces(indices_or_sections)
    out = R.Rearrange("array_split", n, indices_or_sections=indices_or_sections, axis=axis)(ary)
    return (out,) if n == 1 else out   # NumPy's list of one piece stays a sequence


def _np_vsplit(ary, indices_or_sections):
    return _np_split(ary, indices_or_sections, 0)


def _np_hsplit(ary, indices_or_sections):
    n = _num_pieces(indices_or_sections)
    out = R.Rearrange("hsplit", n, indices_or_sections=indices_or_sections)(ary)
    return (out,) if n == 1 else out


def _np_dsplit(ary, indices_or_sections):
    return _np_split(ary, indices_or_sections, 2)


@constexpr
def _index_trick_piece(item, name):
    """A known piece of ``np.r_[...]``/``np.c_[...]``: a slice is its range now; a
    directive string is refused."""
    if isinstance(item, str):
        array_fail("np.%s: the directive %r is not supported by s2sad; concatenate the "
                   "pieces with np.concatenate or np.stack" % (name, item))
    return np.r_[item] if isinstance(item, slice) else item


def _index_trick(index, name):
    items = index if isinstance(index, tuple) else (index,)
    parts = ()
    for item in items:
        if isinstance(item, (slice, str)):
            item = _index_trick_piece(item, name)
        parts = parts + (item,)
    return A.Concat(name)(parts)


def _np_r(index):
    return _index_trick(index, "r_")


def _np_c(index):
    return _index_trick(index, "c_")


# --------------------------------------------------------------- rearranging
def _sorted_by(a, axis, kth):
    if axis is None:
        a = _reshape(a, _ravel_shape)
        axis = 0
    return R.TakeAlongAxis(axis)(a, R.SortIndex(axis, kth)(a))


def _np_sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        array_fail("np.sort: 'order' (structured arrays) is not supported by s2sad")
    return _sorted_by(a, axis, None)


def _np_partition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        array_fail("np.partition: 'order' (structured arrays) is not supported by s2sad")
    return _sorted_by(a, axis, kth)


def _np_argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """A stable order always: tied values keep their order (no gradient flows)."""
    if order is not None:
        array_fail("np.argsort: 'order' (structured arrays) is not supported by s2sad")
    if axis is None:
        return R.SortIndex(0)(_reshape(a, _ravel_shape))
    return R.SortIndex(axis)(a)


def _np_argpartition(a, kth, axis=-1, kind="introselect", order=None):
    if axis is None:
        return R.SortIndex(0, kth)(_reshape(a, _ravel_shape))
    return R.SortIndex(axis, kth)(a)


def _np_take_along_axis(arr, indices, axis=-1):
    if axis is None:
        return R.TakeAlongAxis(0)(_reshape(arr, _ravel_shape), indices)
    return R.TakeAlongAxis(axis)(arr, indices)


def _np_roll(a, shift, axis=None):
    return R.Rearrange("roll", shift=shift, axis=axis)(a)


def _np_rollaxis(a, axis, start=0):
    return R.Rearrange("rollaxis", axis=axis, start=start)(a)


def _np_flipud(m):
    return A.ReverseV2(0)(m)


def _np_fliplr(m):
    return A.ReverseV2(1)(m)


def _np_rot90(m, k=1, axes=(0, 1)):
    k = k % 4
    a0, a1 = axes
    if k == 0:
        return m
    if k == 2:
        return A.ReverseV2((a0, a1))(m)
    if k == 1:
        return A.SwapAxes(a0, a1)(A.ReverseV2(a1)(m))
    return A.ReverseV2(a1)(A.SwapAxes(a0, a1)(m))


def _np_repeat(a, repeats, axis=None):
    if isinstance(repeats, int) and repeats > 0:
        return A.Repeat(repeats, axis)(a)
    return R.Rearrange("repeat", repeats=repeats, axis=axis)(a)


def _method_repeat(x, repeats, axis=None):
    return _np_repeat(x, repeats, axis)


def _np_pad_modes(array, pad_width, mode="constant", constant_values=0, reflect_type="even"):
    if mode == "constant":
        return _np_pad(array, pad_width, "constant", constant_values)
    if mode not in _COPYING_PADS:
        array_fail("np.pad: mode=%r is not supported by s2sad (supported: 'constant', 'edge', "
                   "'reflect', 'symmetric', 'wrap')" % (mode,))
    if reflect_type != "even":
        array_fail("np.pad: reflect_type='odd' is not supported by s2sad; use the default "
                   "'even'")
    return R.Rearrange("pad", pad_width=pad_width, mode=mode)(array)


def _np_sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    if writeable:
        array_fail("sliding_window_view: writeable=True is not supported by s2sad (windows "
                   "overlap, so writing through them is not differentiable)")
    return R.Rearrange("sliding_window_view", window_shape=window_shape, axis=axis)(x)


def _np_select(condlist, choicelist, default=0):
    conds = ()
    for c in condlist:
        conds = (c,) + conds
    choices = ()
    for v in choicelist:
        choices = (v,) + choices
    out = default
    k = 0
    for c in conds:
        # the first true condition wins, so the last one is applied first
        out = _select(c, choices[k], out)
        k = k + 1
    return out


@constexpr
def _linspace_steps(num, endpoint):
    """The step numbers ``0, 1, ..., num - 1`` and what the span is divided by."""
    div = (num - 1) if endpoint else num
    return np.arange(num, dtype=float), div


def _np_linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    # NumPy's own arithmetic, along a last axis moved into place at the end
    steps, div = _linspace_steps(num, endpoint)
    step = (stop - start) / div if div > 0 else (stop - start) * 1.0
    # the step numbers in the step's dtype: float32 ends give float32 values, as in NumPy
    y = _expand_last(step, -1) * _cast_like(steps, step) + _expand_last(start, -1)
    if endpoint and num > 1:
        y = _setitem(y, (Ellipsis, -1), stop)
    y = A.MoveAxis(-1, axis)(y)
    if dtype is not None:
        y = _cast(y, dtype)
    if retstep:
        return y, step
    return y


#: NumPy functions met in differentiated code -> the functional form to inline
NUMPY = {
    np.array: _np_array, np.asarray: _np_asarray, np.copy: _np_copy,
    np.full_like: _np_full_like, np.zeros_like: _np_zeros_like, np.ones_like: _np_ones_like,
    np.vstack: _np_vstack, np.hstack: _np_hstack, np.dstack: _np_dstack,
    np.column_stack: _np_column_stack, np.array_split: _np_array_split,
    np.vsplit: _np_vsplit, np.hsplit: _np_hsplit, np.dsplit: _np_dsplit,
    np.sort: _np_sort, np.partition: _np_partition, np.take_along_axis: _np_take_along_axis,
    np.argsort: _np_argsort, np.argpartition: _np_argpartition,
    np.roll: _np_roll, np.rollaxis: _np_rollaxis, np.flipud: _np_flipud, np.fliplr: _np_fliplr,
    np.rot90: _np_rot90, np.repeat: _np_repeat, np.pad: _np_pad_modes,
    sliding_window_view: _np_sliding_window_view, np.select: _np_select,
    np.linspace: _np_linspace,
}
if "row_stack" in np.__dict__:      # removed from NumPy's namespace in 2.x releases
    NUMPY[np.__dict__["row_stack"]] = _np_vstack

#: NumPy objects indexed with runtime values in differentiated code (``np.r_[x, 0.0]``)
#: -> a function of the index
NUMPY_INDEXED = {np.r_: _np_r, np.c_: _np_c}

#: Tensor/ndarray methods met in differentiated code -> function(self, ...)
TENSOR_METHODS = {"repeat": _method_repeat}

__all__ = []
