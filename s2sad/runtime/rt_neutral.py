"""The ``rt`` helpers generated code calls when its arrays are not NumPy's.

The generated code is the same for every array library; only the names
``xp`` and ``rt`` are bound differently (``backend/namespaces.py``).  The
NumPy helpers of ``rt`` use what only NumPy has (``np.add.at``, a ufunc's
``reduce``, ``out=``, reference counts), so the common ones are written again
here against the array API standard (``xp.sum(x, axis=..., keepdims=...)``),
with a library's own call only where the standard has none (adding into
repeated positions).  A helper missing here is refused when compiling, with
the primitive that needs it named, never converted through NumPy.
"""
import math
import types
from math import prod

from . import (UNDEFINED, check_assert, check_defined, constexpr, expand_reduced,
               inverse_permutation, reduce_axes, reduced_count, _basic_index, _summed_axes)
from .rt_array import array_np_dtype, array_unpack, flattened_shape
from .rt_math import (math_dot as _dot, math_dot_grad_a as _dot_grad_a,
                      math_dot_grad_b as _dot_grad_b, tensordot_grad_a, tensordot_grad_b)
from .rt_neutral_nn import NNHelpers, TorchNNHelpers
from .rt_nn import nn_norm_axes

#: helpers of ``rt`` that only do shape arithmetic or call methods every array
#: library has (``x.reshape``): the same functions serve every library
SHARED = {f.__name__: f for f in (check_assert, check_defined, expand_reduced,
                                  inverse_permutation, reduce_axes, reduced_count,
                                  array_unpack, nn_norm_axes)}
SHARED["UNDEFINED"] = UNDEFINED


def shape_of(x):
    """The shape of an array, or ``()`` for a Python number, as a tuple."""
    shape = getattr(x, "shape", None)
    return () if shape is None else tuple(shape)


class ShapeOf:
    """Stands for an array where only its shape is read (a loop's pushed value)."""

    __slots__ = ("shape",)

    def __init__(self, x):
        self.shape = shape_of(x)


