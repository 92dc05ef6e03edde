"""Calls: what a call in the walked code does, decided while compiling.

A call is evaluated now when everything about it is known, staged as a
primitive's op, staged as a Python call made on every run (a random draw, a
``print``), or inlined: a user function, a sub-Cell's ``construct``, a
tensor method or s2sad's own functional forms are walked like the caller
(``call_function``), in a frame of their own for the outlined code.  Python
objects met on the way become abstract values through ``lift``, which also
records the guards that say when the compiled program may be reused.
"""
import builtins
import contextlib
import functools
import inspect
import types
import weakref

import gast
import numpy as np

from ..errors import CompileError, NoGradientRuleError
from ..ir.nodes import Var, Const, Op, Region, Frame, leaves, map_structure, tag_frame
from ..ir.primitive import Primitive, missing_code_message
from ..runtime.xarrays import subclass_problem
from ..ir import control as C
from ..ops.operations import array_ops as A
from ..ops.operations import runtime_ops as R
from .parse import get_source_info, describe, library_error
from .fence import fence
from . import resolve
from .guards import Item
from .control import returned
from .closures import Closure, Partial
from .values import (Bound, Spread, ListVal, TreeVal, Scope, is_const, const_value, canon,
                     is_tensor, is_library)

MAX_INLINE_DEPTH = 200


