"""GradOperation with MindSpore's semantics, on top of the compiled adjoints."""
from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable

import numpy as np

from .. import tracebacks
from ..compat import signature
from .. import driver as G
from ..driver.nested import stage_gradient
from ..errors import S2SADError
from ..tensor import Tensor, Weights, _wrap as _tensor_of
from ..frontend import resolve
from ..frontend.guards import FN, Same


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise TypeError("For 'GradOperation', the '%s' should be bool, but got %s"
                        % (name, type(value).__name__))


class GradOperation:
    """Builds gradient functions: ``GradOperation(get_all, get_by_list, sens_param)(net)``.

    - default: the gradient of the first input, as a bare Tensor (``()`` if none);
    - ``get_all``: a tuple with the gradient of every input;
    - ``get_by_list``: gradients of ``weights`` mirroring them (tuple/list -> tuple,
      one Parameter -> bare Tensor); with ``get_all`` too: ``(inputs, weights)``;
    - ``sens_param``: the last argument is the sens, mirroring the output; by
      default every output leaf gets a sens of ones.
    """

    def __init__(self, get_all: bool = False, get_by_list: bool = False,
                 sens_param: bool = False) -> None:
        _check_bool("get_all", get_all)
        _check_bool("get_by_list", get_by_list)
        _check_bool("sens_param", sens_param)
        self.get_all = get_all
        self.get_by_list = get_by_list
        self.sens_param = sens_param

    def __call__(self, fn: Callable[..., Any], weights: Weights = None) -> GradFunction:
        if self.get_by_list and weights is None:
            raise TypeError("For 'GradOperation', 'weights' must be given when 'get_by_list' "
                            "is True: call grad_op(net, weights)")
        return GradFunction(fn, weights if self.get_by_list else None, self)

    def __repr__(self):
        return "GradOperation(get_all=%s, get_by_list=%s, sens_param=%s)" % (
            self.get_all, self.get_by_list, self.sens_param)


def _weights_list(weights):
    """The Parameters to differentiate and how to shape their gradients."""
    from ..tensor import Parameter
    if weights is None:
        return [], "empty"
    if isinstance(weights, Parameter):
        return [weights], "single"
    if isinstance(weights, (tuple, list)):
        for w in weights:
            if not isinstance(w, Parameter):
                raise TypeError("For 'GradOperation', every item of 'weights' must be a "
                                "Parameter, but got %s" % type(w).__name__)
        return list(weights), "tuple"
    raise TypeError("For 'GradOperation', 'weights' must be a Parameter, a ParameterTuple "
                    "or a list of Parameters, but got %s" % type(weights).__name__)


def _weight_paths(root, weights):
    """Attribute paths of ``weights`` inside ``root`` (``None`` when not found)."""
    if root is None:
        return [None] * len(weights)
    found = {}
    for name, p in root.parameters_and_names():
        found.setdefault(id(p), _path_of(root, name, p))
    return [found.get(id(w)) for w in weights]


def _path_of(root, dotted, param):
    path = tuple(int(s) if s.isdigit() else s for s in dotted.split("."))
    try:
        if resolve.read_path(root, path) is param:
            return path
    except (AttributeError, IndexError, KeyError, TypeError):
        pass
    # registered under a name that is not its attribute path: search attributes
    return _search(root, param, (), set())


def _search(obj, param, path, seen):
    from ..nn.cell import Cell
    if id(obj) in seen:
        return None
    seen.add(id(obj))
    for name, value in vars(obj).items():
        if value is param:
            return path + (name,)
        if isinstance(value, Cell):
            hit = _search(value, param, path + (name,), seen)
            if hit:
                return hit
    return None


