"""SSA construction by partial evaluation.

The builder walks a function's gast tree once, evaluating everything that is
known while compiling (constants, ``self.`` attributes, primitives, shapes
written in the source, calls whose arguments are all known) and staging every
operation on a runtime value as an ``Op`` in SSA form.  Calls to sub-Cells,
user functions and library functional forms are inlined by walking the
callee's source the same way; bprop rules are inlined through the same entry
point (``call``), which is what makes rules differentiable again.

Abstract values during the walk are ``Var`` (runtime), ``Const`` (known), a
Python ``tuple`` of abstract values (tuples are compile-time structure) or a
``Bound`` method of a runtime value (``x.sum``).
"""
import builtins
import functools
import inspect
import operator
import types

import gast
import numpy as np

from ..errors import CompileError, NoGradientRuleError
from ..ir.nodes import Var, Const, Op, Func, Region, Frame, leaves, map_structure, tag_frame
from ..ir.primitive import Primitive
from ..ops.operations import math_ops as M
from ..ops.operations import array_ops as A
from ..ops.operations import runtime_ops as R
from .parse import get_source_info, describe
from .fence import fence
from . import resolve
from .guards import Globals, GuardSet, Item
from .control import (ControlFlow, ESC, RET, RETVAL, BRK, NeedsConstant, MAX_UNROLL,
                      unmerged_in, returned)
from .closures import Closures, Closure, Partial
from .alias import Aliasing
from .values import (Bound, Spread, ListVal, FrozenList, Scope, is_const, const_value,
                     freeze, canon, is_library as _is_library)
from ..ir import control as C

MAX_INLINE_DEPTH = 200

_BINOPS = {
    gast.Add: (operator.add, M.Add),
    gast.Sub: (operator.sub, M.Sub),
    gast.Mult: (operator.mul, M.Mul),
    gast.Div: (operator.truediv, M.RealDiv),
    gast.Pow: (operator.pow, M.Pow),
    gast.MatMult: (operator.matmul, M.MatMulExt),
    gast.FloorDiv: (operator.floordiv, M.FloorDiv),
    gast.Mod: (operator.mod, M.Mod),
    gast.LShift: (operator.lshift, None),
    gast.RShift: (operator.rshift, None),
    gast.BitOr: (operator.or_, M.BitwiseOr),
    gast.BitAnd: (operator.and_, M.BitwiseAnd),
    gast.BitXor: (operator.xor, M.BitwiseXor),
}

_CMPOPS = {
    gast.Eq: (operator.eq, M.Equal),
    gast.NotEq: (operator.ne, M.NotEqual),
    gast.Lt: (operator.lt, M.Less),
    gast.LtE: (operator.le, M.LessEqual),
    gast.Gt: (operator.gt, M.Greater),
    gast.GtE: (operator.ge, M.GreaterEqual),
    gast.Is: (operator.is_, None),
    gast.IsNot: (operator.is_not, None),
    gast.In: (lambda a, b: a in b, None),
    gast.NotIn: (lambda a, b: a not in b, None),
}

_OP_SYMBOL = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**",
              gast.MatMult: "@", gast.FloorDiv: "//", gast.Mod: "%", gast.LShift: "<<",
              gast.RShift: ">>", gast.BitOr: "|", gast.BitAnd: "&", gast.BitXor: "^"}


