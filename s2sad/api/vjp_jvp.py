"""``vjp`` and ``jvp``: reverse and forward mode with explicit cotangents and tangents.

``vjp`` is a ``GradOperation`` with ``sens_param``; ``jvp`` runs the
forward-mode compiler, and ``jvp_by_double_vjp`` is the reverse-over-reverse
fallback for programs forward mode cannot take.
"""
from __future__ import annotations

from typing import Any, Callable, Tuple

import numpy as np

from .. import driver as G
from .. import tracebacks
from ..frontend.values import const_value, is_const
from ..frontend.trees import TreeOutput
from ..ir import Var, Const
from ..errors import CompileError, S2SADError
from .gradoperation import GradOperation
from .gradfunction import fn_key
from .inputs import UnfitInput, name_input, refuse_unfit
from .args import (as_like, as_tuple, aux_bare, check_aux_output, check_has_aux,
                   is_tensor_like, leaves_of, raw, target_of, wrap_out)
from .functional import user_param_names
from .jvpfast import MISS, Prepared
from .packing import first_output, memoized
from . import trees as T
from .pytree import tree_leaves
from .trees import has_trees
from ..tensor import Tensor


def vjp(fn: Callable[..., Any], *inputs: Any, has_aux: bool = False) -> Tuple[Any, ...]:
    """Reverse mode: ``(out, vjp_fn)``, or ``(out, vjp_fn, aux)`` with ``has_aux``.

    ``vjp_fn(v)`` returns a tuple with the cotangent of every input (of every
    Tensor input: Python constants get none, as in ``GradOperation``'s
    ``get_all``); ``v`` mirrors ``out``.  With ``has_aux``, ``out`` is the
    first output and ``aux`` the rest (bare when there is one, as MindSpore).
    """
    check_has_aux(has_aux)
    if not callable(fn):
        raise TypeError("For 'vjp', 'fn' must be a function or a Cell, but got %s"
                        % type(fn).__name__)
    refuse_unfit_inputs(fn, inputs, "vjp", complex_ok=True)    # complex: vjp_fn decides
    out = fn(*inputs)
    if has_aux:
        check_aux_output(out, "vjp")
    if has_trees(inputs) or has_trees((out[0] if has_aux else out,)):
        return _tree_vjp(fn, inputs, out, has_aux)
    gf = GradOperation(get_all=True, sens_param=True)(first_output(fn) if has_aux else fn)

    def vjp_fn(*v):
        if not v:
            raise TypeError("vjp_fn takes the cotangent 'v', mirroring the output of 'fn'")
        return gf(*inputs, v[0] if len(v) == 1 else tuple(v))

    if has_aux:
        return out[0], vjp_fn, aux_bare(out)
    return out, vjp_fn


def _tree_vjp(fn, inputs, out, has_aux):
    """``vjp`` where the inputs or the output hold dicts or other pytrees.

    The cotangent ``v`` must have the output's structure; each input's
    cotangent mirrors the input (None at a Python-number leaf), and inputs
    without any array leaf get none, as constants elsewhere.
    """
    head = out[0] if has_aux else out
    flat = T.FlatArgs(inputs)
    gf = GradOperation(get_all=True, sens_param=True)(
        T.flat_function(fn, flat.key, "head-leaves" if has_aux else "leaves"))
    runtime = flat.runtime_leaves(range(len(inputs)))
    with_leaves = [p for p in range(len(inputs)) if any(i in runtime for i in flat.leaf_range(p))]

    def vjp_fn(*v):
        if not v:
            raise TypeError("vjp_fn takes the cotangent 'v', mirroring the output of 'fn'")
        v = v[0] if len(v) == 1 else tuple(v)
        T.check_same_structure("vjp", "the cotangent 'v'", head, v)
        sens = tuple(np.asarray(c, dtype=float) if isinstance(c, (int, float)) else c
                     for c in tree_leaves(v))           # a Python number for a scalar output
        cotangents = gf(*flat.leaves, sens) if runtime else ()
        return flat.rebuild_all(with_leaves, False, dict(zip(runtime, cotangents)))

    if has_aux:
        return head, vjp_fn, aux_bare(out)
    return out, vjp_fn


# --------------------------------------------------------------------- jvp
def _unlike(inputs, v):
    """Which tangent differs in kind from its input (a Python number is a constant)."""
    for i, (a, t) in enumerate(zip(inputs, v)):
        if G.arg_spec(a) != G.arg_spec(t):
            return ("; input %d is a %s and its tangent a %s (a Python number is a constant: "
                    "pass np.float64(x) to differentiate it)"
                    % (i, type(a).__name__, type(t).__name__))
    return ""


