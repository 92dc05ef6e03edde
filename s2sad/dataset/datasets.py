"""Datasets as chains of nodes, each turning its input's rows into new rows.

A row is a tuple of NumPy arrays, one per column.  Every node's ``_rows()``
returns a fresh iterator over one epoch, so each epoch reshuffles and reruns
the ``map`` functions; nothing is cached between epochs.
"""
import numpy as np

from ..common.seed import get_seed, shuffle_generator
from ..tensor import Tensor

__all__ = ["Dataset", "NumpySlicesDataset", "GeneratorDataset"]


class Dataset:
    """What every dataset can do: chain operations, report its size, be read."""

    def __init__(self, columns):
        self._columns = list(columns)

    # ---- chaining ---------------------------------------------------------
    def batch(self, batch_size, drop_remainder=False, num_parallel_workers=None):
        """Stack ``batch_size`` consecutive rows per column (the last batch may be smaller)."""
        return _Batch(self, batch_size, drop_remainder)

    def shuffle(self, buffer_size):
        """Shuffle through a buffer of ``buffer_size`` rows (all rows when it holds them all)."""
        return _Shuffle(self, buffer_size)

    def map(self, operations, input_columns=None, output_columns=None,
            num_parallel_workers=None):
        """Apply ``operations`` (a callable, or a list applied in order) to columns of each row."""
        return _Map(self, operations, input_columns, output_columns)

    def repeat(self, count=None):
        """The dataset ``count`` times over, each pass an epoch of its own."""
        return _Repeat(self, count)

    # ---- reading ----------------------------------------------------------
    def create_tuple_iterator(self, columns=None, num_epochs=-1, output_numpy=False,
                              do_copy=True):
        """An iterator yielding a list of values per row; each ``for`` over it reads one epoch."""
        indices = self._column_indices(columns)
        return _Iterator(self, num_epochs, output_numpy,
                         lambda row: [row[i] for i in indices])

    def create_dict_iterator(self, num_epochs=-1, output_numpy=False, do_copy=True):
        """An iterator yielding one dict column name -> value per row."""
        names = list(self._columns)
        return _Iterator(self, num_epochs, output_numpy, lambda row: dict(zip(names, row)))

    def __iter__(self):
        return iter(self.create_tuple_iterator(num_epochs=1))

    def get_dataset_size(self):
        """The number of rows (batches, after ``batch``) of one epoch.

        Counted without reading the data where the sources know their length,
        so asking draws nothing from the shuffling stream.
        """
        return self._size()

    def get_col_names(self):
        return list(self._columns)

    def get_batch_size(self):
        return 1

    def _column_indices(self, columns):
        if columns is None:
            return list(range(len(self._columns)))
        columns = [columns] if isinstance(columns, str) else list(columns)
        unknown = [c for c in columns if c not in self._columns]
        if unknown:
            raise ValueError("columns %s are not in the dataset; its columns are %s"
                             % (unknown, self._columns))
        return [self._columns.index(c) for c in columns]

    def _rows(self):
        raise NotImplementedError

    def _size(self):
        return self._child._size()


class NumpySlicesDataset(Dataset):
    """Rows sliced along the first axis of in-memory data.

    ``data``: a dict (one column per key, named after it), a tuple (one column
    per element), or a list or array (one column).  ``shuffle`` defaults to
    True, as in MindSpore.  ``num_shards``/``shard_id`` read one shard (see
    ``_Order``), for data-parallel training.
    """

    def __init__(self, data, column_names=None, num_samples=None, num_parallel_workers=1,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None):
        _no_sampler(sampler)
        if isinstance(data, dict):
            names, arrays = list(data.keys()), [_array(v) for v in data.values()]
        elif isinstance(data, tuple):
            names, arrays = None, [_array(v) for v in data]
        else:
            names, arrays = None, [_array(data)]
        names = _column_names(column_names, names, len(arrays))
        lengths = {a.shape[0] if a.ndim else None for a in arrays}
        if None in lengths or len(lengths) != 1:
            raise ValueError("NumpySlicesDataset: every column of 'data' must have the same "
                             "length along its first axis, but got shapes %s"
                             % [a.shape for a in arrays])
        super().__init__(names)
        self._arrays = arrays
        self._order = _Order(lengths.pop(), shuffle, num_samples, "NumpySlicesDataset",
                             _Shard.of(num_shards, shard_id, "NumpySlicesDataset"))

    def _rows(self):
        for i in self._order.indices():
            yield tuple(np.array(a[i]) for a in self._arrays)     # a copy, never a view

    def _size(self):
        return self._order.count


