"""The bprop and JVP registries.

A bprop getter takes the primitive instance and returns
``bprop(*inputs, out, dout) -> tuple of input gradients``, written with
primitives.  s2sad never calls a returned bprop on data: it reads the bprop's
source with its own frontend and inlines it into the adjoint program, so a rule
is differentiable again for free.
"""


class Registry(dict):
    """Maps a primitive class (or its name) to a bprop getter."""

    def register(self, prim):
        """Decorator: ``@bprop_getters.register(ops.Sin)``."""
        def deco(fn):
            self[prim] = fn
            return fn
        return deco

    def lookup(self, prim):
        """The getter for a primitive instance, searching its class's MRO."""
        for cls in type(prim).__mro__:
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
