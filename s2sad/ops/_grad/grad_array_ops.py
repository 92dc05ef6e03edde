"""bprop rules for shape, layout and indexing primitives."""
from ..operations import array_ops as A
from ...backend.runtime import inverse_permutation
from .grad_base import bprop_getters, jvp_getters

shape_of = A.Shape()
reshape = A.Reshape()
transpose = A.Transpose()
getitem = A.GetItem()
getitem_grad = A.GetItemGrad()
unbroadcast = A.Unbroadcast()
broadcast_like = A.BroadcastLike()
zeros_like = A.ZerosLike()


@bprop_getters.register(A.Reshape)
def get_bprop_reshape(self):
    def bprop(x, shape, out, dout):
        return reshape(dout, shape_of(x)), zeros_like(shape)
    return bprop


@bprop_getters.register(A.Transpose)
def get_bprop_transpose(self):
    def bprop(x, perm, out, dout):
        return transpose(dout, inverse_permutation(perm)), zeros_like(perm)
    return bprop


@bprop_getters.register(A.GetItem)
def get_bprop_getitem(self):
    def bprop(x, index, out, dout):
        return getitem_grad(dout, x, index), zeros_like(index)
    return bprop


@bprop_getters.register(A.GetItemGrad)
def get_bprop_getitem_grad(self):
    def bprop(dout_, x, index, out, dout):
        return getitem(dout, index), zeros_like(x), zeros_like(index)
    return bprop


@bprop_getters.register(A.Depend)
def get_bprop_depend(self):
    def bprop(value, expr, out, dout):
        return dout, zeros_like(expr)
    return bprop


@bprop_getters.register(A.Unbroadcast)
def get_bprop_unbroadcast(self):
    def bprop(dx, x, out, dout):
        return broadcast_like(dout, dx), zeros_like(x)
    return bprop


@bprop_getters.register(A.BroadcastLike)
def get_bprop_broadcast_like(self):
    def bprop(a, x, out, dout):
        return unbroadcast(dout, a), zeros_like(x)
    return bprop


@bprop_getters.register(A.ExpandReduced)
def get_bprop_expand_reduced(self):
    def bprop(d, x, axis, out, dout):
        return reshape(dout, shape_of(d)), zeros_like(x), zeros_like(axis)
    return bprop


@bprop_getters.register(A.TransposeT)
def get_bprop_transpose_t(self):
    transpose_t = A.TransposeT()

    def bprop(x, out, dout):
        return (transpose_t(dout),)
    return bprop


@bprop_getters.register(A.CheckSens)
def get_bprop_check_sens(self):
    def bprop(sens, out_, what, out, dout):
        return dout, zeros_like(out_), zeros_like(what)
    return bprop


# ----------------------------------------------------------------- JVP rules
# Each of these is linear in its first input: the tangent is the primitive
# applied to that input's tangent, with the other inputs unchanged.
@jvp_getters.register(A.Reshape)
@jvp_getters.register(A.Transpose)
@jvp_getters.register(A.GetItem)
@jvp_getters.register(A.Unbroadcast)
@jvp_getters.register(A.BroadcastLike)
def get_jvp_linear2(self):
    def jvp(x, other, out, tx, tother):
        if tx is None:
            return None
        return self(tx, other)
    return jvp


@jvp_getters.register(A.GetItemGrad)
@jvp_getters.register(A.ExpandReduced)
def get_jvp_linear3(self):
    def jvp(x, a, b, out, tx, ta, tb):
        if tx is None:
            return None
        return self(tx, a, b)
    return jvp


@jvp_getters.register(A.TransposeT)
def get_jvp_transpose_t(self):
    def jvp(x, out, tx):
        return self(tx)
    return jvp


@jvp_getters.register(A.Depend)
def get_jvp_depend(self):
    def jvp(value, expr, out, tvalue, texpr):
        return tvalue
    return jvp


@jvp_getters.register(A.CheckSens)
def get_jvp_check_sens(self):
    def jvp(sens, out_, what, out, tsens, tout, twhat):
        return tsens
    return jvp