class GeneratorDataset(Dataset):
    """Rows from Python: a generator function (called once per epoch), an
    iterable, or an object with ``__getitem__`` and ``__len__`` (which can be
    shuffled; it is by default, as in MindSpore).  Each item is a tuple with
    one value per column (or, for one column, the value alone).  Only an
    indexable source can be sharded (``num_shards``/``shard_id``).
    """

    def __init__(self, source, column_names=None, column_types=None, schema=None,
                 num_samples=None, num_parallel_workers=1, shuffle=None, sampler=None,
                 num_shards=None, shard_id=None, python_multiprocessing=True,
                 max_rowsize=None):
        _no_sampler(sampler)
        shard = _Shard.of(num_shards, shard_id, "GeneratorDataset")
        if column_names is None:
            raise ValueError("GeneratorDataset: pass 'column_names', one name per value "
                             "each item of 'source' holds")
        super().__init__(_column_names(column_names, None, None))
        self._source = source
        self._indexable = hasattr(source, "__getitem__") and hasattr(source, "__len__")
        if self._indexable:
            self._order = _Order(len(source), shuffle, num_samples, "GeneratorDataset", shard)
        elif shard is not None:
            raise ValueError("GeneratorDataset: 'num_shards' and 'shard_id' need a 'source' with "
                             "__getitem__ and __len__ (each rank picks its rows by index); a "
                             "generator cannot be split")
        elif shuffle:
            raise ValueError("GeneratorDataset: shuffle=True needs a 'source' with __getitem__ "
                             "and __len__; for a generator, chain .shuffle(buffer_size)")
        elif hasattr(source, "__next__"):
            raise TypeError("GeneratorDataset: 'source' is an iterator, which can be read only "
                            "once; pass the generator function itself (source=gen, not gen()) "
                            "or an iterable, so that every epoch starts over")
        elif not (callable(source) or hasattr(source, "__iter__")):
            raise TypeError("GeneratorDataset: 'source' must be a generator function, an "
                            "iterable or an object with __getitem__ and __len__, but got %s"
                            % type(source).__name__)
        else:
            self._num_samples = num_samples

    def _items(self):
        if self._indexable:
            return (self._source[int(i)] for i in self._order.indices())
        items = self._source() if callable(self._source) else iter(self._source)
        if self._num_samples is not None:
            items = (item for _, item in zip(range(self._num_samples), items))
        return items

    def _size(self):
        return self._order.count if self._indexable else sum(1 for _ in self._items())

    def _rows(self):
        width = len(self._columns)
        for item in self._items():
            several = isinstance(item, tuple) or (isinstance(item, list) and width > 1)
            values = tuple(item) if several else (item,)
            if len(values) != width:
                raise ValueError("GeneratorDataset: an item of 'source' has %d values but "
                                 "column_names names %d columns (%s)"
                                 % (len(values), width, self._columns))
            yield tuple(_array(v) for v in values)


class _Batch(Dataset):
    def __init__(self, child, batch_size, drop_remainder):
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError("batch: 'batch_size' must be a positive int, but got %r"
                             % (batch_size,))
        super().__init__(child._columns)
        self._child, self._batch_size = child, int(batch_size)
        self._drop = bool(drop_remainder)

    def get_batch_size(self):
        return self._batch_size

    def _size(self):
        rows = self._child._size()
        return rows // self._batch_size if self._drop else -(-rows // self._batch_size)

    def _rows(self):
        pending = []
        for row in self._child._rows():
            pending.append(row)
            if len(pending) == self._batch_size:
                yield self._stack(pending)
                pending = []
        if pending and not self._drop:
            yield self._stack(pending)

    def _stack(self, rows):
        columns = []
        for name, values in zip(self._columns, zip(*rows)):
            shapes = {v.shape for v in values}
            if len(shapes) != 1:
                raise ValueError("batch: the rows of column %r have different shapes %s; "
                                 "map them to one shape before batching"
                                 % (name, sorted(shapes)))
            columns.append(np.stack(values))
        return tuple(columns)


