"""Reverse-mode AD: forward IR -> IR computing the forward, then its adjoint.

Only *active* ops get adjoints: an op is active when one of its inputs depends
on a differentiated input and one of its outputs reaches the result.  Adjoints
are symbolic until a rule produces one, so a value nothing flows back to costs
nothing; a rule's gradient that is a ``ZerosLike`` (or a constant zero) is
dropped at once.  Several contributions to one value are summed.

Each rule is the MindSpore-style ``bprop(*inputs, out, dout)``; it is inlined
by the same frontend that built the forward program, so the adjoint is made of
primitives again and can itself be differentiated.
"""
import numpy as np

from ..errors import NoGradientRuleError, RuleError
from ..ir.nodes import Var, Const, Func, AdjointOf, leaves
from ..ops._grad import bprop_getters
from ..ops.operations import math_ops as M
from ..ops.operations import array_ops as A


def _rule_name(getter):
    return getattr(getter, "__qualname__", repr(getter))


class _Adjoints:
    """Contributions to each forward value's adjoint, summed on demand."""

    def __init__(self, builder):
        self.b = builder
        self.contribs = {}
        self.zero_ids = set()

    def add(self, var, grad):
        if isinstance(grad, Const):
            v = grad.value
            if v is None or (np.ndim(v) == 0 and not isinstance(v, (tuple, list)) and v == 0):
                return
        if isinstance(grad, Var) and grad.id in self.zero_ids:
            return
        self.contribs.setdefault(var.id, []).append(grad)

    def has(self, var):
        return var.id in self.contribs

    def total(self, var, loc=None):
        """The summed adjoint of ``var``, named ``d_<var>`` (``None`` if none)."""
        parts = self.contribs.get(var.id)
        if not parts:
            return None
        if len(parts) == 1:
            total = parts[0]
        else:
            saved = self.b.loc_override
            self.b.loc_override = loc or saved
            total = parts[0]
            for p in parts[1:]:
                total = self.b.emit(M.Add(), [total, p], loc)
            self.b.loc_override = saved
        if isinstance(total, Var) and total.hint is None:
            total.hint = AdjointOf(var)
        return total


def active_ops(func, wrt):
    """Ops on a path from a ``wrt`` value to the result."""
    active = {v.id for v in wrt}
    for op in func.body:
        if op.prim.differentiable and any(v.id in active for v in op.arg_vars()):
            active.update(o.id for o in op.outs)
    needed = {v.id for v in leaves(func.result) if isinstance(v, Var) and v.id in active}
    relevant = []
    for op in reversed(func.body):
        if any(o.id in needed for o in op.outs) and op.prim.differentiable:
            hit = [v for v in op.arg_vars() if v.id in active]
            if hit:
                needed.update(v.id for v in hit)
                relevant.append(op)
    return relevant, active


def reverse(func, wrt, sens=None, name=None, return_value=False):
    """The IR of ``func``'s gradient with respect to the Vars ``wrt``.

    ``sens`` mirrors ``func.result`` with Vars that become extra parameters;
    ``None`` means a sens of ones for every output leaf.  The new function
    returns the tuple of gradients (preceded by the forward value if
    ``return_value``).
    """
    from ..frontend.build import Builder
    b = Builder()
    b.name_hints = False
    adj = _Adjoints(b)
    relevant, active = active_ops(func, wrt)

    out_leaves = leaves(func.result)
    sens_leaves = leaves(sens) if sens is not None else [None] * len(out_leaves)
    check = A.CheckSens()
    for i, (out, s) in enumerate(zip(out_leaves, sens_leaves)):
        if not (isinstance(out, Var) and out.id in active):
            continue
        if s is None:
            seed = b.emit(A.OnesLike(), [out], func.loc)
        else:
            seed = b.emit(check, [s, out, Const("output %d" % i if len(out_leaves) > 1
                                                else "output")], func.loc)
        seed.hint = AdjointOf(out)
        adj.add(out, seed)

    for op in relevant:
        douts = [adj.total(o, op.loc) for o in op.outs]
        if all(d is None for d in douts):
            continue
        getter = bprop_getters.lookup(op.prim)
        if getter is None:
            raise NoGradientRuleError(
                "primitive %s has no registered bprop rule" % op.prim.name, op.loc,
                hint="register one with @bprop_getters.register(%s)" % type(op.prim).__name__)
        if len(douts) == 1:
            dout = douts[0]
            out = op.outs[0]
        else:
            dout = tuple(d if d is not None else b.emit(A.ZerosLike(), [o], op.loc)
                         for d, o in zip(douts, op.outs))
            out = tuple(op.outs)
        b.loc_override = op.loc
        b.origin = _rule_name(getter)
        start = len(b.ops)
        grads = b.call_function(getter(op.prim), list(op.args) + [out, dout], loc=op.loc)
        for new in b.ops[start:]:
            if isinstance(new.prim, A.ZerosLike):
                adj.zero_ids.update(o.id for o in new.outs)
        b.loc_override = None
        b.origin = None
        if not isinstance(grads, tuple) or len(grads) != len(op.args):
            raise RuleError(
                "bprop rule %s for %s returned %s gradients for %d inputs; a bprop must "
                "return a tuple with one gradient per input"
                % (_rule_name(getter), op.prim.name,
                   len(grads) if isinstance(grads, tuple) else "a non-tuple of",
                   len(op.args)))
        for arg, g in zip(op.args, grads):
            _distribute(adj, arg, g, active, getter, op)

    results = []
    for v in wrt:
        g = adj.total(v, func.loc)
        if g is None:
            g = b.emit(A.ZerosLike(), [v], func.loc)
            g.hint = AdjointOf(v)
        results.append(g)
    body = list(func.body) + b.ops
    params = list(func.params) + [s for s in leaves(sens) if isinstance(s, Var)] \
        if sens is not None else list(func.params)
    result = (func.result, tuple(results)) if return_value else tuple(results)
    out = Func(name or func.name + "_grad", params, body, result, func.loc)
    out.backward_start = len(func.body)
    return out


def _distribute(adj, arg, g, active, getter, op):
    """Add gradient structure ``g`` to the adjoints of ``arg``'s active leaves."""
    if isinstance(arg, tuple):
        if not isinstance(g, tuple) or len(g) != len(arg):
            if isinstance(g, Const) and isinstance(g.value, tuple) and len(g.value) == len(arg):
                g = tuple(Const(x) for x in g.value)
            else:
                raise RuleError("bprop rule %s for %s returned a gradient whose structure does "
                                "not match its tuple input" % (_rule_name(getter), op.prim.name))
        for a, gg in zip(arg, g):
            _distribute(adj, a, gg, active, getter, op)
        return
    if isinstance(arg, Var) and arg.id in active:
        adj.add(arg, g)
