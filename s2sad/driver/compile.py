"""The compile driver: a function or Cell plus argument structure -> adjoint code.

frontend (build SSA) -> reverse AD -> passes -> codegen -> compile.  The
result (``Compiled``) keeps every stage so users can read the IR and source.
"""
import collections
import dis
import functools
import gc
import os
import sys
import threading
import warnings
import weakref

import numpy as np

from ..ir import Var, Const, Func, leaves
from ..ir.nodes import walk_ops, AdjointOf
from ..frontend.build import Builder
from ..frontend.parse import get_source_info
from ..backend.codegen import CodeGen
from ..backend.outline import outline
from ..backend.compile import compile_source
from ..frontend import npmap, resolve
from ..frontend.guards import FN
from ..backend.compile import forget_source, forget_sources
from .reverse import reverse
from .forward import forward
from .taylor import taylor_objective, Unsupported
from ..compat import signature
from . import pipeline
from .pipeline import current as current_options
from ..errors import S2SADError
from ..ops.primitive import Primitive


class Mutable:
    """A Python value passed as a runtime, differentiable input (``s2sad.mutable``)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def mutable(value):
    """Mark a Python scalar or tuple as a runtime input that gets a gradient."""
    return Mutable(value)


# ---------------------------------------------------------------- arguments
ARRAY_SPEC = ("array",)
_TENSOR_SPEC = ("tensor",)
# exact type -> spec builder, filled as types are met: called on every
# argument of every call, so the common types skip the isinstance chain
_SPEC_BY_TYPE = {np.ndarray: lambda v: ARRAY_SPEC}


def arg_spec(value):
    """The part of an argument compiled code depends on (not its shape)."""
    fast = _SPEC_BY_TYPE.get(type(value))
    if fast is not None:
        return fast(value)
    return _arg_spec_slow(value)


def _const_spec(value):
    return ("const",) + resolve.guard_key(value)


def _seq_spec(value):
    return (type(value).__name__,) + tuple(map(arg_spec, value))


for _t in (type(None), bool, int, float, complex, str, bytes):
    _SPEC_BY_TYPE[_t] = _const_spec
_SPEC_BY_TYPE[tuple] = _SPEC_BY_TYPE[list] = _seq_spec


def _arg_spec_slow(value):
    from ..tensor import Tensor
    t = type(value)
    if isinstance(value, Tensor):
        _SPEC_BY_TYPE[t] = lambda v: _TENSOR_SPEC
        return _TENSOR_SPEC
    if isinstance(value, np.ndarray):
        _SPEC_BY_TYPE[t] = lambda v: ARRAY_SPEC
        return ARRAY_SPEC
    if isinstance(value, np.generic):
        spec = ("npscalar", t)
        _SPEC_BY_TYPE[t] = lambda v: spec
        return spec
    if isinstance(value, Mutable):
        return ("mutable", arg_spec(value.value) if isinstance(value.value, (tuple, list))
                else None)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(arg_spec(v) for v in value)
    return _const_spec(value)


def is_differentiable_spec(spec):
    return spec[0] in ("tensor", "array", "npscalar", "mutable")


def has_runtime_leaves(spec):
    """Whether an argument with this spec contributes gradients."""
    if spec is None or is_differentiable_spec(spec):
        return True
    if spec[0] in ("tuple", "list"):
        return any(has_runtime_leaves(s) for s in spec[1:])
    return False


def abstract_args(values, specs, hints):
    """Vars for runtime leaves, Consts for the rest; also the flat runtime leaves."""
    flat = []
    return [_abstract(v, s, h, flat) for v, s, h in zip(values, specs, hints)], flat


def _abstract(value, spec, hint, flat):
    """``value``'s Vars and Consts; each new Var is appended to ``flat``."""
    kind = spec[0]
    if kind in ("tensor", "array", "npscalar"):
        var = Var(hint)
        flat.append(var)
        return var
    if kind == "mutable":
        inner = value.value
        if isinstance(inner, (tuple, list)):
            return tuple(_abstract(Mutable(v), ("mutable", None), "%s_%d" % (hint, i), flat)
                         for i, v in enumerate(inner))
        var = Var(hint)
        flat.append(var)
        return var
    if kind in ("tuple", "list"):
        # a tuple of hints names each element; a string is numbered
        return tuple(_abstract(v, s, hint[i] if isinstance(hint, tuple) else "%s_%d" % (hint, i),
                               flat)
                     for i, (v, s) in enumerate(zip(value, spec[1:])))
    return Const(value)


