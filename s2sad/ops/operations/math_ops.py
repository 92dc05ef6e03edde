"""Elementwise math, reductions and matrix products.

Each class carries ``formula`` (its derivative, one line) and, where it has
points without a derivative, ``nondifferentiable``; both feed the generated
documentation of the primitives.
"""
import re
from ...ir.primitive import Primitive, constexpr


def _unary(name, template, doc, formula, differentiable=True, nondifferentiable=None,
           **facts):
    """A one-input elementwise primitive written as ``template.format(x)``.

    ``facts`` are further class attributes (``ufunc``, ``rounded``, ``linearity``...).
    """
    def emit(self, x):
        return template.format(x)
    body = {"emit": emit, "__doc__": doc, "differentiable": differentiable,
            "formula": formula, "__module__": __name__, "elementwise": True, **facts}
    if nondifferentiable is not None:
        body["nondifferentiable"] = nondifferentiable
    return type(name, (Primitive,), body)


def _binary(name, op, doc, formula, differentiable=True, nondifferentiable=None, **facts):
    """A two-input broadcasting primitive written as ``x <op> y`` (or ``op(x, y)``).

    ``facts`` are further class attributes, as for ``_unary``.
    """
    if op.startswith("xp.") or op.startswith("rt."):
        def emit(self, x, y):
            return "%s(%s, %s)" % (op, x, y)
    else:
        def emit(self, x, y):
            return "%s %s %s" % (x, op, y)
    body = {"emit": emit, "__doc__": doc, "differentiable": differentiable,
            "formula": formula, "__module__": __name__, "elementwise": True, **facts}
    if nondifferentiable is not None:
        body["nondifferentiable"] = nondifferentiable
    return type(name, (Primitive,), body)


_NO_GRAD = "no gradient (the result is boolean, integer or piecewise constant)"

# Each primitive states its facts (see ``Primitive``): ``ufunc`` where it keeps
# its operand's dtype, ``rounded`` for transcendental values, and for Taylor
# mode ``linearity``, a series rule in ``ops/_grad`` (Sin, Cos, Exp, Log, Tanh,
# Sqrt, Square, RealDiv) or ``taylor="nested"``: no series rule is written, so
# a program using it gets its higher derivatives from nested reverse mode.

# ------------------------------------------------------------ binary arithmetic
Add = _binary("Add", "+", "x + y, with NumPy broadcasting.", "dx = dout, dy = dout",
              ufunc="add", linearity="linear", commutative="numbers")
TensorAdd = Add            # MindSpore 1.x's name, still met in older code
Sub = _binary("Sub", "-", "x - y, with NumPy broadcasting.", "dx = dout, dy = -dout",
              ufunc="subtract", linearity="linear")
Mul = _binary("Mul", "*", "x * y, with NumPy broadcasting.", "dx = dout * y, dy = dout * x",
              ufunc="multiply", linearity="bilinear", commutative=True)
RealDiv = _binary("RealDiv", "/", "x / y (true division), with NumPy broadcasting.",
                  "dx = dout / y, dy = -dout * out / y",
                  nondifferentiable="y = 0 (division by zero)", ufunc="true_divide", rounded=True)
Div = RealDiv
Pow = _binary("Pow", "**", "x ** y, with NumPy broadcasting.\n\n"
              "At x = 0 the slopes are 0 where the formulas read 0 * inf: in x when y = 0 "
              "(x ** 0 is constant), in y when y > 0 (0 ** y is 0), as in PyTorch.",
              "dx = dout * y * x ** (y - 1), dy = dout * out * log(x)",
              nondifferentiable="in x: x = 0 with y < 1, y != 0; in y: x < 0 (log(x) is "
                                "undefined), or x = 0 with y <= 0", taylor="nested")
FloorDiv = _binary(
    "FloorDiv", "//", "floor(x / y) (Python's ``//``), with NumPy broadcasting.\n\n"
    "Piecewise constant: its gradient is zero for both inputs.",
    "dx = 0, dy = 0", nondifferentiable="x / y an integer (jumps; gradient 0 is used)",
    taylor="nested")
