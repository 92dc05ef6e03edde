"""Forward-mode AD: forward IR -> IR computing the value and its tangent.

Tangents are propagated op by op, in program order, right after each op, so
``jvp`` costs about one extra forward pass.  An input that does not depend on
the differentiated values has tangent ``None`` (a symbolic zero known while
compiling), so rules add only the terms that exist.

Control flow keeps its shape: an ``If`` gains outputs for the tangents of its
results, a loop gains carried tangents next to its carried values.
"""
import numpy as np

from ..errors import NoGradientRuleError, RuleError
from ..ir.nodes import Var, Const, Op, Func, Region, AdjointOf, leaves, map_structure
from ..ir import control as C
from ..ops._grad import jvp_getters
from ..ops.operations import array_ops as A
from .adjoints import loop_parts
from . import recursion
from .inline import inline_rule, rule_for, rule_name


def _as_jvp(ops, start, frame):
    """Tag ``ops[start:]`` as ``frame``'s JVP; an op shared with the trace is copied.

    The ops of a gradient's backward side go with their tangents too: tagged
    apart, the two alternate op by op and outlining would write each pair of
    runs as two small functions called in turn."""
    for i in range(start, len(ops)):
        op = ops[i]
        if op.frame is not None and op.frame[1] in ("fwd", "bwd"):
            regions = [Region(r.params, list(r.ops), r.result) for r in op.regions]
            op = ops[i] = Op(op.prim, op.args, op.outs, op.loc, op.origin, regions,
                             (op.frame[0], "jvp"))
        elif op.frame is None:
            op.frame = (frame, "jvp")
        for r in op.regions:
            _as_jvp(r.ops, 0, frame)


