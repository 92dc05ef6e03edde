"""Complex numbers: which primitives may see them, and the rules that differ.

The convention is JAX's: a cotangent is paired with a tangent by
``Re(ct * t)`` (no conjugate), so a holomorphic function's rule is its real
rule unchanged (``dx = dout * f'(x)``), and ``grad`` of a real-valued ``f``
gives ``df/dx - 1j df/dy``.  The cotangent of a real-valued result may carry
an imaginary part that means nothing (a real value times a complex one);
each rule below that maps a real result back to a complex input takes the
real part first.  Primitives not marked ``complex_ok`` are refused while
compiling a program with complex inputs (``driver/tracing.py``).
"""
from ...ir import control as K
from ...ir.primitive import complex_mode
from ..operations import arrange_ops as R
from ..operations import array_ops as A
from ..operations import contract_ops as C
from ..operations import elementwise_ops as E
from ..operations import math_ops as M
from ..operations import special_ops as S
from .grad_base import bprop_getters, jvp_getters
from .grad_math_ops import d_abs

real = E.Real()
conj = E.Conj()
imag = E.Imag()
select = A.Select()
zeros_like = A.ZerosLike()
abs_ = M.Abs()

# holomorphic (or linear) primitives whose real rules hold for complex values,
# and the shape and bookkeeping primitives the rules themselves emit
_HOLOMORPHIC = (M.Add, M.TensorAdd, M.Sub, M.Mul, M.Div, M.RealDiv, M.Neg, M.Exp, M.Log,
                M.Sin, M.Cos, M.Tanh, M.Sqrt, M.Square, M.Pow, M.Reciprocal, M.MatMul,
                M.MatMulExt, M.BatchMatMul, M.Dot, M.Outer, M.ReduceSum, M.ReduceMean,
                M.SumSquares, M.Abs, C.Einsum, C.EinsumExpand,
                # principal branches: NumPy's cuts are the derivatives' own (Acosh's rule
                # takes 1/(sqrt(z-1) sqrt(z+1)) for complex z, not 1/sqrt(z^2-1))
                M.Sinh, M.Cosh, M.Tan, M.Expm1, M.Log1p, M.Asinh, M.Acosh, M.Atanh, M.Rsqrt,
                M.ReduceProd, S.Sqrtm, S.SolveSylvester,
                # bilinear, with plain (unconjugated) transposes in their adjoints
                M.MatMulGradA, M.MatMulGradB, M.Tensordot, M.TensordotGradA,
                M.TensordotGradB, C.Kron, C.KronGradA, C.KronGradB,
                M.DotGradA, M.DotGradB)
_STRUCTURAL = (A.Reshape, A.Transpose, A.TransposeT, A.ExpandDims, A.Squeeze, A.Flatten,
               A.SwapAxes, A.MoveAxis, A.ReverseV2, A.BroadcastTo, A.GetItem, A.Slice,
               A.StridedSlice, A.Concat, A.Stack, A.Unstack, A.Split, A.Select, A.Identity,
               A.ZerosLike, A.OnesLike, A.Unbroadcast, A.BroadcastLike, A.ExpandReduced,
               A.SumSeed, A.ReductionSeed, A.MeanSeed, A.CheckSens, A.UnpackTuple,
               A.TupleConcat, A.Depend, A.StopGradient, A.GetItemGrad, A.Gather,
               A.GatherGrad, A.Tile, A.TileGrad, A.Pad, A.PadCrop, M.CumSum,
               R.Rearrange, R.RearrangeGrad, A.CastLike,
               # the gradient follows the element NumPy selects (complex numbers
               # compare by real part, then imaginary part)
               M.ReduceMax, M.ReduceMin,
               # not SetItem: a complex value written into a real array loses its
               # imaginary part, and its rule does not take the real part of the cotangent
               # control flow: the ops of its regions are checked one by one
               K.ControlOp, K.Copy, K.CheckGradShape, K.NewAccumulator, K.AccumulateAt)
for _prim in _HOLOMORPHIC + _STRUCTURAL:
    _prim.complex_ok = True


def _unit_conj(x):
    """``conj(x) / |x|``, 0 where x is 0 (the real rule's ``sign(0) = 0``)."""
    size = abs_(x)
    return select(size == 0, 0, conj(x) / select(size == 0, 1, size))


@bprop_getters.register(M.Abs)
def get_bprop_abs(self):
    """``dout * sign(x)``; for complex inputs ``re(dout) * conj(x) / |x|``."""
    def bprop(x, out, dout):
        if complex_mode():
            return (real(dout) * _unit_conj(x),)
        return (dout * d_abs(x, out),)
    return bprop


@jvp_getters.register(M.Abs)
def get_jvp_abs(self):
    """``tx * sign(x)``; for complex inputs ``re(conj(x) * tx) / |x|``."""
    def jvp(x, out, tx):
        if complex_mode():
            return real(_unit_conj(x) * tx)
        return tx * d_abs(x, out)
    return jvp


@bprop_getters.register(E.RealOutput)
def get_bprop_real_output(self):
    def bprop(x, out, dout):
        return (dout,)
    return bprop


@jvp_getters.register(E.RealOutput)
def get_jvp_real_output(self):
    def jvp(x, out, tx):
        return tx
    return jvp


@bprop_getters.register(E.Real)
def get_bprop_real(self):
    def bprop(x, out, dout):
        return (real(dout),)
    return bprop


@jvp_getters.register(E.Real)
def get_jvp_real(self):
    def jvp(x, out, tx):
        return real(tx)
    return jvp


@bprop_getters.register(E.Imag)
def get_bprop_imag(self):
    def bprop(x, out, dout):
        return (real(dout) * -1j,)
    return bprop


@jvp_getters.register(E.Imag)
def get_jvp_imag(self):
    def jvp(x, out, tx):
        return imag(tx)
    return jvp


@bprop_getters.register(E.Conj)
def get_bprop_conj(self):
    def bprop(x, out, dout):
        return (conj(dout),)
    return bprop


@jvp_getters.register(E.Conj)
def get_jvp_conj(self):
    def jvp(x, out, tx):
        return conj(tx)
    return jvp


def _angle_slope(x):
    """``-1j conj(x) / |x|^2``, 0 where x is 0 (the angle jumps there)."""
    size2 = real(x * conj(x))
    return select(size2 == 0, 0, conj(x) * -1j / select(size2 == 0, 1, size2))


@bprop_getters.register(E.Angle)
def get_bprop_angle(self):
    """Of a real x the angle is 0 or pi, a step: its gradient is 0 (and real)."""
    def bprop(x, out, dout):
        if not complex_mode():
            return (zeros_like(x),)
        return (real(dout) * _angle_slope(x),)
    return bprop


@jvp_getters.register(E.Angle)
def get_jvp_angle(self):
    def jvp(x, out, tx):
        if not complex_mode():
            return None
        return real(_angle_slope(x) * tx)
    return jvp


real_like = E.RealLike()


@bprop_getters.register(E.RealLike)
def get_bprop_real_like(self):
    """Self-adjoint: ``re(ct * re(t)) = re(re(ct) * t)``."""
    def bprop(t, like, out, dout):
        return real_like(dout, like), zeros_like(like)
    return bprop


@jvp_getters.register(E.RealLike)
def get_jvp_real_like(self):
    def jvp(t, like, out, tt, tlike):
        return real_like(tt, like)
    return jvp
