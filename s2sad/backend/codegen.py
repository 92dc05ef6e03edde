"""IR -> Python source.

One line per primitive, written from the primitive's own ``emit`` template,
grouped under ``# line N: <source>`` comments that point at the user's file.
"""
import os

from ..opt.liveness import body_releases, peak_in_place, read_after, releases, schedule
from ..ir.nodes import Var, Const, leaves, use_counts
from ..ops.operations import array_ops as A
from .literals import (is_literal as _is_literal, literal as _literal,
                       subscript_part as _subscript_part)
from .namer import Namer, GENERAL, unnumbered
from ..runtime import UNDEFINED


def _writes_in_place(op):
    return op.prim.ufunc is not None and not op.regions and len(op.outs) == 1


class Constants:
    """Non-literal constants (arrays, objects) bound as ``_k0, _k1, ...`` globals.

    ``paths`` keeps, per name, the attribute path of the Cell it was read
    from, when known, so a printed module can say where it came from.
    """

    def __init__(self):
        self.values = []
        self.paths = []
        self._ids = {}

    def name(self, value, path=None):
        key = id(value)
        if key not in self._ids:
            self._ids[key] = "_k%d" % len(self.values)
            self.values.append(value)
            self.paths.append(path)
        return self._ids[key]

    def namespace(self):
        return {"_k%d" % i: v for i, v in enumerate(self.values)}


def _targets(shape, names, top=True):
    """Assignment targets of the nested tuple ``shape``, taking names from ``names``."""
    if not isinstance(shape, tuple):
        return next(names)
    parts = [_targets(s, names, False) for s in shape]
    text = ", ".join(parts) + ("," if len(parts) == 1 else "")
    return text if top else "(%s)" % text


