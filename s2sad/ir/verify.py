"""IR verifier: every use is defined earlier in program order, once.

Regions see the values defined before their op and their own params.  A value
defined inside a region may be read after the op (a forward branch's values
read by the backward branch taken on the same condition).  ``StackPop``
re-binds values pushed earlier, by design, so it may redefine.
"""
from .nodes import Var, leaves


class IRError(AssertionError):
    """The IR broke an invariant: an s2sad bug, never a user error."""


def verify(func):
    defined = set()

    # ``where`` is a value to describe only when something is wrong: building
    # a message for every use would make verification dominate compile time
    def define(v, where):
        if not isinstance(v, Var):
            raise IRError("%s: %r is not a Var (%r)" % (func.name, v, where))
        if v.id in defined:
            raise IRError("%s: %r defined twice (%r)" % (func.name, v, where))
        defined.add(v.id)

    def use(v, where):
        if isinstance(v, Var) and v.id not in defined:
            raise IRError("%s: %r used before definition in %r" % (func.name, v, where))

    for p in func.params:
        define(p, "parameters")
    _block(func.body, defined, define, use)
    for v in leaves(func.result):
        use(v, "the result")
    return func


def _block(ops, defined, define, use):
    """Check ``ops`` in program order (a region's params and ops before its op's outputs)."""
    from .control import StackPop
    for op in ops:
        for v in op.arg_vars():
            use(v, op)
        for r in op.regions:
            for p in r.params:
                if p.id not in defined:
                    define(p, op)
            _block(r.ops, defined, define, use)
            for v in leaves(r.result):
                use(v, op)
        for o in op.outs:
            if isinstance(op.prim, StackPop) and o.id in defined:
                continue
            define(o, op)
