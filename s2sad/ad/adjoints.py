"""What reverse mode keeps and asks while it walks a program (``reverse.py``).

``Adjoints`` collects the contributions to each value's adjoint and sums them
when the walker needs the total; ``propagate`` finds the values that depend
on a differentiated input (only those get adjoints); the loop helpers say
which carried values an adjoint can reach; the rest read or rewrite op trees
(the values they read, fresh names for popped values, copies AD may add to).
None of it emits a rule: that is the walker's.
"""
import numpy as np

from ..ir.nodes import Var, Const, Op, Region, AdjointOf, leaves, walk_ops
from ..ir import control as C
from ..ops.operations import math_ops as M
from ..ops.operations import array_ops as A


class Adjoints:
    """Contributions to each forward value's adjoint, summed on demand."""

    def __init__(self, builder, zero_ids, shape_pairs):
        self.b = builder
        self.contribs = {}
        self.vars = {}
        self.zero_ids = zero_ids
        self.shape_pairs = shape_pairs

    def add(self, var, grad):
        if isinstance(grad, Const):
            v = grad.value
            if v is None or (np.ndim(v) == 0 and not isinstance(v, (tuple, list)) and v == 0):
                return
        if isinstance(grad, Var) and grad.id in self.zero_ids:
            return
        self.vars[var.id] = var
        self.contribs.setdefault(var.id, []).append(grad)

    def total(self, var, loc=None):
        """The summed adjoint of ``var``, named ``d_<var>`` (``None`` if none)."""
        parts = self.contribs.pop(var.id, None)
        self.vars.pop(var.id, None)
        if not parts:
            return None
        total = parts[0]
        if len(parts) > 1:
            with self.b.attributed(loc or self.b.loc_override):
                for p in parts[1:]:
                    total = self.b.emit(M.Add(), [total, p], loc)
        if isinstance(total, Var):
            if total.hint is None:
                total.hint = AdjointOf(var)
            self.shape_pairs.append((total, var))    # an adjoint has its value's shape
        return total

    def total_or_zeros(self, var, loc=None):
        t = self.total(var, loc)
        if t is None:
            t = self.b.emit(A.ZerosLike(), [var], loc)
            t.hint = AdjointOf(var)
        return t

    def pending(self):
        """Vars with contributions not yet summed, in order of first contribution."""
        return [self.vars[i] for i in self.contribs]


def is_zero(g, zero_ids):
    """A gradient known to be zero: a ZerosLike result or a constant None/zero."""
    if isinstance(g, Var):
        return g.id in zero_ids
    if isinstance(g, Const):
        v = g.value
        return v is None or (isinstance(v, np.ndarray) and not v.any()) or \
            (np.ndim(v) == 0 and not isinstance(v, (tuple, list)) and v == 0)
    return False


# ------------------------------------------------------------------ activity
def loop_parts(op):
    """``(inits, body, carried params, index param or None)`` of a loop op."""
    if isinstance(op.prim, C.ForRange):
        body = op.regions[0]
        return op.args[3:], body, body.params[1:], body.params[0]
    body = op.regions[1]
    return op.args, body, body.params, None


def carried_reach(body, params):
    """Per carried value, the indices of the body results it flows into.

    None when it also reaches a stateful op (a push): what it feeds there
    may come back to anything.
    """
    uses = [{v.id for v in op.used_vars()} for op in body.ops]
    pushes = [op.prim.stateful or any(o.prim.stateful for r in op.regions
                                      for o in walk_ops(r.ops)) for op in body.ops]
    reach = []
    for p in params:
        taint, stateful = {p.id}, False
        for op, used, push in zip(body.ops, uses, pushes):
            if not taint.isdisjoint(used):
                taint.update(o.id for o in op.outs)
                stateful = stateful or push
        reach.append(None if stateful else
                     {j for j, r in enumerate(body.result) if isinstance(r, Var) and r.id in taint})
    return reach


def receiving(douts, reach):
    """Indices of the carried values an adjoint can reach: from after the loop, or through
    the carried values it reaches (a running statistic no output reads gets no slot)."""
    needed = {k for k, d in enumerate(douts) if d is not None}
    grown = True
    while grown:
        grown = False
        for k, r in enumerate(reach):
            if k not in needed and (r is None or r & needed):
                needed.add(k)
                grown = True
    return needed


