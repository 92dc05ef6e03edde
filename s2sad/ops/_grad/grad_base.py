"""The bprop, JVP and Taylor-rule registries.

A bprop getter takes the primitive instance and returns
``bprop(*inputs, out, dout) -> tuple of input gradients``, written with
primitives.  s2sad never calls a returned bprop on data: it reads the bprop's
source with its own frontend and inlines it into the adjoint program, so a rule
is differentiable again for free.
"""


class Registry(dict):
    """Maps a primitive class (or its name) to its rule: a bprop or JVP getter, or a Taylor rule."""

    def register(self, prim):
        """Decorator: ``@bprop_getters.register(ops.Sin)``."""
        def deco(fn):
            self[prim] = fn
            return fn
        return deco

    def lookup(self, prim):
        """The getter for a primitive instance, searching its class's MRO."""
        return self.lookup_class(type(prim))

    def lookup_class(self, prim_class):
        """The getter for a primitive class (or the nearest base that has one)."""
        for cls in prim_class.__mro__:
            if cls in self:
                return self[cls]
            name = getattr(cls, "__name__", None)
            if name in self:
                return self[name]
        return None


bprop_getters = Registry()
bprops = bprop_getters

#: Forward-mode rules. A getter returns ``jvp(*inputs, out, *tangents)`` giving
#: the tangent of ``out`` (a tuple for multi-output primitives).  The tangent
#: of an input that does not depend on the differentiated values is ``None``,
#: known while compiling, so a rule can skip its term with ``if t is None``.
jvp_getters = Registry()

#: Taylor-mode rules (``ad/taylor.py``), for primitives neither linear nor
#: bilinear (``Primitive.linearity``).  A rule is the function itself, not a
#: getter: ``rule(T, *series, out)`` gets, per input, its truncated series
#: ``[x, x_1, ..., x_K]`` (``None`` for a coefficient known to be zero) and
#: returns ``[out, y_1, ..., y_K]``.  It emits primitives through the Taylor
#: builder ``T`` (``T.emit``, ``T.mul``, ``T.total``, ``T.ode``...), which
#: keeps the AD layer out of the rules' imports.
taylor_rules = Registry()
