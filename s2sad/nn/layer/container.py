"""Containers: ``SequentialCell`` (applies its cells in order) and ``CellList``.

Both keep their cells as sub-Cells named ``"0"``, ``"1"``, ... (so Parameters
are named ``layers.0.weight``) and are indexable and iterable.  Inside a
``construct``, ``for cell in self.layers:`` is unrolled while compiling: the
list is known then, and the compiled code is guarded on its length and on
each cell's class.
"""
from collections import OrderedDict

from ..cell import Cell

__all__ = ["SequentialCell", "CellList"]


def _check_cell(cell, who):
    if not isinstance(cell, Cell):
        raise TypeError("For '%s', each item must be a Cell, but got %s"
                        % (who, type(cell).__name__))
    return cell


class _ListBase(Cell):
    """Shared list behaviour: sub-Cells registered under their index."""

    def __init__(self):
        super().__init__()

    def _items(self):
        return list(self._cells.values())

    def _renumber(self, cells):
        for key in list(self._cells):
            object.__delattr__(self, key)
        self._cells.clear()
        for i, cell in enumerate(cells):
            self.insert_child_to_cell(str(i), _check_cell(cell, type(self).__name__))

    def _index(self, index):
        n = len(self._cells)
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError("For '%s', the index must be an int or a slice, but got %s"
                            % (type(self).__name__, type(index).__name__))
        if not -n <= index < n:
            raise IndexError("For '%s', index %d is out of range for %d cells"
                             % (type(self).__name__, index, n))
        return index % n

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(self._items()[index])
        return self._items()[self._index(index)]

    def __setitem__(self, index, cell):
        cells = self._items()
        cells[self._index(index)] = _check_cell(cell, type(self).__name__)
        self._renumber(cells)

    def __delitem__(self, index):
        cells = self._items()
        del cells[index if isinstance(index, slice) else self._index(index)]
        self._renumber(cells)

    def __len__(self):
        return len(self._cells)

    def __iter__(self):
        return iter(self._items())

    def append(self, cell):
        self.insert_child_to_cell(str(len(self._cells)), _check_cell(cell, type(self).__name__))
        return self

    def extend(self, cells):
        for cell in cells:
            self.append(cell)
        return self

    def insert(self, index, cell):
        cells = self._items()
        cells.insert(index, _check_cell(cell, type(self).__name__))
        self._renumber(cells)


class SequentialCell(_ListBase):
    """Cells applied one after the other: ``SequentialCell([Dense(2, 3), ReLU()])``.

    Takes the cells as arguments, as one list, or as one ``OrderedDict`` of
    name -> cell (the names then replace the indices).
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, cell in args[0].items():
                self.insert_child_to_cell(name, _check_cell(cell, "SequentialCell"))
            return
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        for i, cell in enumerate(args):
            self.insert_child_to_cell(str(i), _check_cell(cell, "SequentialCell"))

    @property
    def cell_list(self):
        """The cells, in order (what ``construct`` iterates over)."""
        return self._items()

    def construct(self, input_data):
        for cell in self.cell_list:
            input_data = cell(input_data)
        return input_data


class CellList(_ListBase):
    """A list of Cells; iterate over it in ``construct`` (``for cell in self.layers:``)."""

    def __init__(self, args=None):
        super().__init__()
        if args is not None:
            self.extend(args)

    def construct(self, *inputs):
        raise NotImplementedError("CellList has no construct: iterate over it or index it "
                                  "inside your own Cell's construct")