def flatten_runtime(values, specs):
    """The raw arrays/scalars of the runtime leaves, in ``abstract_args`` order."""
    out = []
    for v, s in zip(values, specs):
        _flatten_into(out, v, s)
    return out


def _flatten_into(out, value, spec):
    # a module-level function, not a closure: a recursive closure is a reference
    # cycle, which would keep this call's arrays alive until the next collection
    kind = spec[0]
    if kind == "tensor":
        out.append(value._data)
    elif kind in ("array", "npscalar"):
        out.append(value)
    elif kind == "mutable":
        inner = value.value
        if isinstance(inner, (tuple, list)):
            for v in inner:
                _flatten_into(out, Mutable(v), ("mutable", None))
        else:
            out.append(getattr(inner, "_data", inner))
    elif kind in ("tuple", "list"):
        for v, s in zip(value, spec[1:]):
            _flatten_into(out, v, s)


# ------------------------------------------------------------------ compile
class Compiled:
    """One compiled adjoint: its IRs, source, callable and what it assumed."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _param_names(fn, is_method):
    declared = getattr(fn, "__s2sad_params__", None)
    if declared is not None:
        return list(declared)
    sig = signature(fn)
    names = list(sig.parameters)
    return names[1:] if is_method else names


def _applying(prim):
    """A Python function calling the primitive ``prim``, for differentiating it directly."""
    def primitive(*inputs):
        return prim(*inputs)
    primitive.__qualname__ = primitive.__name__ = type(prim).__name__
    primitive.__s2sad_arg_hints__ = lambda root, args, hints: (
        ["x"] if len(args) == 1 else ["x%d" % i for i in range(len(args))])
    return primitive


class Trace:
    """The forward program of one call, and what it was built from."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def trace(fn, root, args, specs, weights=(), weight_paths=(), origin=(FN,)):
    """Build the forward IR of ``fn`` for arguments of structure ``specs``.

    ``fn`` is the Python function (``type(cell).construct`` for Cells, with
    ``root`` the Cell); ``weights`` are Parameters that must be runtime
    inputs of their own even if the program never reads them.  ``origin`` is
    the path by which the cache finds ``fn`` from the function it is asked
    for (``guards.FN``), so what ``fn`` captured is guarded through it.
    """
    is_method = root is not None
    # ``GradOperation()(np.tanh)``, ``GradOperation()(ops.Sin())``: no source of their own
    given = fn
    fn = npmap.lookup(fn) or (_applying(fn) if isinstance(fn, Primitive) else fn)
    origin = origin if fn is given else None
    names = _param_names(fn, is_method)
    hints = [names[i] if i < len(names) else "arg%d" % i for i in range(len(args))]
    arg_hints = getattr(fn, "__s2sad_arg_hints__", None)
    if arg_hints is not None:   # a wrapper naming its inputs after the user's function
        hints = arg_hints(root, args, hints)
    abstract, flat_inputs = abstract_args(args, specs, hints)
    builder = Builder(root)
    weight_vars = []
    for w, path in zip(weights, weight_paths):
        if path is not None:
            builder.guards.record(path, w)
        weight_vars.append(builder.inputs.var_for(w, path))
    self_value = Const(root, ()) if is_method else None
    typed = builder.typed_inputs(abstract, specs)
    # inlining recursion (depth known while compiling) nests Python frames deeply
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        if is_method and getattr(type(root), "bprop", None) is not None:
            # the differentiated Cell's own bprop replaces differentiating construct
            result = builder.call_custom_bprop(root, (), typed, {}, None)
        else:
            result = builder.call_function(fn, typed, loc=None, self_value=self_value,
                                           path=origin)
    finally:
        sys.setrecursionlimit(limit)
    after = getattr(fn, "__s2sad_named_after__", None)
    named = after(root) if after is not None else fn     # a wrapper names the user's function
    info = get_source_info(named)
    if named is not fn:
        _locate_in(builder.ops, fn, info.loc(info.tree))
    # closures sharing one code object (gradients of gradients) have names of their own
    display = getattr(named, "__qualname__", None) or info.qualname
    qualname = display.replace(".", "_").replace("<", "").replace(">", "")
    params = flat_inputs + [e[0] for e in builder.inputs.entries]
    forward = pipeline.run(pipeline.TRACE, Func(qualname, params, builder.ops, result,
                                                info.loc(info.tree)))
    return Trace(forward=forward, abstract=abstract, flat_inputs=flat_inputs,
                 weight_vars=weight_vars, builder=builder, info=info, qualname=qualname,
                 display=display, hints=hints, result=result,
                 gradients=getattr(fn, "__s2sad_gradients__", 0))