class CodeGen:
    """``release``: delete each top-level temporary after its last read (frees memory)."""

    def __init__(self, release=True):
        self.namer = Namer()
        self.consts = Constants()
        self.release = release
        self.where = {}         # text of each location comment -> the user's Loc
        self.plain = {}         # each line written in place -> the line as the op reads
        self.result_names = {}  # outlined function -> the names of its results inside it
        self.read_later, self.params = None, []     # Vars read after a top-level loop

    def render(self, a):
        if isinstance(a, Var):
            return self.namer[a]
        if isinstance(a, tuple):
            inner = ", ".join(self.render(x) for x in a)
            return "(%s,)" % inner if len(a) == 1 else "(%s)" % inner
        if isinstance(a, Const):
            if _is_literal(a.value):
                return _literal(a.value)
            if a.value is UNDEFINED:
                return "rt.UNDEFINED"
            return self.consts.name(a.value, a.path)
        raise TypeError("cannot render %r" % (a,))

    def render_index(self, index):
        if isinstance(index, Const) and type(index.value) is tuple and index.value:
            return ", ".join(_subscript_part(Const(x), self.render) for x in index.value)
        if isinstance(index, tuple) and index:
            return ", ".join(_subscript_part(x, self.render) for x in index)
        return _subscript_part(index, self.render)

    def expr(self, op):
        if isinstance(op.prim, A.GetItem):
            return "%s[%s]" % (self.render(op.args[0]), self.render_index(op.args[1]))
        return op.prim.emit(*[self.render(a) for a in op.args])

    def function(self, func, header=None, explain=False, shapes=None):
        """Source of ``def <name>(params): ...`` for ``func``; ``shapes``: the ``(position
        of a parameter, shape)`` pairs the code is specialised to, checked first."""
        self.explain = explain
        self.uses = use_counts(func)
        self.func = func
        params = self.params = [self.namer.define(p) for p in func.params]
        lines = []
        if header:
            lines.extend("# " + h for h in header.splitlines())
        lines.append("def %s(%s):" % (func.name, ", ".join(params)))
        if shapes:
            self._shape_check(shapes, params, lines)
        self.last_loc = None
        if self.release:
            schedule(func, _writes_in_place)
        backward = func.backward_start
        ends = []
        later = read_after(func) if self.release else None
        for i, op in enumerate(func.body):
            if backward is not None and i == backward:
                lines.append("    # -- backward sweep --")
                self.last_loc = None
            self.read_later = later[i] if later else None      # a loop's: see ``block``
            self.statement(op, lines, "    ")
            ends.append(len(lines))
        if self.release:
            self._release_dead(func, params, lines, ends)
        lines.append("    return %s" % self.render(func.result))
        return "\n".join(lines) + "\n"

    def _shape_check(self, shapes, params, lines):
        """``if x.shape != (...) or ...: return _general(...)``: the code below holds only
        for the shapes it was compiled for (``opt/static_shapes.py``)."""
        tests = ["%s.shape != %s" % (params[k], _literal(tuple(shape))) for k, shape in shapes]
        lines.append("    # compiled for these shapes; the program for any shapes runs the others")
        lines.append("    if (%s):" % "\n            or ".join(tests))
        lines.append("        return %s(%s)" % (GENERAL, ", ".join(params)))

    def _release_dead(self, func, params, lines, ends):
        """Insert ``del a, b`` after the top-level statement that last reads them."""
        stacks = [self.namer.names.get(op.outs[0].id) for op in func.body
                  if type(op.prim).__name__ == "NewStack"]
        name_of = lambda v: self.namer.names.get(v.id)     # noqa: E731
        dead = releases(func, name_of, keep=params + stacks)
        for i in peak_in_place(func, name_of, dead, _writes_in_place):
            self._in_place(func.body[i], dead[i], lines, ends[i] - 1)
        for i, names in dead.items():
            op = func.body[i]
            if isinstance(op.prim, A.SetItem) and self.render(op.args[0]) in names:
                self._setitem_in_place(op, lines, ends[i] - 1)
        out, done = [], 0
        for i in sorted(dead):
            out.extend(lines[done:ends[i]])
            out.append("    del %s" % ", ".join(dead[i]))
            done = ends[i]
        lines[:] = out + lines[done:]

    def _in_place(self, op, dying, lines, at):
        """Rewrite ``lines[at]`` (``op``) to write into an operand that dies there, if free.

        ``rt.spare`` decides at run time; otherwise the op's own expression runs.
        Both give the same values, so the source shown to users keeps the
        plain line (``readable``) and only the compiled code has this one.
        """
        names = [self.render(a) for a in op.args]
        buf = next((n for a, n in zip(op.args, names) if isinstance(a, Var) and n in dying),
                   None)
        if buf is None:
            return
        out = self.namer.names.get(op.outs[0].id)
        text = lines[at]
        indent = text[:len(text) - len(text.lstrip())]
        expected = "%s%s = %s" % (indent, out, self.expr(op))
        if not text.startswith(expected):
            return
        others = [n for n in names if n != buf]
        call = "xp.%s(%s, out=%s)" % (op.prim.ufunc, ", ".join(names), buf)
        lines[at] = "%s%s = %s if rt.spare(%s) else %s%s" % (
            indent, out, call, ", ".join([buf] + others), self.expr(op), text[len(expected):])
        self.plain[lines[at]] = text

    def _loop_setitems(self, ops, setitems, lines, carried, results):
        """Write in place each item write of a loop body whose name dies there; those names."""
        released = set()
        for op, at in setitems:
            name = self.render(op.args[0])
            if isinstance(op.args[0], Var) and self._dies_in_body(ops, op, name, carried,
                                                                 results):
                # released at once: left bound, it would hold the array the
                # next iteration writes into (two names, so ``rt.spare`` says no)
                self._setitem_in_place(op, lines, at, release=name)
                released.add(name)
        return released

    def _dies_in_body(self, ops, op, name, carried, results):
        """Whether no read of ``name`` follows ``op`` in its loop body, this iteration or next.

        Later ops must not read it before a plain op rebinds it; at the end of
        the body it must be a carried name (rebound by the carry) or a name
        bound earlier in the body (the next iteration binds it before reading).
        """
        names = self.namer.names
        k = next(i for i, o in enumerate(ops) if o is op)
        for later in ops[k + 1:]:
            if any(names.get(v.id) == name for v in _all_uses(later)):
                return False
            if not later.regions and any(names.get(o.id) == name for o in later.outs):
                return True
        if any(isinstance(r, Var) and names.get(r.id) == name for r in leaves(tuple(results))):
            return False
        return name in carried or any(names.get(o.id) == name for o in _outs(ops[:k]))

    def _setitem_in_place(self, op, lines, at, release=None):
        """Rewrite ``lines[at]``, ``y = x[index] = value`` functionally, to write into ``x``.

        Called when no later line can read ``x`` by its name: ``y`` rebinds
        that name (a loop's carried array, ``out_1 = ...(out_1, ...)``) or it
        dies at this top-level line.  ``rt.spare`` then checks at run time that
        nothing else holds the array (a user's argument, a closure's array, a
        view, a pushed value, the loop's initial value in the first iteration
        all do), else the copying form runs; the shown source keeps that form.
        """
        text = lines[at]
        indent = text[:len(text) - len(text.lstrip())]
        out = self.namer.names.get(op.outs[0].id)
        plain = self.expr(op)
        expected = "%s%s = %s" % (indent, out, plain)
        if not text.startswith(expected) or not plain.startswith("rt.array_setitem("):
            return
        x = self.render(op.args[0])
        drop = "; del %s" % release if release and release != out else ""
        lines[at] = "%s%s = rt.array_setitem_in_place(%s if rt.spare(%s) else %s%s%s" % (
            indent, out, plain[len("rt.array_setitem("):], x, plain, drop, text[len(expected):])
        self.plain[lines[at]] = text

    def readable(self, source):
        """``source`` with each in-place line back in its plain form (same lines, same values).

        What ``get_source`` and ``s2sad dump`` print, and what tracebacks show:
        the run-time check choosing between ``xp.multiply(a, b, out=a)`` and
        ``a * b`` is an allocation detail, not part of the derivative.
        """
        if not self.plain:
            return source
        return "\n".join(self.plain.get(line, line) for line in source.split("\n"))

    def module(self, func, naming, header=None, explain=False, shapes=None):
        """Source of ``func`` after the functions outlined from it (see ``outline``).

        Each outlined function is written once, in the order of first call;
        two calls whose generated code is the same share one function.
        ``naming`` is the ``Namer`` of ``func`` written before outlining.
        """
        self.written = {}           # (stem, signature of a helper) -> its name
        self.chunks = {}            # name -> source
        # one namer for every function: a value keeps its name across a call,
        # the name it would have if the call were inlined
        self.namer = naming
        self.main_name = func.name      # a helper never takes it (a decorated f calls f)
        self._name_helpers(func.body, explain)
        order = []
        self._call_order(func.body, order)
        main = self.function(func, header=None, explain=explain, shapes=shapes)
        head = "".join("# %s\n" % h for h in header.splitlines()) if header else ""
        return head + "".join(self.chunks[n] + "\n\n" for n in order) + main

    def _name_helpers(self, ops, explain):
        """Write every outlined function called in ``ops``, callees first, and name it."""
        from ..ir.control import CallGenerated
        from ..ir.nodes import walk_ops
        from .outline import signature
        for op in walk_ops(ops):
            if not isinstance(op.prim, CallGenerated) or op.prim.fname is not None:
                continue
            self._name_helpers(op.prim.func.body, explain)
            stem = "%s_%s" % (op.prim.callee, op.prim.side)
            key = (stem, signature(op.prim.func))
            name = self.written.get(key)
            if name is None:
                taken = {n for (s, _), n in self.written.items() if s == stem}
                taken.add(self.main_name)
                name, k = stem, 0
                while name in taken:
                    k += 1
                    name = "%s_%d" % (stem, k)
                self.written[key] = name
                gen = CodeGen()
                gen.consts, gen.result_names, gen.plain = self.consts, self.result_names, \
                    self.plain
                func = op.prim.func
                for p in func.params:
                    # the callee's parameter name, or the caller's name without its suffix
                    base = op.prim.frame.binds.get(p.id) or \
                        unnumbered(self.namer.names.get(p.id, "v"))
                    gen.namer.names[p.id] = gen.namer.fresh(base)
                func.name = name
                self.chunks[name] = gen.function(func, explain=explain).rstrip("\n")
                self.where.update(gen.where)
                self.result_names[name] = [gen.namer.names.get(v.id, "v")
                                           for v in leaves(func.result)]
            op.prim.fname = name

    def _call_order(self, ops, order):
        from ..ir.control import CallGenerated
        from ..ir.nodes import walk_ops
        for op in walk_ops(ops):
            if isinstance(op.prim, CallGenerated) and op.prim.fname not in order:
                order.append(op.prim.fname)
                self._call_order(op.prim.func.body, order)

    def st_CallGenerated(self, op, lines, indent):
        args = ", ".join(self.render(a) for a in op.args)
        inside = self.result_names.get(op.prim.fname, ())
        outs = []
        for k, o in enumerate(op.outs):
            if o.id not in self.namer.names and k < len(inside):
                # named as the function names it (without its numeric suffix)
                self.namer.names[o.id] = self.namer.fresh(unnumbered(inside[k]))
            outs.append(self.namer.define(o, op))
        lines.append("%s%s = %s(%s)" % (indent, ", ".join(outs), op.prim.fname, args))

    def st_RecursiveCall(self, op, lines, indent):
        """``outs = <function>.<mode>(args)``: a generated function of a runtime recursion."""
        group, mode = op.prim.group, op.prim.mode
        shape = {"call": group.template, "fwd": (group.template, None),
                 "jvp": (group.template, group.template)}.get(mode, (None,) * len(op.outs))
        targets = _targets(shape, iter([self.namer.define(o, op) for o in op.outs]))
        args = [self.render(a) for a in op.args]
        if mode == "bwd":
            args[0] = "*" + args[0]     # the residual tuple the forward returned
        lines.append("%s%s = %s.%s(%s)" % (indent, targets, self.consts.name(group.runtime),
                                           mode, ", ".join(args)))

    # -------------------------------------------------------------- statements
    def comment(self, op, lines, indent):
        loc = op.loc
        key = (loc.filename, loc.lineno) if loc is not None else None
        if key is None or key == self.last_loc:
            return
        src = loc.source_line.strip()
        where = "line %d" % loc.lineno
        if self.func.loc is not None and loc.filename != self.func.loc.filename:
            where = "%s line %d" % (os.path.basename(loc.filename), loc.lineno)
        lines.append("%s# %s: %s" % (indent, where, src) if src else "%s# %s" % (indent, where))
        self.where.setdefault(where, loc)
        self.last_loc = key

    def block(self, ops, lines, indent, targets=(), values=(), loop=False):
        """The statements of a region, then assignments to its op's names.

        ``loop``: the region is a loop's body and ``targets`` its carried
        names, rebound at the end of each iteration (``_loop_setitems``).
        """
        read_later, self.read_later = self.read_later, None
        start = len(lines)
        setitems = []
        for op in ops:
            self.statement(op, lines, indent)
            if isinstance(op.prim, A.SetItem):
                setitems.append((op, len(lines) - 1))
        released = self._loop_setitems(ops, setitems, lines, targets, values) \
            if loop and self.release else set()
        self.assign(targets, values, lines, indent)
        if loop and read_later is not None:     # the values made by the body, once dead
            name_of = lambda v: self.namer.names.get(v.id)     # noqa: E731
            kept = set(map(name_of, read_later)) | set(targets) | released | set(self.params)
            dead = body_releases(ops, name_of, kept)
            if dead:
                lines.append("%sdel %s" % (indent, ", ".join(dead)))
        if all(not line.strip() or line.strip().startswith("#") for line in lines[start:]):
            lines.append(indent + "pass")

    def statement(self, op, lines, indent):
        self.comment(op, lines, indent)
        handler = getattr(self, "st_" + type(op.prim).__name__, None)
        if handler is not None:
            return handler(op, lines, indent)
        rhs = self.expr(op)
        outs = [self.namer.define(o, op) for o in op.outs]
        text = "%s%s = %s" % (indent, ", ".join(outs), rhs) if outs else indent + rhs
        if self.explain and op.origin:
            text += "  # %s" % op.origin
        lines.append(text)
        if self.release and isinstance(op.prim, A.SetItem) and outs[0] == self.render(op.args[0]):
            self._setitem_in_place(op, lines, len(lines) - 1)

    def assign(self, targets, values, lines, indent):
        """``t1, t2 = v1, v2`` for the pairs whose names differ."""
        pairs = [(t, self.render(v)) for t, v in zip(targets, values)]
        pairs = [(t, v) for t, v in pairs if t != v]
        if pairs:
            lines.append("%s%s = %s" % (indent, ", ".join(t for t, _ in pairs),
                                        ", ".join(v for _, v in pairs)))

    def _alias_result(self, result, name, region):
        """Name a branch/body result after the variable it becomes, when safe.

        Safe means: the result is defined in the region, read nowhere else, and
        nothing in the region reads another value of that name after the
        result is written (e.g. a loop's old carried value).
        """
        if not isinstance(result, Var) or result.id in self.namer.names:
            return
        if self.uses.get(result.id, 0) != 1:
            return
        if not any(result is o for op in region.ops for o in op.outs):
            return
        if self._name_read_after(region, result, name):
            return
        self.namer.alias(result, name)

    def _name_read_after(self, region, result, name):
        names = self.namer.names
        seen = False
        for op in region.ops:
            if seen and any(v is not result and names.get(v.id) == name
                            for v in _all_uses(op)):
                return True
            if any(o is result for o in op.outs):
                seen = True
        return any(isinstance(r, Var) and r is not result and names.get(r.id) == name
                   for r in region.result)

    def st_If(self, op, lines, indent):
        then, orelse = op.regions
        names = [self.namer.define(o) for o in op.outs]
        for r in (then, orelse):
            for res, name in zip(r.result, names):
                self._alias_result(res, name, r)
        lines.append("%sif %s:" % (indent, self.render(op.args[0])))
        self.block(then.ops, lines, indent + "    ", names, then.result)
        if orelse.ops or any(self.render(v) != n for v, n in zip(orelse.result, names)):
            lines.append("%selse:" % indent)
            self.block(orelse.ops, lines, indent + "    ", names, orelse.result)

    def _carried(self, op, init, body, extra_params=()):
        """Slot names for a loop's carried values, with params aliased to them."""
        names = [self.namer.define(o) for o in op.outs]
        for r in op.regions:
            carried = r.params[len(extra_params):] if r is body else r.params
            for p, name in zip(carried, names):
                self.namer.alias(p, name)
        for res, name in zip(body.result, names):
            self._alias_result(res, name, body)
        return names

    def st_While(self, op, lines, indent):
        cond, body = op.regions
        names = self._carried(op, op.args, body)
        self.assign(names, op.args, lines, indent)
        test = self.inline(cond)
        if test is not None:
            lines.append("%swhile %s:" % (indent, test))
        else:
            lines.append("%swhile True:" % indent)
            for c in cond.ops:
                self.statement(c, lines, indent + "    ")
            lines.append("%s    if not %s:" % (indent, self.render(cond.result[0])))
            lines.append("%s        break" % indent)
        self.block(body.ops, lines, indent + "    ", names, body.result, loop=True)

    def st_ForRange(self, op, lines, indent):
        (body,) = op.regions
        start, stop, step = op.args[:3]
        index = body.params[0]
        names = self._carried(op, op.args[3:], body, extra_params=(index,))
        self.assign(names, op.args[3:], lines, indent)
        i = self.namer.define(index)
        if _is_const(start, 0) and _is_const(step, 1):
            rng = "range(%s)" % self.render(stop)
        else:
            rng = "range(%s, %s, %s)" % (self.render(start), self.render(stop), self.render(step))
        if op.prim.reverse:
            rng = "reversed(%s)" % rng
        lines.append("%sfor %s in %s:" % (indent, i, rng))
        self.block(body.ops, lines, indent + "    ", names, body.result, loop=True)

    def st_CustomBprop(self, op, lines, indent):
        (region,) = op.regions
        names = [self.namer.define(o) for o in op.outs]
        for res, name in zip(region.result, names):
            self._alias_result(res, name, region)
        lines.append("%s# %s(...) (its gradient is %s.bprop)" % (
            indent, type(op.prim.cell).__name__, type(op.prim.cell).__name__))
        for o in region.ops:
            self.statement(o, lines, indent)
        self.assign(names, region.result, lines, indent)

    def st_NewStack(self, op, lines, indent):
        lines.append("%s%s = []" % (indent, self.namer.define(op.outs[0], op)))

    def st_StackPush(self, op, lines, indent):
        stack, values = op.args[0], op.args[1:]
        item = self.render(values[0]) if len(values) == 1 else self.render(tuple(values))
        lines.append("%s%s.append(%s)" % (indent, self.render(stack), item))

    def st_StackPop(self, op, lines, indent):
        outs = [self.namer.define(o, op) for o in op.outs]
        lines.append("%s%s = %s.pop()" % (indent, ", ".join(outs), self.render(op.args[0])))

    def _inline_guard(self, op, exprs):
        if not _guard_pattern(op):
            return False
        inner = self.inline(op.regions[1])
        if inner is None:
            return False
        exprs[op.outs[0].id] = "not %s and %s" % (self.render(op.args[0]), _paren(inner))
        return True

    def inline(self, region):
        """The region as one expression, if each value in it is used once."""
        exprs = {}
        for op in region.ops:
            if self._inline_guard(op, exprs):
                continue
            if op.regions or op.prim.stateful or len(op.outs) != 1:
                return None
            if self.uses.get(op.outs[0].id, 0) != 1:
                return None
            args = []
            for a in op.args:
                if isinstance(a, Var) and a.id in exprs:
                    args.append(_paren(exprs[a.id]))
                else:
                    args.append(self.render(a))
            exprs[op.outs[0].id] = op.prim.emit(*args) if not isinstance(op.prim, A.GetItem) \
                else "%s[%s]" % (args[0], self.render_index(op.args[1]))
        (test,) = region.result
        if isinstance(test, Var):
            return exprs.get(test.id, self.render(test) if not region.ops else None)
        return self.render(test)


