"""Loops in the builder: ``while`` and ``for``, staged or unrolled.

A loop over runtime values becomes a ``While`` or ``ForRange`` op carrying
every variable its body assigns.  What a variable holds before the loop may
not say what the body makes of it (a name first bound inside, a tuple built
in the body), so the loop is built again until what it carries has the
structure the body gives it (``_shape_loop``).  A loop over a sequence known
while compiling, or whose body needs its index while compiling (to pick a
sub-Cell, say), is unrolled instead: one copy of the body per item.  A
``for`` that may ``break`` or ``return`` runs as a ``while`` over its index,
with the exit flags of ``control``.
"""
import builtins

import gast

from ..errors import CompileError
from ..ir.nodes import Var, Const, Op, Region, leaves, map_structure
from ..ir import control as C
from ..runtime import UNDEFINED
from ..ops.operations import array_ops as A
from .control import (ESC, RET, RETVAL, BRK, FLAG_HINTS, MISSING, NeedsConstant, Unmerged,
                      same, runtime_representable)
from .values import ListVal, freeze
from .alias import read_outside

# the most iterations of a loop over a known range unrolled because its body
# needs the index while compiling
MAX_UNROLL = 64


class RangeVal:
    """``range(start, stop, step)`` with a bound known only at run time."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step


class EnumerateVal:
    """``enumerate(inner, start)`` of an iterable a staged loop runs over."""

    def __init__(self, inner, start):
        self.inner, self.start = inner, start


class ZipVal:
    """``zip(*inners)`` of iterables a staged loop runs over."""

    def __init__(self, inners):
        self.inners = inners


def assigned_names(stmts):
    """Names a block assigns, in order of first assignment (nested blocks too)."""
    out = []

    def add(target):
        for node in gast.walk(target):
            if isinstance(node, gast.Subscript):
                # ``x[i] = v`` rebinds ``x`` to an updated copy
                root = node.value
                while isinstance(root, gast.Subscript):
                    root = root.value
                if isinstance(root, gast.Name) and root.id not in out:
                    out.append(root.id)
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store) \
                    and node.id not in out:
                out.append(node.id)

    for stmt in stmts:
        for node in gast.walk(stmt):
            if isinstance(node, (gast.Assign,)):
                for t in node.targets:
                    add(t)
            elif isinstance(node, (gast.AugAssign, gast.AnnAssign)):
                add(node.target)
            elif isinstance(node, gast.For):
                add(node.target)
    return out


def _contains(stmts, kinds, stop_at_loops=True):
    """Whether ``stmts`` hold a node of ``kinds`` (not inside a nested loop, with
    ``stop_at_loops``: a ``break`` there leaves that loop, not this one)."""
    for stmt in stmts:
        stack = [stmt]
        while stack:
            node = stack.pop()
            if isinstance(node, kinds):
                return True
            if stop_at_loops and isinstance(node, (gast.For, gast.While)) and node is not stmt:
                continue
            if stop_at_loops and isinstance(node, (gast.For, gast.While)) and node is stmt:
                # the loop statement itself: its own body belongs to it, not to us
                continue
            stack.extend(gast.iter_child_nodes(node))
    return False


class Loops:
    """Mixin of ``Builder``: ``while`` and ``for`` statements, and the iterables
    (``range``, ``enumerate``, ``zip``) a staged loop runs over."""

    # ------------------------------------------------------------ statements
    def st_While(self, node, scope):
        self.runtime_while(node, scope)

    def st_For(self, node, scope):
        items = self.eval(node.iter, scope)
        if isinstance(items, Const) and isinstance(items.value, range):
            # a loop over a known range stays a loop; unrolled only if its body
            # needs the index while compiling (e.g. to pick a sub-Cell)
            saved = (len(self.ops), dict(scope.env), dict(self.maybe_undefined))
            try:
                return self.runtime_for(node, items, scope)
            except NeedsConstant:
                if len(items.value) > MAX_UNROLL:
                    raise
                del self.ops[saved[0]:]     # in place: lists being built refer to this list
                scope.env, self.maybe_undefined = saved[1], saved[2]
        seq = self.static_sequence(items)
        if seq is None:
            return self.runtime_for(node, items, scope)
        self.unrolled_for(node, seq, scope)

    def unrolled_for(self, node, seq, scope):
        """A loop over a sequence known while compiling, one copy of the body per item."""
        had_brk = BRK in scope.env
        outer_brk = scope.env.get(BRK)
        scope.env[BRK] = Const(False)
        loc = scope.info.loc(node)
        for item in seq:
            exit_now = self.flag_or(scope.env.get(RET, Const(False)), scope.env[BRK], loc)
            if isinstance(exit_now, Const) and exit_now.value:
                break
            self._unrolled_iteration(node, item, scope, exit_now, loc)
        if had_brk:
            scope.env[BRK] = outer_brk
        else:
            scope.env.pop(BRK, None)
        ret = scope.env.get(RET)
        if ret is not None:
            scope.env[ESC] = ret
        else:
            scope.env.pop(ESC, None)

    def _unrolled_iteration(self, node, item, scope, exit_now, loc):
        """One copy of the body; only on paths not yet left when ``exit_now`` is runtime."""
        if isinstance(exit_now, Var):
            env0 = dict(scope.env)
            inner = dict(env0)
            inner[ESC] = Const(False)
            with self.walking(scope, dict(inner)):
                self.assign(node.target, item, scope)
                self.exec_block(node.body, scope)
                body_ops, env_b = self.ops, scope.env
            scope.env = self.merge(exit_now, env0, ([], dict(env0)), (body_ops, env_b), loc)
            return
        scope.env[ESC] = Const(False)
        self.assign(node.target, item, scope)
        self.exec_block(node.body, scope)

    # --------------------------------------------------------- carried values
    def _carried(self, stmts, scope, extra=()):
        names = [n for n in assigned_names(stmts) if n not in extra]
        has_return = _contains(stmts, (gast.Return,), stop_at_loops=False)
        # a return anywhere inside (even in a nested loop) also ends this loop
        has_exit = has_return or _contains(stmts, (gast.Break,))
        keys = list(names)
        if has_exit:
            keys.append(BRK)
        if has_return:
            keys += [RET, RETVAL]
        return keys, has_exit, has_return

    def _loop_inits(self, keys, scope):
        inits = []
        for k in keys:
            if k == BRK:
                inits.append(Const(False))    # each loop has its own break flag
            elif k in scope.env:
                inits.append(_frozen(scope.env[k]))
            elif k == RET:
                inits.append(Const(False))
            elif k == RETVAL:
                inits.append(Const(None))     # its structure is found by _shape_loop
            else:
                inits.append(Const(UNDEFINED))
        return inits

    def _shape_loop(self, keys, inits, attempt, loc):
        """Build a loop's regions with ``attempt(keys, inits, placeholders, fixed)``;
        return ``(built, keys, results, inits, fixed)``.

        A variable first bound inside the loop (or the value it returns) has no
        structure before it, so it is first carried as one value.  When the
        body makes it a tuple, the loop is built again carrying one value per
        leaf of the structure the body gave it.  If the body could not even be
        walked that way (a branch of it returns a tuple, say), it is walked
        once aside with the variable bound to its placeholder constant
        (``UNDEFINED``, or ``None`` for the returned value) to find that
        structure.  A variable that really changes structure from one
        iteration to the next stays an error.

        A variable holding something no loop can carry (a closure, a sub-Cell)
        is not carried: ``fixed`` binds it, inside the body and after the
        loop, to its value when that is the same on every iteration, else to
        an ``Unmerged`` error raised only if it is read before being bound.
        """
        unknown = [k for k, init in zip(keys, inits)
                   if isinstance(init, Const) and (init.value is UNDEFINED or
                                                   k == RETVAL and init.value is None)]
        snapshot = dict(self.maybe_undefined)
        probed = False
        fixed = {}
        for _ in range(8):
            self.maybe_undefined = dict(snapshot)
            try:
                built, results = attempt(keys, inits, (), fixed)
            except CompileError as e:
                if not unknown or probed:
                    raise
                probed = True
                self.maybe_undefined = dict(snapshot)
                try:
                    _, shapes = attempt(keys, inits, unknown, fixed)
                except CompileError:
                    raise e from None
                reshaped = self._reshape(keys, inits, shapes, unknown)
                if reshaped is None:
                    raise
                inits = reshaped
                continue
            built_keys, built_inits = keys, inits
            stuck = self._uncarried(keys, inits, results, loc)
            if stuck:
                fixed.update(stuck)
                kept = [j for j, k in enumerate(keys) if k not in stuck]
                keys, inits = [keys[j] for j in kept], [inits[j] for j in kept]
                continue
            reshaped = self._reshape(keys, inits, results, unknown)
            if reshaped is None:
                break
            inits = reshaped
        # the last loop built, checked against what its body gave each variable
        self._check_structure(built_keys, built_inits, results, loc)
        return built, built_keys, results, built_inits, fixed

    def _uncarried(self, keys, inits, results, loc):
        """``{key: binding}`` for the variables a loop cannot carry (see _shape_loop)."""
        out = {}
        for k, a, b in zip(keys, inits, results):
            bad = None
            for leaf in leaves(b) + leaves(a):
                if isinstance(leaf, Unmerged):
                    bad = leaf
                elif isinstance(leaf, Const) and not runtime_representable(leaf):
                    bad = Unmerged("variable '%s' holds %r in a loop; only tensors and numbers "
                                   "can change from one iteration to the next"
                                   % (k.lstrip("."), leaf.value), loc)
                elif not isinstance(leaf, (Var, Const)):
                    bad = Unmerged("variable '%s' cannot be carried through a loop"
                                   % k.lstrip("."), loc)
                if bad is not None:
                    break
            if bad is not None:
                out[k] = a if same(a, b) and not isinstance(a, Unmerged) else bad
        return out

    def _reshape(self, keys, inits, results, unknown):
        """``inits`` with each unknown one given the structure of its result, or
        ``None`` when none changes."""
        reshaped, changed = list(inits), False
        for j, k in enumerate(keys):
            if k not in unknown:
                continue
            shape = map_structure(lambda _: 0, freeze(results[j]))
            if isinstance(shape, tuple) and shape != map_structure(lambda _: 0, inits[j]):
                fill = leaves(inits[j])[0]
                reshaped[j] = map_structure(lambda _: fill, shape)
                changed = True
        return reshaped if changed else None

    def _params(self, keys, inits):
        def fresh(k, leaf):
            v = Var(FLAG_HINTS.get(k, k))
            self.note_join(v, (leaf,))
            if isinstance(leaf, Const) and leaf.value is UNDEFINED or \
                    isinstance(leaf, Var) and leaf.id in self.maybe_undefined:
                self.maybe_undefined[v.id] = k
            return v
        return [map_structure(lambda leaf, k=k: fresh(k, leaf), init) for k, init in zip(keys, inits)]

    def _check_structure(self, keys, inits, results, loc):
        for k, a, b in zip(keys, inits, results):
            sa = map_structure(lambda _: 0, a)
            sb = map_structure(lambda _: 0, b)
            if sa != sb:
                raise CompileError(
                    "variable '%s' changes structure inside the loop (for example from a tensor "
                    "to a tuple); give it its final structure before the loop" % k.lstrip("."),
                    loc)
            for leaf in leaves(b) + leaves(a):
                if isinstance(leaf, Unmerged):
                    raise leaf.error()
                if isinstance(leaf, Const) and not runtime_representable(leaf):
                    raise CompileError(
                        "variable '%s' holds %r in a loop; only tensors and numbers can change "
                        "from one iteration to the next" % (k, leaf.value), loc)
                if not isinstance(leaf, (Var, Const)):
                    raise CompileError("variable '%s' cannot be carried through a loop" % k, loc)

    def _after_loop(self, keys, outs, inits, results, scope, outer_brk, loc, fixed=None):
        """Bind the loop's results; restore the enclosing loop's break flag.

        A ``return`` inside this loop also leaves every enclosing loop, so the
        enclosing loop's break flag becomes ``outer_brk or returned``.
        """
        for k, out, init, res in zip(keys, outs, inits, results):
            for o, i, r in zip(leaves(out), leaves(init), leaves(res)):
                self.note_join(o, (i, r))
                if isinstance(i, Const) and i.value is UNDEFINED or \
                        isinstance(i, Var) and i.id in self.maybe_undefined:
                    self.maybe_undefined[o.id] = k
            scope.env[k] = out
        scope.env.update(fixed or {})
        ret = scope.env.get(RET)
        if outer_brk is MISSING:
            scope.env.pop(BRK, None)
        else:
            scope.env[BRK] = outer_brk if ret is None else self.flag_or(outer_brk, ret, loc)
        if ret is not None:
            scope.env[ESC] = ret
        else:
            scope.env.pop(ESC, None)

    def _body_env(self, scope, keys, params, fixed=None):
        env = dict(scope.env)
        env.update(fixed or {})
        for k, p in zip(keys, params):
            env[k] = p
        env[ESC] = Const(False)
        return env

    def _loop_test(self, test_fn, keys, params, scope, loc, fixed=None):
        """Region computing the loop test (false once ``break`` has run)."""
        env = dict(scope.env)
        env.update(fixed or {})
        env.update(zip(keys, params))
        with self.walking(scope, env):
            brk = env.get(BRK)
            if isinstance(brk, Var):
                with self.region():
                    test = test_fn()
                    test_ops = self.ops
                out = Var("test")
                self.ops.append(Op(C.If(), [brk], [out], loc, regions=[
                    Region((), [], (Const(False),)), Region((), test_ops, (test,))]))
                test = out
            else:
                test = test_fn()
            return Region([v for p in params for v in leaves(p)], self.ops, (test,))

    def runtime_while(self, node, scope):
        loc = scope.info.loc(node)
        outer_brk = scope.env.get(BRK, MISSING)
        if node.orelse:
            raise CompileError("The 'while...else...' statement is not supported now.", loc)
        keys, has_exit, _ = self._carried(node.body, scope)

        def attempt(keys, inits, placeholders, fixed):
            body_params = self._params(keys, inits)
            cond = None
            if not placeholders:
                cond = self._loop_test(lambda: self._truth(self.eval(node.test, scope), loc),
                                       keys, self._params(keys, inits), scope, loc, fixed)
            env = self._body_env(scope, keys, _placed(keys, body_params, inits, placeholders),
                                 fixed)
            ops, env_b = self.run_region(node.body, scope, env)
            return (cond, body_params, ops), _carried_values(env_b, keys)
        (cond, body_params, ops), keys, results, inits, fixed = self._shape_loop(
            keys, self._loop_inits(keys, scope), attempt, loc)
        outs = self._params(keys, inits)
        self.ops.append(Op(C.While(), [x for i in inits for x in leaves(i)],
                           [x for o in outs for x in leaves(o)], loc, regions=[
            cond, Region([x for p in body_params for x in leaves(p)], ops,
                         [x for r in results for x in leaves(r)])]))
        self._after_loop(keys, outs, inits, results, scope, outer_brk, loc, fixed)

    def _truth(self, test, loc):
        if isinstance(test, tuple):
            return Const(bool(test))
        return test

    def runtime_for(self, node, iterable, scope):
        """``for`` over a range, a tensor's first axis, enumerate or zip of them."""
        loc = scope.info.loc(node)
        outer_brk = scope.env.get(BRK, MISSING)
        start, stop, step, element = self.iteration(iterable, loc)
        index = Var("i")
        target_names = assigned_names([gast.Assign(targets=[node.target], value=None)])
        keys, has_exit, _ = self._carried(node.body, scope, extra=target_names)
        if has_exit:
            return self._for_as_while(node, start, stop, step, element, scope, loc, outer_brk)
        keys = self._read_targets(node, scope) + keys

        def attempt(keys, inits, placeholders, fixed):
            body_params = self._params(keys, inits)
            env = self._body_env(scope, keys, _placed(keys, body_params, inits, placeholders),
                                 fixed)
            with self.walking(scope, env):
                self.assign(node.target, element(index), scope)
                self.exec_block(node.body, scope)
                ops, env_b = self.ops, scope.env
            return (body_params, ops), _carried_values(env_b, keys)
        (body_params, ops), keys, results, inits, fixed = self._shape_loop(
            keys, self._loop_inits(keys, scope), attempt, loc)
        outs = self._params(keys, inits)
        self.ops.append(Op(C.ForRange(), [start, stop, step] + [x for i in inits for x in leaves(i)],
                           [x for o in outs for x in leaves(o)], loc, regions=[
            Region([index] + [x for p in body_params for x in leaves(p)], ops,
                   [x for r in results for x in leaves(r)])]))
        self._after_loop(keys, outs, inits, results, scope, outer_brk, loc, fixed)

    def _for_as_while(self, node, start, stop, step, element, scope, loc, outer_brk):
        """A ``for`` that may ``break`` or ``return`` runs as a ``while`` over its index."""
        self.n_for = getattr(self, "n_for", 0) + 1
        counter = ".for_index%d" % self.n_for
        scope.env[counter] = start
        keys, _, _ = self._carried(node.body, scope)
        keys = [counter] + [k for k in self._read_targets(node, scope) if k not in keys] + keys

        def attempt(keys, inits, placeholders, fixed):
            body_params = self._params(keys, inits)
            body_params[0].hint = "i"
            cond = None
            if not placeholders:
                cond_params = self._params(keys, inits)
                cond_params[0].hint = "i"

                def test():
                    i = cond_params[0]
                    if not isinstance(step, Const):
                        return self.emit(C.InRange(), [i, stop, step], loc)
                    if step.value < 0:
                        return self.emit(self._cmp("Greater"), [i, stop], loc)
                    return self.emit(self._cmp("Less"), [i, stop], loc)
                cond = self._loop_test(test, keys, cond_params, scope, loc, fixed)
            env = self._body_env(scope, keys, _placed(keys, body_params, inits, placeholders),
                                 fixed)
            with self.walking(scope, env):
                i = body_params[0]
                nxt = self.emit(self._arith("Add"), [i, step], loc)
                nxt.hint = "i"
                self.assign(node.target, element(i), scope)
                scope.env[counter] = nxt
                self.exec_block(node.body, scope)
                ops, env_b = self.ops, scope.env
            return (cond, body_params, ops), _carried_values(env_b, keys)
        (cond, body_params, ops), keys, results, inits, fixed = self._shape_loop(
            keys, self._loop_inits(keys, scope), attempt, loc)
        outs = self._params(keys, inits)
        outs[0].hint = "i"
        self.ops.append(Op(C.While(), [x for i in inits for x in leaves(i)],
                           [x for o in outs for x in leaves(o)], loc, regions=[
            cond, Region([x for p in body_params for x in leaves(p)], ops,
                         [x for r in results for x in leaves(r)])]))
        self._after_loop(keys, outs, inits, results, scope, outer_brk, loc, fixed)
        scope.env.pop(counter, None)

    def _read_targets(self, node, scope):
        """The loop's target names read after it (``for i ...: break`` then ``x[i]``):
        carried, so that they hold the last item, as in Python.  Not carried
        otherwise, which keeps the loop lean."""
        names = assigned_names([gast.Assign(targets=[node.target], value=None)])
        return [n for n in names if read_outside(scope.info, n, node)]

    def _cmp(self, name):
        from ..ops.operations import math_ops as M
        return getattr(M, name)()

    def _arith(self, name):
        from ..ops.operations import math_ops as M
        return getattr(M, name)()

    def iteration(self, it, loc):
        """``(start, stop, step, element)`` where ``element(i)`` stages the i-th item."""
        if isinstance(it, Const) and isinstance(it.value, range):
            r = it.value
            return Const(r.start), Const(r.stop), Const(r.step), lambda i: i
        if isinstance(it, RangeVal):
            return it.start, it.stop, it.step, lambda i: i
        if isinstance(it, Var):
            n = self.emit(A.GetItem(), [self.emit(A.Shape(), [it], loc), Const(0)], loc)
            n.hint = "n"
            return Const(0), n, Const(1), lambda i: self.emit(A.GetItem(), [it, i], loc)
        if isinstance(it, EnumerateVal):
            start, stop, step, inner = self.iteration(it.inner, loc)

            def element(i):
                k = i if _is_zero(it.start) else self.emit(self._arith("Add"), [i, it.start], loc)
                return (k, inner(i))
            return start, stop, step, element
        if isinstance(it, ZipVal):
            parts = [self.iteration(x, loc) for x in it.inners]
            stop = None
            for s0, s1, s2, _ in parts:
                if not (_is_zero(s0) and isinstance(s2, Const) and s2.value == 1):
                    raise CompileError("zip over ranges that do not start at 0 with step 1 is "
                                       "not supported", loc)
                stop = s1 if stop is None else self._min(stop, s1, loc)
            return Const(0), stop, Const(1), lambda i: tuple(p[3](i) for p in parts)
        raise CompileError("cannot iterate over this value in a loop", loc)

    def _min(self, a, b, loc):
        if isinstance(a, Const) and isinstance(b, Const):
            return Const(min(a.value, b.value))
        return self.emit(C.PyMin(), [a, b], loc)

    # --------------------------------------------------------- builtins
    def iterable_builtin(self, f, args, loc):
        """``range``/``enumerate``/``zip`` over runtime values, or ``None``."""
        if f is builtins.range:
            if len(args) == 1:
                return RangeVal(Const(0), args[0], Const(1))
            if len(args) == 2:
                return RangeVal(args[0], args[1], Const(1))
            return RangeVal(*args[:3])
        if f in (builtins.enumerate, builtins.zip):
            # a list built while compiling is iterated as its items now
            args = [tuple(a.items) if isinstance(a, ListVal) else a for a in args]
        if f is builtins.enumerate:
            start = args[1] if len(args) > 1 else Const(0)
            if isinstance(args[0], tuple):
                return tuple((Const(i + start.value) if isinstance(start, Const) else i, x)
                             for i, x in enumerate(args[0]))
            return EnumerateVal(args[0], start)
        if f is builtins.zip:
            seqs = [self.static_sequence(a) for a in args]    # tuples, constant sequences
            if all(seq is not None for seq in seqs):
                return tuple(zip(*seqs))
            return ZipVal(list(args))
        return None


def _frozen(value):
    return freeze(value)


def _carried_values(env, keys):
    """What a loop body leaves in each carried variable; a list built in the body
    is carried as a tuple of its items."""
    return [_frozen(env[k]) for k in keys]


def _placed(keys, params, inits, placeholders):
    """Loop parameters, with those of ``placeholders`` bound to their initial constant."""
    return [i if k in placeholders else p for k, p, i in zip(keys, params, inits)]


def _is_zero(a):
    return isinstance(a, Const) and a.value == 0
