"""``s2sad.ops.primitive``: where MindSpore code imports the Primitive base from.

The class lives with the IR (``s2sad/ir/primitive.py``), below every layer that
uses it; this module keeps the public import path, and adds what MindSpore's
user-defined primitives are written with: ``PrimitiveWithInfer``,
``PrimitiveWithCheck`` and ``@prim_attr_register``.

Such a primitive is computed, eagerly and in generated code, by its ``emit``
(the Python expression over its inputs' expressions), as every s2sad
primitive is; ``infer_shape``, ``infer_dtype``, ``infer_value`` and the
``check_*`` methods are accepted and never needed (generated code is
shape-polymorphic and NumPy gives dtypes).  A class without ``emit`` raises
an error naming it where it is called.  Its gradient is a bprop registered
with ``@bprop_getters.register(TheClass)``.
"""
import functools
import inspect

from ..ir.primitive import Primitive, constexpr  # noqa: F401

__all__ = ["Primitive", "PrimitiveWithInfer", "PrimitiveWithCheck", "prim_attr_register",
           "constexpr"]


class _UserPrimitive(Primitive):
    """What MindSpore's user primitive bases share: ``__init__(name)`` and no Taylor rule.

    MindSpore's ``Primitive.__init__`` takes the primitive's name; s2sad names a
    primitive after its class.  A user primitive's higher derivatives go
    through nested reverse mode (``taylor = "nested"``): it has no Taylor rule.
    """
    taylor = "nested"

    def __init__(self, name=None, **attrs):
        registered = getattr(self, "attrs", {})     # by @prim_attr_register, before the body
        super().__init__(**dict(registered, **attrs))
        if name is not None:
            self.name = name


class PrimitiveWithInfer(_UserPrimitive):
    """MindSpore's base for a primitive with ``infer_shape``/``infer_dtype``/``infer_value``
    (accepted; s2sad does not call them)."""


class PrimitiveWithCheck(_UserPrimitive):
    """MindSpore's base for a primitive with ``check_shape``/``check_dtype`` (accepted;
    s2sad does not call them)."""


def prim_attr_register(init):
    """Decorate a user primitive's ``__init__``: its arguments, defaults included,
    become the primitive's attributes (instance attributes, and part of its
    identity: two instances with other values are other primitives to the
    compile cache), recorded before the body runs, as MindSpore does."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        attrs = {}
        for i, (name, value) in enumerate(bound.arguments.items()):
            kind = signature.parameters[name].kind
            if i == 0:
                continue                                    # self
            if kind is inspect.Parameter.VAR_KEYWORD:
                attrs.update(value)
            elif kind is not inspect.Parameter.VAR_POSITIONAL:
                attrs[name] = value
        Primitive.__init__(self, **attrs)
        init(self, *args, **kwargs)
        for name, value in attrs.items():   # a body calling the base __init__ keeps them
            if name not in self.attrs:
                self.add_prim_attr(name, value)
    wrapper.decorated_func = init
    return wrapper
