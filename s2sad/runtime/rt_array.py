"""Runtime helpers (``rt.<name>`` in generated code) for array primitives.

Generated code is shape-polymorphic, so whatever depends on a runtime shape
(where a concatenation splits back, how a tile folds up) is computed here, at
run time.  Helpers marked ``__s2sad_constexpr__`` only do index arithmetic on
compile-time constants: bprop rules call them while compiling, and generated
code may call the very same function at run time, so both agree.
"""
import numpy as np

__all__ = [
    "array_broadcast_to", "array_flatten", "array_split", "array_split_like", "array_unstack",
    "array_tile_grad", "array_slice_index", "array_strided_slice_index", "array_axis_index",
    "array_gather_grad", "array_gather_nd", "array_scatter_nd", "array_tensor_scatter_add",
    "array_tensor_scatter_update", "array_np_dtype", "array_is_float_dtype", "array_float_flag", "array_cast",
    "array_cast_like", "array_fill", "array_zeros", "array_ones", "array_eye",
    "array_pad_width", "array_pad", "array_pad_crop", "array_one_hot", "array_setitem",
    "array_setitem_in_place", "array_setitem_value_grad",
    "array_repeat_grad", "array_fail", "array_flat_padding", "array_split_sections",
    "accumulate_at", "array_unpack",
]


def _constexpr(fn):
    # same mark as runtime.constexpr; set here so this module never imports runtime
    fn.__s2sad_constexpr__ = True
    return fn


def _axes_of(axis):
    return (axis,) if isinstance(axis, int) else tuple(axis)


def array_broadcast_to(x, shape):
    """``np.broadcast_to`` where a -1 in ``shape`` keeps x's size in that (aligned) dim."""
    shape = _axes_of(shape)
    xs = np.shape(x)
    lead = len(shape) - len(xs)
    if -1 in shape:
        shape = tuple(xs[i - lead] if s == -1 else s for i, s in enumerate(shape))
    if xs == shape:
        return x
    return np.broadcast_to(x, shape)


