"""Runtime branches in the builder, and the flags that leave a block early.

Branches (``if`` on a runtime test, and the rest of a block after a runtime
``return``/``break``/``continue``) become ``If`` ops whose regions yield the
variables either branch assigned (phis); loops, which join values the same
way, are in ``loops``.  Early exits are lowered to flags kept in the
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
import contextlib

from ..errors import CompileError
from ..ir.nodes import Var, Const, Op, Region, leaves, map_structure
from ..ir import control as C
from ..runtime import UNDEFINED
from .values import freeze

ESC, RET, RETVAL, BRK = ".esc", ".ret", ".retval", ".brk"
FLAG_HINTS = {ESC: "exited", RET: "returned", BRK: "broke", RETVAL: "retval"}
MISSING = object()


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


def same(a, b):
    """Whether ``a`` and ``b`` are known to be one value (no phi needed to join them)."""
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        va, vb = a.value, b.value
        if va is vb:
            return True
        if type(va) is type(vb) and isinstance(va, (bool, int, float, str, type(None))):
            return va == vb
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return all(same(x, y) for x, y in zip(a, b))
    return False


def runtime_representable(c):
    """Whether the constant ``c`` can be a runtime value a branch or loop yields."""
    v = c.value
    return v is UNDEFINED or v is None or isinstance(v, (bool, int, float, complex, str)) or \
        type(v).__module__ == "numpy"


class ControlFlow:
    """Mixin of ``Builder``: runtime branches, phis, definedness checks, exit flags."""

    # ------------------------------------------------------------- regions
    @contextlib.contextmanager
    def walking(self, scope, env):
        """Inside the block ops go to a fresh list and ``scope.env`` is ``env``;
        both are restored after, however the block ends."""
        saved_env, scope.env = scope.env, env
        try:
            with self.region():
                yield
        finally:
            scope.env = saved_env

    def run_region(self, stmts, scope, env):
        """Walk ``stmts`` into a fresh op list; return ``(ops, env after)``."""
        with self.walking(scope, env):
            self.exec_block(stmts, scope)
            return self.ops, scope.env

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
            a = env_t.get(k, MISSING)
            b = env_e.get(k, MISSING)
            if a is MISSING:
                a = self._absent(k, b)
            if b is MISSING:
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
        if same(a, b):
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
            if isinstance(side, Const) and not runtime_representable(side):
                return Unmerged(
                    "variable '%s' holds %r on one path of this branch and something else on "
                    "the other; only tensors and numbers can differ between paths"
                    % (key.lstrip("."), side.value), loc)
            if not isinstance(side, (Var, Const)):
                return Unmerged("variable '%s' cannot differ between the paths of this branch"
                                % key.lstrip("."), loc)
        out = Var(FLAG_HINTS.get(key, key))
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


def returned(scope):
    """What the function walked in ``scope`` returned."""
    value = scope.env.get(RETVAL, Const(None))
    bad = unmerged_in(value)
    if bad is not None:
        raise bad.error()
    return value
