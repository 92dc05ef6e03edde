"""Packing a function's arguments as ``(selected, rest, layout)``.

``s2sad.grad`` differentiates a wrapper that takes the arguments asked for
first, so only their gradients are computed and a Python-constant argument
never shifts positions.  These helpers run eagerly on real values and are
also walked by the frontend when a gradient function is inlined (higher
order), so they use only what it supports: tuples, indexing with known
indices, ``if``/``for`` over values known while compiling, and
``constexpr`` index arithmetic.
"""
from __future__ import annotations

import dis
import inspect
import threading
import types
import weakref

from ..compat import signature
from ..driver.specs import AUX_STRUCTURE
from ..runtime import constexpr
from ..nn.cell import Cell
from .args import check_aux_output


@constexpr
def arrangement(positions, n):
    """``(rest_positions, layout)`` for ``n`` arguments; ``layout`` rebuilds them.

    Kept per ``(positions, n)``: every eager call of a gradient function asks.
    """
    known = _arrangements.get((positions, n))
    if known is not None:
        return known
    for p in positions:
        if p >= n:
            raise IndexError("grad_position %d is out of range: the function was called "
                             "with %d input%s" % (p, n, "" if n == 1 else "s"))
    rest = tuple(i for i in range(n) if i not in positions)
    layout = tuple((True, positions.index(i)) if i in positions else (False, rest.index(i))
                   for i in range(n))
    _arrangements[positions, n] = rest, layout
    return rest, layout


_arrangements = {}


def take_at(items, indices):
    out = ()
    for i in indices:
        out = (*out, items[i])
    return out


#: names through which a function can read its locals without naming them
_READS_LOCALS = frozenset(("locals", "vars", "eval", "exec", "_getframe", "currentframe",
                           "super"))
#: Python numbers and strings: constants compiled into the code, each value its own compile
_CONSTANTS = (bool, int, float, complex, str)


def unread_positions(fn, skip):
    """Positions of ``fn``'s parameters that its code never reads (not in ``skip``).

    ``grad(objective)(params, step)`` with an ``objective`` that ignores
    ``step`` (autograd's examples pass the iteration to every objective)
    compiled once per step: a Python number is a constant of the compiled
    code.  A parameter the bytecode never loads, deletes or stores, that no
    inner function captures, in a function that does not read its locals
    another way, cannot change what the code computes, so ``blank_unread``
    gives it one value.  ``()`` for anything but a plain function.
    """
    code = getattr(fn, "__code__", None)
    if type(fn) is not types.FunctionType or code is None \
            or _READS_LOCALS & set(code.co_names):
        return ()
    names = code.co_varnames[:code.co_argcount]
    seen = set(code.co_cellvars)
    loaded = _fast_indices(code)
    if all(i in loaded or i in skip or n in seen for i, n in enumerate(names)):
        return ()       # every parameter named: no need of dis, a millisecond a large function
    for ins in dis.get_instructions(code):
        if "FAST" in ins.opname:      # LOAD_FAST, LOAD_FAST_LOAD_FAST (names in a tuple)...
            seen.update(ins.argval if isinstance(ins.argval, tuple) else (ins.argval,))
    return tuple(i for i, n in enumerate(names) if n not in seen and i not in skip)


# the opcodes that name a local by its index (LOAD_FAST, STORE_FAST, DELETE_FAST,
# LOAD_FAST_CHECK...), and those naming two, four bits each (LOAD_FAST_LOAD_FAST)
_FAST_OPS = frozenset(op for name, op in dis.opmap.items() if "FAST" in name)
_FAST_PAIRS = frozenset(op for name, op in dis.opmap.items() if name.count("FAST") == 2)


def _fast_indices(code):
    """The local indices ``code``'s FAST opcodes name, read off its raw bytes.

    A parameter's index is its position.  A miscount can only send
    ``unread_positions`` to ``dis``, never blank a parameter that is read: this
    shortcut answers only that every parameter is named.
    """
    out = set()
    raw = code.co_code
    ext = 0
    for op, arg in zip(raw[0::2], raw[1::2]):
        arg |= ext
        ext = arg << 8 if op == dis.EXTENDED_ARG else 0
        if op in _FAST_OPS:
            if op in _FAST_PAIRS:
                out.update((arg >> 4, arg & 15))
            else:
                out.add(arg)
    return out


