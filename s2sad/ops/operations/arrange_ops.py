"""Rearranging primitives: NumPy functions that move, repeat or drop elements.

``Rearrange`` stages one such NumPy function (``np.roll``, ``np.pad`` in its
copying modes, ``sliding_window_view``, the stacking and splitting functions
whose axis depends on the runtime rank, ...) as one line of generated code;
its adjoint adds each output cotangent back onto the element it came from
(``rt.arrange_adjoint``), so one rule serves every function of the table.
Sorting is a permutation that depends on the values: ``SortIndex`` computes
it (no gradient) and ``TakeAlongAxis`` applies it, linearly.
"""
from ...ir.primitive import Primitive

_NO_GRAD = "no gradient (the result is an index)"

#: the functions ``Rearrange`` may stage, as generated code calls them
FUNCTIONS = {
    "roll": "xp.roll", "pad": "xp.pad", "repeat": "xp.repeat", "rollaxis": "xp.rollaxis",
    "vstack": "xp.vstack", "hstack": "xp.hstack", "dstack": "xp.dstack",
    "column_stack": "xp.column_stack", "array_split": "xp.array_split", "hsplit": "xp.hsplit",
    "sliding_window_view": "xp.lib.stride_tricks.sliding_window_view",
    "atleast_1d": "xp.atleast_1d", "atleast_2d": "xp.atleast_2d", "atleast_3d": "xp.atleast_3d",
    "real_if_close": "xp.real_if_close",
}

#: those whose result is a view of the input, as in NumPy (for the alias check)
VIEWS = frozenset(("rollaxis", "array_split", "hsplit", "sliding_window_view",
                   "atleast_1d", "atleast_2d", "atleast_3d", "real_if_close"))


def _freeze(value):
    """Lists as tuples, so the attributes compare and hash (the cache's guards)."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


class _Arranging(Primitive):
    """What ``Rearrange`` and its adjoint share: a function of ``FUNCTIONS`` and
    its constant keyword arguments; ``num`` outputs when it splits."""

    def __init__(self, fn, num=None, **kwargs):
        if fn not in FUNCTIONS:
            raise ValueError("Rearrange: unknown function %r (one of %s)"
                             % (fn, ", ".join(sorted(FUNCTIONS))))
        super().__init__(fn=fn, num=None if num is None else int(num),
                         kwargs=tuple(sorted((k, _freeze(v)) for k, v in kwargs.items())))

    def call_text(self, x):
        args = "".join(", %s=%r" % kv for kv in self.kwargs)
        return "%s(%s%s)" % (FUNCTIONS[self.fn], x, args)


class Rearrange(_Arranging):
    """``fn(x, **kwargs)`` for a NumPy function that moves, repeats or drops elements."""
    linearity = "linear"
    formula = "dx = each dout element added back onto the x element it came from"

    def __init__(self, fn, num=None, **kwargs):
        super().__init__(fn, num, **kwargs)
        self.num_outputs = 1 if num is None else self.num
        self.view = fn in VIEWS

    def emit(self, x):
        text = self.call_text(x)
        if self.num is None:
            return text
        return "tuple(%s)" % text if self.num > 1 else text + "[0]"


class RearrangeGrad(_Arranging):
    """Rearrange's adjoint: ``dout`` summed onto the elements of ``x`` (a rule helper)."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "d_dout = rearrange(d)"
    shape_only_inputs = (1,)
    output_shape_of = 1

    def emit(self, dout, x):
        return "rt.arrange_adjoint(%s, %s, %s, {%s})" % (
            dout, x, FUNCTIONS[self.fn], ", ".join("%r: %r" % kv for kv in self.kwargs))


class SortIndex(Primitive):
    """The stable permutation sorting ``x`` along ``axis`` (``np.argsort``), or with
    ``kth`` NumPy's ``argpartition``."""
    differentiable = False
    formula = _NO_GRAD

    def __init__(self, axis=-1, kth=None):
        super().__init__(axis=int(axis), kth=_freeze(kth))

    def emit(self, x):
        return "rt.arrange_sort_index(%s, %d, %r)" % (x, self.axis, self.kth)


class TakeAlongAxis(Primitive):
    """``x`` read at the integer ``indices`` along ``axis`` (``np.take_along_axis``)."""
    linearity = "linear"
    formula = "dx = zeros like x with dout added where it was read"

    def __init__(self, axis):
        super().__init__(axis=int(axis))

    def emit(self, x, indices):
        return "xp.take_along_axis(%s, %s, axis=%d)" % (x, indices, self.axis)


class TakeAlongAxisGrad(Primitive):
    """Zeros like ``x`` with ``dout`` added at ``indices`` along ``axis`` (a rule helper)."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "d_dout = take_along_axis(d, indices, axis)"
    shape_only_inputs = (1,)
    output_shape_of = 1

    def __init__(self, axis):
        super().__init__(axis=int(axis))

    def emit(self, dout, x, indices):
        return "rt.arrange_take_along_grad(%s, %s, %s, %d)" % (dout, x, indices, self.axis)


__all__ = ["Rearrange", "RearrangeGrad", "SortIndex", "TakeAlongAxis", "TakeAlongAxisGrad"]