class Helpers(NNHelpers):
    """The common helpers for one array namespace ``xp`` (``library``: its name)."""

    def __init__(self, xp, library, device=None):
        self.xp = xp
        self.library = library
        self.device = device    # where arrays made from nothing go (None: the default)

    def array_zeros(self, shape, dtype):
        """Zeros of ``shape`` and ``dtype`` on this runtime's device."""
        return self.xp.zeros(_shape(shape), dtype=self._dtype(dtype), device=self.device)

    def array_ones(self, shape, dtype):
        """Ones of ``shape`` and ``dtype`` on this runtime's device."""
        return self.xp.ones(_shape(shape), dtype=self._dtype(dtype), device=self.device)

    def array_eye(self, n, m, dtype, k=0):
        """The ``n`` x ``m`` matrix with ones on diagonal ``k``, on this runtime's device."""
        return self.xp.eye(n, m, k=k, dtype=self._dtype(dtype), device=self.device)

    def _dtype(self, dtype):
        """The library's dtype for a ``s2sad.dtype`` Type, NumPy dtype or Python type."""
        return getattr(self.xp, array_np_dtype(dtype).name)

    def unbroadcast(self, dx, x):
        """Sum ``dx`` down to the shape of ``x`` (the adjoint of broadcasting)."""
        shape, dshape = shape_of(x), shape_of(dx)
        if dshape == shape:
            return dx
        axes = _summed_axes(dshape, shape)
        out = self.xp.sum(dx, axis=axes, keepdims=True) if axes else dx
        return self.xp.reshape(out, shape) if len(dshape) != len(shape) else out

    def broadcast_like(self, a, x):
        """``a`` broadcast to the shape of ``x`` (the adjoint of ``unbroadcast``)."""
        shape = shape_of(x)
        if shape_of(a) == shape:
            return a
        return self.xp.broadcast_to(self._array(a, x), shape)

    def _array(self, a, like):
        """``a`` as an array of ``like``'s library (a Python number: of its dtype)."""
        if hasattr(a, "shape"):
            return a
        dtype = getattr(like, "dtype", None)
        return self.xp.asarray(a, dtype=dtype, device=_device(like))

    def array_flatten(self, x, start_dim=1, end_dim=-1):
        """Merge dims ``start_dim..end_dim`` (inclusive) into one (``rt_array``'s shapes)."""
        return self.xp.reshape(x, flattened_shape(shape_of(x), start_dim, end_dim))

    def array_one_hot(self, indices, depth, on_value, off_value, axis=-1):
        """``on_value`` where ``indices`` hits a place on a new ``depth``-long axis, else
        ``off_value``; the dtypes of ``rt_array.array_one_hot`` (float32 for floats)."""
        xp = self.xp
        mask = xp.expand_dims(indices, axis=-1) == xp.arange(int(depth), device=_device(indices))
        if axis != -1:
            mask = xp.moveaxis(mask, -1, axis)
        numbers = (bool, int, float)
        if isinstance(on_value, numbers) and isinstance(off_value, numbers):
            if isinstance(on_value, bool) and isinstance(off_value, bool):
                dtype = xp.bool
            elif isinstance(on_value, float) or isinstance(off_value, float):
                dtype = xp.float32
            else:
                dtype = xp.int64
            on_value = xp.asarray(on_value, dtype=dtype, device=_device(indices))
            off_value = xp.asarray(off_value, dtype=dtype, device=_device(indices))
        return xp.where(mask, on_value, off_value)

    def sum_seed(self, x):
        """Ones shaped like ``x``: the seed of ``sum(x)`` broadcast back to ``x``."""
        return self.xp.ones_like(x)

    def mean_seed(self, x, sign, axis=None):
        """``sign / n``, ``n`` the count ``mean(x)`` (or ``mean(sum(x, axis))``) averages."""
        shape = shape_of(x)
        n = reduced_count(x, ())
        if axis is not None:
            axes = axis if isinstance(axis, (tuple, list)) else (axis,)
            for a in {a % len(shape) for a in axes}:
                n //= shape[a]
        one = self.xp.ones((), dtype=x.dtype, device=_device(x))
        return (-one if sign < 0 else one) / n

    def math_sum(self, x, axis=None, keepdims=False):
        return self.xp.sum(x, axis=_axes(axis), keepdims=keepdims)

    def math_max(self, x, axis=None, keepdims=False):
        return self.xp.max(x, axis=_axes(axis), keepdims=keepdims)

    def math_min(self, x, axis=None, keepdims=False):
        return self.xp.min(x, axis=_axes(axis), keepdims=keepdims)

    def math_matmul_grad_a(self, d, x, y):
        """The gradient of ``x @ y`` with respect to ``x``."""
        xp = self.xp
        xs, yn = shape_of(x), len(shape_of(y))
        if len(xs) == 2 and yn == 2:
            return xp.matmul(d, xp.matrix_transpose(y))
        if len(xs) == 2 and yn == 1:
            return d[:, None] * y[None, :]
        if len(xs) == 1 and yn == 2:
            return xp.matmul(y, d)
        if len(xs) == 1 and yn == 1:
            return d * y
        y2 = y[..., None] if yn == 1 else y
        d2 = d[..., None] if yn == 1 else d
        if len(xs) == 1:
            d2 = d2[..., None, :]
        g = xp.matmul(d2, xp.matrix_transpose(y2))
        return xp.reshape(self.unbroadcast(g, _Shaped().of(
            (1,) + xs if len(xs) == 1 else xs)), xs)

    def math_matmul_grad_b(self, d, x, y):
        """The gradient of ``x @ y`` with respect to ``y``."""
        xp = self.xp
        ys, xn = shape_of(y), len(shape_of(x))
        if xn == 2 and len(ys) in (1, 2):
            return xp.matmul(d, x) if len(shape_of(d)) == 1 else \
                xp.matmul(xp.matrix_transpose(x), d)
        if xn == 1 and len(ys) == 2:
            return x[:, None] * d[None, :]
        if xn == 1 and len(ys) == 1:
            return d * x
        if len(ys) == 2 and xn > 2 and shape_of(d)[:-1] == shape_of(x)[:-1]:
            return self._stacked_rows_grad_b(d, x)
        x2 = x[None, :] if xn == 1 else x
        d2 = d[..., None, :] if xn == 1 else d
        if len(ys) == 1:
            d2 = d2[..., None]
        g = xp.matmul(xp.matrix_transpose(x2), d2)
        return xp.reshape(self.unbroadcast(g, _Shaped().of(
            ys + (1,) if len(ys) == 1 else ys)), ys)

    def _stacked_rows_grad_b(self, d, x):
        """The gradient of ``x @ W`` for a matrix ``W`` and an ``x`` with batch
        dimensions: the sum over the batch of ``x[b].T @ d[b]`` is one 2-D product
        of the stacked rows.  A batched product followed by a sum over the batch
        is slower op by op, and ``jax.jit`` keeps it (XLA does not merge the sum
        into the product): one ``dot`` instead of a batched one and a reduce."""
        xp, xs = self.xp, shape_of(x)
        rows = prod(xs[:-1])
        return xp.matmul(xp.matrix_transpose(xp.reshape(x, (rows, xs[-1]))),
                         xp.reshape(d, (rows, shape_of(d)[-1])))

    def array_split_like(self, x, likes, axis):
        """Split ``x`` back into pieces shaped like ``likes`` (the adjoint of concatenation,
        ``axis`` as ``rt_array.array_split_like`` takes it), by slicing."""
        sizes, ax = _joined_sizes([shape_of(a) for a in likes], axis)
        ax %= len(shape_of(x))
        pieces, start = [], 0
        for size, like in zip(sizes, likes):
            piece = x[(slice(None),) * ax + (slice(start, start + size),)]
            start += size
            shape = shape_of(like)
            pieces.append(piece if shape_of(piece) == shape else self.xp.reshape(piece, shape))
        return tuple(pieces)

    def getitem_grad(self, dout, x, index):
        """Zeros like ``x`` with ``dout`` added at ``index`` (repeated positions add up)."""
        xp = self.xp
        out = xp.zeros(shape_of(x), dtype=dout.dtype, device=_device(dout))
        return self._add_at(out, index, dout)

    def getitem_grad_zeros(self, x, *parts):
        """The zero array ``getitem_grad_into`` adds into (see the NumPy helper)."""
        xp = self.xp
        return xp.zeros(shape_of(x), dtype=xp.result_type(*parts), device=_device(parts[0]))

    def getitem_grad_into(self, buf, index, dout):
        """``buf`` with ``dout`` added at ``index``: in place into the fresh ``buf``
        for PyTorch, a new array for JAX.  ``dout`` is cast to ``buf``'s (promoted)
        dtype first: PyTorch's scatter-add takes no mixed dtypes."""
        if getattr(dout, "dtype", buf.dtype) != buf.dtype:
            dout = self.xp.astype(dout, buf.dtype)
        return self._add_at(buf, index, dout)

    def _add_at(self, out, index, d):
        """``out`` with ``d`` added at ``index``: in place for PyTorch and CuPy, a new array
        for JAX."""
        if self.library == "jax":
            return out.at[index].add(d)
        if _basic_index(index):
            out[index] += d         # each position named once: in place is exact
            return out
        if self.library == "cupy":
            import cupy             # np.add.at's twin: repeated positions add up
            cupy.add.at(out, index, d)
            return out
        # repeated positions: each element's flat position, then one scatter-add
        xp = self.xp
        positions = self._positions(out, index)
        d = xp.broadcast_to(self._array(d, out), positions.shape)
        flat = xp.reshape(out, (-1,))
        flat.index_add_(0, xp.reshape(positions, (-1,)), xp.reshape(d, (-1,)))
        return out

    def _positions(self, x, index):
        """The flat position in ``x`` of each element ``x[index]`` reads."""
        xp = self.xp
        shape = shape_of(x)
        return xp.reshape(xp.arange(prod(shape), device=_device(x)), shape)[index]

    def array_setitem(self, x, index, value):
        """A copy of ``x`` with ``value`` written at ``index`` (functional ``x[index] = value``)."""
        if self.library == "jax":
            return x.at[index].set(value)
        out = self.xp.asarray(x, copy=True)
        out[index] = value
        return out

    def array_setitem_value_grad(self, dout, index):
        """``dout[index]``: the gradient of the value written by ``x[index] = value``.

        When an integer-array index names one position twice, which write
        survives is the library's choice (PyTorch leaves it unspecified), so
        the gradient is refused rather than guessed.
        """
        if not _basic_index(index):
            positions = self._positions(dout, index)
            if prod(shape_of(self.xp.unique_values(positions))) != prod(shape_of(positions)):
                raise ValueError(
                    "x[index] = value writes one position of x several times; on %s arrays "
                    "which write survives is not specified, so its gradient is not defined: "
                    "use an index without repeated positions" % self.library)
        return dout[index]

    def array_setitem_in_place(self, x, index, value):
        """``array_setitem``: ``rt.spare`` never lends an array here, but the generated
        code names this form next to the copying one."""
        return self.array_setitem(x, index, value)

    def array_gather_grad(self, dout, params, indices, axis):
        """Zeros like ``params`` with ``dout`` added at ``indices`` along ``axis`` (an
        Embedding's table gradient: repeated indices add up)."""
        xp = self.xp
        out = xp.zeros(shape_of(params), dtype=dout.dtype, device=_device(dout))
        return self._add_at(out, (slice(None),) * (axis % len(shape_of(params))) + (indices,),
                            dout)

    def accumulate_at(self, acc, index, d):
        """``acc[index] += d`` (``acc`` is an accumulator no one else holds)."""
        if index is Ellipsis:
            return acc + d
        return self._add_at(acc, index, d)

    def math_dot(self, x, y):
        """``np.dot`` of operands of any rank (NumPy's helper's cases)."""
        return _dot(x, y, self.xp.tensordot)

    def math_dot_grad_a(self, d, x, y):
        """Gradient of ``np.dot(x, y)`` w.r.t. ``x`` (NumPy's helper's steps)."""
        return _dot_grad_a(d, x, y, self.xp.tensordot, lambda a, b: a[..., None] * b,
                           self.xp.sum)

    def math_dot_grad_b(self, d, x, y):
        """Gradient of ``np.dot(x, y)`` w.r.t. ``y``."""
        return _dot_grad_b(d, x, y, self.xp.tensordot, self.xp.moveaxis, self.xp.sum)

    def math_sum_squares(self, x):
        """``sum(x * x)`` over all elements."""
        return self.xp.sum(x * x)

    def math_logsumexp(self, x, axis, keep_dims):
        """``log(sum(exp(x)))`` over ``axis`` (``()`` = all), shifted by the max."""
        xp = self.xp
        ax = None if axis is None or axis == () else (
            tuple(axis) if isinstance(axis, list) else axis)
        m = xp.max(x, axis=ax, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
        out = xp.log(xp.sum(xp.exp(x - m), axis=ax, keepdims=True)) + m
        if keep_dims:
            return out
        return xp.reshape(out, ()) if ax is None else xp.squeeze(out, axis=ax)

    def math_cumsum(self, x, axis, exclusive, reverse):
        """Cumulative sum along ``axis``; ``exclusive`` leaves out each element itself."""
        xp = self.xp
        if reverse:
            x = xp.flip(x, axis=axis)
        out = xp.cumulative_sum(x, axis=axis)
        if exclusive:
            out = out - x
        return xp.flip(out, axis=axis) if reverse else out

    def math_erf(self, x):
        """The error function, from the library's own special functions."""
        return self._special("erf")(x)

    def math_erfc(self, x):
        """``1 - erf(x)``, accurate for large ``x``."""
        return self._special("erfc")(x)

    def _special(self, name):
        if self.library == "torch":
            import torch
            return getattr(torch.special, name)
        if self.library == "jax":
            import jax.scipy.special
            return getattr(jax.scipy.special, name)
        import cupyx.scipy.special
        return getattr(cupyx.scipy.special, name)

    def math_tensordot_grad_a(self, dout, b, axes):
        """Gradient of ``tensordot(a, b, axes)`` w.r.t. ``a`` (NumPy's helper's steps)."""
        return tensordot_grad_a(dout, b, axes, self.xp.tensordot, self.xp.permute_dims)

    def math_tensordot_grad_b(self, a, dout, axes):
        """Gradient of ``tensordot(a, b, axes)`` w.r.t. ``b``."""
        return tensordot_grad_b(a, dout, axes, self.xp.tensordot, self.xp.permute_dims)

    def array_unstack(self, x, axis, num):
        """The slices of ``x`` along ``axis``, as a tuple (checks ``num`` if given)."""
        n = shape_of(x)[axis]
        if num is not None and n != num:
            raise ValueError("For 'Unstack', the size of axis %d is %d, but 'num' is %d"
                             % (axis, n, num))
        return tuple(self.xp.moveaxis(x, axis, 0))

    def array_cast_like(self, a, x):
        """``a`` converted to the dtype of the array ``x`` (a no-op when it already has it)."""
        if not hasattr(a, "dtype"):
            return self._array(a, x)
        if a.dtype == x.dtype:
            return a
        return self.xp.astype(a, x.dtype)

    def check_sens(self, sens, out, path="output"):
        """The sens, unless its shape differs from the output's (MindSpore's error)."""
        if shape_of(sens) != shape_of(out):
            raise ValueError(
                "For 'GradOperation', the shape of sens (%s) must be the same as the "
                "shape of the %s (%s); pass a sens of the forward output's shape."
                % (list(shape_of(sens)), path, list(shape_of(out))))
        return sens

    @staticmethod
    def spare(buf, *others):
        """Never: only NumPy's ufuncs take ``out=`` (the plain expression runs)."""
        return False


class _Shaped:
    """A stand-in with a given shape (what ``unbroadcast`` reads of its target)."""

    __slots__ = ("shape",)

    def of(self, shape):
        self.shape = tuple(shape)
        return self


def _device(x):
    """The device of ``x`` (None where it has none: a number, a value ``jax.jit`` traces)."""
    return getattr(x, "device", None)


def _joined_sizes(shapes, axis):
    """(each piece's size along the axis a concatenation joined, that axis): NumPy's
    stacking functions first make 0-d and 1-d pieces 1-, 2- or 3-d (``rt_array``)."""
    if axis in ("hstack", "r_"):
        one_d = axis == "r_" or len(shapes[0]) <= 1
        return [(s[0] if s else 1) if one_d else s[1] for s in shapes], 0 if one_d else 1
    if axis == "vstack":
        return [s[0] if len(s) >= 2 else 1 for s in shapes], 0
    if axis == "dstack":
        return [s[2] if len(s) >= 3 else 1 for s in shapes], 2
    if axis in ("column_stack", "c_"):
        return ([s[-1 if axis == "c_" else 1] if len(s) >= 2 else 1 for s in shapes],
                1 if axis == "column_stack" else -1)
    return [s[axis] for s in shapes], axis


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _axes(axis):
    return tuple(axis) if isinstance(axis, list) else axis


#: elementwise functions generated code may call on a Python number (PyTorch's take
#: tensors only); ``math`` has each under the same name
_NUMBER_MATH = ("sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "log1p", "expm1")


def _numbers_too(on_arrays, on_numbers):
    """``on_arrays``, or ``on_numbers`` (``math``'s) for a Python int or float."""
    def either(x, *args, **kwargs):
        if type(x) in (int, float):
            return on_numbers(x)
        return on_arrays(x, *args, **kwargs)
    either.__name__ = on_arrays.__name__
    return either


def extend_namespace(xp):
    """Give the namespace ``xp`` what generated code calls beyond the standard.

    ``xp.shape`` (NumPy's function, which loops call), and ``zeros_like`` /
    ``ones_like`` of what NumPy also takes: a Python number (the zero or one
    of its type) or ``None`` (the adjoint of a value a path never set).
    """
    zeros_like, ones_like = xp.zeros_like, xp.ones_like

    def number_or(fn, value):
        def like(x, *args, **kwargs):
            if hasattr(x, "shape"):
                return fn(x, *args, **kwargs)
            return None if x is None else type(x)(value)
        like.__name__ = fn.__name__
        return like
    xp.take = _any_rank_take(xp.take, xp.reshape)
    xp.zeros_like = number_or(zeros_like, 0)
    xp.ones_like = number_or(ones_like, 1)
    xp.shape = shape_of
    for name in _NUMBER_MATH:      # np.sqrt(d) of a run-time int (a shape): a float, as NumPy
        if hasattr(xp, name):
            setattr(xp, name, _numbers_too(getattr(xp, name), getattr(math, name)))
    if hasattr(xp, "permute_dims"):
        permute = xp.permute_dims

        def transpose(x, axes=None):
            """NumPy's ``transpose(x, axes)`` (PyTorch's swaps two dimensions)."""
            if axes is None:
                axes = tuple(reversed(range(len(shape_of(x)))))
            return permute(x, tuple(axes))
        xp.transpose = transpose


def _any_rank_take(take, reshape):
    """``take`` with indices of any rank, as NumPy's (the standard's takes 1-D indices:
    an Embedding's [batch, length] ids are taken flat, then shaped)."""
    def any_rank(x, indices, axis=None, **kwargs):
        shape = shape_of(indices)
        if len(shape) == 1 or axis is None or not hasattr(indices, "shape"):
            return take(x, indices, axis=axis, **kwargs)
        xs = shape_of(x)
        axis %= len(xs)
        out = take(x, reshape(indices, (-1,)), axis=axis, **kwargs)
        return reshape(out, xs[:axis] + shape + xs[axis + 1:])
    any_rank.__name__ = "take"
    return any_rank


def runtime_for(xp, library, device=None):
    """The object generated code calls ``rt`` for arrays of ``library`` in namespace ``xp``,
    making arrays from nothing (``rt.array_zeros``) on ``device`` (None: the library's
    default; PyTorch's is the CPU)."""
    cls = Helpers
    if library == "torch":      # helpers by the library's own calls, where the standard has none
        cls = type("TorchHelpers", (Helpers, TorchNNHelpers), {})
    helpers = cls(xp, library, device)
    rt = types.ModuleType("s2sad_rt_" + library)
    vars(rt).update(SHARED)
    for name in dir(cls):
        if not name.startswith("_"):
            setattr(rt, name, getattr(helpers, name))
    if hasattr(xp, "einsum"):       # NumPy's helper plans a BLAS product; others have their own
        rt.einsum_pair = xp.einsum
    rt.ShapeOf = ShapeOf
    rt.shape_of = shape_of
    rt.constexpr = constexpr
    return rt