Mod = _binary(
    "Mod", "%", "x - floor(x / y) * y (Python's and NumPy's ``%``: the sign follows y).\n\n"
    "MindSpore's ``Mod`` truncates instead; this follows the ``%`` operator it maps.",
    "dx = dout, dy = -dout * floor_div(x, y)",
    nondifferentiable="x / y an integer (jumps; the one-sided gradient is used)", taylor="nested")
FloorMod = Mod
Atan2 = _binary("Atan2", "xp.arctan2",
                "atan2(x, y): the angle of the point (y, x), with NumPy broadcasting.",
                "dx = dout * y / (x^2 + y^2), dy = -dout * x / (x^2 + y^2)",
                nondifferentiable="x = y = 0", rounded=True, taylor="nested")
Maximum = _binary(
    "Maximum", "xp.maximum",
    "Elementwise max(x, y), with NumPy broadcasting.\n\n"
    "The gradient goes to the larger input; on ties it is split evenly (half each).",
    "dx = dout * (x > y) + dout * (x == y) / 2, dy = dout * (x < y) + dout * (x == y) / 2",
    nondifferentiable="x = y (the gradient is split evenly)", linearity="linear")
Minimum = _binary(
    "Minimum", "xp.minimum",
    "Elementwise min(x, y), with NumPy broadcasting.\n\n"
    "The gradient goes to the smaller input; on ties it is split evenly (half each).",
    "dx = dout * (x < y) + dout * (x == y) / 2, dy = dout * (x > y) + dout * (x == y) / 2",
    nondifferentiable="x = y (the gradient is split evenly)", linearity="linear")
LogAddExp = _binary(
    "LogAddExp", "xp.logaddexp",
    "log(exp(x) + exp(y)) without overflow, with NumPy broadcasting.\n\n"
    "One primitive rather than max(x, y) + log1p(exp(-|x - y|)): that form is smooth only "
    "as a whole, and differentiating its pieces loses the curvature at x = y.",
    "dx = dout * exp(x - out), dy = dout * exp(y - out)", taylor="nested")
LogAddExp2 = _binary(
    "LogAddExp2", "xp.logaddexp2",
    "log2(2 ** x + 2 ** y) without overflow, with NumPy broadcasting (see LogAddExp).",
    "dx = dout * 2 ** (x - out), dy = dout * 2 ** (y - out)", taylor="nested")

# ------------------------------------------------------------------ unary math
Neg = _unary("Neg", "-{0}", "-x.", "dx = -dout", ufunc="negative", linearity="linear")
Sin = _unary("Sin", "xp.sin({0})", "sin(x).", "dx = dout * cos(x)", ufunc="sin", rounded=True)
Cos = _unary("Cos", "xp.cos({0})", "cos(x).", "dx = -dout * sin(x)", ufunc="cos", rounded=True)
Tan = _unary("Tan", "xp.tan({0})", "tan(x).", "dx = dout * (1 + out^2)",
             nondifferentiable="x = pi/2 + k pi (poles)",
             ufunc="tan", rounded=True, taylor="nested")
Exp = _unary("Exp", "xp.exp({0})", "e ** x.", "dx = dout * out", ufunc="exp", rounded=True)
Expm1 = _unary("Expm1", "xp.expm1({0})", "e ** x - 1, accurate near x = 0.",
               "dx = dout * exp(x)", ufunc="expm1", rounded=True, taylor="nested")
Log = _unary("Log", "xp.log({0})", "Natural logarithm.", "dx = dout / x",
             nondifferentiable="x <= 0", ufunc="log", rounded=True)
Log1p = _unary("Log1p", "xp.log1p({0})", "log(1 + x), accurate near x = 0.",
               "dx = dout / (1 + x)", nondifferentiable="x <= -1",
               ufunc="log1p", rounded=True, taylor="nested")
Tanh = _unary("Tanh", "xp.tanh({0})", "Hyperbolic tangent.", "dx = dout * (1 - out^2)",
              ufunc="tanh", rounded=True)
Sinh = _unary("Sinh", "xp.sinh({0})", "Hyperbolic sine.", "dx = dout * cosh(x)",
              ufunc="sinh", rounded=True, taylor="nested")
Cosh = _unary("Cosh", "xp.cosh({0})", "Hyperbolic cosine.", "dx = dout * sinh(x)",
              ufunc="cosh", rounded=True, taylor="nested")