_jvp_cache = G.register_cache(G.GradCache("forward-mode derivative"))
_prepared = {False: Prepared(_jvp_cache), True: Prepared(_jvp_cache)}    # by tangent_only


def jvp_compiled(fn, inputs, v=None, positions=None, split=False, tangent_only=False):
    """The compiled forward-mode entry for ``fn`` at these argument structures,
    w.r.t. the inputs at ``positions`` (all by default); ``split`` and
    ``tangent_only``: see ``driver.compile_jvp``."""
    py_fn, root = target_of(fn)
    specs = tuple(G.arg_spec(a) for a in inputs)
    if v is not None and (len(v) != len(inputs) or tuple(G.arg_spec(t) for t in v) != specs):
        raise ValueError("For 'jvp', 'v' must have the same structure as 'inputs', but got "
                         "%d inputs and %d tangents%s" % (len(inputs), len(v), _unlike(inputs, v)))
    positions = None if positions is None else tuple(sorted(set(positions)))
    key = (fn_key(py_fn), type(root) if root is not None else None, specs, positions, split,
           tangent_only)
    entry = _jvp_cache.get(key, root, py_fn)
    if entry is None:
        with _jvp_cache.lock():
            entry = _jvp_cache.get(key, root, py_fn)
            if entry is None:
                entry = G.compile_jvp(py_fn, root, inputs, specs, positions, split,
                                      tangent_only)
                _jvp_cache.put(key, entry, specs,
                               family=(id(py_fn), key[1], positions, split, tangent_only),
                               fn=py_fn, root=root)
    return entry, root, specs


def _jvp_raw(fn, inputs, v, tangent_only=False, slot=None):
    refuse_unfit_inputs(fn, inputs, "jvp", python_only=True)
    # complex tangents need the program compiled for complex inputs
    refuse_unfit_inputs(fn, v, "jvp", "the tangent",
                          python_only=any(np.iscomplexobj(a) for a in leaves_of(inputs)))
    entry, root, specs = jvp_compiled(fn, inputs, v, tangent_only=tangent_only)
    tangents = []
    for i, (a, t, s) in enumerate(zip(inputs, v, specs)):
        flat_t = G.flatten_runtime([t], [s])
        for x, dx in zip(G.flatten_runtime([a], [s]), flat_t):
            if np.shape(dx) != np.shape(x):
                raise ValueError("For 'jvp', each tangent in 'v' must have the shape of its "
                                 "input, but the tangent at position %d has shape %s and the "
                                 "input has shape %s" % (i, list(np.shape(dx)),
                                                         list(np.shape(x))))
        tangents.extend(flat_t)
    flat = G.flatten_runtime(inputs, specs)
    out = entry.fn(*flat, *entry.inputs.read(root, target_of(fn)[0]), *tangents)
    _prepared[tangent_only].remember(fn, entry, inputs, v, slot)
    return out


def _tree_jvp(fn, inputs, v):
    """``jvp`` of inputs holding dicts or other pytrees: ``v`` mirrors ``inputs``.

    The flat function returns the output's leaves and its structure's key,
    so the output and its tangent come back in the output's structure
    whatever it is.  A Python-number leaf is a constant: its tangent is not used.
    """
    if len(v) != len(inputs):
        raise ValueError("For 'jvp', 'v' must have one tangent per input, but got %d inputs "
                         "and %d tangents" % (len(inputs), len(v)))
    for i, (a, t) in enumerate(zip(inputs, v)):
        T.check_same_structure("jvp", "the tangent at position %d" % i, a, t)
    flat = T.FlatArgs(inputs)
    tangents = tree_leaves(v)
    tangents = [t if flat.runtime(i) else flat.leaves[i] for i, t in enumerate(tangents)]
    out, t_out = _jvp_raw(T.flat_function(fn, flat.key, "leaves-key"), tuple(flat.leaves),
                          tuple(tangents))
    tensor_in = any(isinstance(a, Tensor) for a in flat.leaves)
    out = (tuple(wrap_out(o, tensor_in) for o in out[0]), out[1])
    t_out = (tuple(wrap_out(_materialize_zeros(o, t), tensor_in)
                   for o, t in zip(out[0], t_out[0])), t_out[1])
    return T.rebuild_output(out, t_out)