class _Forward:
    def __init__(self):
        from ..frontend.build import Builder
        self.b = Builder()
        self.b.name_hints = False
        self.pre = []            # tangent stacks, created at the start
        self.tan_stacks = {}     # stack id -> (tangent stack, positions with tangents)
        self.probing = False

    def tangent(self, tan, a):
        if isinstance(a, tuple):
            return tuple(self.tangent(tan, x) for x in a)
        if isinstance(a, Var) and a.id in tan:
            return tan[a.id]
        return Const(None)

    def zeros_for(self, value, loc):
        """A materialised zero tangent for ``value`` (where a region must yield one)."""
        if isinstance(value, Var):
            z = self.b.emit(A.ZerosLike(), [value], loc)
            z.hint = AdjointOf(value, "t_")
            return z
        if isinstance(getattr(value, "value", None), np.ndarray):
            # a known array (``out = np.zeros(n)`` filled in a loop): zeros of its shape
            return Const(np.zeros(value.value.shape, np.result_type(value.value.dtype, 0.0)))
        return Const(0.0)

    def block(self, ops, tan):
        for op in ops:
            start = len(self.b.ops)
            self._op(op, tan)
            if op.frame is not None:
                # a user function's ops and their tangents form its call's JVP
                _as_jvp(self.b.ops, start, op.frame[0])

    def _op(self, op, tan):
        if True:
            if isinstance(op.prim, C.If):
                self.op_if(op, tan)
            elif isinstance(op.prim, C.CustomBprop):
                self.op_custom(op, tan)
            elif isinstance(op.prim, C.RecursiveCall):
                recursion.jvp_call(self, op, tan, forward)
            elif isinstance(op.prim, (C.While, C.ForRange)):
                self.op_loop(op, tan)
            elif isinstance(op.prim, C.StackPush):
                self.b.ops.append(op)
                self.op_push(op, tan)
            elif isinstance(op.prim, C.StackPop):
                self.b.ops.append(op)
                self.op_pop(op, tan)
            else:
                self.b.ops.append(op)
                if isinstance(op.prim, C.CheckDefined):
                    if op.args[0].id in tan:
                        tan[op.outs[0].id] = tan[op.args[0].id]
                elif op.prim.differentiable:
                    self.op_prim(op, tan)

    def op_prim(self, op, tan):
        # an input read for its shape only (shapes are fixed) carries no tangent
        shape_only = op.prim.shape_only_inputs
        arg_t = [Const(None) if i in shape_only else self.tangent(tan, a)
                 for i, a in enumerate(op.args)]
        if all(isinstance(t, Const) for a in arg_t for t in leaves(a)):
            return
        getter = jvp_getters.lookup(op.prim)
        if getter is None:
            raise NoGradientRuleError(
                "primitive %s has no registered JVP rule" % op.prim.name, op.loc,
                hint="register one with @jvp_getters.register(%s)" % type(op.prim).__name__)
        b = self.b
        out = op.outs[0] if len(op.outs) == 1 else tuple(op.outs)
        t_out = inline_rule(b, rule_for(getter, op), list(op.args) + [out] + arg_t, op.loc,
                            rule_name(getter))
        outs_t = list(t_out) if len(op.outs) > 1 else [t_out]
        if len(outs_t) != len(op.outs):
            raise RuleError("JVP rule %s for %s returned %d tangents for %d outputs"
                            % (rule_name(getter), op.prim.name, len(outs_t), len(op.outs)))
        for o, t in zip(op.outs, outs_t):
            if isinstance(t, Const) and t.value is None:
                continue
            if isinstance(t, Var) and t.hint is None:
                t.hint = AdjointOf(o, "t_")
            tan[o.id] = t

    def region(self, region, tan, extra_params=(), export=False):
        """``(ops, tangents of results or None)`` of ``region`` under ``tan``.

        With ``export``, tangents of values defined inside the region are also
        recorded in ``tan``: code after a branch may read a value the branch
        defined (the backward sweep of the same branch does).
        """
        saved = self.b.ops
        self.b.ops = []
        local = dict(tan)
        local.update(extra_params)
        try:
            self.block(region.ops, local)
            res = [self.tangent(local, r) if isinstance(r, Var) else Const(None)
                   for r in region.result]
            if export:
                for k, v in local.items():
                    if k not in tan:
                        tan[k] = v
            return self.b.ops, [None if isinstance(t, Const) else t for t in res]
        finally:
            self.b.ops = saved

    def op_if(self, op, tan):
        parts = [self.region(r, tan, export=True) for r in op.regions]
        wanted = [k for k in range(len(op.outs)) if any(p[1][k] is not None for p in parts)]
        regions = []
        for r, (ops, t_res) in zip(op.regions, parts):
            saved = self.b.ops
            self.b.ops = ops
            extra = [t_res[k] if t_res[k] is not None else self.zeros_for(r.result[k], op.loc)
                     for k in wanted]
            self.b.ops = saved
            regions.append(Region(r.params, ops, tuple(r.result) + tuple(extra)))
        t_outs = [Var(AdjointOf(op.outs[k], "t_")) for k in wanted]
        self.b.ops.append(Op(op.prim, op.args, list(op.outs) + t_outs, op.loc, op.origin,
                             regions))
        for k, t in zip(wanted, t_outs):
            tan[op.outs[k].id] = t

    # A gradient program's loops push values that its backward loop pops; the
    # tangents of those values travel on a stack of their own.
    def op_push(self, op, tan):
        if self.probing:
            return
        stack, values = op.args[0], op.args[1:]
        positions = [i for i, v in enumerate(values) if isinstance(v, Var) and v.id in tan]
        if not positions:
            return
        tstack = Var(AdjointOf(stack, "t_"))
        self.pre.append(Op(C.NewStack(), [], [tstack], None))
        self.tan_stacks[stack.id] = (tstack, positions)
        self.b.ops.append(Op(C.StackPush(), [tstack] + [tan[values[i].id] for i in positions],
                             [], op.loc))

    def op_pop(self, op, tan):
        entry = self.tan_stacks.get(op.args[0].id)
        if entry is None:
            return
        tstack, positions = entry
        if self.probing:        # which values get tangents, without emitting the pop
            for i in positions:
                tan[op.outs[i].id] = Var()
            return
        touts = [Var(AdjointOf(op.outs[i], "t_")) for i in positions]
        self.b.ops.append(Op(C.StackPop(), [tstack], touts, op.loc))
        for i, t in zip(positions, touts):
            tan[op.outs[i].id] = t

    def op_custom(self, op, tan):
        """Forward mode differentiates a custom-bprop Cell's construct itself."""
        (region,) = op.regions
        ops, t_res = self.region(region, tan)
        wanted = [k for k, t in enumerate(t_res) if t is not None]
        t_outs = [Var(AdjointOf(op.outs[k], "t_")) for k in wanted]
        self.b.ops.append(Op(op.prim, op.args, list(op.outs) + t_outs, op.loc, op.origin, [
            Region((), ops, tuple(region.result) + tuple(t_res[k] for k in wanted))]))
        for k, t in zip(wanted, t_outs):
            tan[op.outs[k].id] = t

    def op_loop(self, op, tan):
        inits, body, params, index = loop_parts(op)
        flags = [isinstance(i, Var) and i.id in tan for i in inits]
        while True:     # which carried values have a tangent on some iteration
            probe = {p.id: Var() for p, f in zip(params, flags) if f}
            saved_probing, self.probing = self.probing, True
            try:
                _, t_res = self.region(body, dict(tan), probe)
            finally:
                self.probing = saved_probing
            new = [f or t is not None for f, t in zip(flags, t_res)]
            if new == flags:
                break
            flags = new
        ks = [k for k, f in enumerate(flags) if f]
        if not ks:
            self.b.ops.append(op)
            return
        t_init = []
        for k in ks:
            t = tan.get(inits[k].id) if isinstance(inits[k], Var) else None
            t_init.append(t if t is not None else self.zeros_for(inits[k], op.loc))
        t_params = [Var(AdjointOf(op.outs[k], "t_")) for k in ks]
        ops, t_res = self.region(body, tan, {params[k].id: t for k, t in zip(ks, t_params)})
        saved = self.b.ops
        self.b.ops = ops
        t_next = [t_res[k] if t_res[k] is not None else self.zeros_for(body.result[k], op.loc)
                  for k in ks]
        self.b.ops = saved
        t_outs = [Var(AdjointOf(op.outs[k], "t_")) for k in ks]
        new_body = Region(list(body.params) + t_params, ops, tuple(body.result) + tuple(t_next))
        if isinstance(op.prim, C.While):
            cond = op.regions[0]
            regions = [Region(list(cond.params) + [Var() for _ in ks], cond.ops, cond.result),
                       new_body]
        else:
            regions = [new_body]
        self.b.ops.append(Op(op.prim, list(op.args) + t_init, list(op.outs) + t_outs, op.loc,
                             op.origin, regions))
        for k, t in zip(ks, t_outs):
            tan[op.outs[k].id] = t