class Builder(ControlFlow, Closures, Aliasing):
    """Stages one program's operations into a list of SSA ops."""

    def __init__(self, root=None):
        self.root = root
        self.ops = []
        self.maybe_undefined = {}
        self.guards = GuardSet()
        self.inputs = resolve.RuntimeInputs()
        self.depth = 0
        self.loc_override = None
        self.origin = None
        self.name_hints = True
        self.select_depth = 0      # inside an operand of a runtime 'and'/'or'/'... if ... else'
        self.alias = {}            # Var id -> ids of the arrays it may share memory with
        self.frames = []           # (scope, location of the call that entered it)
        self.frame = None          # the user function call being inlined (see ``Op.frame``)
        self.writing = None        # the assignment statement being carried out
        self.inert = set()         # ids of Vars no differentiable input flows into
        self.random_states = set() # ids of Vars holding a generator made at run time
        self.kinds = {}            # Var id -> the types an input's value may have

    # ------------------------------------------------------------------ ops
    def emit(self, prim, args, loc):
        """Append ``prim(*args)``; fold it if every argument is known."""
        args = [canon(a) for a in args]
        if all(isinstance(a, Const) for a in args) and not prim.stateful:
            try:
                return Const(prim.impl(*[a.value for a in args]))
            except Exception as e:
                raise CompileError("evaluating %s on constants failed: %s: %s"
                                   % (prim.name, type(e).__name__, e), loc)
        outs = [Var() for _ in range(prim.num_outputs)]
        if not prim.differentiable or all(v.id in self.inert for v in leaves(tuple(args))
                                          if isinstance(v, Var)):
            self.inert.update(o.id for o in outs)
        self.ops.append(Op(prim, args, outs, self.loc_override or loc, self.origin))
        self.note_view(prim, args, outs)
        return outs[0] if prim.num_outputs == 1 else tuple(outs)

    # ---------------------------------------------------------------- inputs
    def typed_inputs(self, abstract, specs):
        """The differentiated function's arguments as its code sees them.

        A list argument stays a list (``isinstance(xs, list)``), and each
        runtime input remembers whether it is a Tensor, an ndarray or a NumPy
        scalar, so that type checks on it are answered from its real kind.
        """
        return [self._typed(a, s) for a, s in zip(abstract, specs)]

    def _typed(self, value, spec):
        from ..tensor import Tensor, Parameter
        kind = spec[0] if spec else None
        if isinstance(value, Var):
            types_ = {"tensor": (Tensor, Parameter), "array": (np.ndarray,),
                      "npscalar": spec[1:2]}.get(kind)
            if types_:
                self.kinds[value.id] = types_
            return value
        if isinstance(value, tuple) and kind in ("tuple", "list"):
            items = tuple(self._typed(v, s) for v, s in zip(value, spec[1:]))
            return ListVal(items, self.ops) if kind == "list" else items
        if isinstance(value, Const) and kind == "list" and isinstance(value.value, tuple):
            return Const(list(value.value))
        return value

    def type_check(self, value, check, loc):
        """``isinstance(value, classes)`` or ``type(value)`` while compiling.

        ``check(t)`` answers for a value of type ``t``.  A runtime value whose
        possible types disagree is refused (in user code) rather than guessed.
        """
        if isinstance(value, (ListVal, FrozenList)):
            return Const(check(list))
        if isinstance(value, tuple):
            return Const(check(tuple))
        if isinstance(value, dict):
            return Const(check(dict))
        if not isinstance(value, Var):
            return None
        known = self.inputs.type_of(value)
        types_ = self.kinds.get(value.id) or ((known,) if known is not None else _RUNTIME_TYPES)
        answers = {check(t) for t in types_}
        if len(answers) == 1:
            return Const(answers.pop())
        if self.in_library():
            return None
        raise CompileError(
            "this type check on a runtime value cannot be answered while compiling: the "
            "value may be any of %s here" % ", ".join(map(_type_name, types_)), loc,
            hint="check the type of the function's argument itself (compiled code is "
                 "specialised on it), or restructure the code so it does not depend on the "
                 "type of a computed value")

    # ------------------------------------------------------------- functions
    def call_function(self, fn, args, kwargs=None, loc=None, self_value=None, outline=True,
                      path=None):
        """Inline the Python function ``fn`` applied to abstract ``args``.

        ``outline=False``: the call is not given a frame of its own (the
        function differentiated by a gradient taken inside the program);
        ``path``: where ``fn`` was read from, for guards on what it captured.
        """
        kwargs = kwargs or {}
        if self.depth >= MAX_INLINE_DEPTH:
            # point at the innermost call the user wrote, not at a library helper
            if self.frame is not None and self.frame.loc is not None:
                fn_name, loc = "'%s'" % self.frame.name, self.frame.loc
            else:
                fn_name = describe(fn)
            raise CompileError("calls nest deeper than %d levels while inlining %s: calls are "
                               "inlined while compiling, so recursion must stop after a depth "
                               "known then (a Python int argument), and at most %d deep"
                               % (MAX_INLINE_DEPTH, fn_name, MAX_INLINE_DEPTH), loc)
        info = fence(get_source_info(fn, loc))
        try:
            sig = signature(fn)
            full = ((self_value,) + tuple(args)) if self_value is not None else tuple(args)
            bound = sig.bind(*full, **kwargs)
        except TypeError as e:
            raise CompileError("calling %s: %s" % (describe(fn), e), loc)
        env = {}
        for name, param in sig.parameters.items():
            if name in bound.arguments:
                val = bound.arguments[name]
                if param.kind is inspect.Parameter.VAR_POSITIONAL:
                    val = tuple(val)
                elif param.kind is inspect.Parameter.VAR_KEYWORD:
                    val = dict(val)     # read back only by ``**name`` in a call
                env[name] = val
            elif param.default is not inspect.Parameter.empty:
                env[name] = self.lift(param.default, _default_path(fn, path, name, param))
            elif param.kind is inspect.Parameter.VAR_POSITIONAL:
                env[name] = ()
            elif param.kind is inspect.Parameter.VAR_KEYWORD:
                env[name] = {}
        scope = Scope(info, fn, env, path)
        # s2sad's own helpers (functional forms, tensor methods) are attributed
        # to the user's line that called them
        saved = self.loc_override
        if saved is None and loc is not None and _is_library(fn):
            self.loc_override = loc
        elif saved is not None and self.origin is None and not _is_library(fn):
            self.loc_override = None    # user code reached through a library helper
        # a frame for each call a user function makes: not for the differentiated
        # function itself, even when a library wrapper (s2sad.grad's) calls it
        user_caller = any(not _is_library(s.fn) for s, _ in self.frames)
        frame = None if _is_library(fn) or self.origin is not None or not user_caller or \
            not outline else self.enter_frame(_frame_name(fn, self_value), loc, env)
        target, start = self.ops, len(self.ops)
        self.depth += 1
        self.frames.append((scope, loc))
        try:
            self.exec_block(info.tree.body, scope)
        finally:
            self.frames.pop()
            self.depth -= 1
            self.loc_override = saved
            if frame is not None:
                self.leave_frame(frame, target, start)
        return returned(scope)

    def enter_frame(self, name, loc, env):
        """A new call of a user function, entered (see ``Op.frame``)."""
        self.frame = Frame(name, self.frame, loc)
        self.frame.bind(env)
        return self.frame

    def leave_frame(self, frame, target, start):
        """Tag what the call emitted into ``target`` from ``start``, and leave it."""
        tag_frame(target[start:], (frame, "fwd"))
        self.frame = frame.parent

    # ------------------------------------------------------------ statements
    def exec_block(self, stmts, scope):
        for i, stmt in enumerate(stmts):
            esc = scope.env.get(ESC)
            if isinstance(esc, Const) and esc.value:
                return
            if isinstance(esc, Var):
                self.guard_rest(stmts[i:], esc, scope, scope.info.loc(stmt))
                return
            handler = getattr(self, "st_" + type(stmt).__name__, None)
            if handler is None:
                raise CompileError("'%s' statements are not supported" % type(stmt).__name__,
                                   scope.info.loc(stmt))
            handler(stmt, scope)

    def st_Expr(self, node, scope):
        self.eval(node.value, scope)

    def st_Pass(self, node, scope):
        pass

    def st_Return(self, node, scope):
        scope.env[RETVAL] = Const(None) if node.value is None else \
            freeze(self.eval(node.value, scope))
        scope.env[RET] = Const(True)
        scope.env[ESC] = Const(True)
        if BRK in scope.env:
            scope.env[BRK] = Const(True)

    def st_Break(self, node, scope):
        if BRK not in scope.env:
            raise CompileError("'break' outside a loop", scope.info.loc(node))
        scope.env[BRK] = Const(True)
        scope.env[ESC] = Const(True)

    def st_Continue(self, node, scope):
        scope.env[ESC] = Const(True)

    def st_While(self, node, scope):
        self.runtime_while(node, scope)

    def st_Assign(self, node, scope):
        value = self.eval(node.value, scope)
        self.assign_in(node, node.targets, value, scope)

    def assign_in(self, stmt, targets, value, scope):
        """Assign ``value`` to ``targets`` of ``stmt`` (item writes check sharing after it)."""
        saved, self.writing = self.writing, stmt
        try:
            for target in targets:
                self.assign(target, value, scope)
        finally:
            self.writing = saved

    def st_AugAssign(self, node, scope):
        loc = scope.info.loc(node)
        if isinstance(node.target, gast.Subscript):
            cur = self.getitem(self.eval(node.target.value, scope),
                               self.eval(node.target.slice, scope), loc)
            value = self.binop(type(node.op), cur, self.eval(node.value, scope), loc)
            self.assign_in(node, [node.target], value, scope)
            return
        if not isinstance(node.target, gast.Name):
            raise CompileError("augmented assignment to %s is not supported"
                               % type(node.target).__name__.lower(), loc)
        cur = self.lookup(node.target.id, scope, node.target)
        self.check_in_place(node, cur, scope)
        value = self.binop(type(node.op), cur, self.eval(node.value, scope), loc)
        self.assign(node.target, value, scope)

    def setitem(self, target, value, scope):
        """``x[index] = value`` as a functional update: the new ``x``."""
        loc = scope.info.loc(target)
        if not isinstance(target.value, (gast.Name, gast.Subscript)):
            raise CompileError("item assignment is supported on local variables only; copy the "
                               "attribute to a local variable first", loc)
        base = self.eval(target.value, scope)
        index = self.eval(target.slice, scope)
        if not isinstance(base, Var):
            raise CompileError("item assignment needs a tensor; this value is %s"
                               % ("a tuple" if isinstance(base, tuple) else "known while "
                                  "compiling"), loc)
        if isinstance(target.value, gast.Name):
            self.check_item_write(target.value.id, base, self.writing or target, scope)
        return self.emit(A.SetItem(), [base, index, value], loc)

    def st_AnnAssign(self, node, scope):
        if node.value is not None:
            self.assign_in(node, [node.target], self.eval(node.value, scope), scope)

    def st_Assert(self, node, scope):
        """A known test is checked now; a runtime one on every run (``rt.check_assert``).

        Skipped under ``python -O``, as Python skips the user's own asserts.
        """
        if not __debug__:
            return
        test = self.eval(node.test, scope)
        if is_const(test):
            if not const_value(test):
                msg = self.eval(node.msg, scope) if node.msg is not None else Const("")
                raise CompileError("assertion failed while compiling: %s"
                                   % (const_value(msg) if is_const(msg) else ""),
                                   scope.info.loc(node))
            return
        if not isinstance(test, Var):
            return      # a tuple or list of values: never empty here, so true
        msg = freeze(self.eval(node.msg, scope)) if node.msg is not None else Const(None)
        self.emit(R.RuntimeAssert(), [test, msg], scope.info.loc(node))

    def st_If(self, node, scope):
        test = self.eval(node.test, scope)
        if is_const(test):
            self.exec_block(node.body if const_value(test) else node.orelse, scope)
        elif isinstance(test, tuple):
            self.exec_block(node.body if test else node.orelse, scope)
        else:
            self.runtime_if(test, node.body, node.orelse, scope, scope.info.loc(node))

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
            saved_ops, saved_env = self.ops, scope.env
            self.ops, scope.env = [], dict(inner)
            try:
                self.assign(node.target, item, scope)
                self.exec_block(node.body, scope)
                body_ops, env_b = self.ops, scope.env
            finally:
                self.ops, scope.env = saved_ops, saved_env
            scope.env = self.merge(exit_now, env0, ([], dict(env0)), (body_ops, env_b), loc)
            return
        scope.env[ESC] = Const(False)
        self.assign(node.target, item, scope)
        self.exec_block(node.body, scope)

    def static_sequence(self, items):
        """The elements of a sequence known while compiling, else ``None``."""
        if isinstance(items, tuple):
            return list(items)
        if isinstance(items, ListVal):
            return list(items.items)
        if isinstance(items, Const):
            v = items.value
            if isinstance(v, (range, tuple, list)) or hasattr(v, "__iter__") and not isinstance(
                    v, (np.ndarray, str, dict)) and not _is_tensor(v):
                return [self.lift(x, resolve.child_path(items, i, item=True))
                        for i, x in enumerate(v)]
        return None

    # ------------------------------------------------------------ assignment
    def assign(self, target, value, scope):
        if isinstance(target, gast.Name):
            if self.name_hints and isinstance(value, Var) and value.hint is None:
                value.hint = target.id
            scope.env[target.id] = value
        elif isinstance(target, (gast.Tuple, gast.List)):
            loc = scope.info.loc(target)
            starred = [i for i, t in enumerate(target.elts) if isinstance(t, gast.Starred)]
            if not starred:
                for t, v in zip(target.elts, self.unpack(value, len(target.elts), loc)):
                    self.assign(t, v, scope)
                return
            # ``a, *rest, b = seq``: the starred name takes a list of what is left
            i = starred[0]
            n_after = len(target.elts) - i - 1
            elems = self.unpack(value, None, loc)
            if len(elems) < len(target.elts) - 1:
                raise CompileError("not enough values to unpack (expected at least %d, got %d)"
                                   % (len(target.elts) - 1, len(elems)), loc)
            middle = ListVal(elems[i:len(elems) - n_after], self.ops)
            parts = elems[:i] + [middle] + elems[len(elems) - n_after:]
            for t, v in zip(target.elts, parts):
                self.assign(t.value if isinstance(t, gast.Starred) else t, v, scope)
        elif isinstance(target, gast.Subscript):
            self.assign(target.value, self.setitem(target, value, scope), scope)
        else:
            raise CompileError("cannot assign to %s" % type(target).__name__, scope.info.loc(target))

    def unpack(self, value, n, loc):
        if isinstance(value, ListVal):
            value = tuple(value.items)
        if isinstance(value, tuple):
            elems = list(value)
        elif isinstance(value, Const) and isinstance(value.value, (tuple, list)):
            elems = [self.lift(x, resolve.child_path(value, i, item=True))
                     for i, x in enumerate(value.value)]
        else:
            raise CompileError("cannot unpack a runtime value into several names; "
                               "unpack tuples whose length is known while compiling", loc)
        if n is not None and len(elems) != n:
            raise CompileError("cannot unpack %d values into %d names" % (len(elems), n), loc)
        return elems

    # ----------------------------------------------------------- expressions
    def eval(self, node, scope):
        handler = getattr(self, "ex_" + type(node).__name__, None)
        if handler is None:
            raise CompileError("'%s' expressions are not supported" % type(node).__name__,
                               scope.info.loc(node))
        return handler(node, scope)

    def ex_Constant(self, node, scope):
        return Const(node.value)

    def ex_Name(self, node, scope):
        return self.lookup(node.id, scope, node)

    def lookup(self, name, scope, node):
        if name in scope.env:
            return self.checked(name, scope.env[name], scope, node)
        outer = scope.parent
        while outer is not None:
            if name in outer.env:
                return self.checked(name, outer.env[name], outer, node)
            outer = outer.parent
        if name in scope.closure:
            cell = None if scope.path is None else \
                scope.path + ("__closure__", scope.fn.__code__.co_freevars.index(name),
                              "cell_contents")
            return self.lift(scope.closure[name], cell, hint=name)
        # the globals of s2sad's own modules are not guarded: they never change
        where = None if scope.library else (Globals(scope.globals), Item(name))
        if name in scope.globals:
            return self.lift(scope.globals[name], where, hint=name)
        if hasattr(builtins, name):
            if where is not None:
                self.guards.absent(where)
            return Const(getattr(builtins, name))
        raise CompileError("name '%s' is not defined" % name, scope.info.loc(node))

    def ex_Tuple(self, node, scope):
        out = []
        for e in node.elts:
            if isinstance(e, gast.Starred):
                out.extend(self.unpack(self.eval(e.value, scope), None, scope.info.loc(e)))
            else:
                out.append(self.eval(e, scope))
        return tuple(out)

    def ex_List(self, node, scope):
        """A list literal: a ``ListVal`` (it may be appended to; ``x[[0, 2]]`` stays a list)."""
        return ListVal(self.ex_Tuple(node, scope), self.ops)

    def list_method(self, lst, name, args, loc):
        """``append``/``extend``/``pop`` on a list being built while compiling."""
        if lst.region is not self.ops:
            raise NeedsConstant("a list created outside this branch or loop cannot be changed "
                                "inside it when the condition or the number of iterations is "
                                "a runtime value; build the list in a loop over a known range, "
                                "or preallocate an array and assign x[i] = v", loc)
        if name == "append" and len(args) == 1:
            lst.items.append(args[0])
            return Const(None)
        if name == "extend" and len(args) == 1:
            seq = self.static_sequence(args[0])
            if seq is None:
                raise CompileError("list.extend needs a sequence known while compiling", loc)
            lst.items.extend(seq)
            return Const(None)
        if name == "pop" and len(args) <= 1:
            i = const_value(args[0]) if args else -1
            return lst.items.pop(i)
        raise CompileError("list.%s is not supported inside differentiated code" % name, loc)

    def ex_Attribute(self, node, scope):
        base = self.eval(node.value, scope)
        return self.getattr(base, node.attr, scope.info.loc(node))

    def getattr(self, base, name, loc):
        if isinstance(base, ListVal):
            return ("list-method", base, name)
        if isinstance(base, Const):
            try:
                value = getattr(base.value, name)
            except AttributeError as e:
                raise CompileError(str(e), loc)
            return self.lift(value, resolve.child_path(base, name))
        if isinstance(base, Var):
            return self.var_attribute(base, name, loc)
        raise CompileError("attribute '%s' of a %s is not supported"
                           % (name, "tuple" if isinstance(base, tuple) else type(base).__name__), loc)

    def var_attribute(self, var, name, loc):
        from ..ops import tensor_methods
        if name in tensor_methods.PROPERTIES:
            return self.call_function(tensor_methods.PROPERTIES[name], (var,), loc=loc)
        if name in tensor_methods.METHODS:
            return Bound(var, name)
        raise CompileError("attribute '%s' of a tensor is not supported by s2sad" % name, loc,
                           hint="use one of: %s" % ", ".join(sorted(
                               set(tensor_methods.PROPERTIES) | set(tensor_methods.METHODS))))

    def ex_BinOp(self, node, scope):
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        return self.binop(type(node.op), left, right, scope.info.loc(node))

    def binop(self, op, left, right, loc):
        fn, prim_cls = _BINOPS[op]
        if is_const(left) and is_const(right):
            try:
                return self.lift(fn(const_value(left), const_value(right)))
            except Exception as e:
                raise CompileError("%s: %s" % (type(e).__name__, e), loc)
        if isinstance(left, Const) and type(left.value) is tuple and isinstance(right, tuple):
            left = tuple(Const(v) for v in left.value)
        if isinstance(right, Const) and type(right.value) is tuple and isinstance(left, tuple):
            right = tuple(Const(v) for v in right.value)
        if isinstance(left, ListVal) or isinstance(right, ListVal):
            joined = self.binop(op, freeze(left), freeze(right), loc)
            return ListVal(joined, self.ops) if isinstance(joined, tuple) else joined
        if isinstance(left, tuple) or isinstance(right, tuple):
            if op is gast.Add and isinstance(left, tuple) and isinstance(right, tuple):
                return left + right
            if op is gast.Mult and isinstance(left, tuple) and is_const(right):
                return left * const_value(right)
            raise CompileError("operator %s is not supported between these tuples"
                               % _OP_SYMBOL[op], loc)
        if prim_cls is None:
            raise CompileError("operator '%s' on tensors is not supported by this version of "
                               "s2sad" % _OP_SYMBOL[op], loc)
        return self.emit(prim_cls(), [left, right], loc)

    def ex_UnaryOp(self, node, scope):
        operand = self.eval(node.operand, scope)
        loc = scope.info.loc(node)
        op = type(node.op)
        if is_const(operand):
            fn = {gast.USub: operator.neg, gast.UAdd: operator.pos, gast.Not: operator.not_,
                  gast.Invert: operator.invert}[op]
            return self.lift(fn(const_value(operand)))
        if op is gast.UAdd:
            return operand
        if op is gast.USub:
            return self.emit(M.Neg(), [operand], loc)
        if op is gast.Not:
            return self.emit(C.Not(), [operand], loc)
        return self.emit(M.Invert(), [operand], loc)

    def ex_Compare(self, node, scope):
        loc = scope.info.loc(node)
        left = self.eval(node.left, scope)
        result = None
        for op, comp in zip(node.ops, node.comparators):
            right = self.eval(comp, scope)
            fn, prim_cls = _CMPOPS[type(op)]
            if is_const(left) and is_const(right):
                value = Const(fn(const_value(left), const_value(right)))
            elif type(op) in (gast.Is, gast.IsNot) and (is_const(left) or is_const(right)):
                # a runtime value is never the very object a constant is
                value = Const(type(op) is gast.IsNot)
            elif prim_cls is None:
                raise CompileError("this comparison needs values known while compiling", loc)
            else:
                value = self.emit(prim_cls(), [left, right], loc)
            if result is None:
                result = value
            elif is_const(result) and is_const(value):
                result = Const(const_value(result) and const_value(value))
            else:
                raise CompileError("chained comparisons of runtime values are not supported "
                                   "by this version of s2sad", loc)
            left = right
        return result

    def ex_BoolOp(self, node, scope):
        """``a and b`` / ``a or b`` with Python's short-circuit semantics."""
        is_and = isinstance(node.op, gast.And)
        return self._boolop(node.values, is_and, scope)

    def _boolop(self, nodes, is_and, scope):
        value = self.eval(nodes[0], scope)
        if len(nodes) == 1:
            return value
        if is_const(value):
            if bool(const_value(value)) != is_and:
                return value
            return self._boolop(nodes[1:], is_and, scope)
        loc = scope.info.loc(nodes[1])
        rest = lambda: self._boolop(nodes[1:], is_and, scope)  # noqa: E731
        keep = lambda: value  # noqa: E731
        return self.select(value, rest if is_and else keep, keep if is_and else rest, loc)

    def select(self, test, then_fn, else_fn, loc):
        """``then_fn() if test else else_fn()``, each side staged in its own region."""
        saved = self.ops
        # a definedness check staged in one side must not stand for the variable
        # after the expression, where that side may not have run
        self.select_depth += 1
        try:
            self.ops = []
            a = then_fn()
            then_ops, self.ops = self.ops, []
            b = else_fn()
            else_ops = self.ops
        finally:
            self.ops = saved
            self.select_depth -= 1
        outs, res_t, res_e = [], [], []
        value = self._phi("value", a, b, outs, res_t, res_e, loc)
        bad = unmerged_in(value)
        if bad is not None:
            raise bad.error()
        self.ops.append(Op(C.If(), [test], outs, loc, regions=[
            Region((), then_ops, res_t), Region((), else_ops, res_e)]))
        return value

    def ex_IfExp(self, node, scope):
        test = self.eval(node.test, scope)
        if is_const(test):
            return self.eval(node.body if const_value(test) else node.orelse, scope)
        return self.select(test, lambda: self.eval(node.body, scope),
                           lambda: self.eval(node.orelse, scope), scope.info.loc(node))

    def ex_JoinedStr(self, node, scope):
        parts = []
        for v in node.values:
            val = self.eval(v.value if isinstance(v, gast.FormattedValue) else v, scope)
            if not is_const(val):
                return Const("<runtime value>")
            parts.append(str(const_value(val)))
        return Const("".join(parts))

    def ex_Slice(self, node, scope):
        parts = [Const(None) if p is None else self.eval(p, scope)
                 for p in (node.lower, node.upper, node.step)]
        if all(is_const(p) for p in parts):
            return Const(slice(*[const_value(p) for p in parts]))
        return self.emit(C.MakeSlice(), parts, scope.info.loc(node))

    def ex_Subscript(self, node, scope):
        base = self.eval(node.value, scope)
        index = self.eval(node.slice, scope)
        return self.getitem(base, index, scope.info.loc(node))

    def getitem(self, base, index, loc):
        if isinstance(base, ListVal):
            if is_const(index) and isinstance(const_value(index), slice):
                return ListVal(base.items[const_value(index)], self.ops)
            base = tuple(base.items)
        if isinstance(base, tuple):
            if not is_const(index):
                raise NeedsConstant("a tuple index must be known while compiling", loc)
            i = const_value(index)
            try:
                return base[i]
            except (IndexError, TypeError) as e:
                raise CompileError("%s: %s" % (type(e).__name__, e), loc)
        if isinstance(base, Const) and is_const(index):
            try:
                value = base.value[const_value(index)]
            except Exception as e:
                raise CompileError("%s: %s" % (type(e).__name__, e), loc)
            i = const_value(index)
            return self.lift(value, resolve.child_path(base, i, item=True))
        if isinstance(base, Var):
            return self.emit(A.GetItem(), [base, index], loc)
        if isinstance(base, Const):
            raise NeedsConstant("indexing %s needs an index known while compiling, but this one "
                                "is a runtime value" % type(base.value).__name__, loc)
        raise CompileError("cannot index this value", loc)

    # ------------------------------------------------------------------ calls
    def ex_Call(self, node, scope):
        func = self.callee(node.func, scope)
        at_run_time = self.called_at_run_time(func)
        args = []
        for a in node.args:
            if isinstance(a, gast.Starred):
                value = self.eval(a.value, scope)
                if at_run_time and isinstance(value, Var):
                    args.append(Spread(value))      # ``np.random.rand(*x.shape)``
                else:
                    args.extend(self.unpack(value, None, scope.info.loc(a)))
            else:
                args.append(self.eval(a, scope))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.keyword_arguments(kw.value, scope))
            else:
                kwargs[kw.arg] = self.eval(kw.value, scope)
        return self.call(func, args, kwargs, scope.info.loc(node))

    def keyword_arguments(self, node, scope):
        """The abstract values passed by ``**node``: a wrapper's ``**kwargs`` or a known dict."""
        value = self.eval(node, scope)
        if isinstance(value, Const) and isinstance(value.value, dict) and \
                all(isinstance(k, str) for k in value.value):
            return {k: self.lift(v) for k, v in value.value.items()}
        if isinstance(value, dict):
            return value
        raise CompileError("**%s in a call needs a dict of keyword arguments known while "
                           "compiling" % describe_node(node), scope.info.loc(node))

    def callee(self, func, scope):
        """The abstract value called by a call whose function is the expression ``func``.

        A method of a random generator made at run time (``rng =
        np.random.default_rng(0)``) draws on every run; ``x.item()`` and
        ``x.tolist()`` of an array turn it into Python numbers at run time
        (refused when ``x`` carries a gradient).
        """
        if not isinstance(func, gast.Attribute):
            return self.eval(func, scope)
        base = self.eval(func.value, scope)
        loc = scope.info.loc(func)
        if isinstance(base, Var) and (base.id in self.random_states or
                                      func.attr in ("item", "tolist")):
            if base.id not in self.random_states:
                self.check_concrete(base, "%s.%s()" % (describe_node(func.value), func.attr),
                                    loc)
            return ("runtime-method", base, func.attr)
        return self.getattr(base, func.attr, loc)

    def call(self, func, args, kwargs, loc):
        """Apply an abstract callee: stage, inline, or evaluate while compiling."""
        from ..ops import tensor_methods
        if isinstance(func, Bound):
            return self.call_function(tensor_methods.METHODS[func.name], [func.var] + list(args),
                                      kwargs, loc)
        if isinstance(func, Closure):
            return self.call_closure(func, list(args), dict(kwargs), loc)
        if isinstance(func, tuple) and len(func) == 3 and func[0] == "list-method":
            return self.list_method(func[1], func[2], args, loc)
        if isinstance(func, Partial):
            return self.call_partial(func, args, kwargs, loc)
        if isinstance(func, tuple) and len(func) == 3 and func[0] == "runtime-method":
            return self.runtime_call(functools.partial(R.PyMethodCall, func[2]), args, kwargs,
                                     loc, receiver=func[1])
        if not isinstance(func, Const):
            raise CompileError("calling a runtime value is not supported", loc)
        f = func.value
        stage = getattr(type(f), "__s2sad_stage__", None)
        if stage is not None:   # a gradient function: staged by AD, never evaluated now
            return stage(f, self, args, kwargs, loc, func.path)
        if isinstance(f, Primitive):
            if kwargs:
                raise CompileError("primitive %s takes positional inputs only" % f.name, loc)
            try:
                args = f.complete_inputs(args)
            except TypeError as e:
                raise CompileError(str(e), loc)
            return self.emit(f, args, loc)
        text = R.runtime_call_text(f)
        if text is not None:
            return self.runtime_call(functools.partial(R.PyCall, f, text), args, kwargs, loc)
        if R.is_random_state(getattr(f, "__self__", None)):
            # a method of a generator made before the call (a module-level ``rng``)
            return self.runtime_call(functools.partial(R.PyMethodCall, f.__name__), args,
                                     kwargs, loc, receiver=Const(f.__self__))
        if getattr(f, "__s2sad_constexpr__", False):
            if not (all(is_const(a) for a in args) and all(is_const(v) for v in kwargs.values())):
                raise CompileError("%s is evaluated while compiling, so its arguments must be "
                                   "known then; it got a runtime value" % describe(f), loc)
            return self.evaluate(f, args, kwargs, loc)
        target = resolve.call_target(f)
        if target is not None:
            kind, fn, self_value = target
            if kind == "custom_bprop":
                return self.call_custom_bprop(self_value, func.path, args, kwargs, loc)
            if kind == "cell":
                return self.call_function(fn, args, kwargs, loc,
                                          self_value=Const(self_value, func.path),
                                          path=_step(func.path, "construct", "__func__"))
            if kind == "inline":
                return self.call_function(fn, args, kwargs, loc,
                                          path=func.path if fn is f else None)
            if kind == "method":
                return self.call_function(fn, args, kwargs, loc, self_value=self.lift(
                    self_value, _owner(func.path)), path=_step(func.path, "__func__"))
        if isinstance(f, functools.partial):
            p = func.path
            return self.call(
                self.lift(f.func, _step(p, "func")),
                [self.lift(a, _step(p, "args", i)) for i, a in enumerate(f.args)] + list(args),
                dict({k: self.lift(v, _step(p, "keywords", Item(k)))
                      for k, v in f.keywords.items()}, **kwargs), loc)
        if all(is_const(a) for a in args) and all(is_const(v) for v in kwargs.values()):
            self.read_whole(func, args, kwargs)
            return self.evaluate(f, args, kwargs, loc)
        special = self.call_special(f, args, kwargs, loc)
        if special is not None:
            return special
        iterable = self.iterable_builtin(f, args, loc)
        if iterable is not None:
            return iterable
        if f is builtins.len and len(args) == 1:
            if isinstance(args[0], ListVal):
                return Const(len(args[0].items))
            if isinstance(args[0], tuple):
                return Const(len(args[0]))
            return self.emit(A.GetItem(), [self.emit(A.Shape(), [args[0]], loc), Const(0)], loc)
        special = resolve.runtime_builtin(f)
        if special is not None:
            return self.call_function(special, args, kwargs, loc)
        text = R.numpy_text(f)
        if text is not None and self.carries_no_gradient(list(args) + list(kwargs.values())):
            # e.g. ``np.all(x > 0)`` in an assert: nothing to differentiate
            return self.runtime_call(functools.partial(R.PyCall, f, text), args, kwargs, loc)
        raise NoGradientRuleError(
            "cannot differentiate the call to %s: it is neither a Primitive, a Cell nor a "
            "Python function with readable source" % describe(f), loc,
            hint="wrap it in a Primitive subclass and register its rule with "
                 "@bprop_getters.register(YourPrimitive)")

    def call_custom_bprop(self, cell, path, args, kwargs, loc):
        """A Cell with its own ``bprop``: its construct inlined in a ``CustomBprop`` op."""
        if kwargs:
            raise CompileError("a Cell with a custom bprop takes positional inputs only", loc)
        n_in = len(inspect.signature(type(cell).construct).parameters) - 1
        bprop_params = [p for p in inspect.signature(type(cell).bprop).parameters.values()]
        if len(bprop_params) - 1 != n_in + 2 or any(
                p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in bprop_params):
            raise CompileError("The params of function 'bprop' of Primitive or Cell requires the "
                               "forward inputs as well as the 'out' and 'dout'.", loc,
                               hint="define bprop(self, %s, out, dout) for %s"
                               % (", ".join("x%d" % i for i in range(n_in)),
                                  type(cell).__name__))
        saved = self.ops
        self.ops = []
        try:
            result = self.call_function(type(cell).construct, args, loc=loc,
                                        self_value=Const(cell, path))
            body = self.ops
        finally:
            self.ops = saved
        prim = C.CustomBprop(cell, path, map_structure(lambda _: None, result), self)
        outs = [Var() for _ in leaves(result)]
        self.ops.append(Op(prim, [canon(a) for a in args], outs, loc,
                           regions=[Region((), body, tuple(leaves(result)))]))
        return prim.nest(outs)

    def called_at_run_time(self, func):
        """Whether calling the abstract callee ``func`` is staged as a Python call."""
        if isinstance(func, tuple):
            return len(func) == 3 and func[0] == "runtime-method"
        return isinstance(func, Const) and (
            R.runtime_call_text(func.value) is not None or
            R.is_random_state(getattr(func.value, "__self__", None)))

    def runtime_call(self, make, args, kwargs, loc, receiver=None):
        """Stage a Python call made on every run (a random draw, a ``print``).

        ``make(keywords, starred)`` is its primitive; ``receiver`` the object
        whose method it calls, if any.
        """
        starred = tuple(i for i, a in enumerate(args) if isinstance(a, Spread))
        args = [a.var if isinstance(a, Spread) else a for a in args]
        prim = make(tuple(kwargs), starred)
        inputs = ([receiver] if receiver is not None else []) + args + \
            [kwargs[k] for k in prim.keywords]
        out = self.emit(prim, inputs, loc)
        if prim.num_outputs == 0:
            return Const(None)      # ``print``
        if isinstance(prim, R.PyCall) and R.makes_random_state(prim.fn):
            self.random_states.add(out.id)
        return out

    def carries_no_gradient(self, values):
        """Whether no differentiated input flows into any runtime value of ``values``."""
        return all(v.id in self.inert for v in leaves(tuple(freeze(x) for x in values))
                   if isinstance(v, Var))

    def check_concrete(self, value, what, loc):
        """Refuse to turn a value a gradient flows through into a Python number.

        Such a conversion would cut the gradient silently.  Values no
        differentiated input reaches (shapes, comparisons, other inputs'
        sizes) convert freely, and so does s2sad's own code.
        """
        if self.carries_no_gradient([value]) or self.in_library():
            return
        raise CompileError(
            "%s turns a runtime value into a Python number while a gradient flows "
            "through it: the gradient through that number would be lost" % what, loc,
            hint="keep it an array (e.g. x.sum() or x[0] instead of float(...)); if no gradient "
                 "should flow through it, convert s2sad.ops.stop_gradient(...) of it")

    def in_library(self):
        """Whether the function being walked is s2sad's own (a rule, a functional form)."""
        return bool(self.frames) and _is_library(self.frames[-1][0].fn)

    def runtime_leaf(self, v):
        """``v`` as the gradient function called eagerly would see it.

        An array or NumPy scalar known while compiling (a global, a value
        computed from constants) is a differentiable argument of an eager
        call, so it becomes a runtime input here too: the inner gradient is
        then taken with respect to the same arguments as eagerly.
        """
        if isinstance(v, Const) and isinstance(v.value, (np.ndarray, np.generic)) \
                and v.value.dtype.kind in "biufc":
            return self.inputs.var_for(v.value, v.path)
        return v

    def evaluate(self, f, args, kwargs, loc):
        """Call ``f`` now, on the values of known arguments."""
        try:
            value = f(*[const_value(a) for a in args],
                      **{k: const_value(v) for k, v in kwargs.items()})
        except CompileError:
            raise
        except Exception as e:
            raise CompileError("calling %s while compiling raised %s: %s"
                               % (describe(f), type(e).__name__, e), loc)
        return self.lift(value)

    # ---------------------------------------------------------------- values
    def lift(self, value, path=None, hint=None):
        """Turn a Python object met while compiling into an abstract value.

        Tensors and Parameters become runtime inputs (read afresh on every call,
        through ``path`` when it has one); everything else is a constant the
        compiled code is specialised on, guarded through ``path``.
        """
        if path is not None:
            self.guards.record(path, value)
        if _is_tensor(value) or isinstance(value, np.ndarray):
            return self.inputs.var_for(value, path, hint)
        if isinstance(value, (tuple, list)) and any(
                _is_tensor(v) or isinstance(v, np.ndarray) for v in value):
            return tuple(self.lift(v, path + (i,) if path is not None else None,
                                   None if hint is None else "%s_%d" % (hint, i))
                         for i, v in enumerate(value))
        return Const(value, path)

    def read_whole(self, func, args, kwargs):
        """A call evaluated while compiling reads its arguments whole: guard their contents.

        A bound method (``self.cfg.get``) reads its object too.
        """
        for a in [func, *args, *kwargs.values()]:
            for c in _consts_in(a):
                if c.path is not None:
                    self.guards.deepen(c.path, c.value)
                    if isinstance(c.value, (types.MethodType, types.BuiltinMethodType)) \
                            and c.path[-1:] != ("__func__",) and len(c.path) > 1:
                        owner = getattr(c.value, "__self__", None)
                        if owner is not None and not isinstance(owner, types.ModuleType):
                            self.guards.deepen(c.path[:-1], owner)


