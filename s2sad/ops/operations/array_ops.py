"""Shape, layout, indexing and creation primitives."""
from ..primitive import Primitive


class Reshape(Primitive):
    """Reshape ``x`` to ``shape`` (an input: a tuple, may hold one -1)."""

    def emit(self, x, shape):
        return "xp.reshape(%s, %s)" % (x, shape)


class Transpose(Primitive):
    """Permute the axes of ``x`` by ``perm`` (an input)."""

    def emit(self, x, perm):
        return "xp.transpose(%s, %s)" % (x, perm)


class ZerosLike(Primitive):
    """Zeros of x's shape and dtype (no gradient)."""
    differentiable = False

    def emit(self, x):
        return "xp.zeros_like(%s)" % x


class OnesLike(Primitive):
    """Ones of x's shape and dtype (no gradient)."""
    differentiable = False

    def emit(self, x):
        return "xp.ones_like(%s)" % x


class Shape(Primitive):
    """The shape of x as a tuple (no gradient)."""
    differentiable = False

    def emit(self, x):
        return "xp.shape(%s)" % x


class GetItem(Primitive):
    """``x[index]`` for any NumPy index; the index is a compile-time input."""

    def emit(self, x, index):
        return "%s[%s]" % (x, index)


class GetItemGrad(Primitive):
    """Zeros shaped like ``x`` with ``dout`` added at ``index`` (adjoint of GetItem)."""

    def emit(self, dout, x, index):
        return "rt.getitem_grad(%s, %s, %s)" % (dout, x, index)


class StopGradient(Primitive):
    """Identity whose output carries no gradient."""
    differentiable = False

    def emit(self, x):
        return x


class Depend(Primitive):
    """Returns ``value``; ``expr`` is only an ordering dependency."""

    def emit(self, value, expr):
        return value


class Unbroadcast(Primitive):
    """Sum ``dx`` down to the shape of ``x``: the adjoint of broadcasting."""

    def emit(self, dx, x):
        return "rt.unbroadcast(%s, %s)" % (dx, x)


class BroadcastLike(Primitive):
    """Broadcast ``a`` to the shape of ``x``: the adjoint of Unbroadcast."""

    def emit(self, a, x):
        return "rt.broadcast_like(%s, %s)" % (a, x)


class ExpandReduced(Primitive):
    """Reinsert the axes a reduction over ``axis`` removed (adjoint helper)."""

    def __init__(self, keep_dims=False):
        super().__init__(keep_dims=bool(keep_dims))

    def emit(self, dout, x, axis):
        if self.keep_dims:
            return dout
        return "rt.expand_reduced(%s, %s, %s, False)" % (dout, x, axis)


class ReducedCount(Primitive):
    """How many elements of ``x`` each value of a reduction over ``axis`` covers."""
    differentiable = False

    def emit(self, x, axis):
        return "rt.reduced_count(%s, %s)" % (x, axis)


class TransposeT(Primitive):
    """``x.T``: reverse all axes."""

    def emit(self, x):
        return "%s.T" % x


class CheckSens(Primitive):
    """Identity on ``sens`` that first checks it has the shape of ``out``."""

    def emit(self, sens, out, what):
        return "rt.check_sens(%s, %s, %s)" % (sens, out, what)


__all__ = [_n for _n, _v in list(globals().items())
           if isinstance(_v, type) and issubclass(_v, Primitive) and _v is not Primitive]