def forward(func, wrt, name=None):
    """``func`` extended with tangent parameters for ``wrt``; returns ``(out, t_out)``."""
    F = _Forward()
    tan = {}
    t_params = []
    for v in wrt:
        t = Var(AdjointOf(v, "t_"))
        tan[v.id] = t
        t_params.append(t)
    F.block(func.body, tan)

    def result_tangent(a):
        if isinstance(a, Var) and a.id in tan:
            return tan[a.id]
        return F.zeros_for(a, func.loc)

    t_result = map_structure(result_tangent, func.result)
    return Func(name or func.name + "_jvp", list(func.params) + t_params,
                _known_arrays(F.b, func.loc) + F.pre + F.b.ops, (func.result, t_result), func.loc)


def _known_arrays(b, loc):
    """Definitions of the arrays a rule computed from constants while compiling.

    The builder turns such an array into a runtime input (a zero tangent of a
    constant, ``(zeros,) + rest``); the tangent program has no input for it,
    so it is defined as a constant at its start instead.
    """
    return [Op(A.Identity(), [Const(obj)], [var], loc)
            for var, path, obj in b.inputs.entries if path is None and obj is not None]


def split_primal(func, t_params):
    """``func`` (a tangent program) as a primal part run once and a tangent part.

    ``jacfwd`` and ``hessian`` run the tangent program once per basis vector;
    every op that reads no tangent computes the same value each time.  The
    primal function takes ``func``'s inputs and returns ``(out, saved)``, the
    values the tangent part reads; the tangent function takes ``saved`` then
    the tangents ``t_params`` and returns the output's tangent.  ``None`` (run ``func``
    whole) when an op has regions, or has state (a random draw, a print, a
    check) and reads a tangent: only straight-line code is split.  An op with
    state that reads no tangent is a primal one, run once however many basis
    vectors follow: one draw per call, as a single evaluation makes.  The ops
    of a user function's call are written inline in both parts (a call split
    in two is no call).
    """
    dependent = {v.id for v in t_params}
    primal, tangent = [], []
    for op in func.body:
        if op.regions or isinstance(op.prim, C.ControlOp):
            return None
        if op.frame is not None:
            op = Op(op.prim, op.args, op.outs, op.loc, op.origin)
        if any(isinstance(a, Var) and a.id in dependent for a in leaves(tuple(op.args))):
            if op.prim.stateful:
                return None
            tangent.append(op)
            dependent.update(o.id for o in op.outs)
        else:
            primal.append(op)
    out, t_out = func.result
    reads = [a for op in tangent for a in leaves(tuple(op.args))] + leaves(t_out)
    saved, seen = [], set()
    for v in reads:
        if isinstance(v, Var) and v.id not in dependent and v.id not in seen:
            seen.add(v.id)
            saved.append(v)
    params = [p for p in func.params if p.id not in dependent]
    return (Func(func.name + "_values", params, primal, (out, tuple(saved)), func.loc),
            Func(func.name + "_tangents", saved + list(t_params), tangent, t_out, func.loc))
