"""bprop rules for math primitives (elementwise, reductions, matmul)."""
from ..operations import math_ops as M
from ..operations import array_ops as A
from .grad_base import bprop_getters

unbroadcast = A.Unbroadcast()
broadcast_like = A.BroadcastLike()
cos = M.Cos()
sin = M.Sin()
log = M.Log()
zeros_like = A.ZerosLike()


def binop_grad_common(x, y, dx, dy):
    """Reduce each gradient of a broadcasting binary op to its input's shape."""
    return unbroadcast(dx, x), unbroadcast(dy, y)


@bprop_getters.register(M.Add)
def get_bprop_add(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout, dout)
    return bprop


@bprop_getters.register(M.Sub)
def get_bprop_sub(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout, -dout)
    return bprop


@bprop_getters.register(M.Mul)
def get_bprop_mul(self):
    def bprop(x, y, out, dout):
        return binop_grad_common(x, y, dout * y, dout * x)
    return bprop


@bprop_getters.register(M.RealDiv)
def get_bprop_realdiv(self):
    def bprop(x, y, out, dout):
        dx = dout / y
        return binop_grad_common(x, y, dx, -(dx * out))
    return bprop


@bprop_getters.register(M.Pow)
def get_bprop_pow(self):
    def bprop(x, y, out, dout):
        dx = dout * (y * x ** (y - 1))
        dy = dout * (out * log(x))
        return binop_grad_common(x, y, dx, dy)
    return bprop


@bprop_getters.register(M.Neg)
def get_bprop_neg(self):
    def bprop(x, out, dout):
        return (-dout,)
    return bprop


@bprop_getters.register(M.Sin)
def get_bprop_sin(self):
    def bprop(x, out, dout):
        return (dout * cos(x),)
    return bprop


@bprop_getters.register(M.Cos)
def get_bprop_cos(self):
    def bprop(x, out, dout):
        return (-(dout * sin(x)),)
    return bprop


@bprop_getters.register(M.Exp)
def get_bprop_exp(self):
    def bprop(x, out, dout):
        return (dout * out,)
    return bprop


@bprop_getters.register(M.Log)
def get_bprop_log(self):
    def bprop(x, out, dout):
        return (dout / x,)
    return bprop


@bprop_getters.register(M.Tanh)
def get_bprop_tanh(self):
    def bprop(x, out, dout):
        return (dout * (1 - out * out),)
    return bprop


@bprop_getters.register(M.Sqrt)
def get_bprop_sqrt(self):
    def bprop(x, out, dout):
        return (dout / (2 * out),)
    return bprop


@bprop_getters.register(M.Square)
def get_bprop_square(self):
    def bprop(x, out, dout):
        return (dout * (2 * x),)
    return bprop


@bprop_getters.register(M.MatMul)
def get_bprop_matmul(self):
    ta = self.transpose_a
    tb = self.transpose_b
    mul1 = M.MatMul(transpose_a=(ta and tb), transpose_b=(ta or (not tb)))
    mul2 = M.MatMul(transpose_a=((not ta) or tb), transpose_b=(ta and tb))

    def bprop(x, w, out, dout):
        if ta:
            dx = mul1(w, dout)
        else:
            dx = mul1(dout, w)
        if tb:
            dw = mul2(dout, x)
        else:
            dw = mul2(x, dout)
        return dx, dw
    return bprop


@bprop_getters.register(M.ReduceSum)
def get_bprop_reducesum(self):
    expand = A.ExpandReduced(self.keep_dims)

    def bprop(x, axis, out, dout):
        return broadcast_like(expand(dout, x, axis), x), zeros_like(axis)
    return bprop


@bprop_getters.register(M.ReduceMean)
def get_bprop_reducemean(self):
    expand = A.ExpandReduced(self.keep_dims)
    count = A.ReducedCount()

    def bprop(x, axis, out, dout):
        dx = broadcast_like(expand(dout, x, axis), x)
        return dx / count(x, axis), zeros_like(axis)
    return bprop