class _Shuffle(Dataset):
    def __init__(self, child, buffer_size):
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, (int, np.integer)) \
                or buffer_size < 2:
            raise ValueError("shuffle: 'buffer_size' must be an int of at least 2, but got %r"
                             % (buffer_size,))
        super().__init__(child._columns)
        self._child, self._buffer_size = child, int(buffer_size)

    def _rows(self):
        """Fill a buffer; emit a random one of its rows and put the next row in its place."""
        rng = shuffle_generator()
        buffer = []
        for row in self._child._rows():
            if len(buffer) < self._buffer_size:
                buffer.append(row)
                continue
            i = rng.integers(len(buffer))
            yield buffer[i]
            buffer[i] = row
        for i in rng.permutation(len(buffer)):
            yield buffer[i]


class _Map(Dataset):
    def __init__(self, child, operations, input_columns, output_columns):
        ops = list(operations) if isinstance(operations, (list, tuple)) else [operations]
        for op in ops:
            if not callable(op):
                raise TypeError("map: 'operations' must be callables (functions taking and "
                                "returning NumPy arrays), but got %s" % type(op).__name__)
        inputs = _names(input_columns, "input_columns") or child._columns[:1]
        outputs = _names(output_columns, "output_columns") or inputs
        first = min(child._column_indices(inputs))
        kept = [c for c in child._columns if c not in inputs]
        names = kept[:first] + outputs + kept[first:]
        if len(set(names)) != len(names):
            raise ValueError("map: the output columns %s repeat a column the dataset keeps (%s)"
                             % (outputs, kept))
        super().__init__(names)
        self._child, self._ops, self._inputs, self._outputs = child, ops, inputs, outputs
        self._first = first

    def _rows(self):
        source = self._child._columns
        where = [source.index(c) for c in self._inputs]
        rest = [i for i in range(len(source)) if i not in where]
        for row in self._child._rows():
            values = tuple(row[i] for i in where)
            for op in self._ops:
                out = op(*values)
                values = tuple(out) if isinstance(out, tuple) else (out,)
            if len(values) != len(self._outputs):
                raise ValueError("map: the operations returned %d values for the %d columns "
                                 "%s" % (len(values), len(self._outputs), self._outputs))
            kept = [row[i] for i in rest]
            yield tuple(kept[:self._first]) + tuple(_array(v) for v in values) \
                + tuple(kept[self._first:])


class _Repeat(Dataset):
    def __init__(self, child, count):
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError("repeat: 'count' must be a positive int (endless repetition is "
                             "not supported: read the epochs you need with num_epochs), but "
                             "got %r" % (count,))
        super().__init__(child._columns)
        self._child, self._count = child, int(count)

    def get_batch_size(self):
        return self._child.get_batch_size()

    def _size(self):
        return self._child._size() * self._count

    def _rows(self):
        for _ in range(self._count):
            yield from self._child._rows()


class _Iterator:
    """Reads a dataset ``num_epochs`` times (-1: without end), one epoch per ``for``."""

    def __init__(self, dataset, num_epochs, output_numpy, shape_row):
        if isinstance(num_epochs, bool) or not isinstance(num_epochs, (int, np.integer)) \
                or (num_epochs < 1 and num_epochs != -1):
            raise ValueError("'num_epochs' must be a positive int or -1 (no limit), but got %r"
                             % (num_epochs,))
        self._dataset, self._epochs_left = dataset, int(num_epochs)
        self._convert = np.asarray if output_numpy else Tensor
        self._shape_row, self._epoch = shape_row, None

    def __iter__(self):
        return self

    def __next__(self):
        if self._epoch is None:
            if self._epochs_left == 0:
                raise RuntimeError("this iterator has read all the epochs it was created for "
                                   "(num_epochs); create it with a larger num_epochs, or -1")
            self._epochs_left -= 1
            self._epoch = self._dataset._rows()
        try:
            row = next(self._epoch)
        except StopIteration:
            self._epoch = None
            raise
        return self._shape_row([self._convert(v) for v in row])