def _wrap_like(grad, like):
    """Give a gradient the type and dtype of the input it belongs to.

    A cast that would change a value (a fractional gradient of an integer
    input, a complex input) raises ``UnfitInput`` instead.
    """
    if isinstance(like, Tensor):
        return _tensor_of(_cast_exact(grad, like._data.dtype, like))
    if isinstance(like, np.ndarray):
        return _cast_exact(grad, like.dtype, like)
    if isinstance(like, np.generic):
        return type(like)(_cast_exact(grad, like.dtype, like))
    if isinstance(like, G.Mutable):
        inner = like.value
        if isinstance(inner, (tuple, list)):
            return grad
        if isinstance(inner, (Tensor, np.ndarray, np.generic)):
            return _wrap_like(grad, inner)
        if isinstance(inner, (bool, int, float, complex)):
            return type(inner)(_cast_exact(grad, np.dtype(type(inner)), inner))
    return grad


class UnfitInput(TypeError):
    """An input whose gradient s2sad cannot return exactly in its own dtype.

    Raised where a gradient meets its input, which knows the value but not
    the argument; the public call that received ``like`` re-raises it as a
    ``TypeError`` naming the argument (``name_input``).
    """

    def __init__(self, like, problem):
        super().__init__(problem % "an input")
        self.like = like
        self.problem = problem


_COMPLEX = ("%s is complex (%s): s2sad does not differentiate complex values yet; "
            "pass the real and imaginary parts as two real inputs")


def _cast_exact(grad, dtype, like):
    """``grad`` as ``dtype``, unless the cast would change a value.

    A float gradient of an integer or bool input is kept when every element
    survives the cast unchanged (``x * y`` on integers: exact integers);
    otherwise returning it in the input's dtype would truncate it silently.
    """
    g = np.asarray(grad)
    if dtype.kind == "c" or g.dtype.kind == "c":
        raise UnfitInput(like, _COMPLEX % ("%s", dtype if dtype.kind == "c" else g.dtype))
    if g.dtype == dtype:
        return g
    out = g.astype(dtype)
    if dtype.kind in "iub" and not np.array_equal(out, g):
        raise UnfitInput(like, _truncation_message(g, dtype))
    return out


def _truncation_message(g, dtype):
    bad = g[np.asarray(g.astype(dtype) != g)] if g.ndim else g
    example = np.ravel(bad)[0] if np.size(bad) else g
    return ("the gradient of %%s is not exact in its dtype %s (it has the value %r, which "
            "%s would change): s2sad will not truncate a gradient. Pass that input as "
            "floating point (for example x.astype(np.float64)) to get its gradient"
            % (dtype, float(example), dtype))


def refuse_complex(values, in_mutable=False):
    """Raise ``UnfitInput`` if a runtime leaf of ``values`` is complex.

    Checked on the general path of each call (compiled code does not depend
    on dtypes); a Python ``complex`` is a constant unless wrapped in ``mutable``.
    """
    for v in values:
        data = getattr(v, "_data", v)
        if isinstance(data, G.Mutable):
            refuse_complex([data.value], True)
        elif isinstance(data, (tuple, list)):
            refuse_complex(data, in_mutable)
        elif isinstance(data, (np.ndarray, np.generic)) and data.dtype.kind == "c" \
                or in_mutable and isinstance(data, complex):
            raise UnfitInput(v, _COMPLEX % ("%s", np.asarray(data).dtype))


def name_input(err, args, names=None, positions=None, sens=None, noun="the input"):
    """``err`` (an ``UnfitInput``) as a TypeError naming the argument ``err.like`` is in.

    ``positions[i]`` is the user's position of ``args[i]`` (default ``i``) and
    ``names`` the parameter names by position; ``sens`` the sens argument;
    ``noun`` what the arguments are (``the tangent`` for ``jvp``'s).
    """
    from ..tensor import Parameter
    if isinstance(err.like, Parameter):
        what = "Parameter '%s'" % err.like.name
    else:
        what = "an input"
        for i, a in enumerate(args):
            if _contains(a, err.like):
                what = describe_input(positions[i] if positions is not None else i, names,
                                      noun)
                break
    if sens is not None and _contains(sens, err.like):
        what = "the sens (the last argument)"
    return TypeError(err.problem % what)


def describe_input(position, names, noun="the input"):
    """``the input at position 1 ('y')`` (the name when known)."""
    name = names[position] if names is not None and position < len(names) else None
    return "%s at position %d%s" % (noun, position, " ('%s')" % name if name else "")