def refuse_unfit_inputs(fn, values, api, what=None, python_only=False, complex_ok=False):
    """A TypeError naming the argument when one of ``values`` holds a complex leaf
    (``python_only``: a complex Tensor or ``mutable`` value) or an ndarray subclass
    compiled code would not follow, as ``refuse_unfit``."""
    try:
        refuse_unfit(values, python_only=python_only, complex_ok=complex_ok)
    except UnfitInput as err:
        named = name_input(err, values, None if what else user_param_names(fn),
                           noun=what or "the input")
        raise TypeError("For '%s', %s" % (api, named)) from None


def jvp(fn: Callable[..., Any], inputs: Any, v: Any, has_aux: bool = False) -> Tuple[Any, ...]:
    """Forward mode: ``(fn(*inputs), J @ v)``, or ``(out, J @ v, aux)`` with ``has_aux``.

    ``inputs`` and ``v`` are a Tensor/array or tuples of them with the same
    structure.  Computed by the forward-mode transformation, at about the
    cost of one more forward pass.  With ``has_aux`` only the first output's
    tangent is returned and ``aux`` is the rest (bare when there is one, as
    MindSpore).
    """
    check_has_aux(has_aux)
    inputs = as_tuple(inputs)
    v = as_tuple(v)
    done = _prepared[False].call(fn, inputs, v)
    if done is not MISS:
        out, t_out = done
        t_out = _materialize_zeros(out, t_out)
        if has_aux:
            check_aux_output(out, "jvp")
            return out[0], t_out[0], aux_bare(out)
        return out, t_out
    try:
        if has_trees(inputs) or has_trees(v):
            out, t_out = _tree_jvp(fn, inputs, v)
        else:
            try:
                out, t_out = _jvp_raw(fn, inputs, v)
            except TreeOutput:      # a dict output: its leaves through a flat function
                out, t_out = _tree_jvp(fn, inputs, v)
    except S2SADError as err:
        raise tracebacks.for_user(err)
    t_out = _materialize_zeros(out, t_out)
    tensor_in = any(isinstance(a, Tensor) for a in inputs)
    out, t_out = wrap_out(out, tensor_in), wrap_out(t_out, tensor_in)
    if has_aux:
        check_aux_output(out, "jvp")
        return out[0], t_out[0], aux_bare(out)
    return out, t_out


def _stage_jvp(builder, args, kwargs, loc, path):
    """``jvp`` met inside code being differentiated: its forward-mode program is
    inlined there (``driver.nested.stage_jvp``) instead of this function's body."""
    names = ("fn", "inputs", "v", "has_aux")
    given = dict(zip(names, args), **kwargs)
    unknown = set(given) - set(names)
    if unknown or not {"fn", "inputs", "v"} <= set(given):
        raise CompileError("jvp takes (fn, inputs, v, has_aux=False), but got %s"
                           % ", ".join(sorted(given)), loc)
    fn, aux = given["fn"], given.get("has_aux")
    if isinstance(fn, (Var, tuple)):
        raise CompileError("jvp's 'fn' must be a function or Cell known while compiling", loc)
    if aux is not None and not (is_const(aux) and const_value(aux) is False):
        raise CompileError("jvp(..., has_aux=True) inside a differentiated function is not "
                           "supported; return the auxiliary values from the function instead",
                           loc)
    inputs, v = given["inputs"], given["v"]
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    v = v if isinstance(v, tuple) else (v,)
    return G.nested.stage_jvp(builder, fn, inputs, v, loc)


class _StagedVjp:
    """The ``vjp_fn`` of a ``vjp`` met inside compiled code: calling it there inlines
    the adjoint program of ``fn`` at the same inputs, the cotangent as its sens."""

    def __init__(self, gf, inputs):
        self.gf, self.inputs = gf, inputs

    def __s2sad_stage__(self, builder, args, kwargs, loc, path):
        if kwargs or not args:
            raise CompileError("vjp_fn takes the cotangent 'v', mirroring the output of 'fn'",
                               loc)
        v = args[0] if len(args) == 1 else tuple(args)
        return G.nested.stage_gradient(builder, self.gf, list(self.inputs) + [v], {}, loc)

    def __call__(self, *v):
        raise TypeError("this vjp_fn was made inside compiled code: call it there")