class Calls:
    """Mixin of ``Builder``: calls, inlined functions, values met while compiling."""

    def call_function(self, fn, args, kwargs=None, loc=None, self_value=None, outline=True,
                      path=None, recurse=True):
        """Inline the Python function ``fn`` applied to abstract ``args``.

        ``outline=False``: the call is not given a frame of its own (the
        function differentiated by a gradient taken inside the program);
        ``path``: where ``fn`` was read from, for guards on what it captured;
        ``recurse=False``: inline even a call that recurses to a runtime depth
        (the body of the function such a call runs, see ``recursion.py``).
        """
        if path is None:
            path = self.known_path(fn)
        if recurse:
            try:
                return self.call_user_function(
                    fn, args, kwargs or {}, loc, self_value,
                    lambda a, k: self.call_function(fn, a, k, loc, self_value, outline, path,
                                                    recurse=False))
            except CompileError as err:     # inside scipy's source: at the user's call
                at_call = library_error(err, fn, loc, self.frames[-1][0].fn if self.frames
                                        else None)
                if at_call is None:
                    raise
                raise at_call from None
        self._check_depth(fn, loc)
        info = fence(get_source_info(fn, loc))
        scope = Scope(info, fn, self._bind(fn, args, kwargs or {}, self_value, path, loc), path)
        with self.attributed(self._inlined_loc(fn, loc)):
            # a frame for each call a user function makes: not for the differentiated
            # function itself, even when a library wrapper (s2sad.grad's) calls it
            user_caller = any(not is_library(s.fn) for s, _ in self.frames)
            frame = None if is_library(fn) or self.origin is not None or not user_caller or \
                not outline else self.enter_frame(_frame_name(fn, self_value), loc, scope.env)
            with self.inside(scope, loc, frame):
                self.exec_block(info.tree.body, scope)
        return returned(scope)

    def _check_depth(self, fn, loc):
        """Refuse to inline ``fn`` past ``MAX_INLINE_DEPTH`` nested calls (unbounded recursion)."""
        if self.depth < MAX_INLINE_DEPTH:
            return
        # point at the innermost call the user wrote, not at a library helper
        if self.frame is not None and self.frame.loc is not None:
            fn_name, loc = "'%s'" % self.frame.name, self.frame.loc
        else:
            fn_name = describe(fn)
        raise CompileError("calls nest deeper than %d levels while inlining %s: a recursion "
                           "whose depth is known while compiling (a Python int argument) is "
                           "inlined, at most %d deep"
                           % (MAX_INLINE_DEPTH, fn_name, MAX_INLINE_DEPTH), loc,
                           hint="write it as a loop, or pass the counter as an array: a "
                                "recursion whose depth is decided at run time is a real call")

    def _bind(self, fn, args, kwargs, self_value, path, loc):
        """``fn``'s parameters bound to the call's abstract arguments, defaults lifted."""
        try:
            sig = signature(fn)
            full = ((self_value,) + tuple(args)) if self_value is not None else tuple(args)
            bound = sig.bind(*full, **kwargs)
        except TypeError as e:
            raise CompileError("calling %s: %s" % (describe(fn), e), loc)
        env = {}
        for name, param in sig.parameters.items():
            if name in bound.arguments:
                val = bound.arguments[name]
                if param.kind is inspect.Parameter.VAR_POSITIONAL:
                    val = tuple(val)
                elif param.kind is inspect.Parameter.VAR_KEYWORD:
                    val = TreeVal(dict(val))    # read by key, or passed on by ``**name``
                env[name] = val
            elif param.default is not inspect.Parameter.empty:
                env[name] = self.lift(param.default, _default_path(fn, path, name, param))
            elif param.kind is inspect.Parameter.VAR_POSITIONAL:
                env[name] = ()
            elif param.kind is inspect.Parameter.VAR_KEYWORD:
                env[name] = TreeVal({})
        return env

    def _inlined_loc(self, fn, loc):
        """Where the ops of an inlined call of ``fn``, made at ``loc``, point.

        s2sad's own helpers (functional forms, tensor methods) point at the
        user's line that called them; user code reached through a library
        helper at its own lines again (outside a rule, whose ops keep the
        line the rule was inlined for).
        """
        current = self.loc_override
        if current is None and loc is not None and is_library(fn):
            return loc
        if current is not None and self.origin is None and not is_library(fn):
            return None
        return current

    @contextlib.contextmanager
    def inside(self, scope, loc, frame):
        """Walk the body of a call made at ``loc``: one level deeper, with its
        ``scope`` innermost on ``frames``; what it emits is tagged with
        ``frame`` (if any) when it ends, however it ends."""
        target, start = self.ops, len(self.ops)
        self.depth += 1
        self.frames.append((scope, loc))
        try:
            yield
        finally:
            self.frames.pop()
            self.depth -= 1
            if frame is not None:
                self.leave_frame(frame, target, start)

    def enter_frame(self, name, loc, env):
        """A new call of a user function, entered (see ``Op.frame``)."""
        self.frame = Frame(name, self.frame, loc)
        self.frame.bind(env)
        return self.frame

    def leave_frame(self, frame, target, start):
        """Tag what the call emitted into ``target`` from ``start``, and leave it."""
        tag_frame(target[start:], (frame, "fwd"))
        self.frame = frame.parent

    # ------------------------------------------------------------------ calls
    def ex_Call(self, node, scope):
        func = self.callee(node.func, scope)
        at_run_time = self.called_at_run_time(func)
        args = []
        for a in node.args:
            if isinstance(a, gast.Starred):
                value = self.eval(a.value, scope)
                if at_run_time and isinstance(value, Var):
                    args.append(Spread(value))      # ``np.random.rand(*x.shape)``
                else:
                    args.extend(self.unpack(value, None, scope.info.loc(a)))
            else:
                args.append(self.eval(a, scope))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.keyword_arguments(kw.value, scope))
            else:
                kwargs[kw.arg] = self.eval(kw.value, scope)
        return self.call(func, args, kwargs, scope.info.loc(node))

    def keyword_arguments(self, node, scope, what="a call"):
        """The abstract values passed by ``**node``: a wrapper's ``**kwargs``, a dict
        display or a known dict."""
        value = self.eval(node, scope)
        if isinstance(value, Const) and isinstance(value.value, dict) and \
                all(isinstance(k, str) for k in value.value):
            return {k: self.lift(v) for k, v in value.value.items()}
        if isinstance(value, TreeVal) and isinstance(value.obj, dict):
            return dict(value.obj)
        raise CompileError("**%s in %s needs a dict with keys known while compiling"
                           % (describe_node(node), what), scope.info.loc(node))

    def callee(self, func, scope):
        """The abstract value called by a call whose function is the expression ``func``.

        A method of a random generator made at run time (``rng =
        np.random.default_rng(0)``) draws on every run; ``x.item()`` and
        ``x.tolist()`` of an array turn it into Python numbers at run time
        (refused when ``x`` carries a gradient).
        """
        if not isinstance(func, gast.Attribute):
            return self.eval(func, scope)
        base = self.eval(func.value, scope)
        loc = scope.info.loc(func)
        if isinstance(base, Var) and (base.id in self.random_states or
                                      func.attr in ("item", "tolist")):
            if base.id not in self.random_states:
                self.check_concrete(base, "%s.%s()" % (describe_node(func.value), func.attr),
                                    loc)
            return ("runtime-method", base, func.attr)
        return self.getattr(base, func.attr, loc)

    def call(self, func, args, kwargs, loc):
        """Apply an abstract callee: stage, inline, or evaluate while compiling."""
        from ..ops import tensor_methods
        if isinstance(func, Bound):
            return self.call_function(tensor_methods.METHODS[func.name], [func.var] + list(args),
                                      kwargs, loc)
        if isinstance(func, Closure):
            return self.call_closure(func, list(args), dict(kwargs), loc)
        if isinstance(func, tuple) and len(func) == 3 and func[0] == "list-method":
            return self.list_method(func[1], func[2], args, loc)
        if isinstance(func, tuple) and len(func) == 3 and func[0] == "tree-method":
            return self.tree_method(func[1], func[2], args, kwargs, loc)
        if isinstance(func, Partial):
            return self.call_partial(func, args, kwargs, loc)
        if isinstance(func, tuple) and len(func) == 3 and func[0] == "runtime-method":
            return self.runtime_call(functools.partial(R.PyMethodCall, func[2]), args, kwargs,
                                     loc, receiver=func[1])
        if not isinstance(func, Const):
            raise CompileError("calling a runtime value is not supported", loc)
        return self.call_object(func, args, kwargs, loc)

    def call_object(self, func, args, kwargs, loc):
        """Call the Python object of the ``Const`` ``func``: stage it as an op or a
        Python call made on every run, inline its source, or evaluate it now."""
        f = func.value
        stage = getattr(type(f), "__s2sad_stage__", None)
        if stage is not None:   # a gradient function: staged by AD, never evaluated now
            return stage(f, self, args, kwargs, loc, func.path)
        stage = f.__dict__.get("__s2sad_stage__") if isinstance(f, types.FunctionType) else None
        if stage is not None:   # a transform (``s2sad.jvp``) that stages itself
            return stage(self, args, kwargs, loc, func.path)
        if isinstance(f, Primitive):
            if not f.has_code():
                raise CompileError(missing_code_message(f), loc)
            if kwargs:
                raise CompileError("primitive %s takes positional inputs only" % f.name, loc)
            try:
                args = f.complete_inputs(args)
            except TypeError as e:
                raise CompileError(str(e), loc)
            f, args = f.staged_form(args)
            return args[0] if f is None else self.emit(f, args, loc)
        text = R.runtime_call_text(f)
        if text is not None:
            return self.runtime_call(functools.partial(R.PyCall, f, text), args, kwargs, loc)
        owner = getattr(f, "__self__", None)
        if R.is_random_state(owner) or R.is_logger(owner) and not f.__name__.startswith("_"):
            # a method of a generator made before the call (a module-level ``rng``),
            # or of a logger: it draws or writes on every run
            return self.runtime_call(functools.partial(R.PyMethodCall, f.__name__), args,
                                     kwargs, loc, receiver=Const(f.__self__))
        if getattr(type(f), "__s2sad_takes_inputs_whole__", False):
            return self.evaluate_on_objects(f, args, kwargs, loc)
        structural = getattr(f, "__s2sad_structural__", None)
        if structural is not None:      # rearranges abstract values while compiling
            return structural(*args, **kwargs)
        if getattr(f, "__s2sad_constexpr__", False):
            return self.call_constexpr(func, args, kwargs, loc)
        target = resolve.call_target(f)
        if target is not None:
            return self.call_target(func, target, args, kwargs, loc)
        if isinstance(f, functools.partial):
            p = func.path
            return self.call(
                self.lift(f.func, _step(p, "func")),
                [self.lift(a, _step(p, "args", i)) for i, a in enumerate(f.args)] + list(args),
                dict({k: self.lift(v, _step(p, "keywords", Item(k)))
                      for k, v in f.keywords.items()}, **kwargs), loc)
        return self.call_opaque(func, args, kwargs, loc)

    def call_constexpr(self, func, args, kwargs, loc):
        """Evaluate the ``constexpr`` function ``func`` (a ``Const``) now, on its known
        arguments (also the fallback of a factory's stage hook, ``s2sad.grad``'s)."""
        f = func.value
        if not (all(is_const(a) for a in args) and all(is_const(v) for v in kwargs.values())):
            if getattr(f, "__s2sad_takes_inputs_whole__", False):  # ``grad(net, 0, weights)``
                return self.evaluate_on_objects(f, args, kwargs, loc)
            raise CompileError("%s is evaluated while compiling, so its arguments must be "
                               "known then; it got a runtime value" % describe(f), loc)
        # ``s2sad.grad(f)``: the gradient compiled from ``f`` is specialised on what
        # ``f`` captured, so ``f`` is guarded whole (its closure's contents)
        self.read_whole(func, args, kwargs)
        return self.evaluate(f, args, kwargs, loc)

    def call_target(self, func, target, args, kwargs, loc):
        """Inline what ``resolve.call_target`` found to run for ``func``: a Cell's
        construct (or its custom bprop), a function, a method of a known object."""
        kind, fn, self_value = target
        if kind == "custom_bprop":
            return self.call_custom_bprop(self_value, func.path, args, kwargs, loc)
        if kind == "cell":
            return self.call_function(fn, args, kwargs, loc,
                                      self_value=Const(self_value, func.path),
                                      path=_step(func.path, "construct", "__func__"))
        if kind == "inline":
            if getattr(fn, "__s2sad_fold__", False) and all(is_const(a) for a in args) and \
                    all(is_const(v) for v in kwargs.values()):
                # a NumPy function of constants: its own value (np.float64(2.5) a scalar)
                return self.evaluate(func.value, args, kwargs, loc)
            return self.call_function(fn, args, kwargs, loc,
                                      path=func.path if fn is func.value else None)
        assert kind == "method", kind
        return self.call_function(fn, args, kwargs, loc, self_value=self.lift(
            self_value, _owner(func.path)), path=_step(func.path, "__func__"))

    def call_opaque(self, func, args, kwargs, loc):
        """Call a Python object with no source to inline: evaluated now on known
        arguments, a builtin over runtime values, a NumPy call no gradient flows
        through, or refused."""
        f = func.value
        if all(is_const(a) for a in args) and all(is_const(v) for v in kwargs.values()):
            self.read_whole(func, args, kwargs)
            return self.evaluate(f, args, kwargs, loc)
        args = self.dict_keys_for(f, args)
        special = self.call_special(f, args, kwargs, loc)
        if special is None:
            special = self.dict_builtin(func, args, kwargs, loc)
        if special is not None:
            return special
        iterable = self.iterable_builtin(f, args, loc)
        if iterable is not None:
            return iterable
        if f is builtins.len and len(args) == 1:
            if isinstance(args[0], ListVal):
                return Const(len(args[0].items))
            if isinstance(args[0], tuple):
                return Const(len(args[0]))
            if isinstance(args[0], TreeVal) and isinstance(args[0].obj, dict):
                return Const(len(args[0].obj))
            if isinstance(args[0], Var) and self.kinds.get(args[0].id) == (str,):
                return self.runtime_call(functools.partial(R.PyCall, len, "len"), args, {}, loc)
            return self.emit(A.GetItem(), [self.emit(A.Shape(), [args[0]], loc), Const(0)], loc)
        special = resolve.runtime_builtin(f)
        if special is not None:
            return self.call_function(special, args, kwargs, loc)
        if isinstance(f, type) and issubclass(f, Primitive):
            # its attributes (an axis, a shift, a pad width) specialise the compiled code
            raise CompileError(
                "the arguments of primitive %s (%s) must be known while compiling, but one is "
                "a runtime value" % (f.__name__, ", ".join(list(kwargs) or ["positional"])),
                self.loc_override or loc, hint="pass Python numbers or tuples for these arguments, not arrays "
                          "computed at run time")
        text = R.numpy_text(f)
        if text is not None and self.carries_no_gradient(list(args) + list(kwargs.values())):
            # e.g. ``np.all(x > 0)`` in an assert: nothing to differentiate
            return self.runtime_call(functools.partial(R.PyCall, f, text), args, kwargs, loc)
        raise NoGradientRuleError(
            "cannot differentiate the call to %s: it is neither a Primitive, a Cell nor a "
            "Python function with readable source" % describe(f), loc,
            hint="wrap it in a Primitive subclass and register its rule with "
                 "@bprop_getters.register(YourPrimitive)")

    def call_custom_bprop(self, cell, path, args, kwargs, loc):
        """A Cell with its own ``bprop``: its construct inlined in a ``CustomBprop`` op."""
        if kwargs:
            raise CompileError("a Cell with a custom bprop takes positional inputs only", loc)
        n_in = len(inspect.signature(type(cell).construct).parameters) - 1
        bprop_params = [p for p in inspect.signature(type(cell).bprop).parameters.values()]
        if len(bprop_params) - 1 != n_in + 2 or any(
                p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in bprop_params):
            raise CompileError("The params of function 'bprop' of Primitive or Cell requires the "
                               "forward inputs as well as the 'out' and 'dout'.", loc,
                               hint="define bprop(self, %s, out, dout) for %s"
                               % (", ".join("x%d" % i for i in range(n_in)),
                                  type(cell).__name__))
        with self.region():
            result = self.call_function(type(cell).construct, args, loc=loc,
                                        self_value=Const(cell, path))
            body = self.ops
        prim = C.CustomBprop(cell, path, map_structure(lambda _: None, result), self)
        outs = [Var() for _ in leaves(result)]
        self.ops.append(Op(prim, [canon(a) for a in args], outs, loc,
                           regions=[Region((), body, tuple(leaves(result)))]))
        return prim.nest(outs)

    def called_at_run_time(self, func):
        """Whether calling the abstract callee ``func`` is staged as a Python call."""
        if isinstance(func, tuple):
            return len(func) == 3 and func[0] == "runtime-method"
        owner = getattr(func.value, "__self__", None) if isinstance(func, Const) else None
        return isinstance(func, Const) and (
            R.runtime_call_text(func.value) is not None or
            R.is_random_state(owner) or R.is_logger(owner))

    def runtime_call(self, make, args, kwargs, loc, receiver=None):
        """Stage a Python call made on every run (a random draw, a ``print``).

        ``make(keywords, starred)`` is its primitive; ``receiver`` the object
        whose method it calls, if any.
        """
        starred = tuple(i for i, a in enumerate(args) if isinstance(a, Spread))
        args = [a.var if isinstance(a, Spread) else a for a in args]
        prim = make(tuple(kwargs), starred)
        inputs = ([receiver] if receiver is not None else []) + args + \
            [kwargs[k] for k in prim.keywords]
        out = self.emit(prim, inputs, loc)
        if prim.num_outputs == 0:
            return Const(None)      # ``print``
        if isinstance(prim, R.PyCall) and R.makes_random_state(prim.fn):
            self.random_states.add(out.id)
        return out
    def check_concrete(self, value, what, loc):
        """Refuse to turn a value a gradient flows through into a Python number.

        Such a conversion would cut the gradient silently.  Values no
        differentiated input reaches (shapes, comparisons, other inputs'
        sizes) convert freely, and so does s2sad's own code.
        """
        if self.carries_no_gradient([value]) or self.in_library():
            return
        raise CompileError(
            "%s turns a runtime value into a Python number while a gradient flows "
            "through it: the gradient through that number would be lost" % what, loc,
            hint="keep it an array (e.g. x.sum() or x[0] instead of float(...)); if no gradient "
                 "should flow through it, convert s2sad.ops.stop_gradient(...) of it")

    def in_library(self):
        """Whether the function being walked is s2sad's own (a rule, a functional form)."""
        return bool(self.frames) and is_library(self.frames[-1][0].fn)

    def runtime_leaf(self, v):
        """``v`` as the gradient function called eagerly would see it.

        An array or NumPy scalar known while compiling (a global, a value
        computed from constants) is a differentiable argument of an eager
        call, so it becomes a runtime input here too: the inner gradient is
        then taken with respect to the same arguments as eagerly.
        """
        if isinstance(v, Const) and isinstance(v.value, (np.ndarray, np.generic)) \
                and v.value.dtype.kind in "biufc":
            return self.inputs.var_for(v.value, v.path)
        return v

    def evaluate(self, f, args, kwargs, loc):
        """Call ``f`` now, on the values of known arguments."""
        try:
            value = f(*[const_value(a) for a in args],
                      **{k: const_value(v) for k, v in kwargs.items()})
        except CompileError:
            raise
        except Exception as e:
            # inside s2sad's own helpers (``array_fail``): at the user's line that called them
            raise CompileError("calling %s while compiling raised %s: %s"
                               % (describe(f), type(e).__name__, e), self.loc_override or loc)
        return self.lift(value)

    def evaluate_on_objects(self, f, args, kwargs, loc):
        """Call ``f`` now, passing each runtime input (a Parameter, a Tensor read from
        the Cell) as the object it stands for while compiling.

        For callables that only need to know *which* Tensors they are given
        (``GradOperation(get_by_list=True)(self.net, self.params)`` inside
        ``construct``), never their values.  What is known while compiling is
        read whole, as by any call evaluated then (``GradOperation()(f)`` is
        specialised on what ``f`` captured).
        """
        def whole(v):
            return const_value(v) if is_const(v) else self.known_object(v, f, loc)
        self.read_whole(Const(f), [a for a in args if is_const(a)],
                        {k: v for k, v in kwargs.items() if is_const(v)})
        try:
            value = f(*[map_structure(whole, a) for a in args],
                      **{k: map_structure(whole, v) for k, v in kwargs.items()})
        except CompileError:
            raise
        except Exception as e:
            raise CompileError("calling %s while compiling raised %s: %s"
                               % (describe(f), type(e).__name__, e), loc)
        return self.lift(value)

    def known_object(self, v, f, loc):
        """The object (a Parameter, a Tensor) the runtime input ``v`` stands for while
        compiling, which ``f`` is applied to now; an error naming ``f`` otherwise."""
        obj = self.inputs.object_of(v, self.root) if isinstance(v, Var) else None
        if obj is None and isinstance(v, Var):     # read through a closure: as found
            obj = self.seen_objects.get(v.id)
        if obj is None:
            raise CompileError("%s is applied while compiling, so its arguments must be "
                               "known then (Parameters of the Cell count as known); it "
                               "got a value computed at run time" % describe(f), loc)
        return obj

    # ---------------------------------------------------------------- values
    def lift(self, value, path=None, hint=None):
        """Turn a Python object met while compiling into an abstract value.

        Tensors and Parameters become runtime inputs (read afresh on every call,
        through ``path`` when it has one); everything else is a constant the
        compiled code is specialised on, guarded through ``path``.
        """
        if path is not None:
            self.guards.record(path, value)
        if is_tensor(value) or isinstance(value, np.ndarray):
            problem = subclass_problem(value)
            if problem is not None:
                raise CompileError("this value is %s" % problem,
                                   hint="convert it once, outside the function")
            written = self.written_value(value)     # a Parameter assigned earlier in construct
            if written is not None:
                return written
            var = self.inputs.var_for(value, path, hint)
            self.seen_objects[var.id] = value
            return var
        if isinstance(value, (tuple, list)) and any(
                is_tensor(v) or isinstance(v, np.ndarray) for v in value):
            return tuple(self.lift(v, path + (i,) if path is not None else None,
                                   None if hint is None else "%s_%d" % (hint, i))
                         for i, v in enumerate(value))
        return Const(value, path)