def warn_constants(gf, specs, positions, names):
    """Warn once per gradient function and argument structure that every gradient asked
    for is of a constant, so an empty result is not mistaken for one."""
    warned = gf.__dict__.setdefault("_warned_constant_specs", set())
    if specs in warned:
        return
    warned.add(specs)
    which = ", ".join(describe_input(p, names) for p in positions)
    warnings.warn(
        "every gradient asked for is of a constant (s2sad treats Python numbers, and "
        "tuples or lists without arrays, as constants): %s; the result is (). Pass "
        "Tensors or arrays, or wrap a Python number in s2sad.mutable(...), to get "
        "gradients" % which, UserWarning, stacklevel=tracebacks.user_frame(2)[1])


def _contains(value, item):
    if value is item:
        return True
    if isinstance(value, G.Mutable):
        return _contains(value.value, item)
    if isinstance(value, (tuple, list)):
        return any(_contains(v, item) for v in value)
    return False


def _check_grad_shape(grad, like, what):
    like = getattr(like, "_data", like)
    # arrays' own attribute first: np.shape costs a dispatch on every gradient of every call
    shape = like.shape if type(like) is np.ndarray else np.shape(like)
    if (grad.shape if type(grad) is np.ndarray else np.shape(grad)) != shape:
        raise AssertionError(
            "internal error: the gradient of %s has shape %s but the input has shape %s; "
            "please report this with the program that triggered it"
            % (what, list(np.shape(grad)), list(shape)))
    return grad


def _regroup(values, specs, flat_grads, which="all"):
    """Rebuild per-argument gradient structures from the flat list.

    ``which`` matches the compile: ``"first"`` regroups only the first
    argument with runtime leaves, ``"none"`` nothing.
    """
    if which == "none":
        return ()
    it = iter(flat_grads)
    out = []
    for v, s in zip(values, specs):
        if G.has_runtime_leaves(s):
            out.append(_build(it, v, s))
            if which == "first":
                break
    return tuple(out)


def _build(it, value, spec):
    # a module-level function, not a closure: a recursive closure is a reference
    # cycle, which would keep the gradients alive until the next collection
    kind = spec[0]
    if kind in ("tensor", "array", "npscalar"):
        g = next(it)
        if type(g) is np.ndarray and type(value) is np.ndarray and g.shape == value.shape \
                and g.dtype == value.dtype:
            return g            # the common case, without the general checks' calls
        _check_grad_shape(g, value, "an input")
        return _wrap_like(g, value)
    if kind == "mutable":
        inner = value.value
        if isinstance(inner, (tuple, list)):
            return tuple(_wrap_like(next(it), v) for v in inner)
        return _wrap_like(next(it), value)
    if kind in ("tuple", "list"):
        return tuple(_build(it, v, s) for v, s in zip(value, spec[1:]))
    return None


def _fn_key(fn, depth=0):
    """What the cache files a function's entries under: its code, and its closure's functions.

    Closures made anew (a loss function per training step) share their code,
    so they share compiled entries; what each captured is read or guarded
    through its cells on every call.  Functions in the closure take part, so
    ``s2sad.grad``'s wrapper of one function is filed apart from another's.
    """
    if isinstance(fn, GradFunction):
        return ("grad", fn._fn_key)
    code = getattr(fn, "__code__", None)
    if code is None or depth > 4:
        return fn
    code = Same(code)       # code objects of identical functions in two files compare equal
    inner = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, GradFunction) or callable(value) and hasattr(value, "__code__"):
            inner.append(_fn_key(value, depth + 1))
    return (code, tuple(inner)) if inner else code


