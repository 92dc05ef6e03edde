"""``jit`` (formerly ``ms_function``): run a function or ``construct`` as compiled forward code.

The decorated function is traced and compiled on its first call with given
argument kinds (``driver.compile_forward``: no derivative, the program
itself) and the compiled code runs afterwards.  Entries are kept in a
``GradCache`` keyed like gradients' (code, Cell class, argument specs) and
guarded by everything compiling read, so a rebound global or attribute
recompiles; Parameters are runtime inputs, read on every call.

Called inside code being compiled (a gradient, another ``jit``), the wrapper
stages itself as the user's function (``__s2sad_stage__``): the frontend
inlines what it wraps, so gradients flow through it.

``@jit`` on ``construct`` leaves the class's ``construct`` the user's plain
function (what gradients, the frontend and ``get_source`` read) and marks
the class (``__s2sad_jit__``): ``Cell.__call__`` runs the compiled forward.
"""
from __future__ import annotations

import functools
import inspect
import types
import warnings
from typing import Any, Callable, Optional

from .. import driver as G
from .. import tracebacks
from ..compat import signature
from ..errors import S2SADError
from ..frontend.calls import _owner, _step
from ..frontend.guards import describe
from ..ir import Const
from ..nn.cell import Cell
from .args import cell_with_effects, reads_tensors, wrap_out
from .gradfunction import fn_key
from .functional import user_param_names
from .inputs import UnfitInput, name_input

_forward_cache = G.register_cache(G.GradCache("compiled forward"))


class JitFunction:
    """What ``jit(fn)`` returns: compiles ``fn`` per argument kinds, then runs the compiled code.

    ``root`` is the Cell a method is bound to (its ``self``), ``None`` for a
    function.  Reading the decorated method from an instance binds it
    (``__get__``), as a function would be.
    """

    def __init__(self, fn, root=None, last=None):
        if not inspect.isfunction(fn):
            raise TypeError("For 'jit', the decorated object must be a Python function, a "
                            "method or a Cell, but got %s" % type(fn).__name__)
        self.fn = fn
        self.root = root
        # the last compiled entry, shared with the methods bound from this one (``get_source``)
        self._last = [None] if last is None else last
        self.fn_key = fn_key(fn)
        functools.update_wrapper(self, fn)     # name, docstring and ``__wrapped__``
        self._params = list(signature(fn).parameters.values())[1 if root is not None else 0:]

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return JitFunction(self.fn, obj, self._last)

    def __set_name__(self, owner, name):
        """``@jit`` on a Cell's ``construct``: the class keeps the user's function and is marked.

        Gradients, the frontend and ``Cell`` subclasses read ``type(cell).construct``
        as a function; ``Cell.__call__`` finds the mark and runs the compiled forward.
        """
        if name == "construct" and issubclass(owner, Cell):
            setattr(owner, name, self.fn)
            owner.__s2sad_jit__ = self

    def __s2sad_stage__(self, builder, args, kwargs, loc, path):
        """Called inside compiled code: inline the user's function (gradients flow through)."""
        self_value = None
        if self.root is not None:
            self_value = builder.lift(self.root, _owner(path))
        elif _stages_itself(self.fn):     # ``jit(vmap(f))``: what vmap stages, not its loop
            return builder.call(Const(self.fn, _step(path, "fn")), list(args), dict(kwargs), loc)
        return builder.call_function(self.fn, list(args), dict(kwargs), loc,
                                     self_value=self_value, path=_step(path, "fn"))

    def __call__(self, *args, **kwargs):
        return self.call(self.root, args, kwargs)

    def call(self, root, args, kwargs):
        """Run the compiled forward for ``root`` (the Cell, or ``None``) and these arguments."""
        args = self._positional(args, kwargs)
        try:
            entry, specs = self._compiled(root, args)
            if entry.eager_only:
                return self.fn(*((root,) if root is not None else ()), *args)
            flat = G.flatten_runtime(args, specs)
            extra = entry.inputs.read(root, self.fn) if entry.inputs.entries else ()
            return wrap_out(entry.fn(*flat, *extra), entry.tensor_out)
        except UnfitInput as err:
            raise TypeError("For 'jit', %s" % name_input(err, args, user_param_names(self.fn))) \
                from None
        except S2SADError as err:
            raise tracebacks.for_user(err)

    def compiled(self, *args, **kwargs):
        """The ``Compiled`` forward for these arguments (compiling if needed): ``get_source``."""
        try:
            return self._compiled(self.root, self._positional(args, kwargs))[0]
        except S2SADError as err:
            raise tracebacks.for_user(err)

    def _positional(self, args, kwargs):
        """Keyword arguments moved to their positions; the call checked against the signature."""
        if not kwargs:
            return args
        try:
            bound = inspect.Signature(self._params).bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError("%s(): %s" % (self.fn.__qualname__, err)) from None
        if bound.kwargs:
            raise TypeError("%s(): s2sad.jit passes arguments by position; %s cannot be, "
                            "so call the function without jit or make it positional"
                            % (self.fn.__qualname__, ", ".join(map(repr, bound.kwargs))))
        return bound.args

    def _compiled(self, root, args):
        specs = tuple(map(G.arg_spec, args))
        key = (self.fn_key, type(root) if root is not None else None, specs)
        entry = _forward_cache.get(key, root, self.fn)
        if entry is None:
            with _forward_cache.lock():
                entry = _forward_cache.get(key, root, self.fn)
                if entry is None:
                    entry = G.compile_forward(self.fn, root, args, specs)
                    entry.tensor_out = reads_tensors(specs, entry)
                    entry.eager_only = _eager_only(entry, root, self.fn)
                    _forward_cache.put(key, entry, specs, family=(id(self.fn), key[1]),
                                       fn=self.fn, root=root)
        self._last[0] = entry
        return entry, specs

    def __s2sad_target__(self):
        """What gradients of the jitted function differentiate: the user's function or method."""
        return self.fn if self.root is None else types.MethodType(self.fn, self.root)

    def __s2sad_compiled__(self, *args):
        """``get_source(jitted, *args)``: the compiled forward (the last one without ``args``)."""
        return self.compiled(*args) if args else self._last[0]

    @property
    def last(self):
        """The entry the last call compiled or found (``None`` before the first call)."""
        return self._last[0]

    def __repr__(self):
        return "<s2sad.jit of %s>" % self.fn.__qualname__