def _locate_in(ops, wrapper, loc):
    """Move the ops located in ``wrapper``'s own lines to ``loc``, the user's function.

    A wrapper (``s2sad.grad``'s, the gradient function differentiated again)
    is s2sad's code: what it computes (seeding, summing the gradients) belongs
    to the function it is named after, so comments and errors point there.
    """
    code = getattr(wrapper, "__code__", None)
    if code is None:
        return
    lines = [n for _, n in dis.findlinestarts(code) if n is not None]
    first, last = code.co_firstlineno, max(lines, default=code.co_firstlineno)
    for op in walk_ops(ops):
        at = op.loc
        if at is not None and at.filename == code.co_filename and first <= at.lineno <= last:
            op.loc = loc


def _gradients_of(what, t):
    """``what`` ("gradient", ...) of the user's function, through the gradients it wraps.

    Spelled out at every order: "order-N gradient" is Taylor mode's header, and
    the header tells the two ways of compiling a chain apart."""
    return what + " of the gradient" * t.gradients


def _finish(ir, t, header, **kw):
    """Simplify, generate and compile ``ir``; bundle it with its trace."""
    names = [getattr(v, "hint", None) for v in leaves(ir.result)]
    ir = pipeline.run(pipeline.FINAL, ir)
    _keep_result_names(ir, names)
    gen = CodeGen(release=current_options().release)
    title = "%s of %s (%s)" % (header, t.display, _display_path(t.info.filename))
    if any(op.frame is not None for op in walk_ops(ir.body)):
        # each call of a user function becomes functions of its own, its values
        # keeping the names they would have inline
        naming = CodeGen(release=False)
        naming.function(ir)
        source = gen.module(outline(ir), naming.namer, header=title)
    else:
        source = gen.function(ir, header=title)
    shown = gen.readable(source)
    callable_ = compile_source(source, ir.name, gen.consts.namespace(), gen.where, shown=shown)
    return Compiled(forward=t.forward, grad_ir=ir, source=shown, executed_source=source,
                    constants=gen.consts, fn=callable_,
                    check=t.builder.guards.compile(), guards=t.builder.guards,
                    inputs=t.builder.inputs, result_structure=t.result, info=t.info,
                    hints=t.hints, display=t.display, **kw)


def _keep_result_names(ir, names):
    """Name each returned derivative after its input again (``d_a``), when simplifying renamed it.

    Dropping an ``unbroadcast`` or a copy leaves a rule's unnamed value in its
    place (``mul_d_b_2``); the name it replaced says what the value is.
    """
    result = leaves(ir.result)
    if len(result) != len(names):
        return
    taken = set()
    for v, name in zip(result, names):
        if isinstance(v, Var) and v.hint is None and isinstance(name, AdjointOf) \
                and v.id not in taken:
            v.hint = name
            taken.add(v.id)