def propagate(ops, active, stacks=None):
    """Add to ``active`` every value that depends on an active one.

    A value popped from a stack is active when the value pushed at its
    position is (``stacks`` remembers that per stack, in program order).
    """
    stacks = {} if stacks is None else stacks
    for op in ops:
        if isinstance(op.prim, C.StackPush):
            flags = stacks.setdefault(op.args[0].id, [False] * (len(op.args) - 1))
            for i, v in enumerate(op.args[1:]):
                flags[i] = flags[i] or (isinstance(v, Var) and v.id in active)
        elif isinstance(op.prim, C.StackPop):
            for o, f in zip(op.outs, stacks.get(op.args[0].id, ())):
                if f:
                    active.add(o.id)
        elif isinstance(op.prim, C.If):
            for r in op.regions:
                propagate(r.ops, active, stacks)
            for k, o in enumerate(op.outs):
                if any(isinstance(r.result[k], Var) and r.result[k].id in active
                       for r in op.regions):
                    active.add(o.id)
        elif isinstance(op.prim, (C.While, C.ForRange)):
            inits, body, params, _ = loop_parts(op)
            cond_params = op.regions[0].params if isinstance(op.prim, C.While) else []
            flags = [isinstance(i, Var) and i.id in active for i in inits]
            while True:
                for k, f in enumerate(flags):
                    if f:
                        active.add(params[k].id)
                        if cond_params:
                            active.add(cond_params[k].id)
                propagate(body.ops, active, stacks)
                new = [f or (isinstance(r, Var) and r.id in active)
                       for f, r in zip(flags, body.result)]
                if new == flags:
                    break
                flags = new
            for o, f in zip(op.outs, flags):
                if f:
                    active.add(o.id)
        elif (op.prim.differentiable or isinstance(op.prim, C.RecursiveCall)) and \
                any(v.id in active for v in op.arg_vars()):
            active.update(o.id for o in op.outs)


def read_vars(ops, out=None):
    """Vars read by ``ops`` (recursively), in order, without repeats."""
    out = {} if out is None else out
    for op in ops:
        for v in op.arg_vars():
            out.setdefault(v.id, v)
        for r in op.regions:
            read_vars(r.ops, out)
            for v in leaves(r.result):
                if isinstance(v, Var):
                    out.setdefault(v.id, v)
    return out


def replace_uses(ops, new_for):
    """Replace every read of a value in ``new_for`` (id -> Var) throughout ``ops``."""
    for op in ops:
        op.args = [new_for.get(a.id, a) if isinstance(a, Var) else a for a in op.args]
        for r in op.regions:
            replace_uses(r.ops, new_for)


def fresh_pops(ops, subst=None):
    """Give each ``StackPop`` fresh outputs and rename the reads after it.

    A gradient program's pop rebinds the very values its forward loop pushed;
    differentiating that program needs them apart: the adjoint of a pushed
    value and of its popped copy belong to different iterations of different
    loops.  A pop's values are read only in the region it starts and the
    regions nested in it, so the renaming is scoped by region.
    """
    subst = {} if subst is None else subst
    for op in ops:
        op.args = [_substituted(a, subst) for a in op.args]
        for r in op.regions:
            inner = dict(subst)
            fresh_pops(r.ops, inner)
            r.result = tuple(_substituted(x, inner) for x in r.result)
        if isinstance(op.prim, C.StackPop):
            fresh = [Var(o.hint) for o in op.outs]
            subst.update((o.id, f) for o, f in zip(op.outs, fresh))
            op.outs = fresh


def _substituted(a, subst):
    if isinstance(a, tuple):
        return tuple(_substituted(x, subst) for x in a)
    return subst.get(a.id, a) if isinstance(a, Var) else a


def copy_ops(ops):
    """A copy of the op tree (same Vars) that AD may add stack pushes to."""
    return [Op(op.prim, op.args, op.outs, op.loc, op.origin,
               [Region(r.params, copy_ops(r.ops), r.result) for r in op.regions], op.frame)
            for op in ops]
