"""bprop and JVP rules for the rearranging primitives (``arrange_ops``).

Every differentiable one is linear in its array input: the JVP applies the
primitive to the tangent, and the adjoints (``RearrangeGrad``,
``TakeAlongAxisGrad``) are linear in the cotangent, so their own rules apply
the forward primitive again.
"""
from ...ir.primitive import complex_mode
from ..operations import arrange_ops as R
from ..operations import array_ops as A
from ..operations import elementwise_ops as E
from .grad_base import bprop_getters, jvp_getters

zeros_like = A.ZerosLike()
real_like = E.RealLike()


def _decided_by_values(op):
    """``np.real_if_close`` of a complex value: real or complex by the values, so its
    tangent follows the result's type (``real_if_close`` of the tangent would not)."""
    return op.fn == "real_if_close" and complex_mode()


def _grad_of(op):
    """The ``RearrangeGrad`` undoing the ``Rearrange`` (or the reverse) ``op``."""
    return dict(op.kwargs), op.fn, op.num


@bprop_getters.register(R.Rearrange)
def get_bprop_rearrange(self):
    kwargs, fn, num = _grad_of(self)
    adjoint = R.RearrangeGrad(fn, num, **kwargs)

    def bprop(x, out, dout):
        if _decided_by_values(self):
            return (real_like(dout, out),)
        return (adjoint(dout, x),)
    return bprop


@jvp_getters.register(R.Rearrange)
def get_jvp_rearrange(self):
    def jvp(x, out, tx):
        if _decided_by_values(self):
            return real_like(tx, out)
        return self(tx)
    return jvp


@bprop_getters.register(R.RearrangeGrad)
def get_bprop_rearrange_grad(self):
    kwargs, fn, num = _grad_of(self)
    forward = R.Rearrange(fn, num, **kwargs)

    def bprop(dout, x, out, d):
        return forward(d), zeros_like(x)
    return bprop


@jvp_getters.register(R.RearrangeGrad)
@jvp_getters.register(R.TakeAlongAxis)
def get_jvp_linear_first(self):
    def jvp(x, other, out, tx, tother):
        if tx is None:
            return None
        return self(tx, other)
    return jvp


@bprop_getters.register(R.TakeAlongAxis)
def get_bprop_take_along_axis(self):
    adjoint = R.TakeAlongAxisGrad(self.axis)

    def bprop(x, indices, out, dout):
        return adjoint(dout, x, indices), zeros_like(indices)
    return bprop


@bprop_getters.register(R.TakeAlongAxisGrad)
def get_bprop_take_along_axis_grad(self):
    take = R.TakeAlongAxis(self.axis)

    def bprop(dout, x, indices, out, d):
        return take(d, indices), zeros_like(x), zeros_like(indices)
    return bprop


@jvp_getters.register(R.TakeAlongAxisGrad)
def get_jvp_take_along_axis_grad(self):
    def jvp(dout, x, indices, out, tdout, tx, tindices):
        if tdout is None:
            return None
        return self(tdout, x, indices)
    return jvp