Asin = _unary("Asin", "xp.arcsin({0})", "Inverse sine, for |x| <= 1.",
              "dx = dout / sqrt(1 - x^2)", nondifferentiable="|x| >= 1",
              rounded=True, taylor="nested")
Acos = _unary("Acos", "xp.arccos({0})", "Inverse cosine, for |x| <= 1.",
              "dx = -dout / sqrt(1 - x^2)", nondifferentiable="|x| >= 1",
              rounded=True, taylor="nested")
Atan = _unary("Atan", "xp.arctan({0})", "Inverse tangent.", "dx = dout / (1 + x^2)",
              ufunc="arctan", rounded=True, taylor="nested")
Asinh = _unary("Asinh", "xp.arcsinh({0})", "Inverse hyperbolic sine.",
               "dx = dout / sqrt(x^2 + 1)", rounded=True, taylor="nested")
Acosh = _unary("Acosh", "xp.arccosh({0})", "Inverse hyperbolic cosine, for x >= 1.",
               "dx = dout / sqrt(x^2 - 1)", nondifferentiable="x <= 1",
               rounded=True, taylor="nested")
Atanh = _unary("Atanh", "xp.arctanh({0})", "Inverse hyperbolic tangent, for |x| < 1.",
               "dx = dout / (1 - x^2)", nondifferentiable="|x| >= 1", rounded=True, taylor="nested")
Sqrt = _unary("Sqrt", "xp.sqrt({0})", "Square root.", "dx = dout / (2 * out)",
              nondifferentiable="x <= 0", ufunc="sqrt", rounded=True)
Rsqrt = _unary("Rsqrt", "1 / xp.sqrt({0})", "1 / sqrt(x).", "dx = -dout * out^3 / 2",
               nondifferentiable="x <= 0", rounded=True, taylor="nested")
Reciprocal = _unary("Reciprocal", "1 / {0}", "1 / x.", "dx = -dout * out^2",
                    nondifferentiable="x = 0", rounded=True, taylor="nested")
Square = _unary("Square", "xp.square({0})", "x * x.", "dx = dout * 2 * x", ufunc="square")
Abs = _unary("Abs", "xp.abs({0})", "|x|.", "dx = dout * sign(x)",
             nondifferentiable="x = 0 (subgradient 0 is used)", taylor="nested")
Erf = _unary("Erf", "rt.math_erf({0})",
             "The error function (SciPy's when installed, else math.erf per element).",
             "dx = dout * 2 / sqrt(pi) * exp(-x^2)", rounded=True, taylor="nested")
Erfc = _unary("Erfc", "rt.math_erfc({0})", "The complementary error function 1 - erf(x).",
              "dx = -dout * 2 / sqrt(pi) * exp(-x^2)", rounded=True, taylor="nested")
Sign = _unary("Sign", "xp.sign({0})", "-1, 0 or 1 by the sign of x (no gradient).", _NO_GRAD,
              differentiable=False)
Floor = _unary("Floor", "xp.floor({0})",
               "Largest integer <= x.  Differentiable with a zero gradient, as in MindSpore.",
               "dx = 0", nondifferentiable="integer x (jumps; gradient 0 is used)",
               linearity="linear")
Ceil = _unary("Ceil", "xp.ceil({0})",
              "Smallest integer >= x.  Differentiable with a zero gradient, as in MindSpore.",
              "dx = 0", nondifferentiable="integer x (jumps; gradient 0 is used)",
              linearity="linear")
Round = _unary("Round", "xp.round({0})",
               "x rounded to the nearest integer (half to even).  Zero gradient, as in "
               "MindSpore.", "dx = 0",
               nondifferentiable="half-integer x (jumps; gradient 0 is used)", linearity="linear")

# ---------------------------------------------------------- comparisons, logic
Equal = _binary("Equal", "==", "x == y (no gradient).", _NO_GRAD,
                differentiable=False, boolean=True)
NotEqual = _binary("NotEqual", "!=", "x != y (no gradient).", _NO_GRAD,
                   differentiable=False, boolean=True)
Less = _binary("Less", "<", "x < y (no gradient).", _NO_GRAD,
               differentiable=False, boolean=True)
