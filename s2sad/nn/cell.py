"""Cell: the base class of networks, tracking Parameters and sub-Cells by attribute.

Registered values are also kept in the instance ``__dict__`` so attribute reads
inside ``construct`` stay plain, fast lookups.
"""
from collections import OrderedDict

from ..tensor import Parameter, Tensor

__all__ = ["Cell"]

_INIT_HINT = ("{cls}: call super().__init__() at the start of __init__, before assigning "
              "attributes, so Parameters and sub-Cells can be registered")


class Cell:
    """Base class for networks; subclasses define ``construct``."""

    def __init__(self, auto_prefix=True, flags=None):
        object.__setattr__(self, "_params", OrderedDict())
        object.__setattr__(self, "_cells", OrderedDict())
        object.__setattr__(self, "_auto_prefix", auto_prefix)
        object.__setattr__(self, "_flags", dict(flags) if flags else {})
        object.__setattr__(self, "training", False)
        object.__setattr__(self, "requires_grad", False)

    # ---- registration -----------------------------------------------------
    def _registries(self):
        d = self.__dict__
        if "_params" not in d:
            raise RuntimeError(_INIT_HINT.format(cls=type(self).__name__))
        return d["_params"], d["_cells"]

    def __getattr__(self, name):
        # Only reached when normal lookup fails, e.g. _params before __init__ ran.
        if name in ("_params", "_cells", "_auto_prefix", "_flags"):
            raise AttributeError(_INIT_HINT.format(cls=type(self).__name__))
        raise AttributeError("'{}' object has no attribute '{}'".format(type(self).__name__, name))

    def __setattr__(self, name, value):
        params, cells = self._registries()
        if isinstance(value, Parameter):
            cells.pop(name, None)
            if value.name is None:
                value.name = name
            params[name] = value
        elif name in params and isinstance(value, Tensor):
            # MindSpore: the Parameter takes the value (a copy: later in-place
            # updates of the Parameter must not reach the Tensor assigned)
            params[name].set_data(value.copy())
            return
        elif isinstance(value, Cell):
            params.pop(name, None)
            if self._auto_prefix:
                # Dotted, MindSpore-style names keep parameters unique across sub-cells.
                for pname, p in value.parameters_and_names():
                    p.name = name + "." + pname
            cells[name] = value
        else:
            params.pop(name, None)
            cells.pop(name, None)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        params, cells = self._registries()
        params.pop(name, None)
        cells.pop(name, None)
        object.__delattr__(self, name)

    def insert_param_to_cell(self, param_name, param):
        """Register a Parameter under ``param_name`` (as an attribute assignment would)."""
        if not isinstance(param, Parameter):
            raise TypeError("insert_param_to_cell expects a Parameter, got {}"
                            .format(type(param).__name__))
        self.__setattr__(param_name, param)

    def insert_child_to_cell(self, child_name, child_cell):
        """Register a sub-Cell under ``child_name`` (names need not be identifiers)."""
        if not isinstance(child_cell, Cell):
            raise TypeError("insert_child_to_cell expects a Cell, got {}"
                            .format(type(child_cell).__name__))
        self.__setattr__(child_name, child_cell)

    # ---- execution --------------------------------------------------------
    def construct(self, *args, **kwargs):
        raise NotImplementedError(
            "{} must override construct(self, *inputs) to define its computation"
            .format(type(self).__name__))

    #: set by ``@jit`` on a subclass's ``construct`` (``s2sad.jit``): runs its compiled forward
    __s2sad_jit__ = None

    def __call__(self, *args, **kwargs):
        jitted = type(self).__s2sad_jit__
        if jitted is not None and jitted.fn is type(self).construct:   # not overridden since
            return jitted.call(self, args, kwargs)
        return self.construct(*args, **kwargs)

    # ---- traversal --------------------------------------------------------
    def cells_and_names(self, cells=None, name_prefix=""):
        """Yield (dotted_name, cell) for self and all sub-cells, each cell once."""
        seen = cells if cells is not None else set()
        if id(self) in seen:
            return
        seen.add(id(self))
        yield name_prefix, self
        for name, cell in self._registries()[1].items():
            prefix = name_prefix + "." + name if name_prefix else name
            yield from cell.cells_and_names(seen, prefix)

    def parameters_and_names(self, name_prefix="", expand=True):
        """Yield (dotted_name, Parameter), own parameters first, each Parameter once."""
        cells = self.cells_and_names(name_prefix=name_prefix) if expand else [(name_prefix, self)]
        seen = set()
        for cell_name, cell in cells:
            for pname, p in cell._registries()[0].items():
                if id(p) in seen:
                    continue
                seen.add(id(p))
                yield (cell_name + "." + pname if cell_name else pname), p

    def get_parameters(self, expand=True):
        for _, p in self.parameters_and_names(expand=expand):
            yield p

    def trainable_params(self, recurse=True):
        return [p for p in self.get_parameters(expand=recurse) if p.requires_grad]

    def untrainable_params(self, recurse=True):
        return [p for p in self.get_parameters(expand=recurse) if not p.requires_grad]

    def name_cells(self):
        return OrderedDict(self._registries()[1])

    def cells(self):
        return self.name_cells().values()

    # ---- modes ------------------------------------------------------------
    def set_train(self, mode=True):
        """Set training mode on this cell and every sub-cell (affects e.g. Dropout)."""
        for _, cell in self.cells_and_names():
            object.__setattr__(cell, "training", mode)
        return self

    def set_grad(self, requires_grad=True):
        object.__setattr__(self, "requires_grad", requires_grad)
        return self

    def add_flags(self, **flags):
        self._registries()
        self._flags.update(flags)
        return self

    @property
    def cls_name(self):
        return type(self).__name__

    # ---- printing ---------------------------------------------------------
    def extend_repr(self):
        """Extra text shown inside ``ClassName<...>``; layers override this."""
        return ""

    def __repr__(self):
        extra = self.extend_repr()
        info = type(self).__name__ + "<"
        cells = self.__dict__.get("_cells")
        if cells:
            sub = "\n"
            if extra:
                sub += extra + "\n"
            for key, value in cells.items():
                sub += "({}): {}\n".format(key, repr(value))
            info += sub.replace("\n", "\n  ") + ">"
        else:
            info += extra + ">"
        return info