def blank_unread(args, unread):
    """``args`` with the Python numbers and strings at the ``unread`` positions as None."""
    if not any(i < len(args) and type(args[i]) in _CONSTANTS for i in unread):
        return args
    return tuple(None if i in unread and type(a) in _CONSTANTS else a
                 for i, a in enumerate(args))


def _merge(sel, rest, layout):
    args = ()
    for from_sel, i in layout:
        if from_sel:
            args = (*args, sel[i])
        else:
            args = (*args, rest[i])
    return args


@constexpr
def _require_aux(n_aux):
    if n_aux < 1:
        raise ValueError(AUX_STRUCTURE)
    return n_aux


def _aux_head(out):
    # unpacking fails while compiling unless ``out`` is a tuple
    head, *aux = out
    _require_aux(len(aux))
    return head


class _AuxOutputs(Cell):
    """``out[1:]`` of a ``has_aux`` function's output.

    Called eagerly it checks the structure with a clear error first; inlined
    in a differentiated program its ``construct`` is used.
    """

    def construct(self, out):
        head, *aux = out
        _require_aux(len(aux))
        return tuple(aux)

    def __init__(self, api):
        super().__init__()
        self.api = api

    def __call__(self, out):
        check_aux_output(out, self.api)
        return tuple(out[1:])


aux_outputs_of = {"grad": _AuxOutputs("grad"), "value_and_grad": _AuxOutputs("value_and_grad")}


def select(grads, mode, single):
    if mode == "inputs":
        return _one(grads, single)
    if mode == "both":
        return _one(grads[0][0], single), grads[1]
    return grads


def _one(grads, single):
    if single:
        return grads[0]
    return grads


# ------------------------------------------------------ packed differentiands
def _cell_packed(self, sel, rest, layout):
    return self(*_merge(sel, rest, layout))


def _cell_packed_aux(self, sel, rest, layout):
    return _aux_head(self(*_merge(sel, rest, layout)))


def _cell_head(self, *args):
    return _aux_head(self(*args))


_memo = weakref.WeakValueDictionary()
_memo_lock = threading.RLock()


def memoized(key, make):
    """One object per key while it is in use: ``grad(f)`` twice gives one function.

    Held weakly: once the user drops the gradient function, the entry goes,
    and with it the function (and whatever it captured) the key names.
    Compiled code does not depend on this: the cache files it by code.
    """
    try:
        hash(key)
    except TypeError:
        return make()
    with _memo_lock:
        value = _memo.get(key)
        if value is None:
            value = make()
            try:
                _memo[key] = value
            except TypeError:       # not weakly referable: not kept
                pass
        return value


def packed_function(fn, has_aux):
    """What to differentiate: ``fn`` taking ``(selected, rest, layout)``."""
    if isinstance(fn, Cell):
        return types.MethodType(_cell_packed_aux if has_aux else _cell_packed, fn)
    if inspect.ismethod(fn) and isinstance(fn.__self__, Cell):
        method = memoized(("packed-method", fn.__func__, has_aux),
                           lambda: _make_packed_method(fn.__func__, has_aux))
        return types.MethodType(method, fn.__self__)
    return memoized(("packed", fn, has_aux), lambda: _make_packed(fn, has_aux))


def _make_packed(fn, has_aux):
    if has_aux:
        def packed_aux(sel, rest, layout):
            return _aux_head(fn(*_merge(sel, rest, layout)))
        return _named_like(packed_aux, fn, 0)

    def packed(sel, rest, layout):
        return fn(*_merge(sel, rest, layout))
    return _named_like(packed, fn, 0)


def _make_packed_method(func, has_aux):
    if has_aux:
        def packed_method_aux(self, sel, rest, layout):
            return _aux_head(func(self, *_merge(sel, rest, layout)))
        return _named_like(packed_method_aux, func, 1)

    def packed_method(self, sel, rest, layout):
        return func(self, *_merge(sel, rest, layout))
    return _named_like(packed_method, func, 1)


