"""Runtime helpers (``rt.<name>`` in generated code) for math primitives.

Names carry a ``math_`` prefix because every family's helpers share the one
``rt`` namespace.  Anything that depends on a runtime shape (1-D promotion in
matmul, normalising tensordot axes, the rank checks of norm) happens here, since
compiled code is shape-polymorphic.
"""
import math
import operator

import numpy as np

from .rt_array import accumulate_at

_NOT_LOADED = object()
#: SciPy's ``special`` (optional: faster and more accurate than the per-element
#: fallback), imported on first use since importing SciPy takes a third of a
#: second; ``None`` when it is not installed
_special = _NOT_LOADED


def _scipy_special():
    global _special
    if _special is _NOT_LOADED:
        try:
            from scipy import special
        except ImportError:  # pragma: no cover - depends on the environment
            special = None
        _special = special
    return _special


def _like_input(out, x):
    """``out`` as a NumPy scalar when ``x`` was one, so scalar inputs stay scalars."""
    if np.ndim(out) == 0 and not isinstance(x, np.ndarray):
        return np.asarray(out)[()]
    return out


def _float_dtype(x):
    dt = np.result_type(x)
    return dt if dt.kind == "f" else np.dtype(np.float64)


def _vectorised(fn, x):
    arr = np.asarray(x)
    dt = _float_dtype(arr)
    out = np.fromiter((fn(float(v)) for v in arr.reshape(-1)), dtype=dt, count=arr.size)
    return _like_input(out.reshape(arr.shape), x)


def _keep_dtype(out, x):
    """``out`` in x's floating dtype (SciPy computes float16 in float32)."""
    dt = _float_dtype(x)
    if np.result_type(out) != dt:
        out = np.asarray(out).astype(dt)
    return _like_input(out, x)


def math_erf(x):
    """The error function; SciPy's when it is installed, else ``math.erf`` per element."""
    special = _scipy_special()
    if special is not None:
        return _keep_dtype(special.erf(x), x)
    return _vectorised(math.erf, x)


def math_erfc(x):
    """The complementary error function ``1 - erf(x)``, accurate for large ``x``."""
    special = _scipy_special()
    if special is not None:
        return _keep_dtype(special.erfc(x), x)
    return _vectorised(math.erfc, x)


def math_cumsum(x, axis, exclusive, reverse):
    """Cumulative sum along ``axis``; ``exclusive`` leaves out each element itself."""
    x = np.asarray(x)
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis)
    if exclusive:
        out = out - x
    if reverse:
        out = np.flip(out, axis)
    return out


def _ufunc_reduction(ufunc, name):
    """``np.<name>`` as the ufunc's own reduction.

    NumPy's function layer costs about a microsecond per call, as much as
    summing a thousand elements; its result is the same for arrays, scalars
    and lists (``axis=None`` reduces all axes, as ``np.sum``'s default).
    """
    reduce = ufunc.reduce

    def reduction(x, axis=None, keepdims=False):
        return reduce(x, axis, None, None, keepdims)
    reduction.__name__ = reduction.__qualname__ = "math_" + name
    reduction.__doc__ = "``np.%s(x, axis, keepdims=keepdims)``, called as ``np.%s.reduce``." \
        % (name, ufunc.__name__)
    return reduction


math_sum = _ufunc_reduction(np.add, "sum")
math_max = _ufunc_reduction(np.maximum, "max")
math_min = _ufunc_reduction(np.minimum, "min")


def math_sum_squares(x):
    """``sum(x * x)`` over all elements: a dot product for float32/float64 arrays.

    ``np.linalg.norm`` computes it the same way; other inputs (integers,
    complex, scalars) keep NumPy's ``sum(x * x)``.
    """
    if type(x) is np.ndarray and x.dtype.char in "fd":
        flat = x.ravel(order="K")     # a view unless x is strided
        return flat.dot(flat)
    return np.sum(x * x)


