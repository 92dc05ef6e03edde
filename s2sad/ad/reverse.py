"""Reverse-mode AD: forward IR -> IR computing the forward, then its adjoint.

Only *active* ops get adjoints: an op is active when one of its inputs depends
on a differentiated input.  Adjoints are symbolic until a rule produces one, so
a value nothing flows back to costs nothing; a rule's gradient that is a
``ZerosLike`` (or a constant zero) is dropped at once.  Several contributions
to one value are summed.

Each rule is the MindSpore-style ``bprop(*inputs, out, dout)``; it is inlined
by the same frontend that built the forward program, so the adjoint is made of
primitives again and can itself be differentiated.

Control flow stays structured.  The adjoint of an ``If`` is an ``If`` on the
same condition whose branches return the contributions to values defined
outside it (zeros on the branch that makes none).  The adjoint of a loop is a
loop over the same iterations in reverse: the forward loop pushes, per
iteration, exactly the values the backward body reads onto a stack, and the
backward loop pops them back into the same names; the adjoints of the carried
values are the backward loop's carried values, and contributions to values
from outside the loop are accumulated in carried sums.
"""
import inspect

import gast

from ..errors import CompileError, NoGradientRuleError, RuleError
from ..ir.nodes import (Var, Const, Op, Func, Region, AdjointOf, defined_ids, leaves,
                        non_shape_uses, tag_frame, walk_ops)
from ..ir import control as C
from .shift import stop_constant_shifts
from . import recursion
from ..ops._grad import bprop_getters
from ..ops.operations import math_ops as M
from ..ops.operations import array_ops as A
from ..runtime import UNDEFINED
from .inline import inline_rule, rule_for, rule_name
from .adjoints import (Adjoints, is_zero, loop_parts, carried_reach, receiving, propagate,
                       read_vars, replace_uses, fresh_pops, copy_ops)
from ..opt.options import current as current_options


def _user_code(fn):
    """Rules outside s2sad are shape-checked where they are used."""
    return not (getattr(fn, "__module__", "") or "").startswith("s2sad.")


def _bprop_arity_error(cell, grads, n_in):
    """The user's ``bprop`` returned no tuple, or one of the wrong length.

    The error points at the bprop's ``return`` (its ``def`` when it has
    several), since the bprop is the user's code.
    """
    from ..frontend.parse import get_source_info
    bprop = type(cell).bprop
    info = get_source_info(bprop)
    returns = [n for n in gast.walk(info.tree) if isinstance(n, gast.Return)]
    loc = info.loc(returns[0] if len(returns) == 1 else info.tree)
    name = type(cell).__name__
    if isinstance(grads, tuple):
        got = "%d" % len(grads)
    else:
        got = "a single value, not a tuple"
    args = ", ".join("d" + p for p in list(inspect.signature(bprop).parameters)[1:1 + n_in])
    return CompileError(
        "For user defined method 'bprop' of net '%s', the number of return values (gradients) "
        "should be equal to the number of input arguments except 'out' and 'dout', which is: "
        "%d, but got: %s." % (name, n_in, got), loc,
        hint="return a tuple with one gradient per input of construct: (%s)"
             % (args + "," if n_in == 1 else args))


