"""Recursion whose depth is decided at run time: a real call, not inlining.

A call of a user function is inlined while compiling, which unrolls
recursion that stops at a depth known then (``f(x, 3)`` with a Python int).
When a function is entered again, inside its own inlining, with arguments
the compiler knows exactly as much about as the first time (the same
constants, runtime values in the same places), inlining would repeat itself
forever: how deep the recursion goes depends on runtime values.  The
outermost of those calls is then built once as a function of its own
(``RecursionGroup``) and every call of it, the recursive ones included,
becomes a ``RecursiveCall`` op, a Python call made at run time.  Mutual
recursion (``even`` calls ``odd`` calls ``even``) makes one function of the
first one entered, with the others inlined into it.
"""
import inspect
import types

import gast

from ..errors import CompileError
from ..ir.nodes import Var, Const, Op, Func, leaves, map_structure, walk_ops
from ..ir.control import RecursionGroup, RecursiveCall
from .values import is_library
from .parse import get_source_info
from .closures import Closure

#: how often the body is walked again when its result's structure was guessed wrong
_STRUCTURE_TRIES = 4


class _RecursionFound(BaseException):
    """Unwinds the inlining back to the outermost call of a runtime recursion.

    A ``BaseException``: no ``except Exception`` on the way may swallow it.
    """

    def __init__(self, key):
        super().__init__(key)
        self.key = key


class _Ineligible(Exception):
    """An argument the recursion key cannot describe (a list, a closure)."""


class Recursion:
    """Mixin of ``Builder``: calls of user functions that recurse to a runtime depth."""

    def call_user_function(self, fn, args, kwargs, loc, self_value, inline):
        """``inline(args, kwargs)`` (the call inlined), unless it recurses to a depth known
        only at run time.  ``fn`` is a Python function or a ``Closure``."""
        key = self._recursion_key(fn, args, kwargs, self_value)
        if key is None:
            return inline(args, kwargs)
        group = self.recursion_groups.get(key)
        if group is not None:
            return self._recursive_call(group, args, kwargs, loc)
        if key in self.active_calls:
            raise _RecursionFound(key)
        target, start = self.ops, len(self.ops)
        self.active_calls.append(key)
        try:
            return inline(args, kwargs)
        except _RecursionFound as e:
            if e.key != key:
                raise
        finally:
            self.active_calls.pop()
        del target[start:]      # the partial inlining; the regions it opened are closed
        group = self._build_group(key, fn, args, kwargs, loc, self_value, inline)
        return self._recursive_call(group, args, kwargs, loc)

    # ------------------------------------------------------------------ key
    def _recursion_key(self, fn, args, kwargs, self_value):
        """What the compiler knows about this call; ``None`` if that cannot be compared."""
        if not (isinstance(fn, Closure) or isinstance(fn, types.FunctionType) and
                not is_library(fn)) or self.origin is not None:
            return None
        try:
            key = (fn, None if self_value is None else self._value_key(self_value),
                   tuple(self._value_key(a) for a in args),
                   tuple(sorted((k, self._value_key(v)) for k, v in kwargs.items())))
            hash(key)
        except (_Ineligible, TypeError):
            return None
        return key

    def _value_key(self, v):
        if isinstance(v, Var):
            return ("var", self.kinds.get(v.id), v.id in self.random_states,
                    v.id in self.inert)
        if isinstance(v, Const):
            value = v.value
            if _plain(value):
                return ("const", type(value), value)
            return ("object", id(value))    # compared by identity: ``==`` may be elementwise
        if isinstance(v, tuple):
            return ("tuple",) + tuple(self._value_key(x) for x in v)
        raise _Ineligible()

    # ---------------------------------------------------------------- calls
    def _recursive_call(self, group, args, kwargs, loc):
        """Stage ``outs = group(args)`` (the runtime inputs it reads appended when known)."""
        runtime = [v for v in _argument_leaves(args, kwargs) if isinstance(v, Var)]
        if group.func is not None:
            runtime += group.func.params[len(runtime):]
        outs = [Var() for _ in leaves(group.template)]
        self.ops.append(Op(RecursiveCall(group, "call"), runtime, outs, loc))
        it = iter(outs)
        return map_structure(lambda _: next(it), group.template)

    def _build_group(self, key, fn, args, kwargs, loc, self_value, inline):
        """Walk ``fn``'s body once over fresh parameters: the function each call runs."""
        names = _parameter_names(fn, args, kwargs, self_value)

        def param(v):
            if not isinstance(v, Var):
                return v
            p = Var(names.get(v.id, v.hint))
            for table in (self.random_states, self.inert):
                if v.id in table:
                    table.add(p.id)
            if v.id in self.kinds:
                self.kinds[p.id] = self.kinds[v.id]
            return p
        p_args = [map_structure(param, a) for a in args]
        p_kwargs = {k: map_structure(param, kwargs[k]) for k in sorted(kwargs)}
        params = [v for v in _argument_leaves(p_args, p_kwargs) if isinstance(v, Var)]
        group = RecursionGroup(_name(fn, self_value), loc)
        self.recursion_groups[key] = group
        group.template = _guess_template(fn)
        for _ in range(_STRUCTURE_TRIES):
            with self.region():
                result = inline(p_args, p_kwargs)
                body = self.ops
            template = _template(result, fn, loc)
            if _same_structure(template, group.template):
                break
            group.template = template
        else:
            raise CompileError("the result of '%s' changes structure with the depth of its "
                               "recursion" % group.name, loc)
        free = free_vars(body, result, {p.id for p in params})
        group.func = Func(group.name, params + free, body, result, loc)
        for op in walk_ops(body):
            if isinstance(op.prim, RecursiveCall) and op.prim.group is group:
                op.args = op.args + free
        return group


