"""Deterministic, readable Python names for IR values.

A value takes the name of the user's variable it came from (``x``, ``d_x``);
a second SSA version of ``x`` becomes ``x_1``.  A temporary with no user name
is named after the primitive and its first input (``cos_a``).  Names depend
only on the program, never on object ids, so the same source and flags give
byte-identical code.
"""
import keyword
import re

from ..ir.nodes import AdjointOf, RowsOf, snake_case as _snake

_ROWS = "_rows"
# a name given to a value over a loop's rows (``sub_rows``, ``sub_rows_1``)
_ROWS_NAME = re.compile(r"_rows(_\d+)?$")

#: the global a program specialised to its shapes calls for others (``driver/compile.py``)
GENERAL = "_general"
RESERVED = set(keyword.kwlist) | {GENERAL, "xp", "rt", "None", "True", "False", "float", "int",
                                  "len", "range", "tuple", "slice", "Ellipsis", "bool",
                                  "random", "print", "logging", "warnings"}


def _clean(hint):
    hint = str(hint)
    if not hint.replace("_", "a").isalnum():   # str.isalnum is re's \w less "_": no regex
        hint = re.sub(r"\W", "_", hint)        # compiled on first need, not at import
    if not hint or hint[0].isdigit():
        hint = "v_" + hint
    return hint


def unnumbered(name):
    """``name`` without a ``_<digits>`` ending (``x_2`` -> ``x``)."""
    head, sep, tail = name.rpartition("_")
    return head if sep and tail.isdecimal() else name


class Namer:
    def __init__(self):
        self.names = {}
        self.used = set(RESERVED)
        self.next_suffix = {}   # stem -> next number to try, so naming stays linear
        self.rows = set()       # names of values over a loop's rows (``opt/batch.py``)

    def fresh(self, base):
        base = _clean(base)
        if base not in self.used and not (base.startswith("_k") and base[2:].isdecimal()):
            self.used.add(base)
            return base
        stem = unnumbered(base) or base
        i = self.next_suffix.get(stem, 1)
        while "%s_%d" % (stem, i) in self.used:
            i += 1
        self.next_suffix[stem] = i + 1
        name = "%s_%d" % (stem, i)
        self.used.add(name)
        return name

    def define(self, var, op=None):
        if var.id in self.names:
            return self.names[var.id]
        base, rows = var.hint, False
        if isinstance(base, AdjointOf):
            fwd = base.var
            base = base.prefix + (self.names[fwd.id] if fwd.id in self.names
                                  else str(fwd.hint or base.base or "v"))
        elif isinstance(base, RowsOf) and base.row:
            base = _ROWS_NAME.sub("", self.names.get(base.var.id, "v"))
        elif isinstance(base, RowsOf) and (base.var is not None or base.hint):
            stem = self.names.get(base.var.id, "v") if base.var is not None else base.hint
            base, rows = stem + _ROWS, True
        elif base is None or isinstance(base, RowsOf):
            rows = base is not None         # an op over a loop's rows
            base = _snake(op.prim.name) if op is not None else "v"
            first = next(iter(op.arg_vars()), None) if op is not None else None
            if first is not None and first.id in self.names:
                arg = self.names[first.id]
                if arg in self.rows:        # named after its input's row
                    arg = _ROWS_NAME.sub("", arg)
                if len(arg) <= 8:
                    base = "%s_%s" % (base, arg)
            if rows:
                base += _ROWS
        name = self.fresh(base)
        self.names[var.id] = name
        if rows:
            self.rows.add(name)
        return name

    def alias(self, var, name):
        """Give ``var`` the Python name another value already has."""
        self.names[var.id] = name

    def __getitem__(self, var):
        return self.names[var.id]
