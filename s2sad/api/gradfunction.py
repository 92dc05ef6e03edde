"""``GradFunction``: the callable ``GradOperation(...)(fn)`` returns.

On its first call with given argument kinds it traces and compiles the
adjoint (through the driver's cache) and afterwards runs the compiled
entry; inside code being differentiated it is staged as a nested gradient
instead (higher order).  Its cache key is the function's code and the
functions its closure holds (``fn_key``).
"""
from __future__ import annotations

import inspect

from .. import tracebacks
from ..compat import signature
from .. import driver as G
from ..driver.nested import stage_gradient
from ..errors import S2SADError
from ..frontend import resolve
from ..frontend.guards import FN, Same
from .fastpath import FastPath
from ..runtime import rt_nn
from .args import cell_with_effects, reads_tensors, unwrapped, wrap_out
from .inputs import (UnfitInput, check_grad_shape, describe_input, name_input, refuse_unfit,
                     regroup, warn_constants, wrap_like)
from .weights import weight_paths, weights_list


def fn_key(fn, depth=0):
    """What the cache files a function's entries under: its code, and its closure's functions.

    Closures made anew (a loss function per training step) share their code,
    so they share compiled entries; what each captured is read or guarded
    through its cells on every call.  Functions in the closure take part, so
    ``s2sad.grad``'s wrapper of one function is filed apart from another's.
    """
    if isinstance(fn, GradFunction):
        return ("grad", fn.fn_key)
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
            inner.append(fn_key(value, depth + 1))
    return (code, tuple(inner)) if inner else code