def _as_function(grad_fn):
    """A gradient function as a plain function, so it can be differentiated again.

    It keeps the differentiated function's parameter names and is named
    ``grad_<name>``; generated code and headers name the user's function
    instead (``__s2sad_named_after__``), counting the gradients in between.
    """
    def gradient_of(*args):
        return grad_fn(*args)
    params = getattr(grad_fn.fn, "__s2sad_params__", None)     # a gradient of a gradient
    if params is None:
        params = list(signature(grad_fn.fn).parameters)
        params = params[1:] if grad_fn.root is not None else params
    gradient_of.__s2sad_params__ = params
    inner = getattr(grad_fn.fn, "__qualname__", "f").replace("<locals>.", "")
    gradient_of.__qualname__ = gradient_of.__name__ = "grad_" + inner.replace(".", "_")
    # generated code is named after, and located in, the user's function, not this wrapper
    gradient_of.__s2sad_gradients__ = getattr(grad_fn.fn, "__s2sad_gradients__", 0) + 1
    below = getattr(grad_fn.fn, "__s2sad_named_after__", None)
    gradient_of.__s2sad_named_after__ = lambda root: (
        below(grad_fn.root) if below is not None
        else grad_fn.fn if inspect.isfunction(grad_fn.fn) else gradient_of)
    return gradient_of