def _display_path(filename):
    """The file relative to the working directory when it is below it."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel


def _without_gc(compile_fn):
    """Run a compile with the cyclic garbage collector paused (the outermost one resumes it).

    Compiling builds hundreds of thousands of IR objects that stay alive
    until it ends; each automatic collection rescans all of them, which made
    compile time grow faster than the program (10,000 calls: 4.2 s, 2.8 s
    without collections).  Nothing collectable is made meanwhile that cannot
    wait for the end -- nor should be: a reference cycle would keep all it
    reaches until the collector runs again, so passes recurse through
    module-level functions, never through a nested function calling itself
    (which would hold its tables, as large as the program, to the end;
    ``tests/test_compile_garbage.py``).
    """
    @functools.wraps(compile_fn)
    def run(*args, **kwargs):
        if not gc.isenabled():
            return compile_fn(*args, **kwargs)
        gc.disable()
        try:
            return compile_fn(*args, **kwargs)
        finally:
            gc.enable()
    return run


@_without_gc
def compile_grad(fn, root, args, specs, weights, weight_paths, sens_spec=None,
                 sens_value=None, return_value=False, inputs="all"):
    """Trace, differentiate in reverse mode, simplify and compile.

    ``inputs`` says which inputs get gradients: ``"all"``, ``"first"`` (the
    first argument that has runtime leaves) or ``"none"`` -- only what the
    caller will return is computed.
    """
    t = trace(fn, root, args, specs, weights, weight_paths)
    sens = None
    if sens_spec is not None:
        sens = _sens_structure(t.result, sens_spec, sens_value, t.info)
    wrt_inputs = select_inputs(t.abstract, inputs)
    ir = reverse(t.forward, wrt_inputs + t.weight_vars, sens=sens,
                 name=t.qualname + "_grad" * (t.gradients + 1), return_value=return_value)
    return _finish(ir, t, "s2sad: " + _gradients_of("gradient", t), n_flat=len(wrt_inputs),
                   weights=list(weights))


@_without_gc
def compile_nested(fn, root, args, specs, order, origin=(FN,)):
    """``GradOperation()`` applied ``order`` times to ``fn``, in Taylor mode.

    ``None`` when Taylor mode does not apply (see ``taylor.py``): the caller
    then differentiates the gradient program again, order by order.
    """
    t = trace(fn, root, args, specs, origin=origin)
    wrt = select_inputs(t.abstract, "first")
    if len(wrt) != 1:
        return None
    try:
        objective = taylor_objective(t.forward, wrt[0], order)
    except (Unsupported, S2SADError):    # a JVP rule that cannot take a derivative here
        return None
    pairs = objective.shape_pairs
    objective = pipeline.run(pipeline.OBJECTIVE, objective)
    ir = reverse(objective, wrt, name="%s_grad%d" % (t.qualname, order))
    ir.shape_pairs.extend(pairs)
    return _finish(ir, t, "s2sad: order-%d gradient" % order, n_flat=1, weights=[])


@_without_gc
def compile_jvp(fn, root, args, specs):
    """Trace and differentiate in forward mode w.r.t. every runtime input leaf.

    The compiled function takes the inputs' runtime leaves, the Cell's runtime
    inputs, then one tangent per input leaf, and returns ``(out, t_out)``.
    """
    t = trace(fn, root, args, specs)
    ir = forward(t.forward, t.flat_inputs, name=t.qualname + "_grad" * t.gradients + "_jvp")
    return _finish(ir, t, "s2sad: " + _gradients_of("forward-mode derivative", t),
                   n_flat=len(t.flat_inputs))


def select_inputs(abstract, which):
    """The runtime leaves of the inputs whose gradients are wanted."""
    per_arg = [[v for v in leaves(a) if isinstance(v, Var)] for a in abstract]
    if which == "all":
        return [v for group in per_arg for v in group]
    if which == "first":
        return next((group for group in per_arg if group), [])
    return []


def _sens_structure(result, sens_spec, sens_value, info):
    """Vars for the sens, mirroring the output; a mismatch is the user's error.

    ``sens_spec == "auto"`` mirrors whatever the output is (for the CLI).
    """
    if sens_spec == "auto":
        def mirror(out):
            return tuple(mirror(o) for o in out) if isinstance(out, tuple) else Var("sens")
        return mirror(result)

    def build(out, spec, value, path):
        if isinstance(out, tuple):
            if spec[0] not in ("tuple", "list") or len(spec) - 1 != len(out):
                raise ValueError(
                    "For 'GradOperation', the sens must have the same structure as the "
                    "output: the output%s is a tuple of %d items, but sens is %s"
                    % (path, len(out), _describe_value(value)))
            return tuple(build(o, s, v, "%s[%d]" % (path, i))
                         for i, (o, s, v) in enumerate(zip(out, spec[1:], value)))
        if spec[0] not in ("tensor", "array", "npscalar", "mutable"):
            raise ValueError(
                "For 'GradOperation', the sens%s must be a Tensor matching the output%s, "
                "but got %s" % (path, path, _describe_value(value)))
        return Var("sens")
    return build(result, sens_spec, sens_value, "")


def _describe_value(v):
    if isinstance(v, (tuple, list)):
        return "a %s of %d items" % (type(v).__name__, len(v))
    shape = getattr(v, "shape", None)
    if shape is not None:
        return "%s of shape %s" % (type(v).__name__, list(shape))
    return repr(v)


# -------------------------------------------------------------------- cache
#: compiled entries kept at most (least recently used dropped first); each
#: holds its IR and source, so an unbounded cache grows with every function
MAX_ENTRIES = int(os.environ.get("S2SAD_CACHE_SIZE", "256"))
#: compiles of one function after which a warning says what keeps changing
RECOMPILE_WARNING = 8


def _with_options(key):
    """``key`` and the compile options in force, unless they are the defaults.

    Code compiled with a pass disabled (or Taylor mode off) must never serve
    a call made without; the default options leave the key as it is, so the
    usual lookup hashes nothing more.
    """
    options = current_options()
    return key if options is pipeline.DEFAULT else (key, options)


class GradCache:
    """Compiled adjoints by (function, flags, argument structure, options), each with its guards.

    An entry is reused only when its ``check`` holds: everything compiling
    read (globals, closure cells, attributes, defaults) is as it was.  At
    most ``MAX_ENTRIES`` are kept; what a dropped entry registered (its
    source in ``linecache``) goes with it.  Keys are completed with the
    compile options (``_with_options``), and changing the options bumps
    ``generation`` so that prepared call paths are not reused.
    """

    def __init__(self, what="gradient"):
        self._entries = collections.OrderedDict()     # key -> [Compiled]
        self._count = 0
        self._lock = threading.RLock()
        self._compiles = {}     # the key's function -> (count, last hints and specs, warned)
        self.what = what
        # bumped by ``clear``: callers that keep an entry check it is still cached
        self.generation = 0

    def get(self, key, root, fn=None):
        key = _with_options(key)
        entries = self._entries.get(key)
        if entries:
            for entry in entries:
                if entry.check(root, fn):
                    if len(self._entries) > 1:
                        self._entries.move_to_end(key)
                    return entry
        return None

    def put(self, key, entry, specs=None, family=None, fn=None, root=None):
        """Keep ``entry``; ``family`` is what stays the same across recompiles of one
        function ``fn`` (``key`` less the argument structure), for the recompile
        warning, which also says what the entries already there for ``key`` no
        longer match (read from ``root`` and ``fn``)."""
        with self._lock:
            family = _with_options(key[0] if family is None else family)
            key = _with_options(key)
            stale = [g for e in self._entries.get(key, ())
                     for g in e.guards.failing(root, fn)][:3]
            self._entries.setdefault(key, []).append(entry)
            self._entries.move_to_end(key)
            self._count += 1
            while self._count > max(MAX_ENTRIES, 1):
                self._drop_oldest()
            _note_compile(self, family, entry, specs, _weak(fn), stale)

    def _drop_oldest(self):
        key, entries = next(iter(self._entries.items()))
        old = entries.pop(0)
        if not entries:
            del self._entries[key]
        self._count -= 1
        filename = getattr(old.fn, "__s2sad_filename__", None)
        if filename is not None and not any(
                getattr(e.fn, "__s2sad_filename__", None) == filename
                for es in self._entries.values() for e in es):
            forget_source(filename)
        self.generation += 1    # prepared call paths may hold the dropped entry

    def lock(self):
        return self._lock

    def invalidate_prepared(self):
        """Make callers that kept an entry look it up again (the options changed)."""
        with self._lock:
            self.generation += 1

    def clear(self):
        with self._lock:
            for entries in self._entries.values():
                for e in entries:
                    forget_source(getattr(e.fn, "__s2sad_filename__", ""))
            self._entries.clear()
            self._compiles.clear()
            self._count = 0
            self.generation += 1

    def __len__(self):
        return self._count


def _note_compile(cache, fn_key, entry, specs, function_ref=None, stale=()):
    """Log a compile when asked (``S2SAD_LOG_COMPILES=1``); warn when one function recompiles often.

    The warning names the arguments whose kind or Python value changed
    between the last two compiles, or says that something read while
    compiling (a global, a closure variable, an attribute) changed.
    """
    count, last, warned, ref = cache._compiles.get(fn_key, (0, None, False, None))
    if ref is not None and ref() is None:     # another function, at a reused id
        count, last, warned = 0, None, False
    count += 1
    now = _leaf_specs(getattr(entry, "hints", None), specs)
    changed = [name for name, spec in now if last is not None and
               dict(last).get(name, spec) != spec]
    display = getattr(entry, "display", "?")
    where = "%s:%s" % (_display_path(entry.info.filename), entry.info.tree.lineno) \
        if getattr(entry, "info", None) is not None else "?"
    if os.environ.get("S2SAD_LOG_COMPILES"):
        why = "first compile" if last is None else (
            "argument%s %s changed" % ("s" if len(changed) > 1 else "",
                                       ", ".join(repr(n) for n in changed))
            if changed else _what_changed(stale))
        print("s2sad: compiling the %s of %s (%s), compile #%d: %s"
              % (cache.what, display, where, count, why), file=sys.stderr)
    if count >= RECOMPILE_WARNING and not warned:
        warned = True
        if changed:
            why = ("the argument%s %s changed between calls; a Python number is a constant "
                   "compiled into the code, so pass it as an array (np.asarray(...)) or wrap "
                   "it in s2sad.mutable(...) to make it a runtime value"
                   % ("s" if len(changed) > 1 else "", ", ".join(repr(n) for n in changed)))
        else:
            why = _what_changed(stale) + " between calls"
        warnings.warn("s2sad: the %s of %s (%s) has been compiled %d times: %s. Set "
                      "S2SAD_LOG_COMPILES=1 to see each compile." % (cache.what, display, where,
                                                                     count, why),
                      RecompileWarning, stacklevel=_user_stacklevel())
    cache._compiles[fn_key] = (count, now, warned, function_ref)
    while len(cache._compiles) > 4 * max(MAX_ENTRIES, 1):
        del cache._compiles[next(iter(cache._compiles))]


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_stacklevel():
    """The ``stacklevel`` of the first frame outside s2sad (the user's call), for ``warn``."""
    frame, level = sys._getframe(2), 2
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE)
                                 or frame.f_code.co_filename.startswith("<s2sad")):
        frame, level = frame.f_back, level + 1
    return level