def as_function(grad_fn):
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

    #: ``grad(fn, holomorphic=True)``: a complex output is differentiated as a
    #: holomorphic function's (its complex derivative), not refused
    holomorphic = False
    #: ``hessian``'s gradient: the output is checked to have one element where the
    #: compiled code computes it (``driver/nested.py``), named after this API
    scalar_output = None

    def __s2sad_stage__(self, builder, args, kwargs, loc, path):
        """Called inside differentiated code: the frontend stages it (higher order)."""
        return stage_gradient(builder, self, args, kwargs, loc, path)

    def __s2sad_guard_key__(self):
        """What staging this gradient in compiled code reads of it besides its function.

        ``stage_gradient`` reads the function through the path ``fn`` (its code
        guarded there, what it captured read or guarded through its cells), so
        ``jvp(grad(lambda w: loss(w, x)), ...)`` called with a new lambda and a
        new ``x`` reuses the code compiled for the first.  None, guarded by
        identity, where it holds a Cell or weights, which are found by identity.
        """
        if self.root is not None or self._weights or self.weights is not None:
            return None
        op = self.grad_op
        names = getattr(self, "user_names", None)
        return (op.get_all, op.get_by_list, op.sens_param, self.with_value, self.head_only,
                self.holomorphic, self.scalar_output, getattr(self, "positions", None),
                getattr(self, "single", None), None if names is None else tuple(names))

    def __init__(self, fn, weights, grad_op, with_value=False, head_only=False):
        from ..nn.cell import Cell
        self.target = fn
        self.grad_op = grad_op
        # ``(value, gradients)`` from one run of the forward (``value_and_grad``,
        # training steps); ``head_only``: differentiate ``value[0]`` (``has_aux``)
        self.with_value = with_value
        self.head_only = head_only
        self.weights = weights
        self._weights, self._weights_kind = weights_list(weights)
        if isinstance(fn, GradFunction):
            fn = as_function(fn)
        fn = unwrapped(fn)      # a jitted function: its gradient is the function's
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
        self.fn_key = fn_key(self.fn)

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
        key = (self.fn_key, type(self.root) if self.root is not None else None, specs,
               sens_spec, which, paths,
               tuple(id(w) for w, p in zip(self._weights, paths) if p is None),
               self._order is not None and G.current_options().taylor,
               self.with_value, self.head_only, self.holomorphic)
        entry = G.cache.get(key, self.root, self.fn)
        if entry is None:
            with G.cache.lock():
                entry = G.cache.get(key, self.root, self.fn)
                if entry is None:
                    entry = self._compile(inputs, sens, specs, sens_spec, paths, which)
                    if self.with_value:
                        entry.tensor_out = reads_tensors(specs, entry)
                        entry.eager_only = cell_with_effects(entry, self.root,
                                                             self.fn) is not None
                    # recompiles are counted per function object and flags (a factory's
                    # closures, another GradOperation, are other functions)
                    family = (id(self.fn), self.grad_op.sens_param) + key[1:2] + key[4:]
                    named = specs + (sens_spec,) if self.grad_op.sens_param else specs
                    G.cache.put(key, entry, named, family=family, fn=self.fn, root=self.root)
        return entry, specs

    def _compile(self, inputs, sens, specs, sens_spec, paths, which):
        """A new ``Compiled``: in Taylor mode for a chain of plain gradients when it applies."""
        if self._order is not None and G.current_options().taylor and not self.with_value:
            entry = G.compile_nested(self._base.fn, None, inputs, specs, self._order,
                                     origin=self._base_origin)
            if entry is not None:
                return entry
        return G.compile_grad(self.fn, self.root, inputs, specs, self._weights, paths,
                              sens_spec=sens_spec, sens_value=sens, inputs=which,
                              return_value=self.with_value, head_only=self.head_only,
                              holomorphic=self.holomorphic)

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
        paths = tuple(weight_paths(self.root, self._weights))
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
                try:
                    return fast.run(self, args)
                except TypeError:
                    pass    # a complex argument met real code: compile for it (or say why)
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
        self._fast = FastPath.make(self, args)
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
        refuse_unfit(inputs, python_only=True)
        complex_in = any(map(G.is_complex_spec, specs))
        if sens is not None:
            refuse_unfit([sens], python_only=complex_in)
        if self.holomorphic and not complex_in:
            raise TypeError("grad with holomorphic=True needs complex inputs (a complex NumPy "
                            "array or scalar); for real inputs leave holomorphic out")
        if not self.grad_op.get_by_list and self._check_constants(inputs, specs):
            # no input gets a gradient: nothing to compile
            return (self.eager_value(inputs), ()) if self.with_value else ()
        entry, specs = self._compiled(inputs, sens, specs, sens_spec)
        self.last = entry
        # plain arrays (the common case) are their own runtime leaves: nothing to walk
        arrays = all(s is G.ARRAY_SPEC for s in specs)
        flat = inputs if arrays else G.flatten_runtime(inputs, specs)
        extra = entry.inputs.read(self.root, self.fn) if entry.inputs.entries else ()
        sens_flat = G.flatten_runtime([sens], [sens_spec]) if self.grad_op.sens_param else ()
        if not self.with_value:
            return self._gradients(entry, inputs, specs, arrays,
                                   entry.fn(*flat, *extra, *sens_flat))
        if entry.eager_only:
            value = self.eager_value(inputs, rewind=True)
            grads = entry.fn(*flat, *extra, *sens_flat)[1]
        else:
            value, grads = entry.fn(*flat, *extra, *sens_flat)
            value = wrap_out(value, entry.tensor_out)
        return value, self._gradients(entry, inputs, specs, arrays, grads)

    def eager_value(self, inputs, rewind=False):
        """The differentiated function's output, run eagerly (its Cells' effects included).

        ``rewind``: the random generator is put back afterwards, so the compiled
        gradient run next draws the same Dropout masks as this forward did.
        """
        state = rt_nn.generator().bit_generator.state if rewind else None
        if self.root is None:
            value = self.fn(*inputs)
        elif self.fn is type(self.root).construct:
            value = self.root(*inputs)      # ``Cell.__call__``: BatchNorm's statistics move
        else:
            value = self.fn(self.root, *inputs)
        if rewind:
            rt_nn.generator().bit_generator.state = state
        return value

    def _gradients(self, entry, inputs, specs, arrays, grads):
        """The compiled adjoint's flat gradients shaped as the call returns them."""
        n_in = entry.n_flat
        which = self._which_inputs()
        if arrays and which != "none":
            input_grads = tuple(wrap_like(check_grad_shape(g, v, "an input"), v, entry.complex)
                                for g, v in zip(grads[:n_in], inputs))
        else:
            input_grads = regroup(inputs, specs, grads[:n_in], which, entry.complex)
        weight_grads = []
        for g, w in zip(grads[n_in:], self._weights):
            check_grad_shape(g, w, "Parameter '%s'" % w.name)
            weight_grads.append(wrap_like(g, w))
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