LessEqual = _binary("LessEqual", "<=", "x <= y (no gradient).", _NO_GRAD,
                    differentiable=False, boolean=True)
Greater = _binary("Greater", ">", "x > y (no gradient).", _NO_GRAD,
                  differentiable=False, boolean=True)
GreaterEqual = _binary("GreaterEqual", ">=", "x >= y (no gradient).", _NO_GRAD,
                       differentiable=False, boolean=True)
LogicalAnd = _binary("LogicalAnd", "xp.logical_and", "x and y, elementwise (no gradient).",
                     _NO_GRAD, differentiable=False, boolean=True)
LogicalOr = _binary("LogicalOr", "xp.logical_or", "x or y, elementwise (no gradient).",
                    _NO_GRAD, differentiable=False, boolean=True)
LogicalNot = _unary("LogicalNot", "xp.logical_not({0})", "not x, elementwise (no gradient).",
                    _NO_GRAD, differentiable=False, boolean=True)
BitwiseAnd = _binary("BitwiseAnd", "&", "x & y: bitwise and of integer or boolean arrays "
                     "(no gradient).", _NO_GRAD, differentiable=False)
BitwiseOr = _binary("BitwiseOr", "|", "x | y: bitwise or of integer or boolean arrays "
                    "(no gradient).", _NO_GRAD, differentiable=False)
BitwiseXor = _binary("BitwiseXor", "^", "x ^ y: bitwise exclusive or of integer or boolean "
                     "arrays (no gradient).", _NO_GRAD, differentiable=False)
Invert = _unary("Invert", "~{0}", "~x: bitwise not of an integer or boolean array (``not`` "
                "elementwise for booleans; no gradient).", _NO_GRAD, differentiable=False)


# ------------------------------------------------------------------- products
class MatMul(Primitive):
    """2-D matrix product, optionally transposing either operand."""
    linearity = "bilinear"
    formula = "dx = dout @ y.T, dy = x.T @ dout (transposed to match the flags)"

    def __init__(self, transpose_a=False, transpose_b=False):
        super().__init__(transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))

    def emit(self, x, y):
        a = "%s.T" % x if self.transpose_a else x
        b = "%s.T" % y if self.transpose_b else y
        return "%s @ %s" % (a, b)


class MatMulExt(Primitive):
    """``x @ y`` with NumPy's matmul semantics: 1-D operands promoted, batch dims broadcast.

    This is what ``@``, ``np.matmul`` and ``ops.matmul`` stage; its gradient
    undoes the 1-D promotion and sums over broadcast batch dimensions.
    """
    linearity = "bilinear"
    formula = "dx = unbroadcast(dout @ swap(y)), dy = unbroadcast(swap(x) @ dout)"

    def emit(self, x, y):
        return "%s @ %s" % (x, y)


class MatMulGradA(Primitive):
    """``dout @ swap(y)`` summed to x's shape: the gradient of ``x @ y`` w.r.t. ``x``.

    Inputs ``(dout, x, y)``; only ``x``'s shape is read.  With ``MatMulGradB``
    and ``MatMulExt`` it forms a set whose rules use only each other.
    """
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    output_shape_of = 1
    formula = "d_dout = ddx @ y, dy = MatMulGradB(dout, ddx, y)"
    shape_only_inputs = (1,)

    def emit(self, dout, x, y):
        return "rt.math_matmul_grad_a(%s, %s, %s)" % (dout, x, y)


class MatMulGradB(Primitive):
    """``swap(x) @ dout`` summed to y's shape: the gradient of ``x @ y`` w.r.t. ``y``.

    Inputs ``(dout, x, y)``; only ``y``'s shape is read.
    """
    taylor = "nested"   # as MatMulGradA
    output_shape_of = 2
    formula = "d_dout = x @ ddy, dx = MatMulGradA(dout, x, ddy)"
    shape_only_inputs = (2,)

    def emit(self, dout, x, y):
        return "rt.math_matmul_grad_b(%s, %s, %s)" % (dout, x, y)


def _mT(x, flag):
    return "xp.swapaxes(%s, -1, -2)" % x if flag else x



