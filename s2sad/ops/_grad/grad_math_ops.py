"""bprop rules for math primitives (elementwise, reductions, matmul)."""
from ..operations import math_ops as M
from ..operations import array_ops as A
from .grad_base import bprop_getters, jvp_getters

unbroadcast = A.Unbroadcast()
broadcast_like = A.BroadcastLike()
cos = M.Cos()
sin = M.Sin()
log = M.Log()
zeros_like = A.ZerosLike()


def tangent_sum(a, b, out):
    """The tangent ``a + b`` of a broadcasting op, either may be ``None``."""
    if a is None:
        return broadcast_like(b, out)
    if b is None:
        return broadcast_like(a, out)
    return broadcast_like(a + b, out)


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


# ----------------------------------------------------------------- JVP rules
@jvp_getters.register(M.Add)
def get_jvp_add(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(tx, ty, out)
    return jvp


@jvp_getters.register(M.Sub)
def get_jvp_sub(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(tx, None if ty is None else -ty, out)
    return jvp


@jvp_getters.register(M.Mul)
def get_jvp_mul(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(None if tx is None else tx * y, None if ty is None else x * ty, out)
    return jvp


@jvp_getters.register(M.RealDiv)
def get_jvp_realdiv(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(None if tx is None else tx / y,
                           None if ty is None else -(ty * out / y), out)
    return jvp


@jvp_getters.register(M.Pow)
def get_jvp_pow(self):
    def jvp(x, y, out, tx, ty):
        return tangent_sum(None if tx is None else tx * (y * x ** (y - 1)),
                           None if ty is None else ty * (out * log(x)), out)
    return jvp


@jvp_getters.register(M.Neg)
def get_jvp_neg(self):
    def jvp(x, out, tx):
        return -tx
    return jvp


@jvp_getters.register(M.Sin)
def get_jvp_sin(self):
    def jvp(x, out, tx):
        return tx * cos(x)
    return jvp


@jvp_getters.register(M.Cos)
def get_jvp_cos(self):
    def jvp(x, out, tx):
        return -(tx * sin(x))
    return jvp


@jvp_getters.register(M.Exp)
def get_jvp_exp(self):
    def jvp(x, out, tx):
        return tx * out
    return jvp


@jvp_getters.register(M.Log)
def get_jvp_log(self):
    def jvp(x, out, tx):
        return tx / x
    return jvp


@jvp_getters.register(M.Tanh)
def get_jvp_tanh(self):
    def jvp(x, out, tx):
        return tx * (1 - out * out)
    return jvp


@jvp_getters.register(M.Sqrt)
def get_jvp_sqrt(self):
    def jvp(x, out, tx):
        return tx / (2 * out)
    return jvp


@jvp_getters.register(M.Square)
def get_jvp_square(self):
    def jvp(x, out, tx):
        return tx * (2 * x)
    return jvp


@jvp_getters.register(M.MatMul)
def get_jvp_matmul(self):
    def jvp(x, w, out, tx, tw):
        if tx is None:
            return self(x, tw)
        if tw is None:
            return self(tx, w)
        return self(tx, w) + self(x, tw)
    return jvp


@jvp_getters.register(M.ReduceSum)
@jvp_getters.register(M.ReduceMean)
def get_jvp_reduce(self):
    def jvp(x, axis, out, tx, taxis):
        return self(tx, axis)
    return jvp
