"""Rules for the identities the frontend inserts (parameter copies, definedness checks)."""
from ...ir import control as C
from .grad_base import bprop_getters, jvp_getters


@bprop_getters.register(C.Copy)
@bprop_getters.register(C.CheckDefined)
def get_bprop_identity(self):
    def bprop(x, out, dout):
        return (dout,)
    return bprop


@jvp_getters.register(C.Copy)
@jvp_getters.register(C.CheckDefined)
def get_jvp_identity(self):
    def jvp(x, out, tx):
        return tx
    return jvp


@bprop_getters.register(C.AccumulateAt)
def get_bprop_accumulate_at(self):
    from ..operations.array_ops import GetItem, ZerosLike
    getitem = GetItem()
    zeros_like = ZerosLike()

    def bprop(acc, index, d, out, dout):
        return dout, zeros_like(index), getitem(dout, index)
    return bprop


@jvp_getters.register(C.AccumulateAt)
def get_jvp_accumulate_at(self):
    def jvp(acc, index, d, out, tacc, tindex, td):
        if td is None:
            return tacc
        return self(tacc, index, td)
    return jvp


@bprop_getters.register(C.CheckGradShape)
def get_bprop_check_grad_shape(self):
    from ..operations.array_ops import ZerosLike
    zeros_like = ZerosLike()

    def bprop(g, x, out, dout):
        return dout, zeros_like(x)
    return bprop


@jvp_getters.register(C.CheckGradShape)
def get_jvp_check_grad_shape(self):
    def jvp(g, x, out, tg, tx):
        return tg
    return jvp
