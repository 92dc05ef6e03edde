"""Nested functions, lambdas, ``functools.partial``, ``map`` and comprehensions.

A nested ``def`` or ``lambda`` evaluates to a ``Closure``: its tree plus the
scope it was defined in.  Calling one inlines its body in a new scope whose
free names resolve through the defining scope at call time (Python's late
binding), so a closure passed to a helper, returned from a function or stored
in a tuple works anywhere.  Because the body is inlined where it is called,
whatever it reads -- outer tensors, arguments, ``self`` Parameters -- is an
ordinary SSA value of the caller, and its gradient flows back to the enclosing
scope with no extra machinery.
"""
import functools

import gast

from ..errors import CompileError
from ..ir.nodes import Var, Const
from .values import ListVal, Scope, TreeVal
from .control import returned


class Closure:
    """A function defined inside differentiated code, with its defining scope."""

    def __init__(self, node, scope, defaults, name):
        self.node = node
        self.scope = scope
        self.defaults = defaults
        self.name = name

    def __repr__(self):
        return "<closure %s>" % self.name


class Partial:
    """``functools.partial(func, *args, **kwargs)`` over abstract values."""

    def __init__(self, func, args, kwargs):
        self.func = func
        self.args = list(args)
        self.kwargs = dict(kwargs)


