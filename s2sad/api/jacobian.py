"""Lazily evaluated Jacobian and Hessian matrices (``paddle.incubate.autograd`` semantics).

Inputs and outputs are flattened and concatenated, so ``J`` is a matrix:
``[M, N]`` with ``M`` the total output size and ``N`` the total input size,
or ``[B, M, N]`` when the first axis of every input and output is a batch.
Nothing is differentiated until ``J`` is indexed; then only the rows the
index needs are computed, each by one reverse-mode pass (a vjp with a basis
cotangent), and every computed row is kept, so indexing again, or with an
overlapping slice, computes only rows not seen before.
"""
import numpy as np

from ..tensor import Tensor
from .args import leaves_of
from .functional import grad
from .gradoperation import GradOperation


def _raw(x):
    return np.asarray(getattr(x, "_data", x))


def _as_inputs(xs):
    seq = tuple(xs) if isinstance(xs, (tuple, list)) else (xs,)
    for x in seq:
        if not isinstance(x, (Tensor, np.ndarray)):
            raise TypeError("'xs' must be a Tensor, an array or a tuple of them, but got %s"
                            % type(x).__name__)
    return seq



def _rebuild(structure, it):
    if isinstance(structure, (tuple, list)):
        return tuple(_rebuild(s, it) for s in structure)
    return next(it)


class Jacobian:
    """The Jacobian of ``func`` at ``xs``, evaluated by rows on indexing.

    ``func`` takes the tensors of ``xs`` (``func(*xs)`` for a tuple) and
    returns a tensor or a tuple of them.  ``is_batched``: the first axis of
    every input and output is a batch axis of the same size ``B``, samples are
    independent, and ``J`` has shape ``[B, M, N]`` (the rows are the middle
    axis).  Indexing (``J[:]``, ``J[0, :]``, ``J[:, 0:3]``, batched
    ``J[:, 0, :]``) returns a Tensor when the inputs were Tensors.
    ``num_evaluations`` counts the rows computed so far.
    """

    def __init__(self, func, xs, is_batched=False):
        if not isinstance(is_batched, bool):
            raise TypeError("'is_batched' must be bool, but got %s" % type(is_batched).__name__)
        self._func = func
        self._xs = _as_inputs(xs)
        self._is_batched = is_batched
        self._tensor_in = any(isinstance(x, Tensor) for x in self._xs)
        self._ys = func(*self._xs)
        self._y_leaves = [_raw(y) for y in leaves_of(self._ys)]
        self._x_arrays = [_raw(x) for x in self._xs]
        if is_batched:
            self._check_batch()
            b = self._x_arrays[0].shape[0]
            self._x_sizes = [int(np.prod(x.shape[1:], dtype=np.int64)) for x in self._x_arrays]
            self._y_sizes = [int(np.prod(y.shape[1:], dtype=np.int64)) for y in self._y_leaves]
            self._shape = (b, sum(self._y_sizes), sum(self._x_sizes))
        else:
            self._x_sizes = [x.size for x in self._x_arrays]
            self._y_sizes = [y.size for y in self._y_leaves]
            self._shape = (sum(self._y_sizes), sum(self._x_sizes))
        self._rows = {}
        self._vjp = GradOperation(get_all=True, sens_param=True)(func)
        dtypes = [x.dtype for x in self._x_arrays]
        self._dtype = np.result_type(*dtypes) if dtypes else np.float64

    def _check_batch(self):
        sizes = {a.shape[0] if a.ndim else None for a in self._x_arrays + self._y_leaves}
        if len(sizes) != 1 or None in sizes:
            raise ValueError("with is_batched=True, every input and output must have the same "
                             "first (batch) axis, but their shapes are %s and %s"
                             % ([list(a.shape) for a in self._x_arrays],
                                [list(a.shape) for a in self._y_leaves]))

    # ------------------------------------------------------------ properties
    @property
    def shape(self):
        """``[M, N]``, or ``[B, M, N]`` when batched."""
        return list(self._shape)

    @property
    def num_evaluations(self):
        """How many rows have been computed (one reverse-mode pass each)."""
        return len(self._rows)

    @property
    def _row_axis(self):
        return 1 if self._is_batched else 0

    # ------------------------------------------------------------ evaluation
    def _cotangent(self, row):
        """The basis cotangent selecting output row ``row``, mirroring ``func``'s output."""
        leaves = []
        offset = 0
        for y, size in zip(self._y_leaves, self._y_sizes):
            s = np.zeros(y.shape, dtype=y.dtype if y.dtype.kind in "fc" else self._dtype)
            if offset <= row < offset + size:
                if self._is_batched:
                    s.reshape(y.shape[0], -1)[:, row - offset] = 1
                else:
                    s.reshape(-1)[row - offset] = 1
            offset += size
            leaves.append(Tensor(s) if self._tensor_in else s)
        return _rebuild(self._ys, iter(leaves))

    def _evaluate(self, row):
        grads = self._vjp(*self._xs, self._cotangent(row))
        flat = []
        for g, x in zip(grads, self._x_arrays):
            g = _raw(g)
            flat.append(g.reshape(x.shape[0], -1) if self._is_batched else g.reshape(-1))
        if not flat:
            return np.zeros((self._shape[0], 0) if self._is_batched else (0,), self._dtype)
        return np.concatenate(flat, axis=-1)

    def _row(self, row):
        value = self._rows.get(row)
        if value is None:
            value = self._rows[row] = self._evaluate(row)
        return value

    # -------------------------------------------------------------- indexing
    def _normalize(self, index):
        index = index if isinstance(index, tuple) else (index,)
        ndim = len(self._shape)
        if sum(1 for i in index if i is Ellipsis) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if any(i is Ellipsis for i in index):
            k = next(j for j, i in enumerate(index) if i is Ellipsis)
            fill = ndim - (len(index) - 1)
            index = index[:k] + (slice(None),) * fill + index[k + 1:]
        if len(index) > ndim:
            raise IndexError("too many indices for a Jacobian of shape %s: %d were given"
                             % (self.shape, len(index)))
        index = index + (slice(None),) * (ndim - len(index))
        for i in index:
            if not isinstance(i, (int, np.integer, slice)) or isinstance(i, bool):
                raise TypeError("a Jacobian is indexed with ints and slices, but got %s"
                                % type(i).__name__)
        return index

    def __getitem__(self, index):
        index = self._normalize(index)
        axis = self._row_axis
        m = self._shape[axis]
        sel = index[axis]
        if isinstance(sel, slice):
            rows = list(range(m)[sel])
        else:
            r = int(sel)
            if not -m <= r < m:
                raise IndexError("row %d is out of range for a Jacobian with %d rows" % (r, m))
            rows = [r % m]
        for r in rows:
            self._row(r)
        if isinstance(sel, slice):
            if rows:
                part = np.stack([self._rows[r] for r in rows], axis=axis)
            else:
                shape = list(self._shape)
                shape[axis] = 0
                part = np.zeros(shape, self._dtype)
            result = part[index[:axis] + (slice(None),) + index[axis + 1:]]
        else:
            result = self._rows[rows[0]][index[:axis] + index[axis + 1:]]
        result = np.array(result)
        return Tensor(result) if self._tensor_in else result

    def __repr__(self):
        return "Jacobian(shape=%s, rows evaluated=%d)" % (self.shape, self.num_evaluations)


