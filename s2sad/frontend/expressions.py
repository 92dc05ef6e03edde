"""Expressions: what each kind of expression evaluates to while compiling.

``eval`` dispatches on the node to an ``ex_<Node>`` method.  An expression
whose operands are known is computed now and gives a ``Const``; one on
runtime values stages an op and gives its ``Var``; tuples and lists being
built stay compile-time structure.  ``a and b``, ``a or b`` and ``x if c else
y`` on a runtime test stage each side in its own region (``select``).  Calls
are in ``calls``.
"""
import builtins
import operator

import gast

from ..errors import CompileError
from ..ir.nodes import Var, Const, Op, Region
from ..ir import control as C
from ..ops.operations import math_ops as M
from ..ops.operations import array_ops as A
from ..ops.operations import runtime_ops as R
from . import npmap, resolve
from .guards import Globals, Item
from .control import NeedsConstant, unmerged_in
from .values import Bound, ListVal, TreeVal, is_const, const_value, freeze, known_truth

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


#: an f-string's conversion (``{x!r}``) -> its spelling in a format template
_CONVERSIONS = {115: "!s", 114: "!r", 97: "!a"}


class Expressions:
    """Mixin of ``Builder``: ``eval`` and the ``ex_<Node>`` methods."""

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

    def dict_key(self, node, scope):
        key = self.eval(node, scope)
        if not is_const(key):
            raise CompileError("a dict key must be known while compiling (a string or a "
                               "number), but this one is a runtime value",
                               scope.info.loc(node))
        return const_value(key)

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
        if isinstance(base, TreeVal):
            return self.tree_attribute(base, name, loc)
        if isinstance(base, tuple) and name in getattr(type(base), "_fields", ()):
            return getattr(base, name)          # a namedtuple's field
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
        if op is gast.Mod and isinstance(left, Const) and isinstance(left.value, str):
            # ``"%d items" % n``: string formatting, at run time
            if isinstance(right, tuple):
                return self.format_text(left.value, "%tuple", list(right), {}, loc)
            return self.format_text(left.value, "%", [right], {}, loc)
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
            if op is gast.Add and (self.is_runtime_tuple(left) or self.is_runtime_tuple(right)):
                return self.emit(A.TupleConcat(), [left, right], loc)     # x.shape[:2] + (-1,)
            if op is gast.Mult and isinstance(left, tuple) and is_const(right):
                return left * const_value(right)
            raise CompileError("operator %s is not supported between these tuples"
                               % _OP_SYMBOL[op], loc)
        if prim_cls is None:
            raise CompileError("operator '%s' on tensors is not supported by this version of "
                               "s2sad" % _OP_SYMBOL[op], loc)
        return self.emit(prim_cls(), [left, right], loc)

    def is_runtime_tuple(self, value):
        """Whether ``value`` is a run-time tuple no gradient flows through (a shape)."""
        return isinstance(value, Var) and value.id in self.inert

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
        if op is gast.Not and known_truth(operand) is not None:
            return Const(not known_truth(operand))
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
            elif type(op) in (gast.In, gast.NotIn) and isinstance(right, TreeVal) and \
                    isinstance(right.obj, dict) and is_const(left):
                value = Const(fn(const_value(left), right.obj))
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
        truth = known_truth(value)
        if truth is not None:
            if truth != is_and:
                return value
            return self._boolop(nodes[1:], is_and, scope)
        loc = scope.info.loc(nodes[1])
        rest = lambda: self._boolop(nodes[1:], is_and, scope)  # noqa: E731
        keep = lambda: value  # noqa: E731
        return self.select(value, rest if is_and else keep, keep if is_and else rest, loc)

    def select(self, test, then_fn, else_fn, loc):
        """``then_fn() if test else else_fn()``, each side staged in its own region."""
        # a definedness check staged in one side must not stand for the variable
        # after the expression, where that side may not have run
        self.select_depth += 1
        try:
            with self.region():
                a = then_fn()
                then_ops = self.ops
            with self.region():
                b = else_fn()
                else_ops = self.ops
        finally:
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
        truth = known_truth(test)
        if truth is not None:
            return self.eval(node.body if truth else node.orelse, scope)
        return self.select(test, lambda: self.eval(node.body, scope),
                           lambda: self.eval(node.orelse, scope), scope.info.loc(node))

    def ex_JoinedStr(self, node, scope):
        """An f-string: formatted now when every value is known, else at run time
        (``'...'.format(...)`` in generated code), so a print shows that run's values."""
        template, values = [], []
        for v in node.values:
            if not isinstance(v, gast.FormattedValue):
                template.append(str(const_value(self.eval(v, scope))).replace(
                    "{", "{{").replace("}", "}}"))
                continue
            spec = "" if v.format_spec is None else self.eval(v.format_spec, scope)
            if not isinstance(spec, (str, Const)) or isinstance(spec, Const) and \
                    not isinstance(spec.value, str):
                raise CompileError("a format spec in an f-string must be known while "
                                   "compiling", scope.info.loc(v))
            spec = spec if isinstance(spec, str) else spec.value
            template.append("{%s%s}" % (_CONVERSIONS.get(v.conversion, ""),
                                        ":" + spec if spec else ""))
            values.append(self.eval(v.value, scope))
        return self.format_text("".join(template), "format", values, {}, scope.info.loc(node))

    def format_text(self, template, style, values, kwargs, loc):
        """``template`` formatted with ``values`` (``FormatText``'s ``style``): now if
        they are all known, else a string made at run time."""
        if all(is_const(v) for v in values) and all(is_const(v) for v in kwargs.values()):
            known = [const_value(v) for v in values]
            try:
                if style == "format":
                    return Const(template.format(*known, **{k: const_value(v)
                                                            for k, v in kwargs.items()}))
                return Const(template % (tuple(known) if style == "%tuple" else known[0]))
            except Exception as e:
                raise CompileError("%s: %s" % (type(e).__name__, e), loc)
        out = self.emit(R.FormatText(template, style, tuple(kwargs)),
                        list(values) + list(kwargs.values()), loc)
        self.kinds[out.id] = (str,)
        return out

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
        if isinstance(base, TreeVal):
            return self.tree_item(base, index, loc)
        kind = "tuple"
        if isinstance(base, ListVal):
            if is_const(index) and isinstance(const_value(index), slice):
                return ListVal(base.items[const_value(index)], self.ops)
            base, kind = tuple(base.items), "list"
        if isinstance(base, tuple):
            if not is_const(index):
                raise NeedsConstant(
                    "a %s index must be known while compiling; this one is a runtime value "
                    "(a loop over range(x.shape[0]) runs at run time)" % kind, loc,
                    hint="loop over range(len(...)) of the %s itself, which is known, or "
                         "make it one array (np.stack) and index that" % kind)
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
        form = npmap.lookup_indexed(base.value) if isinstance(base, Const) else None
        if form is not None:    # ``np.r_[x, 0.0]``: NumPy's concatenation by indexing
            return self.call_function(form, [index], {}, loc)
        if isinstance(base, Const):
            raise NeedsConstant("indexing %s needs an index known while compiling, but this one "
                                "is a runtime value" % type(base.value).__name__, loc)
        raise CompileError("cannot index this value", loc)
