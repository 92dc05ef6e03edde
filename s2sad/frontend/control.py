"""Runtime control flow in the builder: ``if``, ``while``, ``for``, and the
``break`` / ``continue`` / ``return`` that leave them early.

Branches become ``If`` ops whose regions yield the variables either branch
assigned (phis); loops become ``While`` / ``ForRange`` ops that carry every
variable their body assigns.  Early exits are lowered to flags kept in the
environment under names no user variable can have:

- ``.esc``: the rest of the current block must not run (set by return, break
  and continue); when it is a runtime value, the rest of the block is wrapped
  in ``if not esc``;
- ``.ret`` / ``.retval``: the function has returned, and with what;
- ``.brk``: the innermost loop was left by ``break``.

A variable assigned on only some paths gets the ``UNDEFINED`` marker on the
others; reading it emits a check that raises a clear error naming it if the
path taken never assigned it.
"""
import builtins

import gast

from ..errors import CompileError
from ..ir.nodes import Var, Const, Op, Region, leaves, map_structure
from ..ir import control as C
from ..runtime import UNDEFINED
from ..ops.operations import array_ops as A
from .values import ListVal, freeze

ESC, RET, RETVAL, BRK = ".esc", ".ret", ".retval", ".brk"
_FLAG_HINTS = {ESC: "exited", RET: "returned", BRK: "broke", RETVAL: "retval"}
_MISSING = object()
MAX_UNROLL = 64


class NeedsConstant(CompileError):
    """A runtime value was used where a value known while compiling is required."""


class Unmerged:
    """A variable bound to different compile-time objects (closures, Cells,
    functions) on the paths of a runtime branch.

    That is only an error if the variable is read after the branch, so the
    error is kept here and raised at the read.
    """

    __slots__ = ("message", "loc")

    def __init__(self, message, loc):
        self.message, self.loc = message, loc

    def error(self, read_loc=None):
        where = ""
        if read_loc is not None:
            where = " (it is read at line %d)" % read_loc.lineno
        return CompileError(self.message + where, self.loc)


def unmerged_in(value):
    """The first ``Unmerged`` leaf of ``value``, or ``None``."""
    if isinstance(value, Unmerged):
        return value
    if isinstance(value, tuple):
        return next((v for v in leaves(value) if isinstance(v, Unmerged)), None)
    return None


