"""Forward-mode AD: forward IR -> IR computing the value and its tangent.

Tangents are propagated op by op, in program order, right after each op, so
``jvp`` costs about one extra forward pass.  An input that does not depend on
the differentiated values has tangent ``None`` (a symbolic zero known while
compiling), so rules add only the terms that exist.
"""
from ..errors import NoGradientRuleError, RuleError
from ..ir.nodes import Var, Const, Func, AdjointOf, leaves, map_structure
from ..ops._grad import jvp_getters
from ..ops.operations import array_ops as A


def _rule_name(getter):
    return getattr(getter, "__qualname__", repr(getter))


def forward(func, wrt, name=None):
    """``func`` extended with tangent parameters for ``wrt``; returns ``(out, t_out)``."""
    from ..frontend.build import Builder
    b = Builder()
    b.name_hints = False
    tangents = {}
    t_params = []
    for v in wrt:
        t = Var(AdjointOf(v, "t_"))
        tangents[v.id] = t
        t_params.append(t)

    def tangent_of(a):
        if isinstance(a, tuple):
            return tuple(tangent_of(x) for x in a)
        if isinstance(a, Var) and a.id in tangents:
            return tangents[a.id]
        return Const(None)

    for op in func.body:
        b.ops.append(op)
        arg_t = [tangent_of(a) for a in op.args]
        if not op.prim.differentiable or all(
                isinstance(t, Const) for a in arg_t for t in leaves(a)):
            continue
        getter = jvp_getters.lookup(op.prim)
        if getter is None:
            raise NoGradientRuleError(
                "primitive %s has no registered JVP rule" % op.prim.name, op.loc,
                hint="register one with @jvp_getters.register(%s)" % type(op.prim).__name__)
        out = op.outs[0] if len(op.outs) == 1 else tuple(op.outs)
        b.loc_override = op.loc
        b.origin = _rule_name(getter)
        t_out = b.call_function(getter(op.prim), list(op.args) + [out] + arg_t, loc=op.loc)
        b.loc_override = None
        b.origin = None
        outs_t = list(t_out) if len(op.outs) > 1 else [t_out]
        if len(outs_t) != len(op.outs):
            raise RuleError("JVP rule %s for %s returned %d tangents for %d outputs"
                            % (_rule_name(getter), op.prim.name, len(outs_t), len(op.outs)))
        for o, t in zip(op.outs, outs_t):
            if isinstance(t, Const) and t.value is None:
                continue
            if isinstance(t, Var) and t.hint is None:
                t.hint = AdjointOf(o, "t_")
            tangents[o.id] = t

    def result_tangent(a):
        t = tangent_of(a)
        if isinstance(t, Const) and isinstance(a, Var):
            z = b.emit(A.ZerosLike(), [a], func.loc)
            z.hint = AdjointOf(a, "t_")
            return z
        if isinstance(t, Const) and isinstance(a, Const):
            return Const(0.0)
        return t

    t_result = map_structure(result_tangent, func.result)
    return Func(name or func.name + "_jvp", list(func.params) + t_params, b.ops,
                (func.result, t_result), func.loc)
