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