class GradFunction:
    """The callable ``GradOperation(...)(fn)`` returns; compiles on first call."""

    def __s2sad_stage__(self, builder, args, kwargs, loc, path):
        """Called inside differentiated code: the frontend stages it (higher order)."""
        return stage_gradient(builder, self, args, kwargs, loc, path)

    def __init__(self, fn, weights, grad_op):
        from ..nn.cell import Cell
        self.target = fn
        self.grad_op = grad_op
        self.weights = weights
        self._weights, self._weights_kind = _weights_list(weights)
        if isinstance(fn, GradFunction):
            fn = _as_function(fn)
        if isinstance(fn, Cell):
            self.root = fn
            self.fn = type(fn).construct
        elif inspect.ismethod(fn) and isinstance(fn.__self__, Cell):
            self.root = fn.__self__
            self.fn = fn.__func__
        elif callable(fn):
            self.root = None
            self.fn = fn
        else:
            raise TypeError("GradOperation expects a Cell or a function, but got %s"
                            % type(fn).__name__)
        sig = signature(self.fn)
        params = list(sig.parameters.values())
        if self.root is not None and params and params[0].kind in (
                params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
            params = params[1:]     # self (a decorator's ``*args`` takes it instead)
        self._varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
        self._nparams = len([p for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                             p.POSITIONAL_OR_KEYWORD)])
        self._nrequired = len([p for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                               p.POSITIONAL_OR_KEYWORD)
                               and p.default is p.empty])
        self.last = None
        self._last_paths = None
        self._found = set()         # weights found in the Cell on some call
        self._fast = None
        self._order = self._nested_order()
        self._fn_key = _fn_key(self.fn)

    def _nested_order(self):
        """n when this is ``GradOperation()`` applied n >= 2 times to a plain function.

        Such a chain is compiled in Taylor mode (``ad/taylor.py``) when it can be.
        """
        order, g = 1, self
        while True:
            op = g.grad_op
            if op.get_all or op.get_by_list or op.sens_param or g._weights:
                return None
            if not isinstance(g.target, GradFunction):
                break
            order, g = order + 1, g.target
        if order < 2 or g.root is not None:
            return None
        self._base = g
        # the innermost function, reached from this one through each ``gradient_of``
        step = ("__closure__", self.fn.__code__.co_freevars.index("grad_fn"), "cell_contents",
                "fn")
        self._base_origin = (FN,) + step * (order - 1)
        return order

    def _split(self, args):
        n = len(args)
        extra = 1 if self.grad_op.sens_param else 0
        if not self._varargs and not (self._nrequired + extra <= n <= self._nparams + extra):
            raise TypeError("The parameters number of the function is %d, but the number of "
                            "provided arguments is %d." % (self._nparams + extra, n))
        if self.grad_op.sens_param:
            if n == 0:
                raise TypeError("The parameters number of the function is %d, but the number "
                                "of provided arguments is 0." % (self._nparams + 1))
            return args[:-1], args[-1]
        return args, None

    def compiled(self, *args):
        """The ``Compiled`` adjoint for these arguments (compiling if needed)."""
        inputs, sens = self._split(args)
        try:
            return self._compiled(inputs, sens)[0]
        except S2SADError as err:
            raise tracebacks.for_user(err)

    def compile_symbolic(self, n_inputs=None):
        """Compile assuming every required input is a Tensor (no example values needed).

        Generated code does not depend on shapes, so this is the code a call
        with Tensor arguments runs; the CLI uses it.  ``n_inputs`` overrides the
        count read from the signature (for a function taking ``*args``).
        """
        inputs = [None] * (self._nrequired if n_inputs is None else n_inputs)
        specs = tuple(("tensor",) for _ in inputs)
        sens_spec = "auto" if self.grad_op.sens_param else None
        return self._compiled(inputs, None, specs, sens_spec)[0]

    def _compiled(self, inputs, sens, specs=None, sens_spec=None):
        if specs is None:
            specs = tuple(map(G.arg_spec, inputs))
            sens_spec = G.arg_spec(sens) if self.grad_op.sens_param else None
        paths = self._paths()
        which = self._which_inputs()
        key = (self._fn_key, type(self.root) if self.root is not None else None, specs,
               sens_spec, which, paths,
               tuple(id(w) for w, p in zip(self._weights, paths) if p is None),
               self._order is not None and G.current_options().taylor)
        entry = G.cache.get(key, self.root, self.fn)
        if entry is None:
            with G.cache.lock():
                entry = G.cache.get(key, self.root, self.fn)
                if entry is None:
                    entry = self._compile(inputs, sens, specs, sens_spec, paths, which)
                    # recompiles are counted per function object and flags (a factory's
                    # closures, another GradOperation, are other functions)
                    family = (id(self.fn), self.grad_op.sens_param) + key[1:2] + key[4:]
                    named = specs + (sens_spec,) if self.grad_op.sens_param else specs
                    G.cache.put(key, entry, named, family=family, fn=self.fn, root=self.root)
        return entry, specs

    def _compile(self, inputs, sens, specs, sens_spec, paths, which):
        """A new ``Compiled``: in Taylor mode for a chain of plain gradients when it applies."""
        if self._order is not None and G.current_options().taylor:
            entry = G.compile_nested(self._base.fn, None, inputs, specs, self._order,
                                     origin=self._base_origin)
            if entry is not None:
                return entry
        return G.compile_grad(self.fn, self.root, inputs, specs, self._weights, paths,
                              sens_spec=sens_spec, sens_value=sens, inputs=which)

    def _paths(self):
        """The weights' attribute paths in the Cell, searched again only when they moved.

        Searching walks every Parameter of the Cell, so the last answer is
        kept and reused while each path still leads to its weight.
        """
        if self.root is None:
            return (None,) * len(self._weights)
        paths = self._last_paths
        if paths is not None:
            try:
                if all(resolve.read_path(self.root, p) is w
                       for p, w in zip(paths, self._weights)):
                    return paths
            except (AttributeError, IndexError, KeyError, TypeError):
                pass
        paths = tuple(_weight_paths(self.root, self._weights))
        lost = [w for i, (w, p) in enumerate(zip(self._weights, paths))
                if p is None and i in self._found]
        if lost:
            raise ValueError(
                "For 'GradOperation', the Parameter '%s' in 'weights' is no longer held by %s "
                "(an attribute was given a new Parameter), so its gradient would be zero; "
                "create the gradient function again with the Cell's current parameters, e.g. "
                "GradOperation(get_by_list=True)(net, net.trainable_params())"
                % (lost[0].name, type(self.root).__name__))
        self._found.update(i for i, p in enumerate(paths) if p is not None)
        # a weight not found might be found later: only a complete answer is kept
        self._last_paths = paths if None not in paths else None
        return paths

    def __call__(self, *args):
        try:
            fast = self._fast
            if fast is not None and fast.matches(self, args):
                return fast.run(self, args)
            return self._general(args)
        except UnfitInput as err:
            sens = args[-1] if self.grad_op.sens_param and args else None
            raise name_input(err, args, self.param_names(), sens=sens) from None
        except S2SADError as err:
            raise tracebacks.for_user(err)

    def _general(self, args):
        """A call the prepared path does not take: compile if needed and prepare it."""
        inputs, sens = self._split(args)
        result = self._call(inputs, sens)
        self._fast = _FastPath.make(self, args)
        return result

    def param_names(self):
        """The differentiated function's positional parameter names (for messages)."""
        names = getattr(self.fn, "__s2sad_params__", None)
        if names is None:
            try:
                names = list(signature(self.fn).parameters)
            except (TypeError, ValueError):
                return None
            names = names[1:] if self.root is not None else names
        return names

    def _call(self, inputs, sens, specs=None):
        """Compile if needed, run the adjoint, shape the gradients (``specs`` if known)."""
        sens_spec = None
        if specs is None:
            specs = tuple(map(G.arg_spec, inputs))
        if self.grad_op.sens_param:
            sens_spec = G.arg_spec(sens)
        refuse_complex(inputs)
        if sens is not None:
            refuse_complex([sens])
        if not self.grad_op.get_by_list and self._check_constants(inputs, specs):
            return ()       # no input gets a gradient: nothing to compile
        entry, specs = self._compiled(inputs, sens, specs, sens_spec)
        self.last = entry
        # plain arrays (the common case) are their own runtime leaves: nothing to walk
        arrays = all(s is G.ARRAY_SPEC for s in specs)
        flat = inputs if arrays else G.flatten_runtime(inputs, specs)
        extra = entry.inputs.read(self.root, self.fn) if entry.inputs.entries else ()
        sens_flat = G.flatten_runtime([sens], [sens_spec]) if self.grad_op.sens_param else ()
        grads = entry.fn(*flat, *extra, *sens_flat)
        n_in = entry.n_flat
        which = self._which_inputs()
        if arrays and which != "none":
            input_grads = tuple(_wrap_like(_check_grad_shape(g, v, "an input"), v)
                                for g, v in zip(grads[:n_in], inputs))
        else:
            input_grads = _regroup(inputs, specs, grads[:n_in], which)
        weight_grads = []
        for g, w in zip(grads[n_in:], self._weights):
            _check_grad_shape(g, w, "Parameter '%s'" % w.name)
            weight_grads.append(_wrap_like(g, w))
        return self._shape_result(input_grads, weight_grads)

    def constant_first_message(self, kind):
        """Why the default result cannot be given when the first input, a ``kind``, is a
        constant and a later one is not (also raised where the call is inlined)."""
        return ("GradOperation() returns the gradient of the first input, but %s is a %s, "
                "which s2sad treats as a constant (no gradient); pass a Tensor or an array, "
                "wrap a Python number in s2sad.mutable(...), or use "
                "GradOperation(get_all=True) for the gradients of every non-constant input"
                % (describe_input(0, self.param_names()), kind))

    def _check_constants(self, inputs, specs):
        """Python numbers are constants (no gradient): say so rather than shift positions.

        The default result is the first input's gradient: when that input is a
        constant and a later one is not, the later one's gradient would read
        as the first's, so it is an error.  When no input gets a gradient the
        result is ``()`` (as in MindSpore), with a warning once per structure.
        """
        varying = [G.has_runtime_leaves(s) for s in specs]
        if not self.grad_op.get_all and varying and not varying[0] and any(varying):
            raise TypeError(self.constant_first_message(type(inputs[0]).__name__))
        if varying and not any(varying):
            warn_constants(self, specs, range(len(inputs)), self.param_names())
            return True
        return False

    def _which_inputs(self):
        if self.grad_op.get_all:
            return "all"
        return "none" if self.grad_op.get_by_list else "first"

    def _shape_result(self, input_grads, weight_grads):
        op = self.grad_op
        if op.get_by_list:
            if self._weights_kind == "single":
                wg = weight_grads[0]
            else:
                wg = tuple(weight_grads)
            if op.get_all:
                return (input_grads, wg)
            return wg
        if op.get_all:
            return input_grads
        return input_grads[0] if input_grads else ()