def _what_changed(stale):
    if stale:
        return "changed: %s" % ", ".join(stale)
    return "something it read while compiling (a global, a closure variable, an attribute " \
        "or a default) changed"


def _weak(obj):
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


class RecompileWarning(UserWarning):
    """One function was compiled again and again (a Python number argument that changes)."""


def _leaf_specs(hints, specs):
    """``(name, spec)`` of each argument leaf, names from the parameters' hints."""
    out = []
    hints = list(hints or ())
    hints += ["sens"] * (len(specs or ()) - len(hints))     # a sens follows the inputs
    for h, s in zip(hints, specs or ()):
        _leaves_into(out, h, s)
    return out


def _leaves_into(out, hint, spec):
    # module-level, not a closure calling itself: that would be a reference cycle
    if isinstance(spec, tuple) and spec and spec[0] in ("tuple", "list"):
        named = isinstance(hint, tuple) and len(hint) == len(spec) - 1
        for i, s in enumerate(spec[1:]):
            _leaves_into(out, hint[i] if named else "%s[%d]" % (hint, i), s)
    else:
        out.append((hint if isinstance(hint, str) else str(hint), spec))


cache = GradCache()


def clear_caches():
    """Drop every compiled gradient and what compiling kept (parsed sources, sources).

    Compiled code is cached by function and argument structure, guarded by
    what it read; this frees the memory it holds (each entry is also dropped
    on its own once ``S2SAD_CACHE_SIZE`` newer ones exist).
    """
    from ..frontend import parse
    for c in list(_caches):
        c.clear()
    parse.clear_cache()
    forget_sources()    # also those of code compiled outside the caches (rules, probes)


_caches = [cache]


@pipeline.on_change
def _options_changed():
    for c in _caches:
        c.invalidate_prepared()


def register_cache(c):
    """Another ``GradCache`` (forward mode's) that ``clear_caches`` empties too."""
    _caches.append(c)
    return c