class _StagedClosureVjp(_StagedVjp):
    """The ``vjp_fn`` of a ``vjp`` of a function made in compiled code: the cotangent of
    every input, each input being a runtime value, as the eager ``vjp_fn`` gives them."""

    def __init__(self, fn, inputs):
        self.fn, self.inputs = fn, inputs

    def __s2sad_stage__(self, builder, args, kwargs, loc, path):
        if kwargs or not args:
            raise CompileError("vjp_fn takes the cotangent 'v', mirroring the output of 'fn'",
                               loc)
        v = args[0] if len(args) == 1 else tuple(args)
        positions = range(len(self.inputs))
        return tuple(G.nested.stage_closure_gradient(builder, self.fn, list(self.inputs),
                                                     positions, loc, sens=v)[1])


def _stage_vjp(builder, args, kwargs, loc, path):
    """``vjp`` met inside compiled code: ``fn``'s output, staged, and a ``vjp_fn`` whose
    calls are staged as ``GradOperation(get_all=True, sens_param=True)(fn)``."""
    if not args or set(kwargs) - {"has_aux"}:
        raise CompileError("vjp takes (fn, *inputs, has_aux=False)", loc)
    fn, inputs, aux = args[0], tuple(args[1:]), kwargs.get("has_aux")
    if aux is not None and not (is_const(aux) and const_value(aux) is False):
        raise CompileError("vjp(..., has_aux=True) inside compiled code is not supported; "
                           "call it outside", loc)
    if not isinstance(fn, (Var, tuple)) and not is_const(fn):
        # a lambda or closure made in the compiled code: its adjoint is staged at vjp_fn's
        # call, what it captured being free variables an outer derivative goes through
        return builder.call(fn, list(inputs), {}, loc), Const(_StagedClosureVjp(fn, inputs))
    if not is_const(fn) or not callable(const_value(fn)):
        raise CompileError("vjp's 'fn' must be a function or Cell known while compiling, or "
                           "a function made in it", loc)
    out = builder.call(fn, list(inputs), {}, loc)
    gf = GradOperation(get_all=True, sens_param=True)(const_value(fn))
    return out, Const(_StagedVjp(gf, inputs))


jvp.__s2sad_stage__ = _stage_jvp
vjp.__s2sad_stage__ = _stage_vjp


def _materialize_zeros(out, t_out):
    """A constant zero tangent (an output not depending on the inputs) as zeros of its shape."""
    if isinstance(out, tuple) and isinstance(t_out, tuple):
        return tuple(_materialize_zeros(o, t) for o, t in zip(out, t_out))
    if isinstance(out, (np.ndarray, np.generic)) and not isinstance(
            t_out, (np.ndarray, np.generic)) and np.ndim(t_out) == 0 and t_out == 0:
        return np.zeros_like(out)
    return t_out


def _vjp_dot(fn):
    """``(u, inputs, v) -> <vjp(u), v>``: linear in ``u``, so its gradient in ``u`` is ``J v``."""
    def make():
        vjp_all = GradOperation(get_all=True, sens_param=True)(fn)

        def vjp_dot(u, inputs, v):
            cotangents = vjp_all(*inputs, u)
            total = 0.0
            for c, t in zip(cotangents, v):
                total = total + (c * t).sum()
            return total
        return vjp_dot
    return memoized(("vjp_dot", fn), make)


def jvp_by_double_vjp(fn, inputs, v):
    """``(fn(*inputs), J @ v)`` by reverse mode twice (the double-vjp construction).

    ``u -> <vjp(u), v>`` is linear in the cotangent ``u`` with gradient
    ``J v``, so differentiating it in reverse mode gives the forward-mode
    derivative without a forward-mode transformation.  ``inputs`` and ``v``
    are Tensors/arrays or flat tuples of them.
    """
    inputs = as_tuple(inputs)
    v = as_tuple(v)
    if len(v) != len(inputs):
        raise ValueError("For 'jvp_by_double_vjp', 'v' must have one tangent per input, but "
                         "got %d inputs and %d tangents" % (len(inputs), len(v)))
    for a in inputs:
        if not is_tensor_like(a):
            raise TypeError("For 'jvp_by_double_vjp', every input must be a Tensor or an "
                            "array, but got %s" % type(a).__name__)
    out = fn(*inputs)

    def zeros(o):
        if isinstance(o, tuple):
            return tuple(zeros(x) for x in o)
        return as_like(o, np.zeros_like(np.asarray(raw(o))))
    u = zeros(out)
    t_out = GradOperation()(_vjp_dot(fn))(u, inputs, v)
    tensor_in = any(isinstance(a, Tensor) for a in inputs)
    return out, wrap_out(t_out, tensor_in)
