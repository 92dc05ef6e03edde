"""Tracing: a function or Cell, called with arguments of given specs, into forward IR.

The frontend builds the program; this names its inputs after the user's
parameters, stands in for what has no source of its own (NumPy functions,
primitives), records the weights as inputs and runs the trace passes.
"""
import dis
import keyword
import os
import sys
import types

import numpy as np

from ..ir import Const, Func
from ..ir.nodes import walk_ops
from ..frontend.build import Builder
from ..frontend.parse import get_source_info
from ..frontend import npmap
from ..frontend.guards import FN
from ..frontend.trees import check_result
from ..compat import signature
from ..ops.primitive import Primitive
from ..ir.primitive import complex_mode
from ..errors import CompileError
from ..opt import pipeline
from .specs import abstract_args, flatten_runtime, float64_scalar_inputs, scalar_inputs


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
    # an API wrapper (jacrev's, vmap's) stages itself, as where it is called in compiled code
    stage = fn.__dict__.get("__s2sad_stage__") if isinstance(fn, types.FunctionType) else None
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
        if stage is not None:
            named = getattr(fn, "__s2sad_named_after__", lambda root: fn)(root)
            info = get_source_info(named)
            result = stage(builder, typed, {}, info.loc(info.tree), None)
        elif is_method and getattr(type(root), "bprop", None) is not None:
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
    check_result(result, info.loc(info.tree))
    if named is not fn:
        _locate_in(builder.ops, fn, info.loc(info.tree))
    # closures sharing one code object (gradients of gradients) have names of their own
    display = getattr(named, "__qualname__", None) or info.qualname
    if display == "<lambda>":
        display = info.qualname      # ``f`` for ``f = lambda ...`` (parse.py's name for it)
    qualname = display.replace(".", "_").replace("<", "").replace(">", "")
    if keyword.iskeyword(qualname):     # an unnamed lambda's compiled forward: ``lambda_``
        qualname += "_"
    if complex_mode():
        _check_complex(builder.ops)
    params = flat_inputs + [e[0] for e in builder.inputs.entries]
    forward = pipeline.run(pipeline.TRACE, Func(qualname, params, builder.ops, result,
                                                info.loc(info.tree)))
    return Trace(forward=forward, abstract=abstract, flat_inputs=flat_inputs,
                 scalar_ids=scalar_inputs(abstract, specs),
                 float64_ids=float64_scalar_inputs(abstract, specs),
                 input_shapes=_input_shapes(flat_inputs, args, specs, builder, root, given),
                 weight_vars=weight_vars, builder=builder, info=info, qualname=qualname,
                 display=display, hints=hints, result=result,
                 gradients=getattr(fn, "__s2sad_gradients__", 0))


def _input_shapes(flat_inputs, args, specs, builder, root, fn):
    """Input Var id -> shape of the real NumPy array it stands for in this first call:
    the arguments' leaves, then the arrays the program reads when it runs (what
    ``opt/static_shapes.py`` may specialise the program to)."""
    out = {}
    try:
        values = flatten_runtime(args, specs)
    except AttributeError:      # compiled from specs alone (``compile_symbolic``): no shapes
        return out
    for var, value in zip(flat_inputs, values):
        if type(value) is np.ndarray and value.dtype.kind != "c":
            out[var.id] = value.shape
    try:
        read = builder.inputs.read(root, fn)
    except Exception:       # read where only the running function can: left unknown
        return out
    for (var, _path, _obj), value in zip(builder.inputs.entries, read):
        if type(value) is np.ndarray and value.dtype.kind != "c":
            out[var.id] = value.shape
    return out


def _check_complex(ops):
    """Refuse, at the user's line, a primitive whose rules do not hold for complex values.

    Checked on the whole program whatever reaches it (the IR has no dtypes):
    a wrong gradient is worse than asking to split a value into real parts.
    """
    for op in walk_ops(ops):
        prim = op.prim
        if prim.differentiable and not prim.complex_ok:
            raise CompileError(
                "'%s' has no complex rule in s2sad, and this program has complex inputs "
                "or makes complex values (np.fft)"
                % _shown_name(op), op.loc,
                hint="differentiate it with real inputs (the real and imaginary parts "
                     "as two arrays), or use the operations listed under \"Complex "
                     "numbers\" in docs/numpy-coverage.md")


def _shown_name(op):
    """The NumPy function or operator an op came from, as far as it is known."""
    return getattr(op.prim, "shown_name", None) or op.prim.name


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


def display_path(filename):
    """The file relative to the working directory when it is below it."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel
