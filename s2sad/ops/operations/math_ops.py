"""Elementwise math, reductions and matrix products."""
from ..primitive import Primitive


def _unary(name, template, doc, differentiable=True):
    """A one-input elementwise primitive written as ``template.format(x)``."""
    def emit(self, x):
        return template.format(x)
    cls = type(name, (Primitive,), {"emit": emit, "__doc__": doc,
                                    "differentiable": differentiable})
    return cls


def _binary(name, op, doc, differentiable=True):
    """A two-input broadcasting primitive written as ``x <op> y``."""
    def emit(self, x, y):
        return "%s %s %s" % (x, op, y)
    cls = type(name, (Primitive,), {"emit": emit, "__doc__": doc,
                                    "differentiable": differentiable})
    return cls


Add = _binary("Add", "+", "x + y, with NumPy broadcasting.")
Sub = _binary("Sub", "-", "x - y, with NumPy broadcasting.")
Mul = _binary("Mul", "*", "x * y, with NumPy broadcasting.")
RealDiv = _binary("RealDiv", "/", "x / y (true division), with NumPy broadcasting.")
Div = RealDiv
Pow = _binary("Pow", "**", "x ** y, with NumPy broadcasting.")

Neg = _unary("Neg", "-{0}", "-x.")
Sin = _unary("Sin", "xp.sin({0})", "sin(x).")
Cos = _unary("Cos", "xp.cos({0})", "cos(x).")
Exp = _unary("Exp", "xp.exp({0})", "e ** x.")
Log = _unary("Log", "xp.log({0})", "Natural logarithm.")
Tanh = _unary("Tanh", "xp.tanh({0})", "Hyperbolic tangent.")
Sqrt = _unary("Sqrt", "xp.sqrt({0})", "Square root.")
Square = _unary("Square", "xp.square({0})", "x * x.")

Equal = _binary("Equal", "==", "x == y (no gradient).", differentiable=False)
NotEqual = _binary("NotEqual", "!=", "x != y (no gradient).", differentiable=False)
Less = _binary("Less", "<", "x < y (no gradient).", differentiable=False)
LessEqual = _binary("LessEqual", "<=", "x <= y (no gradient).", differentiable=False)
Greater = _binary("Greater", ">", "x > y (no gradient).", differentiable=False)
GreaterEqual = _binary("GreaterEqual", ">=", "x >= y (no gradient).", differentiable=False)


class MatMul(Primitive):
    """2-D matrix product, optionally transposing either operand."""

    def __init__(self, transpose_a=False, transpose_b=False):
        super().__init__(transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))

    def emit(self, x, y):
        a = "%s.T" % x if self.transpose_a else x
        b = "%s.T" % y if self.transpose_b else y
        return "%s @ %s" % (a, b)


def _axis_kw(axis):
    """``, axis=...`` for a reduction, omitted when it means all axes."""
    return "" if axis in ("()", "None") else ", axis=rt.reduce_axes(%s)" % axis


class ReduceSum(Primitive):
    """Sum over ``axis`` (an input; ``()`` = all axes), keeping dims if asked."""
    num_inputs = 2
    input_defaults = ((),)

    def __init__(self, keep_dims=False):
        super().__init__(keep_dims=bool(keep_dims))

    def emit(self, x, axis="()"):
        keep = ", keepdims=True" if self.keep_dims else ""
        return "xp.sum(%s%s%s)" % (x, _axis_kw(axis), keep)


class ReduceMean(Primitive):
    """Mean over ``axis`` (an input; ``()`` = all axes), keeping dims if asked."""
    num_inputs = 2
    input_defaults = ((),)

    def __init__(self, keep_dims=False):
        super().__init__(keep_dims=bool(keep_dims))

    def emit(self, x, axis="()"):
        keep = ", keepdims=True" if self.keep_dims else ""
        return "xp.mean(%s%s%s)" % (x, _axis_kw(axis), keep)


__all__ = [_n for _n, _v in list(globals().items())
           if isinstance(_v, type) and issubclass(_v, Primitive) and _v is not Primitive]