def _step(path, *steps):
    """``path`` extended by ``steps``, or ``None`` without a path."""
    return None if path is None else path + steps


def _owner(path):
    """The path of the object a method was read from (``self`` of ``self.helper``)."""
    if path is None:
        return None
    return path[:-1] if len(path) > 1 and type(path[-1]) is str else path + ("__self__",)


def _default_path(fn, path, name, param):
    """Where ``fn``'s default for ``name`` is read from, through ``fn``'s own path."""
    if path is None:
        return None
    if param.kind is inspect.Parameter.KEYWORD_ONLY:
        return path + ("__kwdefaults__", Item(name))
    positional = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    with_default = [p.name for p in positional if p.default is not p.empty]
    if name not in with_default or getattr(fn, "__defaults__", None) is None:
        return None
    return path + ("__defaults__", with_default.index(name))


def signature(fn):
    """``fn``'s own parameters: a decorator's wrapper is walked with its own source,
    so its ``(*args, **kwargs)`` bind, not the wrapped function's parameters.

    A plain function's is kept per code while its defaults are the same tuple
    (what binding reads besides the code; annotations are not read): compiling
    binds each call it inlines, and a rule is a new closure for each op it
    differentiates (a LeNet's compile bound 190 calls, a millisecond).  Not
    kept for a function with keyword-only defaults (a dict, changed in place)
    or attributes other than s2sad's own and ``__wrapped__`` (``inspect``
    reads ``__signature__`` and a ``partialmethod``'s, functions that share
    one code).
    """
    if type(fn) is not types.FunctionType or fn.__kwdefaults__ is not None \
            or not all(k.startswith("__s2sad") or k == "__wrapped__" for k in fn.__dict__):
        return inspect.signature(fn, follow_wrapped=False)
    defaults = fn.__defaults__
    hit = _signatures.get(fn.__code__)
    if hit is not None and hit[0] is defaults:
        return hit[1]
    sig = inspect.signature(fn, follow_wrapped=False)
    _signatures[fn.__code__] = (defaults, sig)
    return sig


# code -> (the defaults its signature was made with, the signature)
_signatures = weakref.WeakKeyDictionary()


def _frame_name(fn, self_value=None):
    """What an outlined call is named after: the function, or the Cell's class."""
    name = getattr(fn, "__name__", "call")
    if name == "construct" and self_value is not None:
        return type(self_value.value).__name__
    return "lambda" if name == "<lambda>" else name


def describe_node(node):
    """The source text of a small expression (``x``, ``self.w``), for messages."""
    try:
        return gast.unparse(node)
    except Exception:
        return "this value"
