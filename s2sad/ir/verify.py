"""IR verifier: every use is defined before it, every Var is defined once."""
from .nodes import Var, leaves


class IRError(AssertionError):
    """The IR broke an invariant: an s2sad bug, never a user error."""


def verify(func):
    defined = set()
    for p in func.params:
        if not isinstance(p, Var):
            raise IRError("%s: parameter %r is not a Var" % (func.name, p))
        if p.id in defined:
            raise IRError("%s: parameter %r defined twice" % (func.name, p))
        defined.add(p.id)
    for op in func.body:
        for v in op.arg_vars():
            if v.id not in defined:
                raise IRError("%s: %r used before definition in %r" % (func.name, v, op))
        for o in op.outs:
            if o.id in defined:
                raise IRError("%s: %r defined twice (in %r)" % (func.name, o, op))
            defined.add(o.id)
    for v in leaves(func.result):
        if isinstance(v, Var) and v.id not in defined:
            raise IRError("%s: result %r is undefined" % (func.name, v))
    return func