class _Order:
    """The row indices of one epoch of an indexable source: in order, or a fresh permutation;
    with a ``shard``, this shard's share of them."""

    def __init__(self, length, shuffle, num_samples, who, shard=None):
        if shuffle is not None and not isinstance(shuffle, bool):
            raise TypeError("%s: 'shuffle' must be a bool or None, but got %s"
                            % (who, type(shuffle).__name__))
        if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(
                num_samples, (int, np.integer)) or num_samples < 1):
            raise ValueError("%s: 'num_samples' must be a positive int or None, but got %r"
                             % (who, num_samples))
        self._length, self._shuffle, self._shard = length, shuffle is not False, shard
        rows = length if shard is None else shard.rows(length)
        self.count = rows if num_samples is None else min(rows, int(num_samples))

    def indices(self):
        if self._shard is not None:
            return self._shard.pick(self._length, self._shuffle)[:self.count]
        order = shuffle_generator().permutation(self._length) if self._shuffle \
            else np.arange(self._length)
        return order[:self.count]


class _Shard:
    """Shard ``shard_id`` of ``num_shards``, as MindSpore's distributed sampler deals them.

    Every shard reads ``ceil(length / num_shards)`` rows, so the ranks of a
    data-parallel job take the same number of steps: shard ``k`` takes rows
    ``k, k + num_shards, k + 2 num_shards, ...`` of the epoch's order,
    wrapping round to the first rows when the length does not divide.
    Shuffled, the epoch's order must be the same on every rank (else shards
    overlap and rows are lost), so it is drawn from a stream seeded by the
    global seed (0 when none is set; give every rank the same seed) and the
    epoch's number, not from the shuffling stream.
    """

    def __init__(self, num_shards, shard_id):
        self.num_shards, self.shard_id, self._epoch = num_shards, shard_id, 0

    @classmethod
    def of(cls, num_shards, shard_id, who):
        """The shard the two arguments name, or None when neither is given."""
        if num_shards is None and shard_id is None:
            return None
        for name, value in (("num_shards", num_shards), ("shard_id", shard_id)):
            if value is None:
                raise ValueError("%s: 'num_shards' and 'shard_id' go together, but %r is "
                                 "missing (e.g. num_shards=get_group_size(), "
                                 "shard_id=get_rank())" % (who, name))
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError("%s: %r must be an int, but got %s"
                                % (who, name, type(value).__name__))
        if num_shards < 1 or not 0 <= shard_id < num_shards:
            raise ValueError("%s: need num_shards >= 1 and 0 <= shard_id < num_shards, but got "
                             "num_shards=%d, shard_id=%d" % (who, num_shards, shard_id))
        return cls(int(num_shards), int(shard_id))

    def rows(self, length):
        return -(-length // self.num_shards) if length else 0

    def pick(self, length, shuffle):
        """This shard's row indices for the next epoch."""
        if shuffle:
            seed = get_seed() or 0
            order = np.random.default_rng((seed, self._epoch)).permutation(length)
            self._epoch += 1
        else:
            order = np.arange(length)
        positions = np.arange(self.rows(length)) * self.num_shards + self.shard_id
        return order[positions % length] if length else order


def _array(value):
    """A column value as a NumPy array (a copy: what a row holds must not alias the source)."""
    if isinstance(value, Tensor):
        return value.asnumpy().copy()
    return np.array(value)


def _names(columns, what):
    if columns is None:
        return None
    names = [columns] if isinstance(columns, str) else list(columns)
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError("map: '%s' must be a column name or a list of them, but got %r"
                        % (what, columns))
    return names


def _column_names(column_names, default, count):
    """The column names: given, else ``default``, else column_0, column_1, ..."""
    if column_names is None:
        return default if default is not None else ["column_%d" % i for i in range(count)]
    names = [column_names] if isinstance(column_names, str) else list(column_names)
    if not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        raise ValueError("'column_names' must be distinct strs, but got %r" % (column_names,))
    if count is not None and len(names) != count:
        raise ValueError("'column_names' names %d columns but the data has %d: %r"
                         % (len(names), count, column_names))
    return names


def _no_sampler(sampler):
    if sampler is not None:
        raise ValueError("'sampler' is not supported: s2sad's datasets read in-memory data; "
                         "use shuffle=, num_samples= and, for data-parallel training, "
                         "num_shards= and shard_id=")