def _all_uses(op):
    out = list(op.arg_vars())
    for r in op.regions:
        for o in r.ops:
            out.extend(_all_uses(o))
        out.extend(v for v in leaves(r.result) if isinstance(v, Var))
    return out


def _outs(ops):
    """Every value the plain (region-less) ops of ``ops`` bind."""
    return [o for op in ops if not op.regions for o in op.outs]


def _guard_pattern(op):
    """``x = False if flag else <test>``: the test of a loop that may ``break``."""
    from ..ir.control import If
    if not isinstance(op.prim, If) or len(op.outs) != 1:
        return False
    then, orelse = op.regions
    return not then.ops and isinstance(then.result[0], Const) and then.result[0].value is False


def _is_const(a, value):
    return isinstance(a, Const) and type(a.value) is int and a.value == value


def _paren(expr):
    """Parenthesise a sub-expression unless it is a name or a single call."""
    if expr.replace("_", "").replace(".", "").isalnum():
        return expr
    if expr.endswith(")") and "(" in expr:
        depth = 0
        for i, ch in enumerate(expr):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and ch == ")" and i != len(expr) - 1:
                break
        else:
            head = expr[:expr.index("(")]
            if head.replace("_", "").replace(".", "").isalnum():
                return expr
    return "(%s)" % expr