def _consts_in(a):
    """The ``Const``s inside an abstract value (tuples and lists being built included)."""
    if isinstance(a, Const):
        return [a]
    if isinstance(a, ListVal):
        a = tuple(a.items)
    if isinstance(a, tuple):
        return [c for x in a for c in _consts_in(x)]
    return []


def _step(path, *steps):
    """``path`` extended by ``steps``, or ``None`` without a path."""
    return None if path is None else path + steps


def _owner(path):
    """The path of the object a method was read from (``self`` of ``self.helper``)."""
    if path is None:
        return None
    return path[:-1] if len(path) > 1 and type(path[-1]) is str else path + ("__self__",)


def _default_path(fn, path, name, param):
    """Where ``fn``'s default for ``name`` is read from, through ``fn``'s own path."""
    if path is None:
        return None
    if param.kind is inspect.Parameter.KEYWORD_ONLY:
        return path + ("__kwdefaults__", Item(name))
    positional = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    with_default = [p.name for p in positional if p.default is not p.empty]
    if name not in with_default or getattr(fn, "__defaults__", None) is None:
        return None
    return path + ("__defaults__", with_default.index(name))


def signature(fn):
    """``fn``'s own parameters: a decorator's wrapper is walked with its own source,
    so its ``(*args, **kwargs)`` bind, not the wrapped function's parameters."""
    return inspect.signature(fn, follow_wrapped=False)


def _frame_name(fn, self_value=None):
    """What an outlined call is named after: the function, or the Cell's class."""
    name = getattr(fn, "__name__", "call")
    if name == "construct" and self_value is not None:
        return type(self_value.value).__name__
    return "lambda" if name == "<lambda>" else name


def _runtime_types():
    from ..tensor import Tensor, Parameter
    return (Tensor, Parameter, np.ndarray, np.float64, np.float32, np.int64, np.bool_,
            float, int, bool)


class _LazyTypes:
    """What an intermediate runtime value may be: a Tensor or an array, a NumPy or
    Python scalar (imported on first use: the Tensor module imports this one)."""

    def __iter__(self):
        return iter(_runtime_types())

    def __bool__(self):
        return True


_RUNTIME_TYPES = _LazyTypes()


def _type_name(t):
    module = getattr(t, "__module__", "") or ""
    return ("np." if module.startswith("numpy") else "") + t.__name__


def describe_node(node):
    """The source text of a small expression (``x``, ``self.w``), for messages."""
    try:
        return gast.unparse(node)
    except Exception:
        return "this value"


def _is_tensor(value):
    from ..tensor import Tensor
    return isinstance(value, Tensor)
