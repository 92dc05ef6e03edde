"""Runtime of ``opt/batch.py``: a loop's popped values as rows of one array.

``stack_rows(stack, slot, *operands)`` gathers slot ``slot`` of every entry a
loop pushed.  Arrays of one shape, dtype and rank become one array whose row
``k`` is entry ``k``; elementwise math on it runs once for many iterations
and gives, row by row, exactly what the loop would have computed.  When the
rows would take much memory they are stacked and computed a block at a time,
as the loop reaches each block (``Rows``); when they cannot be stacked
(scalars, shapes or dtypes that differ, an operand of higher rank, which
would broadcast across the rows) or are large enough that a call's overhead
does not matter, the ``Rows`` would run the same expressions on one row when
read, but generated code does not read them: ``row_group`` has the loop run
its own ops instead.

``row_group`` gives the loop the rows it reads, one call a step, or tells it
to run its own ops where the rows were not stacked (``opt/batch.py`` writes
both, under ``if batched:``): rows too large or too few a block to stack pay
less than the copies and the larger arrays cost.
"""
import operator

import numpy as np

# stacked values at most this large (elements) are computed at once; above,
# a block of rows at a time, so memory stays bounded whatever the loop count
_BLOCK = 1 << 16
# ... and a block holds at most this fraction of the loop's rows, once they
# pass _SMALL elements: each stacked column and each value computed from it
# is a copy beside the stack, which holds every row until the loop pops it
_FRACTION = 16
_SMALL = 1 << 13
# rows larger than this are not stacked: the call overhead saved is small
# beside the work, and stacking would only copy them
_ROW_SIZE = 4096
# ... nor, when they must be stacked a block at a time, rows larger than this
# or blocks of fewer rows: a block's copies and its ops on arrays past the
# processor's first-level cache cost more than the calls saved (an LSTM's
# [16, 64] gates, 4 rows a block over 50 steps, ran 1.25x slower batched; rows
# of 64 elements, 25 a block, 0.6x)
_BLOCKED_ROW_SIZE = 256
_MIN_BLOCK_ROWS = 16