def array_flatten(x, start_dim=1, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` (inclusive) into one; a 0-d input becomes 1-d."""
    return np.reshape(x, flattened_shape(np.shape(x), start_dim, end_dim))


def flattened_shape(shape, start_dim, end_dim):
    """The shape ``array_flatten`` gives an array of ``shape`` (any library's)."""
    if not shape:
        return (1,)
    nd = len(shape)
    s = start_dim % nd
    e = end_dim % nd
    if s > e:
        raise ValueError("For 'Flatten', 'start_dim' (%d) must not come after 'end_dim' (%d)"
                         % (start_dim, end_dim))
    return tuple(shape[:s]) + (-1,) + tuple(shape[e + 1:])


def array_split(x, num, axis):
    """``x`` cut into ``num`` equal parts along ``axis``, as a tuple."""
    n = np.shape(x)[axis]
    if n % num:
        raise ValueError("For 'Split', the size of axis %d (%d) must be divisible by "
                         "output_num (%d)" % (axis, n, num))
    return tuple(np.split(x, num, axis=axis))


def _stack_layout(likes, axis):
    """The arrays a concatenation actually joined, and along which axis."""
    if axis == "hstack":
        arrs = [np.atleast_1d(a) for a in likes]
        return arrs, (0 if arrs[0].ndim == 1 else 1)
    if axis == "vstack":
        return [np.atleast_2d(a) for a in likes], 0
    if axis == "dstack":
        return [np.atleast_3d(a) for a in likes], 2
    if axis in ("column_stack", "c_"):
        columns = [np.reshape(a, (-1, 1)) if np.ndim(a) < 2 else a for a in likes]
        return columns, (1 if axis == "column_stack" else -1)
    if axis == "r_":
        return [np.atleast_1d(a) for a in likes], 0
    return likes, axis


def array_split_like(x, likes, axis):
    """Split ``x`` back into pieces shaped like ``likes`` (the adjoint of concatenation).

    ``axis`` is an int, or one of NumPy's stacking functions (``"hstack"``,
    ``"vstack"``, ``"dstack"``, ``"column_stack"``) or index tricks (``"r_"``,
    ``"c_"``), whose axis depends on the runtime rank.
    """
    arrs, ax = _stack_layout(likes, axis)
    bounds = np.cumsum([np.shape(a)[ax] for a in arrs])[:-1]
    pieces = np.split(x, bounds, axis=ax)
    return tuple(p if np.shape(p) == np.shape(like) else np.reshape(p, np.shape(like))
                 for p, like in zip(pieces, likes))


def array_unstack(x, axis, num):
    """The slices of ``x`` along ``axis``, as a tuple (checks ``num`` if given)."""
    n = np.shape(x)[axis]
    if num is not None and n != num:
        raise ValueError("For 'Unstack', the size of axis %d is %d, but 'num' is %d"
                         % (axis, n, num))
    return tuple(np.moveaxis(np.asarray(x), axis, 0))


def array_tile_grad(dout, x, multiples):
    """Sum ``dout`` (x tiled by ``multiples``) over its copies: the adjoint of Tile."""
    shape = tuple(np.shape(x))
    reps = tuple(multiples)
    nd = max(len(shape), len(reps))
    shape_p = (1,) * (nd - len(shape)) + shape
    reps_p = (1,) * (nd - len(reps)) + reps
    inter = []
    for r, s in zip(reps_p, shape_p):
        inter += [r, s]
    g = np.sum(np.reshape(dout, inter), axis=tuple(range(0, 2 * nd, 2)))
    return np.reshape(g, shape)


@_constexpr
def array_slice_index(begin, size):
    """The NumPy index of MindSpore's ``Slice(begin, size)`` (size -1: to the end)."""
    begin = _axes_of(begin)
    size = _axes_of(size)
    if len(begin) != len(size):
        raise ValueError("For 'Slice', 'begin' and 'size' must have the same length, but got "
                         "%d and %d" % (len(begin), len(size)))
    return tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))


@_constexpr
def array_strided_slice_index(begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0,
                              new_axis_mask=0, shrink_axis_mask=0):
    """The NumPy index of MindSpore's ``StridedSlice`` with its bit masks.

    Bit ``i`` of a mask refers to entry ``i`` of begin/end/strides:
    begin/end masks ignore that bound, the ellipsis mask puts ``...`` there,
    the new-axis mask a new axis, the shrink mask takes the single index
    ``begin[i]`` and drops the dimension.
    """
    begin, end, strides = _axes_of(begin), _axes_of(end), _axes_of(strides)
    if not len(begin) == len(end) == len(strides):
        raise ValueError("For 'StridedSlice', 'begin', 'end' and 'strides' must have the same "
                         "length, but got %d, %d and %d" % (len(begin), len(end), len(strides)))
    index = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if s == 0:
            raise ValueError("For 'StridedSlice', 'strides' must not contain 0")
        if ellipsis_mask & bit:
            index.append(Ellipsis)
        elif new_axis_mask & bit:
            index.append(None)
        elif shrink_axis_mask & bit:
            index.append(b)
        else:
            index.append(slice(None if begin_mask & bit else b, None if end_mask & bit else e,
                               s))
    return tuple(index)


@_constexpr
def array_axis_index(axis, item):
    """An index applying ``item`` along ``axis`` (negative counts from the end) only."""
    if axis >= 0:
        return (slice(None),) * axis + (item,)
    return (Ellipsis, item) + (slice(None),) * (-axis - 1)


def array_gather_grad(dout, params, indices, axis):
    """Zeros like ``params`` with ``dout`` added at ``indices`` along ``axis``."""
    out = np.zeros(np.shape(params), dtype=np.result_type(dout))
    ax = axis % np.ndim(params)
    np.add.at(out, (slice(None),) * ax + (np.asarray(indices),), dout)
    return out


def _nd_index(indices):
    idx = np.asarray(indices)
    if not np.issubdtype(idx.dtype, np.integer):
        raise TypeError("indices must be integers, but got %s" % idx.dtype)
    return tuple(np.moveaxis(idx, -1, 0))


def array_gather_nd(x, indices):
    """``x`` at the index tuples in the last axis of ``indices`` (MindSpore's GatherNd)."""
    return np.asarray(x)[_nd_index(indices)]


def array_scatter_nd(indices, updates, shape):
    """Zeros of ``shape`` with ``updates`` added at ``indices`` (duplicates add up)."""
    out = np.zeros(tuple(shape), dtype=np.result_type(updates))
    np.add.at(out, _nd_index(indices), updates)
    return out


def array_tensor_scatter_add(x, indices, updates):
    """A copy of ``x`` with ``updates`` added at ``indices`` (duplicates add up)."""
    out = np.array(x, copy=True)
    np.add.at(out, _nd_index(indices), updates)
    return out


def array_tensor_scatter_update(x, indices, updates):
    """A copy of ``x`` with the entries at ``indices`` replaced by ``updates``."""
    out = np.array(x, copy=True)
    out[_nd_index(indices)] = updates
    return out


def array_np_dtype(dtype):
    """A ``s2sad.dtype`` Type, NumPy dtype or Python type as a NumPy dtype (None stays)."""
    if dtype is None:
        return None
    np_dtype = getattr(dtype, "np_dtype", None)
    return np_dtype if np_dtype is not None else np.dtype(dtype)


@_constexpr
def array_is_float_dtype(dtype):
    """Whether a cast to ``dtype`` can carry a gradient."""
    return np.issubdtype(array_np_dtype(dtype), np.floating)


def array_float_flag(dtype):
    """1.0 when a cast to ``dtype`` carries a gradient, else 0.0: the factor of a
    cast's gradient when the dtype is read at run time (``x.astype(y.dtype)``)."""
    return 1.0 if np.issubdtype(array_np_dtype(dtype), np.floating) else 0.0


def array_cast(x, dtype):
    """``x`` converted to ``dtype`` (a new array; NumPy scalars stay scalars)."""
    dt = array_np_dtype(dtype)
    if isinstance(x, np.generic):
        return x.astype(dt)
    return np.asarray(x).astype(dt)


def array_cast_like(a, x):
    """``a`` converted to the dtype of ``x`` (a no-op when it already has it)."""
    dt = np.result_type(x)
    if np.result_type(a) == dt:
        return a
    if np.iscomplexobj(a) and dt.kind != "c":
        a = np.real(a)      # the real part, as NumPy's cast keeps it (without its warning)
    return array_cast(a, dt)


def array_fill(dtype, shape, value):
    """An array of ``shape`` filled with ``value``."""
    return np.full(_axes_of(shape), value, dtype=array_np_dtype(dtype))


def array_zeros(shape, dtype):
    """Zeros of ``shape`` and ``dtype``."""
    return np.zeros(_axes_of(shape), dtype=array_np_dtype(dtype))


def array_ones(shape, dtype):
    """Ones of ``shape`` and ``dtype``."""
    return np.ones(_axes_of(shape), dtype=array_np_dtype(dtype))


def array_eye(n, m, dtype, k=0):
    """The ``n`` x ``m`` matrix with ones on diagonal ``k``."""
    return np.eye(n, m, k, dtype=array_np_dtype(dtype))


def array_pad_width(ndim, paddings, broadcast=False):
    """Per-dimension ``(before, after)`` pairs for an array of rank ``ndim``.

    ``paddings`` covers the last ``len(paddings)`` dims (the leading ones are
    not padded); with ``broadcast`` its single pair applies to every dim
    (NumPy's ``pad_width=n`` or ``(before, after)``).
    """
    pairs = [tuple(p) for p in paddings]
    if broadcast:
        return pairs[:1] * ndim
    if len(pairs) > ndim:
        raise ValueError("For 'Pad', 'paddings' has %d pairs but the input has rank %d"
                         % (len(pairs), ndim))
    return [(0, 0)] * (ndim - len(pairs)) + pairs


def array_pad(x, paddings, value=0, broadcast=False):
    """``x`` padded with the constant ``value``."""
    width = array_pad_width(np.ndim(x), paddings, broadcast)
    return np.pad(x, width, mode="constant", constant_values=value)


def array_pad_crop(dout, paddings, broadcast=False):
    """``dout`` with the padding removed: the adjoint of constant padding."""
    width = array_pad_width(np.ndim(dout), paddings, broadcast)
    index = tuple(slice(b, n - a) for (b, a), n in zip(width, np.shape(dout)))
    return dout[index]


def _is_py_scalar(v):
    return isinstance(v, (bool, int, float)) and not isinstance(v, np.generic)


def array_one_hot(indices, depth, on_value, off_value, axis=-1):
    """``on_value`` where ``indices`` hits a place on a new ``depth``-long axis, else ``off_value``.

    Python-number on/off values give float32 (MindSpore's default float),
    int64, or bool when both are bools; arrays keep their dtype.
    """
    idx = np.asarray(indices)
    mask = idx[..., None] == np.arange(int(depth))
    if axis != -1:
        mask = np.moveaxis(mask, -1, axis)
    if _is_py_scalar(on_value) and _is_py_scalar(off_value):
        if isinstance(on_value, bool) and isinstance(off_value, bool):
            dt = np.bool_
        elif isinstance(on_value, float) or isinstance(off_value, float):
            dt = np.float32
        else:
            dt = np.int64
        on_value, off_value = np.asarray(on_value, dt), np.asarray(off_value, dt)
    return np.where(mask, on_value, off_value)


def array_setitem(x, index, value):
    """A copy of ``x`` with ``value`` written at ``index`` (functional ``x[index] = value``)."""
    out = np.array(x, copy=True)
    out[index] = value
    return out


def array_setitem_in_place(x, index, value):
    """``x`` itself with ``value`` written at ``index``: ``array_setitem`` without its copy.

    Generated code calls it only when ``rt.spare(x)`` says no one else can
    see ``x`` (its one name is rebound to the result or dies there), so the
    values are those of the copying form and a loop filling rows costs one
    row per step, not one array.
    """
    x[index] = value
    return x


def array_setitem_value_grad(dout, index):
    """``dout[index]``, zero at each write of ``x[index] = value`` that did not survive.

    An integer-array index may name one position several times; NumPy keeps
    one of those writes (the last), so only that element of ``value`` reaches
    the output.  Which one survived is found by running the same assignment
    on write numbers, so the answer is NumPy's own.  Indices without integer
    arrays (slices, ints, boolean masks) never repeat and cost nothing more.
    """
    g = dout[index]
    if not _has_int_array(index):
        # a copy, not a view: a view kept by a name would stop the next
        # ``x[index] = 0`` of the adjoint (in a loop) from writing into dout
        return g.copy() if type(g) is np.ndarray and g.base is not None else g
    order = np.arange(g.size).reshape(g.shape)
    written = np.empty(np.shape(dout), dtype=np.intp)   # only written positions are read
    written[index] = order
    lost = written[index] != order
    if lost.any():
        g[lost] = 0     # advanced indexing copied: g is ours to change
    return g


def _has_int_array(index):
    """Whether the NumPy ``index`` holds an integer array.

    NumPy reads a list, and a tuple inside the index tuple (generated code
    writes ``y[[i, i], 1]`` with a runtime ``i`` as ``y[(i, i), 1]``), as an
    array.  Exact type tests first: this runs on every backward pass of an
    item assignment, and slices and ints must stay as cheap as indexing itself.
    """
    t = type(index)
    if t is tuple:
        for part in index:
            p = type(part)
            if (p is list or p is tuple or p is np.ndarray) and _int_array_like(part):
                return True
        return False
    return (t is list or t is np.ndarray) and _int_array_like(index)


def _int_array_like(part):
    return np.asarray(part).dtype.kind in "iu"


def array_repeat_grad(dout, x, repeats, axis):
    """Sum the ``repeats`` copies of each element: the adjoint of ``np.repeat``."""
    shape = tuple(np.shape(x))
    if axis is None:
        return np.reshape(np.sum(np.reshape(dout, (-1, repeats)), axis=1), shape)
    ax = axis % len(shape)
    g = np.reshape(dout, shape[:ax] + (shape[ax], repeats) + shape[ax + 1:])
    return np.sum(g, axis=ax + 1)


@_constexpr
def array_fail(message):
    """Raise ``message`` while compiling (functional forms cannot use ``raise``)."""
    raise ValueError(message)


@_constexpr
def array_flat_padding(padding):
    """``ops.pad``'s flat padding (last dim first) as ``(before, after)`` pairs in dim order."""
    padding = tuple(padding)
    if len(padding) % 2:
        raise ValueError("For 'pad', the length of 'padding' must be even, but got %d"
                         % len(padding))
    if any(p < 0 for p in padding):
        raise ValueError("For 'pad', negative padding is not supported by s2sad")
    pairs = [(padding[i], padding[i + 1]) for i in range(0, len(padding), 2)]
    return tuple(reversed(pairs))


@_constexpr
def array_split_sections(shape, split_size, axis):
    """Section sizes for ``ops.split`` with an int chunk size (the last may be smaller).

    Needs the input's shape, so it works eagerly; inside a differentiated
    function pass a tuple of section sizes instead.
    """
    n = tuple(shape)[axis]
    sizes = [split_size] * (n // split_size)
    if n % split_size:
        sizes.append(n % split_size)
    return tuple(sizes)


def _basic_index(index):
    """An index that names each position at most once (no integer/bool arrays)."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, np.integer, slice))
               for p in parts)


_FLOAT = np.dtype(np.float64)


def accumulate_at(acc, index, d):
    """``acc[index] += d`` in place (``acc`` is an accumulator no one else holds).

    The accumulator of an integer or bool input's gradient (zeros like the
    input) is widened to ``d``'s dtype first: its exactness is checked when it
    is returned, never cut here.
    """
    kind = getattr(acc, "dtype", _FLOAT).kind
    if kind in "biu" and np.result_type(acc, d) != acc.dtype:
        acc = acc.astype(np.result_type(acc, d))
    if index is Ellipsis:
        acc += d            # a third of the cost of acc[...] += d on small arrays
        return acc
    if type(index) is int or _basic_index(index):
        acc[index] += d
    else:
        np.add.at(acc, index, d)
    return acc


def array_unpack(values, n):
    """The items of a run-time tuple unpacked into ``n`` names (``b, n, c = x.shape``).

    Compiled code does not know a shape's length, so the count the user's
    assignment names is checked when it runs, with the message Python gives.
    """
    values = tuple(values)
    if len(values) != n:
        raise ValueError("cannot unpack %d values into %d names (the shape or tuple had %d "
                         "items where the code expects %d)" % (len(values), n, len(values), n))
    return values