# ------------------------------------------------------------------ the pass
class _Reverse:
    def __init__(self):
        from ..frontend.build import Builder
        self.b = Builder()
        self.b.name_hints = False
        self.zero_ids = set()
        self.active = set()
        self.if_map = {}
        self.visible = []
        self.taken = []             # keys (see ``_branch``) of the If regions being differentiated
        self.branch_defined = {}    # (If, branch) -> ids that region of that If defines
        self.adj_stacks = {}
        self.shape_pairs = []       # (adjoint, value) pairs: same shape (see passes.same_shape)
        self.late_inputs = []       # runtime inputs first read by a Cell's bprop

    def adjoints(self):
        return Adjoints(self.b, self.zero_ids, self.shape_pairs)

    def block(self, ops, adj, params=()):
        """Backward ops of ``ops`` (a function body or region, entered with ``params``)."""
        saved = getattr(self, "_current_adj", None)
        self._current_adj = adj
        self.visible.append({o.id for op in ops for o in op.outs} | {p.id for p in params})
        try:
            self._block(ops, adj)
        finally:
            self._current_adj = saved
            self.visible.pop()

    def defined_on_path(self, var):
        """Whether ``var`` is defined on every path reaching the op being differentiated:
        outside every region (a parameter, a value from enclosing code), by the
        function or an enclosing region, or by the same branch of the forward
        ``If`` that the backward ``If`` being differentiated mirrors (a gradient
        program's backward branch reads what its forward branch defined) -- not
        only inside some other branch."""
        return var.id not in self.region_defined or \
            any(var.id in v for v in self.visible) or \
            any(var.id in self.branch_defined.get(key, ())
                for keys in self.taken for key in keys)

    def _block(self, ops, adj):
        for op in reversed(ops):
            start = len(self.b.ops)
            self._backprop(op, adj)
            if op.frame is not None:
                # the adjoint of a user function's op belongs to that function's call
                tag_frame(self.b.ops[start:], (op.frame[0], "bwd"))

    def _backprop(self, op, adj):
        if isinstance(op.prim, C.If):
            self.backprop_if(op, adj)
        elif isinstance(op.prim, (C.While, C.ForRange)):
            self.backprop_loop(op, adj)
        elif isinstance(op.prim, C.StackPop):
            self.backprop_pop(op, adj)
        elif isinstance(op.prim, C.StackPush):
            self.backprop_push(op, adj)
        elif isinstance(op.prim, C.CustomBprop):
            if any(v.id in self.active for v in op.arg_vars()):
                self.backprop_custom(op, adj)
        elif isinstance(op.prim, C.RecursiveCall):
            if any(v.id in self.active for v in op.arg_vars()):
                recursion.backprop_call(self, op, adj, reverse)
        elif op.prim.differentiable and any(v.id in self.active for v in op.arg_vars()):
            self.backprop_op(op, adj)

    def backprop_op(self, op, adj):
        b = self.b
        douts = [adj.total(o, op.loc) for o in op.outs]
        getter = bprop_getters.lookup(op.prim)
        if all(d is None for d in douts):
            if getter is not None:
                # a rule may refuse an active input even when its adjoint is zero
                # (``NoGradient``: a derivative with no closed form read as 0 upstream)
                rule_for(getter, op)
            return
        if getter is None:
            raise NoGradientRuleError(
                "primitive %s has no registered bprop rule" % op.prim.name, op.loc,
                hint="register one with @bprop_getters.register(%s)" % type(op.prim).__name__)
        if len(douts) == 1:
            dout, out = douts[0], op.outs[0]
        else:
            # an output nothing reads has no adjoint: zeros, or None to a rule that
            # skips its terms then (``douts_may_be_none``), as JVP rules take tangents
            none_ok = getattr(getter, "douts_may_be_none", False)
            dout = tuple(d if d is not None else Const(None) if none_ok
                         else b.emit(A.ZerosLike(), [o], op.loc)
                         for d, o in zip(douts, op.outs))
            out = tuple(op.outs)
        rule = rule_for(getter, op)
        start = len(b.ops)
        grads = inline_rule(b, rule, list(op.args) + [out, dout], op.loc,
                            rule_name(getter))
        for new in b.ops[start:]:
            if isinstance(new.prim, A.ZerosLike):
                self.zero_ids.update(o.id for o in new.outs)
        if not isinstance(grads, tuple) or len(grads) != len(op.args):
            raise RuleError(
                "bprop rule %s for %s returned %s gradients for %d inputs; a bprop must "
                "return a tuple with one gradient per input"
                % (rule_name(getter), op.prim.name,
                   len(grads) if isinstance(grads, tuple) else "a non-tuple of",
                   len(op.args)))
        if _user_code(getter):
            grads = self.checked_shapes(op.args, grads, rule_name(getter))
        for arg, g in zip(op.args, grads):
            self.distribute(adj, arg, g, getter, op)

    def checked_shapes(self, args, grads, rule):
        """Wrap a user rule's gradients for active tensor inputs in a shape check."""
        out = []
        for i, (a, g) in enumerate(zip(args, grads)):
            if isinstance(a, Var) and a.id in self.active and isinstance(g, Var) and \
                    g.id not in self.zero_ids:
                g = self.b.emit(C.CheckGradShape(rule, i), [g, a], None)
            out.append(g)
        return tuple(out)

    def backprop_custom(self, op, adj):
        """The Cell's own ``bprop(*inputs, out, dout)`` replaces differentiating it."""
        b = self.b
        douts = [adj.total(o, op.loc) for o in op.outs]
        if all(d is None for d in douts):
            return
        douts = [d if d is not None else b.emit(A.ZerosLike(), [o], op.loc)
                 for d, o in zip(douts, op.outs)]
        prim = op.prim
        cell = prim.cell
        saved = (b.inputs, b.guards)
        # self.<attr> read by the bprop: a runtime input of the program, as in construct
        b.inputs, b.guards = prim.inputs, prim.guards
        known = len(b.inputs.entries)
        try:
            grads = inline_rule(b, type(cell).bprop,
                                list(op.args) + [prim.nest(op.outs), prim.nest(douts)],
                                op.loc, "%s.bprop" % type(cell).__name__,
                                self_value=Const(cell, prim.path), own_lines=True)
            self.late_inputs.extend(var for var, _, _ in b.inputs.entries[known:])
        finally:
            b.inputs, b.guards = saved
        if not isinstance(grads, tuple) or len(grads) != len(op.args):
            raise _bprop_arity_error(cell, grads, len(op.args))
        grads = self.checked_shapes(op.args, grads, "%s.bprop" % type(cell).__name__)
        for arg, g in zip(op.args, grads):
            self.distribute(adj, arg, g, type(cell).bprop, op)

    def distribute(self, adj, arg, g, getter, op):
        """Add gradient structure ``g`` to the adjoints of ``arg``'s active leaves."""
        if isinstance(arg, tuple):
            if is_zero(g, self.zero_ids):
                return      # "no gradient" for a whole tuple input (e.g. an index)
            if not isinstance(g, tuple) or len(g) != len(arg):
                if isinstance(g, Const) and isinstance(g.value, tuple) and len(g.value) == len(arg):
                    g = tuple(Const(x) for x in g.value)
                else:
                    raise RuleError("bprop rule %s for %s returned a gradient whose structure "
                                    "does not match its tuple input"
                                    % (rule_name(getter), op.prim.name))
            for a, gg in zip(arg, g):
                self.distribute(adj, a, gg, getter, op)
            return
        if isinstance(arg, Var) and arg.id in self.active:
            adj.add(arg, g)

    # ------------------------------------------------------------------- if
    def region_adjoint(self, region, seeds, loc, params=()):
        """Backward ops of ``region`` given ``(value, adjoint)`` seeds.

        Returns ``(ops, child adjoints)``; the child still holds the
        contributions to values defined outside the region (and to ``params``).
        """
        saved = self.b.ops
        self.b.ops = []
        child = self.adjoints()
        parent = getattr(self, "_current_adj", None)
        if parent is not None:
            # contributions made after the op (e.g. by an outer derivative) to
            # values defined inside this region belong to it
            inside = defined_ids(region.ops) | {p.id for p in region.params}
            for vid in [i for i in parent.contribs if i in inside]:
                var = parent.vars[vid]
                for g in parent.contribs.pop(vid):
                    child.add(var, g)
                parent.vars.pop(vid, None)
        try:
            for value, d in seeds:
                if d is not None and isinstance(value, Var) and value.id in self.active:
                    child.add(value, d)
            self.block(region.ops, child, region.params)
            return self.b.ops, child
        finally:
            self.b.ops = saved

    def backprop_if(self, op, adj):
        douts = [adj.total(o, op.loc) for o in op.outs]
        inside = defined_ids([op])
        if all(d is None for d in douts) and not any(i in inside for i in adj.contribs) \
                and not self.feeds_adjoint_stack(op):
            return      # nothing flows into the branches
        parts = []
        for k, r in enumerate(op.regions):
            self.taken.append(self._branch(op, k))
            try:
                ops, child = self.region_adjoint(r, list(zip(r.result, douts)), op.loc)
            finally:
                self.taken.pop()
            parts.append((r, ops, child))
        inner = inside
        targets = []
        for _, _, child in parts:
            for v in child.pending():
                if v.id not in inner and all(v is not t for t in targets):
                    targets.append(v)
        regions = []
        for k, (r, ops, child) in enumerate(parts):
            saved = self.b.ops
            self.b.ops = ops
            self.taken.append(self._branch(op, k))
            # a value defined only inside another branch (reached by an outer
            # derivative) has no zero to give on this path: it is only read
            # where it exists
            results = tuple(child.total(v, op.loc) or (
                child.total_or_zeros(v, op.loc) if self.defined_on_path(v)
                else Const(UNDEFINED)) for v in targets)
            self.taken.pop()
            self.b.ops = saved
            regions.append(Region((), ops, results))
        outs = [Var(AdjointOf(v)) for v in targets]
        prim = C.If()
        # the forward If (and, at higher orders, the Ifs it mirrors itself)
        prim.mirrors = (id(op.prim),) + getattr(op.prim, "mirrors", ())
        bwd = Op(prim, [op.args[0]], outs, op.loc, regions=regions)
        self.b.ops.append(bwd)
        self.if_map[id(op)] = bwd
        for v, o in zip(targets, outs):
            adj.add(v, o)

    @staticmethod
    def _branch(op, k):
        """Keys of branch ``k`` of If ``op``: itself, and the forward Ifs it mirrors.

        An If is known by its primitive instance, which copies of the op share.
        """
        return [(m, k) for m in (id(op.prim),) + getattr(op.prim, "mirrors", ())]

    # ---------------------------------------------------------------- loops
    # ------------------------------------------- stacks of a differentiated gradient
    # Differentiating a gradient program again meets its stacks: a forward loop
    # pushes per-iteration values, the backward loop pops them back (as fresh
    # values, see ``fresh_pops``).  Reverse mode visits the pop side first:
    # the adjoints of the popped values are pushed, per iteration, onto a
    # companion stack; the push side, visited later with its iterations in the
    # opposite order, pops them in exactly matching order and adds them to the
    # adjoints of the values that were pushed.
    def backprop_pop(self, op, adj):
        (stack,) = op.args
        ds = [adj.total(v, op.loc) if v.id in self.active else None for v in op.outs]
        positions = [i for i, d in enumerate(ds) if d is not None and
                     not is_zero(d, self.zero_ids)]
        if not positions:
            return
        dstack = Var(AdjointOf(stack))
        self.pre_loop.append(Op(C.NewStack(), [], [dstack], None))
        self.adj_stacks[stack.id] = (dstack, positions)
        self.b.ops.append(Op(C.StackPush(), [dstack] + [ds[i] for i in positions], [], op.loc))

    def backprop_push(self, op, adj):
        stack, values = op.args[0], op.args[1:]
        entry = self.adj_stacks.get(stack.id)
        if entry is None:
            return      # nothing flowed into the popped values
        dstack, positions = entry
        ds = [Var(AdjointOf(values[i])) for i in positions]
        self.b.ops.append(Op(C.StackPop(), [dstack], ds, op.loc))
        for i, d in zip(positions, ds):
            adj.add(values[i], d)

    def feeds_adjoint_stack(self, op):
        """Whether ``op``'s regions push onto a stack whose popped values got adjoints."""
        return any(isinstance(o.prim, C.StackPush) and o.args[0].id in self.adj_stacks
                   for r in op.regions for o in walk_ops(r.ops))

    def backprop_loop(self, op, adj):
        inits, body, params, index = loop_parts(op)
        douts = [adj.total(o, op.loc) for o in op.outs]
        if all(d is None for d in douts) and not self.feeds_adjoint_stack(op):
            return
        b = self.b
        loc = op.loc
        needed = receiving(douts, carried_reach(body, params))
        active_k = [k for k, o in enumerate(op.outs) if o.id in self.active and k in needed]
        # adjoint slots: one per active carried value, flowing backwards
        slot_params = [Var(AdjointOf(op.outs[k])) for k in active_k]
        seeds = [(body.result[k], p) for k, p in zip(active_k, slot_params)]
        ops, child = self.region_adjoint(body, seeds, loc)
        saved = b.ops
        b.ops = ops
        slot_next = [child.total_or_zeros(params[k], loc) for k in active_k]
        inner = defined_ids([op])
        outer = [v for v in child.pending() if v.id not in inner]
        acc_params = [Var(AdjointOf(v)) for v in outer]
        acc_next = [self.accumulate(acc, v, child, ops, loc) for v, acc in zip(outer, acc_params)]
        b.ops = saved

        # what the backward body reads from the forward iteration goes on stacks
        count = self.plan_stacks(op, body, ops, loc)

        slot_init = []
        for k in active_k:
            d = douts[k]
            if d is None:
                d = b.emit(A.ZerosLike(), [op.outs[k]], loc)
                d.hint = AdjointOf(op.outs[k])
            slot_init.append(d)
        acc_init = []
        for v in outer:
            z = b.emit(C.NewAccumulator(), [v], loc)
            z.hint = AdjointOf(v)
            acc_init.append(z)
        backwards = True
        if isinstance(op.prim, C.ForRange):
            rng = list(op.args[:3])
            bindex = index
            backwards = not op.prim.reverse     # a backward loop's adjoint runs forwards
        else:
            rng = [Const(0), count, Const(1)]
            bindex = Var("_")
        slot_outs = [Var(AdjointOf(op.outs[k])) for k in active_k]
        acc_outs = [Var(AdjointOf(v)) for v in outer]
        bwd = Op(C.ForRange(reverse=backwards), rng + slot_init + acc_init, slot_outs + acc_outs, loc,
                 regions=[Region([bindex] + slot_params + acc_params, ops,
                                 tuple(slot_next + acc_next))])
        b.ops.append(bwd)
        # per iteration, a slot is the adjoint of that iteration's carried value;
        # after the loop, of the value that entered it
        self.shape_pairs.extend((p, body.result[k]) for k, p in zip(active_k, slot_params)
                                if isinstance(body.result[k], Var))
        self.shape_pairs.extend((o, inits[k]) for k, o in zip(active_k, slot_outs)
                                if isinstance(inits[k], Var))
        self.shape_pairs.extend(zip(acc_params, outer))
        self.shape_pairs.extend(zip(acc_outs, outer))
        for k, o in zip(active_k, slot_outs):
            if isinstance(inits[k], Var) and inits[k].id in self.active:
                adj.add(inits[k], o)
        for v, o in zip(outer, acc_outs):
            adj.add(v, o)

    def accumulate(self, acc, var, child, ops, loc):
        """``acc + (this iteration's contributions to var)``, in place where it can.

        A contribution made by ``GetItemGrad(d, var, index)`` (the gradient of
        reading ``var[index]``) is added at ``index`` only.
        """
        b = self.b
        producers = {out.id: o for o in ops for out in o.outs}
        rest = []
        for part in child.contribs.pop(var.id, []):
            prod = producers.get(part.id) if isinstance(part, Var) else None
            if prod is not None and isinstance(prod.prim, A.GetItemGrad) and \
                    prod.args[1] is var:
                acc = b.emit(C.AccumulateAt(), [acc, prod.args[2], prod.args[0]], loc)
            else:
                rest.append(part)
        child.vars.pop(var.id, None)
        for part in rest:
            acc = b.emit(C.AccumulateAt(), [acc, Const(Ellipsis), part], loc)
        acc.hint = AdjointOf(var)
        return acc

    def plan_stacks(self, op, body, bwd_ops, loc):
        """Push what ``bwd_ops`` reads of each forward iteration; pop it back.

        Returns the iteration count of a ``While`` (counted in the forward).
        Values are pushed at the end of the region that defines them (a branch
        inside the body pushes its own) and popped at the start of the
        matching backward region.
        """
        rebound = defined_ids(bwd_ops)
        if isinstance(op.prim, C.ForRange):
            # the backward loop binds the forward's index Var to the same values
            rebound.add(body.params[0].id)
        needed = {i: v for i, v in read_vars(bwd_ops).items() if i not in rebound}
        self._shapes_only(body, bwd_ops, needed)
        pops = []
        self._push(body, needed, pops, bwd_ops)
        for stack, values, target in pops:
            target.insert(0, Op(C.StackPop(), [stack], values, loc))
        count = None
        if isinstance(op.prim, C.While):
            count = self._count_iterations(op)
        return count

    def _shapes_only(self, body, bwd_ops, needed):
        """Push a ``ShapeOf`` instead of a value the backward body reads only the shape of."""
        defined_here = {o.id for op in body.ops for o in op.outs}
        defined_here.update(p.id for p in body.params)      # carried values too
        full_uses = non_shape_uses(bwd_ops)
        shapes = {}
        for vid, var in list(needed.items()):
            if vid not in defined_here or vid in full_uses:
                continue
            shape = Var(AdjointOf(var, "shape_"))
            body.ops.append(Op(C.HoistedShape(), [var], [shape], None))
            shapes[vid] = shape
            del needed[vid]
            needed[shape.id] = shape
        if shapes:
            replace_uses(bwd_ops, shapes)

    def _push(self, region, needed, pops, bwd_ops):
        """Push from ``region`` (and its branches) the needed values they define."""
        mine = [p for p in region.params if p.id in needed]
        for o in region.ops:
            mine.extend(v for v in o.outs if v.id in needed)
        for o in region.ops:
            if isinstance(o.prim, C.If) and id(o) in self.if_map:
                bwd_if = self.if_map[id(o)]
                for fr, br in zip(o.regions, bwd_if.regions):
                    self._push(fr, needed, pops, br.ops)
        if not mine:
            return
        stack = Var("stack")
        self.pre_loop.append(Op(C.NewStack(), [], [stack], None))
        region.ops.append(Op(C.StackPush(), [stack] + mine, [], None))
        pops.append((stack, mine, bwd_ops))

    def _count_iterations(self, op):
        """Add an iteration counter to a forward ``While``; return its final value."""
        cond, body = op.regions
        n_cond, n_body, n_out = Var("n"), Var("n"), Var("n_iter")
        cond.params.append(n_cond)
        body.params.append(n_body)
        nxt = Var("n")
        body.ops.append(Op(M.Add(), [n_body, Const(1)], [nxt], None))
        body.result = tuple(body.result) + (nxt,)
        op.args.append(Const(0))
        op.outs.append(n_out)
        return n_out


