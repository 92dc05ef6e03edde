"""Statements: running a block, assignment and unpacking.

Each ``st_<Node>`` method carries out one kind of statement on the scope's
environment (an assignment rebinds names, ``return``/``break``/``continue``
set the exit flags of ``control``); ``assign`` binds any target a statement
can have.  Runtime branches and loops are staged by ``control`` and ``loops``;
this module holds what every block does, whatever it is inside.
"""
import gast
import numpy as np

from ..errors import CompileError, located
from ..tracebacks import internal
from ..ir.nodes import Var, Const
from ..ops.operations import array_ops as A
from ..ops.operations import runtime_ops as R
from . import resolve
from .control import ESC, RET, RETVAL, BRK, NeedsConstant
from .values import ListVal, TreeVal, is_const, const_value, freeze, is_tensor, known_truth


class Statements:
    """Mixin of ``Builder``: blocks, simple statements, assignment targets."""

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
            try:
                handler(stmt, scope)
            except CompileError as err:
                # raised where no node was at hand: the innermost user statement's
                # location (s2sad's own functions walked here are not the user's code)
                if err.loc is None and not internal(scope.info.filename):
                    raise located(err, scope.info.loc(stmt))
                raise

    def st_Global(self, node, scope):
        """``global w`` of names only read (the fence refuses the others): nothing to do."""

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
        if isinstance(node.target, gast.Attribute):     # ``self.w += x``: a Parameter write
            value = self.binop(type(node.op), self.eval(node.target, scope),
                               self.eval(node.value, scope), loc)
            self.assign_attribute(node.target, value, scope)
            return
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
        if isinstance(base, TreeVal) and isinstance(base.obj, dict):
            raise CompileError("changing a dict inside a differentiated function is not "
                               "supported", loc, hint="build the dict whole, with a dict "
                               "display or a dict comprehension ({**d, key: value})")
        if isinstance(base, ListVal) and is_const(index) and \
                isinstance(const_value(index), int):
            return self.set_list_item(base, const_value(index), value, loc)
        if not isinstance(base, Var):
            raise CompileError("item assignment needs a tensor; this value is %s"
                               % ("a tuple" if isinstance(base, tuple) else "known while "
                                  "compiling"), loc)
        if isinstance(target.value, gast.Name):
            self.check_item_write(target.value.id, base, self.writing or target, scope)
        return self.emit(A.SetItem(), [base, index, value], loc)

    def set_list_item(self, lst, i, value, loc):
        """``lst[i] = value`` on a list built while compiling (``args = list(args)``)."""
        if lst.region is not self.ops:
            raise NeedsConstant("a list created outside this branch or loop cannot be changed "
                                "inside it when the condition or the number of iterations is "
                                "a runtime value; build a new list instead", loc)
        try:
            lst.items[i] = value
        except IndexError:
            raise CompileError("IndexError: list assignment index out of range", loc)
        return lst

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
        truth = known_truth(test)
        if truth is not None:
            self.exec_block(node.body if truth else node.orelse, scope)
        else:
            self.runtime_if(test, node.body, node.orelse, scope, scope.info.loc(node))

    # ------------------------------------------------------------ sequences
    def static_sequence(self, items):
        """The elements of a sequence known while compiling, else ``None``."""
        if isinstance(items, tuple):
            return list(items)
        if isinstance(items, ListVal):
            return list(items.items)
        if isinstance(items, TreeVal):
            return self.tree_keys(items)
        if isinstance(items, Const):
            v = items.value
            if isinstance(v, (range, tuple, list)) or hasattr(v, "__iter__") and not isinstance(
                    v, (np.ndarray, str, dict)) and not is_tensor(v):
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
        elif isinstance(target, gast.Attribute):
            self.assign_attribute(target, value, scope)
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
        elif n is not None and isinstance(value, Var) and value.id in self.inert:
            # a run-time tuple no gradient flows through (a shape): its length is
            # the assignment's, checked when the code runs
            elems = list(self.emit(A.UnpackTuple(n), [value], loc)) if n != 1 else \
                [self.emit(A.UnpackTuple(1), [value], loc)]
        elif n is not None and isinstance(value, Var):
            # an array unpacks into its rows, as in Python (the count checked at run time)
            elems = list(self.emit(A.Unstack(0, n), [value], loc)) if n != 1 else \
                [self.emit(A.Unstack(0, 1), [value], loc)]
        else:
            raise CompileError("cannot unpack a runtime value into several names; "
                               "unpack tuples whose length is known while compiling", loc)
        if n is not None and len(elems) != n:
            raise CompileError("cannot unpack %d values into %d names" % (len(elems), n), loc)
        return elems