class BatchMatMul(Primitive):
    """Batched matrix product over the last two axes; batch dims broadcast as in NumPy."""
    linearity = "bilinear"
    formula = "dx = unbroadcast(dout @ y^T), dy = unbroadcast(x^T @ dout) (flags applied)"

    def __init__(self, transpose_a=False, transpose_b=False):
        super().__init__(transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))

    def emit(self, x, y):
        return "xp.matmul(%s, %s)" % (_mT(x, self.transpose_a), _mT(y, self.transpose_b))


class Dot(Primitive):
    """``np.dot`` of operands of any rank: a product when one is 0-D, else a
    contraction of x's last axis with y's (second-to-last when y is 2-D or more)."""
    linearity = "bilinear"
    formula = "dx = DotGradA(dout, x, y), dy = DotGradB(dout, x, y)"

    def emit(self, x, y):
        return "rt.math_dot(%s, %s)" % (x, y)


class DotGradA(Primitive):
    """The gradient of ``np.dot(x, y)`` w.r.t. ``x``: inputs ``(dout, x, y)``, only
    ``x``'s shape read.  With ``DotGradB`` and ``Dot`` a set whose rules use only
    each other; the ranks decide the contraction at run time."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    output_shape_of = 1
    formula = "d_dout = Dot(ddx, y), dy = DotGradB(dout, ddx, y)"
    shape_only_inputs = (1,)

    def emit(self, dout, x, y):
        return "rt.math_dot_grad_a(%s, %s, %s)" % (dout, x, y)


class DotGradB(Primitive):
    """The gradient of ``np.dot(x, y)`` w.r.t. ``y``: inputs ``(dout, x, y)``, only
    ``y``'s shape read."""
    taylor = "nested"   # as DotGradA
    output_shape_of = 2
    formula = "d_dout = Dot(x, ddy), dx = DotGradA(dout, x, ddy)"
    shape_only_inputs = (2,)

    def emit(self, dout, x, y):
        return "rt.math_dot_grad_b(%s, %s, %s)" % (dout, x, y)


class Outer(Primitive):
    """``np.outer``: the outer product of the flattened inputs."""
    linearity = "bilinear"
    formula = "dx = reshape(dout @ ravel(y), x.shape), dy = reshape(ravel(x) @ dout, y.shape)"

    def emit(self, x, y):
        return "xp.outer(%s, %s)" % (x, y)


def _tensordot_axes(axes):
    """``axes`` as an int or a pair of int tuples (a hashable, canonical attribute)."""
    if not isinstance(axes, (tuple, list)):
        return int(axes)
    ia, ib = axes
    ia = (ia,) if isinstance(ia, int) else tuple(int(a) for a in ia)
    ib = (ib,) if isinstance(ib, int) else tuple(int(b) for b in ib)
    if len(ia) != len(ib):
        raise ValueError("tensordot axes must pair up, got %r and %r" % (ia, ib))
    return (ia, ib)


class Tensordot(Primitive):
    """``np.tensordot(x, y, axes)``: contract the listed axes of x with those of y."""
    linearity = "bilinear"
    formula = "dx = TensordotGradA(dout, y), dy = TensordotGradB(x, dout)"

    def __init__(self, axes=2):
        super().__init__(axes=_tensordot_axes(axes))

    def emit(self, x, y):
        return "xp.tensordot(%s, %s, axes=%r)" % (x, y, self.axes)


class TensordotGradA(Primitive):
    """The gradient of ``tensordot(a, b, axes)`` w.r.t. ``a``, given ``dout`` and ``b``.

    A primitive of its own because which axes to contract depends on ranks
    known only at run time; it is bilinear, so its rules are tensordots again.
    """
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "d_dout = Tensordot(c, b), db = TensordotGradB(c, dout) for cotangent c"

    def __init__(self, axes=2):
        super().__init__(axes=_tensordot_axes(axes))

    def emit(self, dout, b):
        return "rt.math_tensordot_grad_a(%s, %s, %r)" % (dout, b, self.axes)


class TensordotGradB(Primitive):
    """The gradient of ``tensordot(a, b, axes)`` w.r.t. ``b``, given ``a`` and ``dout``."""
    taylor = "nested"   # as TensordotGradA
    formula = "da = TensordotGradA(dout, c), d_dout = Tensordot(a, c) for cotangent c"

    def __init__(self, axes=2):
        super().__init__(axes=_tensordot_axes(axes))

    def emit(self, a, dout):
        return "rt.math_tensordot_grad_b(%s, %s, %r)" % (a, dout, self.axes)