def _plain(value):
    """Whether ``value`` is a Python value that ``==`` and ``hash`` compare by content."""
    if type(value) is tuple:
        return all(_plain(x) for x in value)
    return value is None or type(value) in (bool, int, float, complex, str, slice) or \
        value is Ellipsis


def _argument_leaves(args, kwargs):
    return leaves(tuple(args) + tuple(kwargs[k] for k in sorted(kwargs)))


def _parameter_names(fn, args, kwargs, self_value):
    """Var id -> the name of ``fn``'s parameter it is passed as (``x``, ``pair_1``)."""
    if isinstance(fn, Closure):
        arguments = dict(zip([p.id for p in fn.node.args.args], args), **kwargs)
    else:
        try:
            full = ((self_value,) if self_value is not None else ()) + tuple(args)
            arguments = inspect.signature(fn, follow_wrapped=False).bind(
                *full, **kwargs).arguments
        except TypeError:
            return {}
    names = {}
    for name, value in arguments.items():
        found = [v for v in leaves(value) if isinstance(v, Var)]
        for k, v in enumerate(found):
            names.setdefault(v.id, name if len(found) == 1 else "%s_%d" % (name, k))
    return names


def _name(fn, self_value):
    name = fn.name if isinstance(fn, Closure) else getattr(fn, "__name__", "call")
    if name == "<lambda>":
        return "lambda"
    if name == "construct" and self_value is not None:
        return type(self_value.value).__name__
    return name


def _guess_template(fn):
    """The structure of what ``fn`` returns, from its first ``return`` of a tuple display.

    The recursive calls inside the body are met before its result is known;
    a wrong guess costs one more walk of the body (see ``_build_group``).
    """
    def shape(node):
        if isinstance(node, gast.Tuple):
            return tuple(shape(e) for e in node.elts)
        return Var()
    if isinstance(fn, Closure):
        body = fn.node.body if isinstance(fn.node, gast.FunctionDef) else []
    else:
        body = get_source_info(fn).tree.body
    for node in _returns(body):
        if isinstance(node.value, gast.Tuple):
            return shape(node.value)
    return Var()


def _returns(stmts):
    """The ``return`` statements of a function body, not those of functions defined in it."""
    for stmt in stmts:
        if isinstance(stmt, gast.Return):
            yield stmt
        elif not isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef,
                                   gast.Lambda)):
            for child in gast.iter_child_nodes(stmt):
                if isinstance(child, gast.stmt):
                    yield from _returns([child])


def _template(result, fn, loc):
    """``result`` with each leaf a placeholder; refused when a leaf is not a value."""
    for leaf in leaves(result):
        if not isinstance(leaf, (Var, Const)):
            raise CompileError(
                "'%s' recurses to a depth decided at run time, so it is compiled as a "
                "function of its own, which can only return tensors, numbers or tuples "
                "of them" % _name(fn, None), loc,
                hint="return a tuple instead of a list or dict, or write the recursion "
                     "as a while loop")
    return map_structure(lambda _: Var(), result)


def _same_structure(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(_same_structure(x, y) for x, y in zip(a, b))
    return True


def free_vars(body, result, defined):
    """Vars ``body`` (or its ``result``) reads that neither it nor ``defined`` (ids) define,
    in order of first read."""
    defined, seen, out = set(defined), set(), []
    for op in body:
        for v in op.used_vars():
            if v.id not in defined and v.id not in seen:
                seen.add(v.id)
                out.append(v)
        defined.update(o.id for o in op.outs)
    for v in leaves(result):
        if isinstance(v, Var) and v.id not in defined and v.id not in seen:
            seen.add(v.id)
            out.append(v)
    return out