def _eager_only(entry, root, fn):
    """Whether the program uses a Cell whose eager call does more than its ``construct``
    (``args.cell_with_effects``): the call then runs eagerly, with a warning when the
    entry is made."""
    found = cell_with_effects(entry, root, fn)
    if found is None:
        return False
    path, value = found
    warnings.warn(
        "s2sad.jit: %s uses %s (%s), whose eager call does more than its construct "
        "(e.g. BatchNorm updating its running statistics), which compiled code would "
        "not do; %s runs eagerly" % (fn.__qualname__, type(value).__name__,
                                     describe(path), fn.__qualname__),
        JitEagerWarning, stacklevel=5)
    return True


class JitEagerWarning(UserWarning):
    """A jitted function runs eagerly: it uses a Cell with effects compiled code cannot carry."""


def jit(function: Optional[Callable[..., Any]] = None, *args: Any, fn=None,
        **options: Any) -> Any:
    """Compile ``function`` (a function, a method or a Cell) and run the compiled forward.

    As MindSpore's ``mindspore.jit``: ``@jit``, ``@jit(...)`` or ``jit(fn)``.
    MindSpore's other arguments (``mode``, ``input_signature``, ``hash_args``,
    ``jit_config``, ``compile_once``, ``capture_mode``, ``jit_level``,
    ``dynamic``, ``fullgraph``, ``backend`` and backend options) are accepted
    and have no effect: the compiled code is the same for any of them.
    Unsupported syntax raises a ``CompileError`` at the user's line, as
    MindSpore raises.
    """
    del args, options     # MindSpore's settings (``jit(fn, "PSJit", ...)`` too): no effect
    target = function if function is not None else fn
    if target is None:
        return jit
    return _jit_of(target)


def _jit_of(target):
    if isinstance(target, JitFunction):
        return target
    if isinstance(target, Cell):
        return JitFunction(type(target).construct, target)
    if inspect.ismethod(target) and isinstance(target.__self__, Cell):
        return JitFunction(target.__func__, target.__self__)
    if not callable(target):
        raise TypeError("For 'jit', the decorated object must be a function, a method or a "
                        "Cell, but got %s" % type(target).__name__)
    return JitFunction(target)


def ms_function(fn: Optional[Callable[..., Any]] = None, *args: Any, **options: Any) -> Any:
    """MindSpore's former name of ``jit`` (same behaviour)."""
    return jit(fn, *args, **options)


def jit_class(cls: type) -> type:
    """MindSpore's mark for classes whose instances compiled code uses: the class unchanged.

    s2sad reads any object's attributes while compiling (and guards them),
    so no mark is needed.
    """
    if not isinstance(cls, type):
        raise TypeError("For 'jit_class', the decorated object must be a class, but got %s"
                        % type(cls).__name__)
    return cls


ms_class = jit_class


def _stages_itself(fn):
    """Whether ``fn`` is one of s2sad's transforms, which compiled code stages by its hook
    (``__s2sad_stage__``) rather than by walking its source."""
    return getattr(type(fn), "__s2sad_stage__", None) is not None or (
        isinstance(fn, types.FunctionType) and "__s2sad_stage__" in fn.__dict__)