class RangeVal:
    """``range(start, stop, step)`` with a bound known only at run time."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step


class EnumerateVal:
    def __init__(self, inner, start):
        self.inner, self.start = inner, start


class ZipVal:
    def __init__(self, inners):
        self.inners = inners


def _same(a, b):
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        va, vb = a.value, b.value
        if va is vb:
            return True
        if type(va) is type(vb) and isinstance(va, (bool, int, float, str, type(None))):
            return va == vb
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return all(_same(x, y) for x, y in zip(a, b))
    return False


def _runtime_representable(c):
    v = c.value
    return v is UNDEFINED or v is None or isinstance(v, (bool, int, float, complex, str)) or \
        type(v).__module__ == "numpy"


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


class ControlFlow:
    """Mixin of ``Builder``: the statements that stage control flow."""

    # ------------------------------------------------------------- regions
    def run_region(self, stmts, scope, env):
        """Walk ``stmts`` into a fresh op list; return ``(ops, env after)``."""
        saved_ops, saved_env = self.ops, scope.env
        self.ops = []
        scope.env = env
        try:
            self.exec_block(stmts, scope)
            return self.ops, scope.env
        finally:
            self.ops, scope.env = saved_ops, saved_env

    def escaped(self, scope):
        """``.esc``: Const(True) -> stop; Var -> guard the rest; else go on."""
        return scope.env.get(ESC)

    def guard_rest(self, stmts, esc, scope, loc):
        """Run ``stmts`` only on the paths where ``esc`` is false."""
        env0 = dict(scope.env)
        rest_env = dict(env0)
        rest_env[ESC] = Const(False)
        # a return or break also sets the escape flag, so where it is false
        # neither has happened: known while compiling in the rest of the block
        for flag in (RET, BRK):
            if flag in rest_env:
                rest_env[flag] = Const(False)
        else_ops, env_e = self.run_region(stmts, scope, rest_env)
        scope.env = self.merge(esc, env0, ([], dict(env0)), (else_ops, env_e), loc)

    # ------------------------------------------------------------------ if
    def runtime_if(self, test, body, orelse, scope, loc):
        env0 = dict(scope.env)
        then = self.run_region(body, scope, dict(env0))
        other = self.run_region(orelse, scope, dict(env0))
        scope.env = self.merge(test, env0, then, other, loc)

    def merge(self, test, env0, then, other, loc):
        """Emit the ``If`` op; return the environment after it, with phis."""
        then_ops, env_t = then
        else_ops, env_e = other
        keys = list(env0)
        keys += [k for k in env_t if k not in keys]
        keys += [k for k in env_e if k not in keys]
        outs, res_t, res_e = [], [], []
        env = {}
        for k in keys:
            a = env_t.get(k, _MISSING)
            b = env_e.get(k, _MISSING)
            if a is _MISSING:
                a = self._absent(k, b)
            if b is _MISSING:
                b = self._absent(k, a)
            env[k] = self._phi(k, a, b, outs, res_t, res_e, loc)
        op = Op(C.If(), [test], outs, loc,
                regions=[Region((), then_ops, res_t), Region((), else_ops, res_e)])
        self.ops.append(op)
        return env

    def _absent(self, key, other):
        if key in (ESC, RET, BRK):
            return Const(False)
        if key == RETVAL:
            return map_structure(lambda _: Const(None), other)
        return map_structure(lambda _: Const(UNDEFINED), other)

    def _phi(self, key, a, b, outs, res_t, res_e, loc):
        if _same(a, b):
            return a
        a, b = freeze(a), freeze(b)
        if isinstance(a, tuple) or isinstance(b, tuple):
            if isinstance(a, Const) and a.value in (None, UNDEFINED):
                a = map_structure(lambda _: a, b)
            if isinstance(b, Const) and b.value in (None, UNDEFINED):
                b = map_structure(lambda _: b, a)
            if not (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)):
                raise CompileError(
                    "variable '%s' is a tuple of a different length (or not a tuple) on the "
                    "two paths of this branch; s2sad needs the same structure on both"
                    % key.lstrip("."), loc)
            return tuple(self._phi(key, x, y, outs, res_t, res_e, loc) for x, y in zip(a, b))
        for side in (a, b):
            if isinstance(side, Unmerged):
                return side
        for side in (a, b):
            if isinstance(side, Const) and not _runtime_representable(side):
                return Unmerged(
                    "variable '%s' holds %r on one path of this branch and something else on "
                    "the other; only tensors and numbers can differ between paths"
                    % (key.lstrip("."), side.value), loc)
            if not isinstance(side, (Var, Const)):
                return Unmerged("variable '%s' cannot differ between the paths of this branch"
                                % key.lstrip("."), loc)
        out = Var(_FLAG_HINTS.get(key, key))
        self.note_join(out, (a, b))
        if any(isinstance(s, Const) and s.value is UNDEFINED for s in (a, b)) or \
                any(isinstance(s, Var) and s.id in self.maybe_undefined for s in (a, b)):
            self.maybe_undefined[out.id] = key
        outs.append(out)
        res_t.append(a)
        res_e.append(b)
        return out

    def checked(self, name, value, scope, node):
        """``value`` with a definedness check on leaves some path left unassigned."""
        if type(value) is Var and value.id not in self.maybe_undefined:
            return value        # the common case, on every name lookup
        bad = unmerged_in(value)
        if bad is not None:
            raise bad.error(scope.info.loc(node))

        def check(v):
            if isinstance(v, Const) and v.value is UNDEFINED:
                raise CompileError("variable '%s' is used here but no path before this line "
                                   "assigns it" % name, scope.info.loc(node))
            if isinstance(v, Var) and v.id in self.maybe_undefined:
                loc = scope.info.loc(node)
                out = self.emit(C.CheckDefined(name, loc.lineno, loc.filename), [v], loc)
                return out
            return v
        if not any(isinstance(v, Var) and v.id in self.maybe_undefined or
                   isinstance(v, Const) and v.value is UNDEFINED for v in leaves(value)):
            return value
        new = map_structure(check, value)
        if new is not value:
            for v in leaves(new):
                if isinstance(v, Var):
                    v.hint = name
            if not self.select_depth:
                # later reads use the checked value; not from inside an operand
                # of 'and'/'or'/'if else', which may not run
                scope.env[name] = new
        return new

    # -------------------------------------------------------------- flags
    def flag_or(self, a, b, loc):
        """``a or b`` of two flags, folded while compiling when possible."""
        if isinstance(a, Const):
            return b if not a.value else a
        if isinstance(b, Const):
            return a if not b.value else b
        out = Var("exited")
        self.ops.append(Op(C.If(), [a], [out], loc,
                           regions=[Region((), [], (Const(True),)), Region((), [], (b,))]))
        return out

    def flag_not(self, a, loc):
        if isinstance(a, Const):
            return Const(not a.value)
        return self.emit(C.Not(), [a], loc)

    # --------------------------------------------------------------- loops
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
                elif isinstance(leaf, Const) and not _runtime_representable(leaf):
                    bad = Unmerged("variable '%s' holds %r in a loop; only tensors and numbers "
                                   "can change from one iteration to the next"
                                   % (k.lstrip("."), leaf.value), loc)
                elif not isinstance(leaf, (Var, Const)):
                    bad = Unmerged("variable '%s' cannot be carried through a loop"
                                   % k.lstrip("."), loc)
                if bad is not None:
                    break
            if bad is not None:
                out[k] = a if _same(a, b) and not isinstance(a, Unmerged) else bad
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
            v = Var(_FLAG_HINTS.get(k, k))
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
                if isinstance(leaf, Const) and not _runtime_representable(leaf):
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
        if outer_brk is _MISSING:
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
        saved_ops, saved_env = self.ops, scope.env
        self.ops, scope.env = [], env
        try:
            brk = env.get(BRK)
            if isinstance(brk, Var):
                outer = self.ops
                self.ops = []
                test = test_fn()
                test_ops, self.ops = self.ops, outer
                out = Var("test")
                self.ops.append(Op(C.If(), [brk], [out], loc, regions=[
                    Region((), [], (Const(False),)), Region((), test_ops, (test,))]))
                test = out
            else:
                test = test_fn()
            return Region([v for p in params for v in leaves(p)], self.ops, (test,))
        finally:
            self.ops, scope.env = saved_ops, saved_env

    def runtime_while(self, node, scope):
        loc = scope.info.loc(node)
        outer_brk = scope.env.get(BRK, _MISSING)
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
        outer_brk = scope.env.get(BRK, _MISSING)
        start, stop, step, element = self.iteration(iterable, loc)
        index = Var("i")
        target_names = assigned_names([gast.Assign(targets=[node.target], value=None)])
        keys, has_exit, _ = self._carried(node.body, scope, extra=target_names)
        if has_exit:
            return self._for_as_while(node, start, stop, step, element, scope, loc, outer_brk)

        def attempt(keys, inits, placeholders, fixed):
            body_params = self._params(keys, inits)
            env = self._body_env(scope, keys, _placed(keys, body_params, inits, placeholders),
                                 fixed)
            saved_ops, saved_env = self.ops, scope.env
            self.ops, scope.env = [], env
            try:
                self.assign(node.target, element(index), scope)
                self.exec_block(node.body, scope)
                ops, env_b = self.ops, scope.env
            finally:
                self.ops, scope.env = saved_ops, saved_env
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
        keys = [counter] + keys

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
            saved_ops, saved_env = self.ops, scope.env
            self.ops, scope.env = [], env
            try:
                i = body_params[0]
                nxt = self.emit(self._arith("Add"), [i, step], loc)
                nxt.hint = "i"
                self.assign(node.target, element(i), scope)
                scope.env[counter] = nxt
                self.exec_block(node.body, scope)
                ops, env_b = self.ops, scope.env
            finally:
                self.ops, scope.env = saved_ops, saved_env
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
            if all(isinstance(a, tuple) for a in args):
                return tuple(zip(*args))
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


def returned(scope):
    """What the function walked in ``scope`` returned."""
    value = scope.env.get(RETVAL, Const(None))
    bad = unmerged_in(value)
    if bad is not None:
        raise bad.error()
    return value