def math_scale_repeated(x, factor, *bounds, then=1):
    """``x`` multiplied by ``factor`` once per iteration of ``range(*bounds)``, then by ``then``.

    A floating-point array is multiplied once, by ``factor ** n`` (a Python
    float, which keeps the array's dtype under any NumPy promotion rules).
    Anything else (integers keep their exact arithmetic, scalars cost little),
    or a ``factor ** n`` that overflows or vanishes (where ``inf * 0`` would
    differ from repeated products), runs the loop as written.
    """
    n = len(range(*bounds))
    if n and type(x) is np.ndarray and x.ndim and x.dtype.kind == "f":
        try:
            scale = float(factor) ** n * then
        except OverflowError:
            scale = math.inf
        if 0 < abs(scale) < math.inf:
            return x * scale
    for _ in range(n):
        x = x * factor
    return x if type(then) is int and then == 1 else x * then


def math_logsumexp(x, axis, keep_dims):
    """``log(sum(exp(x)))`` over ``axis`` (``()`` = all), shifted by the max for stability."""
    ax = None if axis is None or axis == () else (
        tuple(axis) if isinstance(axis, list) else axis)
    m = np.max(x, axis=ax, keepdims=True)
    m = np.where(np.isfinite(m), m, np.zeros_like(m))
    out = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
    if not keep_dims:
        out = np.squeeze(out, axis=ax)
    return _like_input(out, x)


def math_arg_with_value(x, axis, keep_dims, kind):
    """``(index, value)`` of the max (``kind='max'``) or min along ``axis``; first on ties."""
    x = np.asarray(x)
    idx = (np.argmax if kind == "max" else np.argmin)(x, axis=axis, keepdims=True)
    val = np.take_along_axis(x, idx, axis=axis)
    if not keep_dims:
        idx = np.squeeze(idx, axis=axis)
        val = np.squeeze(val, axis=axis)
    return idx.astype(np.int32), val


def math_arg_indicator(index, x, axis, keep_dims):
    """Ones (in x's dtype) where ``index`` points along ``axis``, zeros elsewhere."""
    x = np.asarray(x)
    index = np.asarray(index, dtype=np.intp)
    if not keep_dims:
        index = np.expand_dims(index, axis)
    out = np.zeros(x.shape, dtype=_float_dtype(x))
    np.put_along_axis(out, index, 1, axis=axis)
    return out


def math_dot(x, y, tensordot=np.dot):
    """``np.dot`` of operands of any rank (its ranks are read at run time).

    Another library passes its ``tensordot``: ``np.dot`` multiplies when an
    operand is 0-D, contracts x's last axis with a 1-D y, and with y's
    second-to-last axis otherwise."""
    if tensordot is np.dot:
        return np.dot(x, y)
    nx, ny = np.ndim(x), np.ndim(y)
    if nx == 0 or ny == 0:
        return x * y
    return tensordot(x, y, axes=([nx - 1], [max(ny - 2, 0)]))


def math_dot_grad_a(d, x, y, tensordot=np.tensordot, outer=np.multiply.outer, total=np.sum):
    """The gradient of ``np.dot(x, y)`` with respect to ``x`` (``x`` may be a ``ShapeOf``);
    another library passes its ``tensordot``, outer product and ``sum``."""
    nx, ny = len(_shape(x)), np.ndim(y)
    if nx == 0:
        return total(d * y)
    if ny == 0:
        return d * y
    if ny == 1:
        return outer(d, y)
    free = list(range(ny - 2)) + [ny - 1]           # y's axes that d keeps
    return tensordot(d, y, axes=(list(range(nx - 1, np.ndim(d))), free))


def math_dot_grad_b(d, x, y, tensordot=np.tensordot, moveaxis=np.moveaxis, total=np.sum):
    """The gradient of ``np.dot(x, y)`` with respect to ``y`` (``y`` may be a ``ShapeOf``)."""
    nx, ny = np.ndim(x), len(_shape(y))
    if nx == 0:
        return d * x
    if ny == 0:
        return total(d * x)
    g = tensordot(x, d, axes=(list(range(nx - 1)), list(range(nx - 1))))
    return g if ny == 1 else moveaxis(g, 0, -2)


def _norm_axes(axes, ndim, what):
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError("tensordot axis %d is out of range for a %d-D %s" % (a, ndim, what))
        out.append(a % ndim)
    return out


def math_tensordot_axes(na, nb, axes):
    """Normalised ``(axes_a, axes_b)`` lists of non-negative ints for ``tensordot``."""
    if isinstance(axes, int):
        return list(range(na - axes, na)), list(range(axes))
    ia, ib = axes
    return _norm_axes(ia, na, "left operand"), _norm_axes(ib, nb, "right operand")