class Closures:
    """Mixin of ``Builder``."""

    def st_FunctionDef(self, node, scope):
        scope.env[node.name] = self.make_closure(node, node.args, scope, node.name)

    def ex_Lambda(self, node, scope):
        return self.make_closure(node, node.args, scope, "<lambda>")

    def make_closure(self, node, args, scope, name):
        if node.decorator_list if isinstance(node, gast.FunctionDef) else False:
            raise CompileError("decorators on nested functions are not supported",
                               scope.info.loc(node))
        defaults = [self.eval(d, scope) for d in args.defaults]
        kw_defaults = {a.id: self.eval(d, scope)
                       for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
        return Closure(node, scope, (defaults, kw_defaults), name)

    def call_closure(self, clo, args, kwargs, loc, recurse=True):
        """Inline the nested function ``clo`` (unless it recurses to a runtime depth:
        ``recursion.py``)."""
        if recurse:
            return self.call_user_function(
                clo, args, kwargs, loc, None,
                lambda a, k: self.call_closure(clo, list(a), dict(k), loc, recurse=False))
        node = clo.node
        a = node.args
        names = [p.id for p in a.args]
        env = {}
        if len(args) > len(names) and a.vararg is None:
            raise CompileError("%s() takes %d positional arguments but %d were given"
                               % (clo.name, len(names), len(args)), loc)
        for n, v in zip(names, args):
            env[n] = v
        if a.vararg is not None:
            env[a.vararg.id] = tuple(args[len(names):])
        defaults, kw_defaults = clo.defaults
        first_default = len(names) - len(defaults)
        for i, n in enumerate(names):
            if n in env:
                if n in kwargs:
                    raise CompileError("%s() got multiple values for argument '%s'"
                                       % (clo.name, n), loc)
                continue
            if n in kwargs:
                env[n] = kwargs.pop(n)
            elif i >= first_default:
                env[n] = defaults[i - first_default]
            else:
                raise CompileError("%s() missing required argument '%s'" % (clo.name, n), loc)
        for p in a.kwonlyargs:
            if p.id in kwargs:
                env[p.id] = kwargs.pop(p.id)
            elif p.id in kw_defaults:
                env[p.id] = kw_defaults[p.id]
            else:
                raise CompileError("%s() missing keyword argument '%s'" % (clo.name, p.id), loc)
        if a.kwarg is not None:     # read by key, or passed on by ``**name``
            env[a.kwarg.id] = TreeVal(dict(kwargs))
        elif kwargs:
            raise CompileError("%s() got unexpected keyword arguments %s"
                               % (clo.name, ", ".join(sorted(kwargs))), loc)
        outer = clo.scope
        scope = Scope(outer.info, outer.fn, env, outer.path)
        scope.parent = outer
        if self.depth >= 64:
            raise CompileError("calls nest deeper than 64 levels while inlining %s" % clo.name, loc)
        frame = self.enter_frame(clo.name if clo.name != "<lambda>" else "lambda", loc, env) \
            if self.origin is None else None
        with self.inside(scope, loc, frame):
            if isinstance(node, gast.Lambda):
                return self.eval(node.body, scope)
            self.exec_block(node.body, scope)
            return returned(scope)

    # ------------------------------------------------------------ partial/map
    def call_special(self, f, args, kwargs, loc):
        """``functools.partial``, ``map``, ``slice`` and friends applied to abstract values."""
        if f in (int, float, bool) and len(args) == 1 and not kwargs and isinstance(args[0], Var):
            from ..ir import control as C
            self.check_concrete(args[0], "%s(...)" % f.__name__, loc)
            return self.emit(C.PyCast(f.__name__), [args[0]], loc)
        if f is slice and not kwargs and 1 <= len(args) <= 3:
            # ``slice(i * n, (i + 1) * n)`` of runtime bounds, as ``x[i * n:(i + 1) * n]`` makes
            from ..ir import control as C
            parts = [Const(None)] + list(args) + [Const(None)] if len(args) == 1 else \
                list(args) + [Const(None)] * (3 - len(args))
            return self.emit(C.MakeSlice(), parts[:3], loc)
        if f is functools.partial:
            if not args:
                raise CompileError("partial() needs a function", loc)
            return Partial(args[0], args[1:], kwargs)
        if f is map:
            if len(args) < 2:
                raise CompileError("map() needs a function and a sequence", loc)
            seqs = [self.static_sequence(s) for s in args[1:]]
            if any(s is None for s in seqs):
                raise CompileError("map() over a runtime value is not supported; use a loop",
                                   loc)
            return tuple(self.call(args[0], list(items), {}, loc) for items in zip(*seqs))
        if f in (tuple, list) and len(args) == 1 and not kwargs:
            seq = self.static_sequence(args[0])
            if seq is not None:     # ``list(args)``: a new list, which may then change
                return ListVal(list(seq), self.ops) if f is list else tuple(seq)
        if f in (sum,) and len(args) >= 1:
            seq = self.static_sequence(args[0])
            if seq is not None:
                total = args[1] if len(args) > 1 else Const(0)
                for item in seq:
                    total = self.binop(gast.Add, total, item, loc)
                return total
        if f in (min, max) and len(args) >= 1 and not kwargs:
            seq = args if len(args) > 1 else self.static_sequence(args[0])
            if seq is not None and all(isinstance(s, Const) for s in seq):
                return Const(f(s.value for s in seq))
        if f is isinstance and len(args) == 2 and isinstance(args[1], tuple) \
                and all(isinstance(k, Const) for k in args[1]):
            args = [args[0], Const(tuple(k.value for k in args[1]))]   # ``(int, float)``
        if f is isinstance and len(args) == 2 and isinstance(args[1], Const):
            classes = args[1].value
            answer = self.type_check(args[0], lambda t: issubclass(t, classes), loc)
            if answer is not None:
                return answer
            if isinstance(args[0], Var):     # s2sad's own code: a runtime value is an array
                from ..tensor import Tensor
                import numpy as np
                kinds = classes if isinstance(classes, tuple) else (classes,)
                return Const(any(k in (Tensor, np.ndarray) for k in kinds))
        if isinstance(getattr(f, "__self__", None), str) and f.__name__ == "format":
            return self.format_text(f.__self__, "format", args, kwargs, loc)
        if f is type and len(args) == 1 and not kwargs:
            exact = self.type_check(args[0], lambda t: t, loc)
            if exact is not None:
                return exact
        return None

    def call_partial(self, p, args, kwargs, loc):
        merged = dict(p.kwargs)
        merged.update(kwargs)
        return self.call(p.func, p.args + list(args), merged, loc)

    # ---------------------------------------------------------- comprehensions
    def ex_ListComp(self, node, scope):
        return self._comprehension(node, scope, lambda: self.eval(node.elt, scope))

    ex_GeneratorExp = ex_ListComp

    def ex_DictComp(self, node, scope):
        """``{k: v for ...}`` over known sequences: a dict display, unrolled."""
        pairs = self._comprehension(
            node, scope, lambda: (self.dict_key(node.key, scope), self.eval(node.value, scope)))
        return self.dict_value(dict(pairs))

    def _comprehension(self, node, scope, element):
        """A comprehension over sequences known while compiling, unrolled."""
        saved_env = scope.env
        scope.env = dict(saved_env)
        out = []
        try:
            self._generate(node.generators, 0, scope, element, out)
        finally:
            scope.env = saved_env
        return tuple(out)

    def _generate(self, gens, i, scope, element, out):
        if i == len(gens):
            out.append(element())
            return
        gen = gens[i]
        seq = self.static_sequence(self.eval(gen.iter, scope))
        if seq is None:
            raise CompileError("comprehensions over runtime values are not supported; write a "
                               "for loop", scope.info.loc(gen.iter))
        for item in seq:
            self.assign(gen.target, item, scope)
            keep = True
            for cond in gen.ifs:
                c = self.eval(cond, scope)
                if not isinstance(c, Const):
                    raise CompileError("a comprehension's condition must be known while "
                                       "compiling", scope.info.loc(cond))
                keep = keep and bool(c.value)
            if keep:
                self._generate(gens, i + 1, scope, element, out)