def _named_like(packed, fn, skip):
    """Name a packed function's inputs in generated code after ``fn``'s parameters.

    ``fn=None``: the Cell's ``construct`` (read from the Cell being compiled);
    ``skip``: how many leading parameters (``self``) are not inputs.
    """
    def user_fn(root):
        return fn if fn is not None else type(root).construct

    def hints(root, args, default):
        names = getattr(user_fn(root), "__s2sad_params__", None)    # a flat pytree function's
        if names is None:
            try:
                params = list(signature(user_fn(root)).parameters.values())[skip:]
            except (TypeError, ValueError):
                return default
            names = [p.name for p in params
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        sel, rest, layout = args
        if not isinstance(layout, tuple) or len(layout) != len(sel) + len(rest):
            return default
        picked = {True: [None] * len(sel), False: [None] * len(rest)}
        for i, (from_sel, j) in enumerate(layout):
            picked[from_sel][j] = names[i] if i < len(names) else "arg%d" % i
        return [tuple(picked[True]), tuple(picked[False])] + list(default[2:])

    def named_after(root):
        """The function the generated code, its header and locations are named after."""
        target = user_fn(root)
        after = getattr(target, "__s2sad_named_after__", None)
        if after is not None:
            return after(root)
        return target if inspect.isfunction(target) else packed

    packed.__s2sad_arg_hints__ = hints
    packed.__s2sad_named_after__ = named_after
    return packed


_named_like(_cell_packed, None, 1)
_named_like(_cell_packed_aux, None, 1)


def first_output(fn):
    """``fn`` reduced to its first output (for ``has_aux``)."""
    if isinstance(fn, Cell):
        return types.MethodType(_cell_head, fn)

    def make():
        def head(*args):
            return _aux_head(fn(*args))
        return head
    return memoized(("head", fn), make)


def keywords_as_positional(fn, args, kwargs, positions, lift=None):
    """``grad(f)(x, y=2.0)``: the keywords placed where ``fn``'s signature puts them.

    Keywords name arguments that are not differentiated (as in autograd and
    JAX); the skipped parameters between take their defaults (passed through
    ``lift`` when given).  A keyword that names a differentiated position, a
    keyword-only parameter or ``**kwargs`` is refused: pass such values
    positionally, or close over them.
    """
    name = getattr(fn, "__name__", type(fn).__name__)
    try:
        bound = signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError("gradient of %r called with keyword arguments %s: %s"
                        % (name, ", ".join(sorted(kwargs)), e)) from None
    given = set(bound.arguments)
    bound.apply_defaults()
    if lift is not None:
        for n in set(bound.arguments) - given:
            bound.arguments[n] = lift(bound.arguments[n])
    params = list(bound.signature.parameters.values())
    out = []
    for i, p in enumerate(params):
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if p.name in kwargs or (p.kind == p.VAR_KEYWORD and bound.arguments[p.name]):
                raise TypeError("gradient of %r: keyword argument %r is not a positional "
                                "parameter of the function; pass it positionally or close "
                                "over it" % (name, p.name))
            if p.kind == p.VAR_POSITIONAL:
                out.extend(bound.arguments[p.name])
            continue
        if p.name in kwargs and i in positions:
            raise TypeError("gradient of %r: argument %r is differentiated (position %d), so "
                            "pass it positionally, not as a keyword" % (name, p.name, i))
        out.append(bound.arguments[p.name])
    return tuple(out)


def _stage_keywords_as_positional(builder, args, kwargs, loc, path):
    """``keywords_as_positional`` met in differentiated code (a gradient function
    called with keywords there): the same binding, done while compiling on the
    abstract arguments, the defaults lifted as constants."""
    from ..errors import CompileError
    from ..frontend.values import TreeVal, const_value
    fn, call_args, call_kwargs, positions = args
    if kwargs or not isinstance(call_kwargs, TreeVal):
        raise CompileError("keyword arguments of a gradient function must be known "
                           "by name while compiling", loc)
    try:
        return keywords_as_positional(const_value(fn), tuple(call_args), dict(call_kwargs.obj),
                                      const_value(positions), builder.lift)
    except TypeError as e:
        raise CompileError(str(e), loc) from None


keywords_as_positional.__s2sad_stage__ = _stage_keywords_as_positional