def _ncontract(axes):
    return axes if isinstance(axes, int) else len(axes[0])


def _argsort(labels):
    perm = [0] * len(labels)
    for pos, lab in enumerate(labels):
        perm[lab] = pos
    return perm


def math_tensordot_grad_a(dout, b, axes):
    """Gradient of ``tensordot(a, b, axes)`` w.r.t. ``a`` (a's rank is read off ``dout``)."""
    return tensordot_grad_a(dout, b, axes, np.tensordot, np.transpose)


def math_tensordot_grad_b(a, dout, axes):
    """Gradient of ``tensordot(a, b, axes)`` w.r.t. ``b`` (b's rank is read off ``dout``)."""
    return tensordot_grad_b(a, dout, axes, np.tensordot, np.transpose)


def tensordot_grad_a(dout, b, axes, tensordot, permute):
    """``math_tensordot_grad_a`` with a library's ``tensordot`` and axis permutation."""
    nb = _rank(b)
    n = _ncontract(axes)
    na = _rank(dout) - (nb - n) + n
    ia, ib = math_tensordot_axes(na, nb, axes)
    a_free = [i for i in range(na) if i not in ia]
    b_free = [j for j in range(nb) if j not in ib]
    res = tensordot(dout, b, axes=(list(range(len(a_free), _rank(dout))), b_free))
    labels = a_free + [ia[ib.index(j)] for j in sorted(ib)]
    return permute(res, tuple(_argsort(labels)))


def tensordot_grad_b(a, dout, axes, tensordot, permute):
    """``math_tensordot_grad_b`` with a library's ``tensordot`` and axis permutation."""
    na = _rank(a)
    n = _ncontract(axes)
    nb = _rank(dout) - (na - n) + n
    ia, ib = math_tensordot_axes(na, nb, axes)
    a_free = [i for i in range(na) if i not in ia]
    b_free = [j for j in range(nb) if j not in ib]
    res = tensordot(a, dout, axes=(a_free, list(range(len(a_free)))))
    labels = [ib[ia.index(i)] for i in sorted(ia)] + b_free
    return permute(res, tuple(_argsort(labels)))


def math_norm_shape(x, kind, ord):
    """Runtime shapes for ``norm`` when ``dim`` is None and the rank decides the norm.

    ``'vector'``: x's shape, x must be 1-D; ``'matrix'``: a 1-D x as an (n, 1)
    column (its matrix 1, 2, inf and -inf norms are the vector ones; -1, -2
    and 'nuc' are refused), a 2-D x unchanged;
    ``'kept'``: all ones, the shape of a norm over all axes with keepdim.
    """
    shape = tuple(np.shape(x))
    if kind == "kept":
        return (1,) * len(shape)
    if kind == "vector":
        if len(shape) != 1:
            raise ValueError("norm with ord=%r and dim=None needs a 1-D input, got shape %s"
                             % (ord, list(shape)))
        return shape
    if len(shape) == 1:
        if ord in (-1, -2, "nuc"):
            # a column's matrix -1 and -2 norms are not the vector ones
            raise ValueError("norm with ord=%r and dim=None of a 1-D input: give dim=0 "
                             "(axis=0) for the vector norm" % (ord,))
        return shape + (1,)
    if len(shape) != 2:
        raise ValueError("norm with ord=%r and dim=None needs a 1-D or 2-D input, got shape %s"
                         % (ord, list(shape)))
    return shape


def _sum_to(g, shape):
    """Sum ``g`` over the leading/broadcast axes it has beyond ``shape``."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape)
                                      if n == 1 and g.shape[i + lead] != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    return g.reshape(shape)


def _shape(x):
    """The shape of an array, NumPy scalar, number or ``ShapeOf`` (attribute first: fast)."""
    try:
        return x.shape
    except AttributeError:
        return np.shape(x)


_shape_attr = operator.attrgetter("shape")
_dtype_attr = operator.attrgetter("dtype")


def _uniform(arrays):
    """Whether ``arrays`` all have one shape and one dtype (checked in C, not per element)."""
    return len(set(map(_shape_attr, arrays))) == 1 and len(set(map(_dtype_attr, arrays))) == 1


def _uniform_rows(rows):
    """``_uniform`` for 1-D arrays: their lengths are their shapes (and cheaper to read)."""
    return len(set(map(len, rows))) == 1 and len(set(map(_dtype_attr, rows))) == 1


def _stack_rows(rows):
    """``np.array(rows)`` for 1-D arrays of one shape and dtype, without its per-row cost.

    Their bytes joined are the stacked array's when every row is contiguous
    (a quarter of the time on short rows); a strided row falls back.
    """
    try:
        flat = np.frombuffer(b"".join(rows), rows[0].dtype)
    except TypeError:
        return np.array(rows)
    return flat.reshape(len(rows), rows[0].shape[0])


def _rank(x):
    """``len(_shape(x))``, an array's ``ndim`` first."""
    return x.ndim if type(x) is np.ndarray else len(_shape(x))