_ndarray = np.ndarray


class _FastPath:
    """The call path of a function of plain arrays or Tensors, prepared once.

    Valid while the arguments have the same exact types (``np.ndarray`` or
    ``Tensor``) in the same count, the flags are unchanged, the cache has
    not been cleared since and the entry's guards hold; any other call takes
    the general path (which may prepare a new one).  Only plain functions
    without weights, extra runtime inputs (global arrays) or a Cell qualify.  A Tensor is passed as its array, and its
    gradient comes back a Tensor.
    """

    __slots__ = ("types", "arrays_only", "flags", "generation", "entry", "which", "check")

    @staticmethod
    def make(gf, args):
        entry = gf.last
        op = gf.grad_op
        if gf.root is not None or gf._weights or entry is None or entry.inputs.entries \
                or op.get_by_list or len(args) <= op.sens_param:
            return None
        types = tuple(map(type, args))
        if any(t is not _ndarray and t is not Tensor for t in types):
            return None
        fast = _FastPath()
        fast.types = types
        fast.arrays_only = all(t is _ndarray for t in types)
        fast.flags = (op.get_all, op.get_by_list, op.sens_param)
        fast.generation = G.cache.generation
        fast.entry = entry
        fast.check = entry.check
        fast.which = gf._which_inputs()
        return fast

    def matches(self, gf, args):
        if len(args) != len(self.types) or G.cache.generation != self.generation:
            return False
        op = gf.grad_op
        if (op.get_all, op.get_by_list, op.sens_param) != self.flags:
            return False
        if not self.arrays_only:
            return tuple(map(type, args)) == self.types and self.check(None, gf.fn)
        for a in args:
            if type(a) is not _ndarray:
                return False
        return self.check(None, gf.fn)      # what compiling read (globals...) is unchanged

    def run(self, gf, args):
        entry = self.entry
        gf.last = entry
        if self.arrays_only:
            grads = entry.fn(*args)
            like = _array_grad
        else:
            grads = entry.fn(*_arrays_of(args))
            like = _grad_like
        if self.which == "first":
            return like(grads[0], args[0])
        return tuple(map(like, grads[:entry.n_flat], args))


