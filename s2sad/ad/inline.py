"""Inlining a derivative rule (a bprop, a JVP, a user ``bprop``) into the program being built.

A rule is ordinary Python that the frontend builder traces at the point of
use.  What it emits is attributed to the rule (``Op.origin``, shown in the
IR and in errors) and, for s2sad's own rules, to the differentiated op's
line in the user's code (``loc_override``), since the rule's own lines mean
nothing to the user.  The builder's ``attributed`` sets both for the call and
restores them after, however the call ends.
"""
from ..errors import CompileError


def rule_name(rule):
    """How the IR and messages name ``rule``."""
    return getattr(rule, "__qualname__", repr(rule))


def rule_for(getter, op):
    """``getter(op.prim)``: the rule for ``op``.  A getter may refuse (a
    ``CompileError`` without a location, e.g. for a derivative with respect to
    an argument that has none); the refusal is reported at ``op``'s line."""
    try:
        return getter(op.prim)
    except CompileError as err:
        if err.loc is not None:
            raise
        raise CompileError(err.message, op.loc, err.hint) from None


def inline_rule(b, rule, args, loc, origin, self_value=None, own_lines=False):
    """Trace ``rule(*args)`` into ``b`` for the op at ``loc``; returns its result.

    ``origin`` names the rule in the IR (``rule_name`` of what registered
    it); ``own_lines`` leaves where ops point as it is, so a user's rule
    keeps its own lines; ``self_value`` binds ``self`` of a method.
    """
    with b.attributed(b.loc_override if own_lines else loc, origin):
        return b.call_function(rule, args, loc=loc, self_value=self_value)