def _dot(a, b):
    """``a @ b`` for operands of rank 1 or 2, where ``np.dot`` is the same product.

    For plain arrays ``np.dot`` calls the same BLAS routine without the
    ``matmul`` ufunc's dispatch: the same values and dtype (checked bit for
    bit over float16 to complex and integers), 0.3 µs less on small arrays,
    once per step of a loop's backward sweep.  ``x.T @ d`` for a 1-D ``d``
    is ``d @ x``.  Other ranks (a batched ``d``, where ``np.dot`` would
    contract differently) and types (subclasses) keep their ``@``.
    """
    if type(a) is np.ndarray and type(b) is np.ndarray and 0 < a.ndim <= 2 and 0 < b.ndim <= 2:
        return np.dot(a, b)
    return a @ b


def _rows_of(d, xs):
    """Whether ``d``, the adjoint of ``x @ W`` for an ``x`` of shape ``xs`` with more
    than two dimensions and a matrix ``W``, is a contiguous array with ``x``'s batch
    dimensions: then its rows stack into one matrix without a copy, and the
    batched products (summed over the batch for ``W``) are one 2-D product,
    one BLAS call instead of one per batch element (and no batch sum)."""
    return len(xs) > 2 and type(d) is np.ndarray and d.flags.c_contiguous \
        and d.shape[:-1] == tuple(xs[:-1])


def _stacked(a):
    """The rows of a C-contiguous ``a`` as one matrix (a view; any length, 0 included)."""
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def math_matmul_grad_a(d, x, y):
    """The gradient of ``x @ y`` with respect to ``x`` (``x`` may be a ``ShapeOf``).

    Common ranks take one NumPy call; other ranks promote 1-D operands as
    matmul does, multiply batched, and sum over broadcast batch dimensions.
    """
    xs, yn = _shape(x), len(_shape(y))
    if len(xs) == 2 and yn == 2:
        return _dot(d, y.T)
    if len(xs) == 2 and yn == 1:
        return np.multiply.outer(d, y)
    if len(xs) == 1 and yn == 2:
        return _dot(y, d)
    if len(xs) == 1 and yn == 1:
        return d * y
    if yn == 2 and _rows_of(d, xs):
        return _dot(_stacked(d), y.T).reshape(xs)
    y2 = y[..., None] if yn == 1 else y
    d2 = d[..., None] if yn == 1 else d
    if len(xs) == 1:
        d2 = d2[..., None, :]
    g = np.matmul(d2, np.swapaxes(y2, -1, -2))
    return _sum_to(g, (1,) + tuple(xs) if len(xs) == 1 else tuple(xs)).reshape(xs)


def math_matmul_grad_b(d, x, y):
    """The gradient of ``x @ y`` with respect to ``y`` (``y`` may be a ``ShapeOf``)."""
    if type(d) is np.ndarray and type(x) is np.ndarray and d.ndim == 1 and x.ndim == 2:
        # a matrix times a vector (an RNN's step; ``y`` is a vector, as ``x @ y`` was)
        return np.dot(d, x)
    try:        # a matrix times a vector or matrix: no shape tuples
        if x.ndim == 2 and 0 < y.ndim <= 2:
            return _dot(d, x) if d.ndim == 1 else _dot(x.T, d)
    except AttributeError:      # a ShapeOf or a number
        pass
    ys, xn = _shape(y), len(_shape(x))
    if xn == 2 and len(ys) in (1, 2):
        return _dot(d, x) if np.ndim(d) == 1 else _dot(x.T, d)
    if xn == 1 and len(ys) == 2:
        return np.multiply.outer(x, d)
    if xn == 1 and len(ys) == 1:
        return d * x
    if len(ys) == 2 and type(x) is np.ndarray and x.flags.c_contiguous and _rows_of(d, x.shape):
        # sum over the batch of x[b].T @ d[b]: one product of the stacked rows
        return _dot(_stacked(x).T, _stacked(d))
    x2 = x[None, :] if xn == 1 else x
    d2 = d[..., None, :] if xn == 1 else d
    if len(ys) == 1:
        d2 = d2[..., None]
    g = np.matmul(np.swapaxes(x2, -1, -2), d2)
    return _sum_to(g, tuple(ys) + (1,) if len(ys) == 1 else tuple(ys)).reshape(ys)