class _PackedFastPath:
    """``_FastPath`` for the packed call ``gf(selected, others, layout)`` of ``s2sad.grad``.

    Both groups are tuples and the layout holds constants only, so the
    adjoint takes the selected arrays, then the others, and returns the
    selected ones' gradients first.  Valid while ``_FastPath`` is for the
    arguments of both groups; the layout follows from their count (the
    selected positions are fixed).
    """

    __slots__ = ("inner", "nsel")

    @staticmethod
    def make(gf, sel, others):
        inner = _FastPath.make(gf, sel + others)
        if inner is None:
            return None
        fast = _PackedFastPath()
        fast.inner, fast.nsel = inner, len(sel)
        return fast

    def matches(self, gf, sel, rest):
        return len(rest) == 2 and self.inner.matches(gf, sel + rest[0])

    def run(self, gf, sel, others):
        entry = self.inner.entry
        gf.last = entry
        if self.inner.arrays_only:
            grads = entry.fn(*sel, *others)
            like = _array_grad
        else:
            grads = entry.fn(*_arrays_of(sel + others))
            like = _grad_like
        return tuple(map(like, grads[:self.nsel], sel))


def _arrays_of(args):
    return [a._data if type(a) is Tensor else a for a in args]


def _grad_like(g, like):
    """The gradient of ``like``, an array or a Tensor: ``g`` itself, as a Tensor for a
    Tensor, when its shape and dtype already match."""
    if type(like) is _ndarray:
        return _array_grad(g, like)
    data = like._data
    if type(g) is _ndarray and g.shape == data.shape and g.dtype == data.dtype \
            and g.dtype.kind != "c":
        return _tensor_of(g)
    return _wrap_like(_check_grad_shape(g, like, "an input"), like)


def _array_grad(g, like):
    """The gradient of the array ``like``: ``g`` itself when it already matches
    (and is not complex, which ``_wrap_like`` refuses)."""
    if type(g) is _ndarray and g.shape == like.shape and g.dtype == like.dtype \
            and g.dtype.kind != "c":
        return g
    return _wrap_like(_check_grad_shape(g, like, "an input"), like)