def stack_rows(stack, slots, *operands):
    """Slot(s) ``slots`` of the entries of ``stack``: stacked arrays, or ``Rows``.

    ``slots`` is an index, a tuple of them, or ``None`` when each entry is
    the one value pushed.
    """
    single = type(slots) is not tuple
    if slots is None:
        cols = [list(stack)]
    else:
        cols = [[entry[k] for entry in stack] for k in ((slots,) if single else slots)]
    size = _uniform(cols, operands)
    if size is None or size > _ROW_SIZE:
        out = [Rows(None, col, 1, False) for col in cols]
    elif size * len(cols[0]) <= _SMALL:
        out = [np.array(col) for col in cols]
    else:
        step = min(_BLOCK // size, -(-len(cols[0]) // _FRACTION))
        blocked = step >= _MIN_BLOCK_ROWS and size <= _BLOCKED_ROW_SIZE
        out = [Rows(None, col, step if blocked else 1, blocked) for col in cols]
    return out[0] if single else tuple(out)


def _uniform(cols, operands):
    """The rows' size if every column's rows stack exactly; else ``None``."""
    if not cols[0]:
        return None
    ndim, size = None, 0
    for col in cols:
        first = col[0]
        if set(map(type, col)) != {np.ndarray} or len({r.dtype for r in col}) != 1 \
                or len({r.shape for r in col}) != 1 or ndim not in (None, first.ndim):
            return None
        ndim, size = first.ndim, max(size, first.size)
    if any(np.ndim(v) > ndim for v in operands):
        return None
    return size


class Rows:
    """Popped values, and expressions of them, computed as the loop reads them.

    ``rows[k]`` is the value for entry ``k``.  Stacked rows are computed a
    block of ``step`` rows at a time (each op once per block); otherwise
    one row at a time, from that entry alone.  A value the loop reads, or
    that two expressions share, is kept until the loop leaves its block, so
    it is computed once; a value only one expression reads (a column of
    popped values, ``1 + e`` under ``1 / (1 + e)``) is let go once that
    expression has it, so a block holds little more than what the loop
    reads.  Operators run as Python operators and ufuncs as ufuncs: the
    same calls on the same values the loop would have made.
    """

    __slots__ = ("fn", "args", "step", "stacked", "lo", "value", "readers", "read")

    def __init__(self, fn, args, step, stacked):
        self.fn, self.args, self.step, self.stacked = fn, args, step, stacked
        self.lo, self.value = None, None
        self.readers, self.read = 0, False     # expressions reading it; the loop reads it
        if fn is not None:
            for a in args:
                if type(a) is Rows:
                    a.readers += 1

    def __getitem__(self, k):
        self.read = True
        lo = k - k % self.step
        if self.lo != lo:
            self._evaluate(lo)
        return self.value[k - lo] if self.stacked else self.value

    def _evaluate(self, lo):
        if self.fn is None:         # a column: args are its rows
            rows = self.args[lo:lo + self.step]
            self.value = np.array(rows) if self.stacked else rows[0]
        else:
            self.value = self.fn(*[a._block(lo) if type(a) is Rows else a for a in self.args])
            for a in self.args:
                if type(a) is Rows and a.readers == 1 and not a.read:
                    a.lo, a.value = None, None
        self.lo = lo

    def _block(self, lo):
        if self.lo != lo:
            self._evaluate(lo)
        return self.value

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            return NotImplemented
        return Rows(ufunc, inputs, self.step, self.stacked)

    def __neg__(self):
        return Rows(operator.neg, (self,), self.step, self.stacked)


def row_group(*values):
    """``(reader, pays)``: ``reader[k]`` gives row ``k`` of each value the loop reads,
    one value's row itself, several values' as a tuple (``RowGroup``); ``pays``
    is False where the loop had better compute them itself from the row it pops.

    Rows computed one at a time (``Rows`` that could not stack) never pay: the
    same ops, through Python.  Nor do rows ``stack_rows`` leaves unstacked for
    being too large for blocks of enough rows.
    """
    kinds = {(v.step, v.stacked) if type(v) is Rows else type(v) for v in values}
    kind = kinds.pop() if len(kinds) == 1 else None
    if kind is not np.ndarray and not (type(kind) is tuple and kind[1]):
        return None, False
    return (values[0] if len(values) == 1 else RowGroup(values)), True


class RowGroup:
    """Several stacked values of one ``stack_rows`` call, read together:
    ``group[k]`` is the tuple of each value's row ``k``, one method call where
    reading each would make one call per value.  The rows of a block are made
    when the loop enters it, as views of the values' blocks (what ``Rows``
    holds anyway); arrays stacked at once are taken ``_GROUP_ROWS`` rows at a
    time, so the views made never outnumber a block's.
    """

    __slots__ = ("values", "step", "lo", "block")

    def __init__(self, values):
        self.values, self.lo, self.block = values, None, None
        self.step = values[0].step if type(values[0]) is Rows else _GROUP_ROWS
        for v in values:
            if type(v) is Rows:
                v.read = True   # kept while the loop is in its block, as a read keeps it

    def __getitem__(self, k):
        lo = k - k % self.step
        if self.lo != lo:
            self._evaluate(lo)
        return self.block[k - lo]

    def _evaluate(self, lo):
        step = self.step
        self.block = list(zip(*[v._block(lo) if type(v) is Rows else v[lo:lo + step]
                                for v in self.values]))
        self.lo = lo


# stacked arrays' rows are made as views this many at a time
_GROUP_ROWS = 64


def _binary(op):
    return (lambda a, b: Rows(op, (a, b), a.step, a.stacked),
            lambda a, b: Rows(op, (b, a), a.step, a.stacked))


for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv)):
    _fwd, _rev = _binary(_op)
    setattr(Rows, "__%s__" % _name, _fwd)
    setattr(Rows, "__r%s__" % _name, _rev)


__all__ = ["stack_rows", "Rows", "row_group", "RowGroup"]