class Hessian(Jacobian):
    """The Hessian of a scalar ``func`` at ``xs``: the Jacobian of its gradient.

    ``func`` must return one element (per batch element when ``is_batched``:
    shape ``[B]`` or ``[B, 1]``).  ``H`` is ``[N, N]`` (``[B, N, N]``), rows
    evaluated lazily and cached as for ``Jacobian``; each row differentiates
    the compiled gradient once more in reverse mode.
    """

    def __init__(self, func, xs, is_batched=False):
        inputs = _as_inputs(xs)
        out = func(*inputs)
        self._check_scalar(out, is_batched)
        positions = 0 if len(inputs) == 1 else tuple(range(len(inputs)))
        Jacobian.__init__(self, grad(func, positions), xs, is_batched)

    @staticmethod
    def _check_scalar(out, is_batched):
        if isinstance(out, (tuple, list)):
            found = "is a tuple of %d outputs" % len(out)
        else:
            shape = _raw(out).shape
            ok = (len(shape) in (1, 2) and int(np.prod(shape[1:], dtype=np.int64)) == 1) \
                if is_batched else int(np.prod(shape, dtype=np.int64)) == 1
            if ok:
                return
            found = "has shape %s" % list(shape)
        raise ValueError(
            "For 'Hessian', the function must return a scalar%s, but its output %s; reduce "
            "it first (for example return out.sum()) or use 'Jacobian' (or 'jacrev') for "
            "the full Jacobian" % (" per batch element (shape [B] or [B, 1])" if is_batched
                                   else "", found))