class MatrixInverse(Primitive):
    """Inverse of each square matrix in the last two axes (of its transpose if ``adjoint``)."""
    taylor = "nested"   # no series rule written
    formula = "dx = -out^T @ dout @ out^T"
    nondifferentiable = "singular x"

    def __init__(self, adjoint=False):
        super().__init__(adjoint=bool(adjoint))

    def emit(self, x):
        return "xp.linalg.inv(%s)" % _mT(x, self.adjoint)


class MatrixDeterminant(Primitive):
    """Determinant of each square matrix in the last two axes."""
    taylor = "nested"   # no series rule written
    formula = "dx = dout * out * inv(x)^T"
    nondifferentiable = "singular x (the formula needs inv(x); the true gradient is adj(x)^T)"

    def emit(self, x):
        return "xp.linalg.det(%s)" % x


Det = MatrixDeterminant


# ----------------------------------------------------------------- reductions
def _axis_kw(axis):
    """``, axis=...`` for a reduction, omitted when it means all axes.

    A literal axis is written as it is; only a computed one goes through
    ``rt.reduce_axes`` (which maps ``()`` to all axes at run time).
    """
    if axis in ("()", "None"):
        return ""
    if _LITERAL_AXIS.fullmatch(axis):
        return ", axis=%s" % axis
    return ", axis=rt.reduce_axes(%s)" % axis


# an int or a non-empty tuple of ints, as the code generator renders them
_LITERAL_AXIS = re.compile(r"-?\d+|\((-?\d+,)( -?\d+,)*( -?\d+)?\)")


class _Reduce(Primitive):
    """A NumPy reduction over ``axis`` (an input; ``()`` = all axes)."""
    num_inputs = 2
    input_defaults = ((),)
    _np_name = None

    def __init__(self, keep_dims=False):
        super().__init__(keep_dims=bool(keep_dims))

    #: the ufunc reduction the runtime calls instead (``None``: NumPy's own function)
    _rt_name = None

    def emit(self, x, axis="()"):
        keep = ", keepdims=True" if self.keep_dims else ""
        fn = "rt." + self._rt_name if self._rt_name else "xp." + self._np_name
        return "%s(%s%s%s)" % (fn, x, _axis_kw(axis), keep)


class ReduceSum(_Reduce):
    """Sum over ``axis`` (an input; ``()`` = all axes), keeping dims if asked."""
    linearity = "linear"
    _np_name = "sum"
    _rt_name = "math_sum"
    formula = "dx = broadcast(dout)"


class ReduceMean(_Reduce):
    """Mean over ``axis`` (an input; ``()`` = all axes), keeping dims if asked."""
    linearity = "linear"
    _np_name = "mean"
    formula = "dx = broadcast(dout) / n"


class ReduceMax(_Reduce):
    """Max over ``axis`` (an input; ``()`` = all axes), keeping dims if asked.

    The gradient goes to the maximal elements; ties share it evenly (as
    MindSpore and TensorFlow do).
    """
    linearity = "linear"
    _np_name = "max"
    _rt_name = "math_max"
    formula = "dx = broadcast(dout) * (x == out) / count(x == out)"
    nondifferentiable = "ties for the max (the gradient is split evenly)"


class ReduceMin(_Reduce):
    """Min over ``axis`` (an input; ``()`` = all axes), keeping dims if asked.

    The gradient goes to the minimal elements; ties share it evenly.
    """
    linearity = "linear"
    _np_name = "min"
    _rt_name = "math_min"
    formula = "dx = broadcast(dout) * (x == out) / count(x == out)"
    nondifferentiable = "ties for the min (the gradient is split evenly)"


class ReduceProd(_Reduce):
    """Product over ``axis`` (an input; ``()`` = all axes), keeping dims if asked.

    The gradient is exact with zeros in x: the product of the other elements,
    computed without dividing by zero.  (Its own derivative, used for second
    order, treats two or more zeros in one product as giving zero.)
    """
    taylor = "nested"   # no series rule written
    _np_name = "prod"
    formula = "dx = broadcast(dout) * prod(other elements)  (= out / x without zeros)"