def reverse(func, wrt, sens=None, name=None, return_value=False, head_only=False):
    """The IR of ``func``'s gradient with respect to the Vars ``wrt``.

    ``sens`` mirrors ``func.result`` with Vars that become extra parameters;
    ``None`` means a sens of ones for every output leaf.  The new function
    returns the tuple of gradients (preceded by the forward value if
    ``return_value``).  ``head_only``: only ``func.result[0]`` is
    differentiated, the rest of the output (``has_aux``'s) is carried along.
    """
    R = _Reverse()
    b = R.b
    body = copy_ops(func.body)
    fresh_pops(body)
    if current_options().runs("constant_shifts"):
        stop_constant_shifts(body, func.result)
    R.active = {v.id for v in wrt}
    propagate(body, R.active)
    adj = R.adjoints()

    out_leaves = leaves(func.result[0] if head_only else func.result)
    sens_leaves = leaves(sens) if sens is not None else [None] * len(out_leaves)
    check = A.CheckSens()
    for i, (out, s) in enumerate(zip(out_leaves, sens_leaves)):
        if not (isinstance(out, Var) and out.id in R.active):
            continue
        if s is None:
            seed = b.emit(A.OnesLike(), [out], func.loc)
        else:
            seed = b.emit(check, [s, out, Const("output %d" % i if len(out_leaves) > 1
                                                else "output")], func.loc)
        seed.hint = AdjointOf(out)
        adj.add(out, seed)

    # stacks are created once, at the start of the forward sweep; nested loops
    # push and pop in matching (last in, first out) order across iterations
    R.pre_loop = []
    R.region_defined = set()
    for op in body:
        for r in op.regions:
            R.region_defined |= defined_ids(r.ops) | {p.id for p in r.params}
    for op in walk_ops(body):
        if isinstance(op.prim, C.If):
            for k, r in enumerate(op.regions):
                R.branch_defined.setdefault((id(op.prim), k), set()).update(
                    o.id for o2 in r.ops for o in o2.outs)
    R.block(body, adj, func.params)
    results = [adj.total_or_zeros(v, func.loc) for v in wrt]
    # the compiled function takes the inputs, the runtime inputs (in the order
    # they were met, so the ones a bprop met last), then the sens
    params = list(func.params) + R.late_inputs + ([s for s in leaves(sens) if isinstance(s, Var)]
                                                  if sens is not None else [])
    result = (func.result, tuple(results)) if return_value else tuple(results)
    out = Func(name or func.name + "_grad", params, R.pre_loop + body + b.ops, result, func.loc)
    out.backward_start = len(out.body) - len(b.ops)
    out.shape_pairs = R.shape_pairs
    return out