#: buffered operand elements after which a ``MatMulGradSum`` multiplies (512 KB of float64)
_BATCH = 1 << 16


class MatMulGradSum:
    """A loop's weight gradient ``sum_t grad(x_t @ y_t)``, multiplied once per batch.

    An RNN's backward loop adds ``np.outer(d_t, h_t)`` into ``dW`` every step:
    two NumPy calls on small arrays per step.  Each term is ``L_t.T @ R_t``
    for rows ``L_t``, ``R_t`` (``d_t``, ``h_t`` themselves, or transposed
    views), so the sum is ``L.T @ R`` over the stacked rows: the operands
    are kept and multiplied in one call when ``_BATCH`` elements are
    pending, or at ``total()``.  The sum is reordered, nothing else.
    Operands of other ranks, and large ones (no call to save), are added
    at once.
    """
    __slots__ = ("acc", "rows", "blocks", "size", "summed", "like")

    def __init__(self, like):
        # an integer input's gradient is not cut here: its exactness is checked at the end
        # C order whatever ``like``'s layout (a transposed weight's is Fortran): each term is
        # a C-ordered product; adding it into a Fortran buffer is a slow strided pass
        self.acc = np.zeros_like(like, dtype=np.float64, order="C") \
            if np.asarray(like).dtype.kind in "biu" else np.zeros_like(like, order="C")
        # the pending terms' operands, as they come (a step costs two appends):
        # 1-D rows L_t, R_t, and 2-D blocks; sorted by shape and dtype only if
        # a flush finds them mixed
        self.rows, self.blocks = ([], []), ([], [])
        self.size = 0
        # the sum of the ``add_unbroadcast`` terms so far (one shape and dtype), and
        # what they are reduced to
        self.summed, self.like = None, None

    def add(self, index, d):
        """A contribution that is not a matmul gradient: added now."""
        accumulate_at(self.acc, index, d)

    def add_unbroadcast(self, d, like):
        """``+= unbroadcast(d, like)``: the terms ``d`` summed as they come (one
        addition a step, where a reduction would be two calls and a sum over
        the broadcast axes), reduced once at ``total()``."""
        summed = self.summed
        if summed is not None and type(d) is np.ndarray and d.shape == summed.shape \
                and d.dtype is summed.dtype:
            summed += d
            return
        self._reduce()
        if type(d) is np.ndarray and d.ndim and d.dtype.kind in "fc":
            self.summed, self.like = d.copy(), like
        else:
            self.add(Ellipsis, _sum_to(np.asarray(d), _shape(like)))

    def _reduce(self):
        if self.summed is not None:
            self.add(Ellipsis, _sum_to(self.summed, _shape(self.like)))
            self.summed, self.like = None, None

    def add_grad_a(self, d, x, y):
        """``+= math_matmul_grad_a(d, x, y)``: ``d @ y.T``, or ``outer(d, y)``."""
        if type(d) is np.ndarray and type(y) is np.ndarray:
            if d.ndim == 1 == y.ndim:
                # ``x @ y`` a vector, ``y`` one too: ``x`` is a matrix (an RNN's step)
                return self._keep(self.rows, d, y)
            if d.ndim == 2 == y.ndim and _rank(x) == 2:
                return self._keep(self.blocks, d.T, y.T)
        self.acc += math_matmul_grad_a(d, x, y)

    def add_grad_b(self, d, x, y):
        """``+= math_matmul_grad_b(d, x, y)``: ``x.T @ d``, or ``outer(x, d)``."""
        if type(d) is np.ndarray and type(x) is np.ndarray and d.ndim == x.ndim \
                and d.ndim <= 2 and _rank(y) == 2:
            return self._keep(self.rows if d.ndim == 1 else self.blocks, x, d)
        self.acc += math_matmul_grad_b(d, x, y)

    def add_grad_a_t(self, d, x, y):
        """``+= math_matmul_grad_a(d, x, y).T`` (the gradient of ``w`` in ``w.T @ h``):
        the same rows as ``add_grad_a``, multiplied the other way round."""
        if type(d) is np.ndarray and type(y) is np.ndarray:
            if d.ndim == 1 == y.ndim:
                return self._keep(self.rows, y, d)
            if d.ndim == 2 == y.ndim and _rank(x) == 2:
                return self._keep(self.blocks, y.T, d.T)
        self.acc += math_matmul_grad_a(d, x, y).T

    def add_grad_b_t(self, d, x, y):
        """``+= math_matmul_grad_b(d, x, y).T`` (the gradient of ``w`` in ``x @ w.T``,
        an ``nn.LSTM``'s): ``d.T @ x``, or ``outer(d, x)``."""
        if type(d) is np.ndarray and type(x) is np.ndarray and d.ndim == x.ndim \
                and d.ndim <= 2 and _rank(y) == 2:
            return self._keep(self.rows if d.ndim == 1 else self.blocks, d, x)
        self.acc += math_matmul_grad_b(d, x, y).T

    def add_dot_grad_a(self, d, x, y):
        """``+= math_dot_grad_a(d, x, y)``: where ``np.dot`` is a matmul, as its gradient."""
        if _rank(x) >= 1 and np.ndim(y) in (1, 2):
            return self.add_grad_a(d, x, y)
        self.acc += math_dot_grad_a(d, x, y)

    def add_dot_grad_b(self, d, x, y):
        """``+= math_dot_grad_b(d, x, y)``: where ``np.dot`` is a matmul, as its gradient."""
        if np.ndim(x) >= 1 and _rank(y) in (1, 2):
            return self.add_grad_b(d, x, y)
        self.acc += math_dot_grad_b(d, x, y)

    def add_matmul(self, a, b, transpose_a, transpose_b):
        """``+= op(a) @ op(b)`` for 2-D operands: ``MatMul``'s product, transposed as flagged."""
        if type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == b.ndim == 2:
            return self._keep(self.blocks, a if transpose_a else a.T, b.T if transpose_b else b)
        self.acc += (a.T if transpose_a else a) @ (b.T if transpose_b else b)

    def _keep(self, pending, lhs, rhs):
        n = lhs.size + rhs.size
        if n > _BATCH >> 4:
            # large: one call more or less costs nothing to speak of
            self.acc += np.multiply.outer(lhs, rhs) if lhs.ndim == 1 else lhs.T @ rhs
            return
        pending[0].append(lhs)
        pending[1].append(rhs)
        self.size += n
        if self.size > _BATCH:
            self._flush()

    def _flush(self):
        for (lhs, rhs), uniform in ((self.rows, _uniform_rows), (self.blocks, _uniform)):
            if not lhs:
                continue
            if uniform(lhs) and uniform(rhs):
                self._multiply(lhs, rhs)
            else:
                groups = {}
                for a, b in zip(lhs, rhs):
                    group = groups.setdefault((a.shape, b.shape, a.dtype, b.dtype), ([], []))
                    group[0].append(a)
                    group[1].append(b)
                for group in groups.values():
                    self._multiply(*group)
            lhs.clear()
            rhs.clear()
        self.size = 0

    def _multiply(self, lhs, rhs):
        """Add ``sum_t lhs[t].T @ rhs[t]`` for terms of one shape and dtype each side."""
        if lhs[0].ndim == 1:
            self.acc += _stack_rows(lhs).T @ _stack_rows(rhs)
        else:
            self.acc += np.concatenate(lhs).T @ np.concatenate(rhs)

    def total(self):
        """The sum so far (the loop is over: the pending batch is multiplied)."""
        if self.size:
            self._flush()
        self._reduce()
        return self.acc


def math_matmul_grad_sum(like):
    """A ``MatMulGradSum`` accumulating into zeros shaped like ``like``."""
    return MatMulGradSum(like)