class SumSquares(Primitive):
    """The sum of ``x * x`` over all elements: the square of the 2-norm ``ops.norm`` takes.

    One dot product for a float array, as ``np.linalg.norm`` computes it
    (no temporary for the squares, and NumPy's own rounding).
    """
    taylor = "nested"   # no series rule written
    formula = "dx = dout * 2 * x"

    def emit(self, x):
        return "rt.math_sum_squares(%s)" % x


class CumSum(Primitive):
    """Cumulative sum along ``axis`` (an input); ``exclusive`` omits each element itself,
    ``reverse`` sums from the end."""
    linearity = "linear"
    formula = "dx = CumSum(exclusive, not reverse)(dout, axis)"

    def __init__(self, exclusive=False, reverse=False):
        super().__init__(exclusive=bool(exclusive), reverse=bool(reverse))

    def emit(self, x, axis):
        return "rt.math_cumsum(%s, %s, %r, %r)" % (x, axis, self.exclusive, self.reverse)


class LogSumExp(Primitive):
    """``log(sum(exp(x)))`` over ``axis`` (an input; ``()`` = all), computed stably."""
    taylor = "nested"   # no series rule written
    num_inputs = 2
    input_defaults = ((),)
    formula = "dx = broadcast(dout) * exp(x - out)  (dout times the softmax)"

    def __init__(self, keep_dims=False):
        super().__init__(keep_dims=bool(keep_dims))

    def emit(self, x, axis="()"):
        return "rt.math_logsumexp(%s, %s, %r)" % (x, axis, self.keep_dims)


class _ArgWithValue(Primitive):
    num_outputs = 2
    _kind = None

    def __init__(self, axis=0, keep_dims=False):
        super().__init__(axis=int(axis), keep_dims=bool(keep_dims))

    def emit(self, x):
        return "rt.math_arg_with_value(%s, %r, %r, %r)" % (x, self.axis, self.keep_dims,
                                                           self._kind)


class ArgMaxWithValue(_ArgWithValue):
    """``(index, value)`` of the max along ``axis``; the index (int32) has no gradient.

    On ties the first index is taken and the value's gradient goes to it alone
    (as in MindSpore).
    """
    taylor = "nested"   # not classified for Taylor mode
    _kind = "max"
    formula = "dx = one_hot(index, axis) * dvalue"
    nondifferentiable = "ties for the max (the first index gets the gradient)"


class ArgMinWithValue(_ArgWithValue):
    """``(index, value)`` of the min along ``axis``; the index (int32) has no gradient.

    On ties the first index is taken and the value's gradient goes to it alone.
    """
    taylor = "nested"   # not classified for Taylor mode
    _kind = "min"
    formula = "dx = one_hot(index, axis) * dvalue"
    nondifferentiable = "ties for the min (the first index gets the gradient)"


class ArgIndicator(Primitive):
    """Ones where ``index`` points along ``axis``, zeros elsewhere, shaped like ``x``.

    The one-hot mask the ArgMax/ArgMinWithValue rules scatter with (no gradient).
    """
    differentiable = False
    formula = _NO_GRAD

    def __init__(self, axis=0, keep_dims=False):
        super().__init__(axis=int(axis), keep_dims=bool(keep_dims))

    def emit(self, index, x):
        return "rt.math_arg_indicator(%s, %s, %r, %r)" % (index, x, self.axis, self.keep_dims)


class NormShape(Primitive):
    """A runtime shape ``norm`` reshapes to when the input's rank picks the norm (no gradient).

    ``kind``: ``'vector'`` (checks x is 1-D), ``'matrix'`` (a 1-D x as a
    column), ``'kept'`` (all ones); see ``rt.math_norm_shape``.
    """
    differentiable = False
    formula = _NO_GRAD

    def __init__(self, kind, ord=None):
        super().__init__(kind=kind, ord=ord)

    def emit(self, x):
        return "rt.math_norm_shape(%s, %r, %s)" % (x, self.kind, constexpr(self.ord))


__all__ = [_n for _n, _v in list(globals().items())
           if isinstance(_v, type) and issubclass(_v, Primitive) and _v is not Primitive
           and not _n.startswith("_")]
