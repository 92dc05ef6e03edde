"""Checks and conversions every functional API shares.

What a function is differentiated as (a Cell's ``construct``), how outputs
come back (Tensors when any input was one), and the messages for misuse of
``has_aux`` and of non-scalar outputs, written once for ``grad``, ``vjp``,
``jvp`` and the Jacobians.
"""
from __future__ import annotations

import inspect

import numpy as np

from ..errors import CompileError
from ..frontend.guards import read_path
from ..nn.cell import Cell
from ..runtime.rt_stats import scalar_output_message, scalar_output_problem
from ..runtime.xarrays import library_of
from ..tensor import Tensor, _wrap as _tensor_of


def target_of(fn):
    fn = unwrapped(fn)
    if isinstance(fn, Cell):
        return type(fn).construct, fn
    if inspect.ismethod(fn) and isinstance(fn.__self__, Cell):
        return fn.__func__, fn.__self__
    return fn, None


def unwrapped(fn):
    """The function a wrapper that runs it as compiled code stands for (``s2sad.jit``'s)."""
    target = getattr(type(fn), "__s2sad_target__", None)
    return fn if target is None else target(fn)


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def wrap_out(value, tensor_in):
    if isinstance(value, tuple):
        return tuple(wrap_out(v, tensor_in) for v in value)
    if tensor_in and isinstance(value, (np.ndarray, np.generic)):
        return Tensor(np.asarray(value))
    if tensor_in and library_of(value) is not None:
        return _tensor_of(value)
    return value


def reads_tensors(specs, entry):
    """Whether the eager call would return Tensors: a Tensor argument or a Tensor read (a
    Parameter) makes every array it returns a Tensor, as the eager ops do."""

    def has_tensor(spec):
        return isinstance(spec, tuple) and (spec[:1] == ("tensor",) or
                                            any(has_tensor(s) for s in spec[1:]))
    return any(map(has_tensor, specs)) or any(isinstance(obj, Tensor)
                                              for _, _, obj in entry.inputs.entries)


def cell_with_effects(entry, root, fn):
    """``(path, cell)`` of a Cell the program uses whose eager call does more than its
    ``construct``, or None.

    Such a Cell (``BatchNorm`` moving its running statistics in training,
    any class overriding ``Cell.__call__``) keeps state compiled code does not
    update: a compiled forward cannot stand for its eager call.
    """
    reads = [((), root)] if root is not None else []
    for path in entry.guards.checks:
        try:
            reads.append((path, read_path(root, path, fn)))
        except Exception:       # noqa: BLE001 -- a path that cannot be followed holds no Cell
            continue
    for path, value in reads:
        if isinstance(value, Cell) and type(value).__call__ is not Cell.__call__:
            return path, value
    return None


def raw(x):
    return getattr(x, "_data", x)


def is_tensor_like(x):
    return isinstance(x, (Tensor, np.ndarray, np.generic))


def as_like(x, arr):
    """``arr`` as the same kind of value as ``x`` (Tensor in, Tensor out)."""
    return Tensor(np.asarray(arr)) if isinstance(x, Tensor) else np.asarray(arr)


def check_has_aux(has_aux):
    if not isinstance(has_aux, bool):
        raise TypeError("'has_aux' must be bool, but got %s" % type(has_aux).__name__)


def check_aux_output(out, api):
    if not isinstance(out, tuple) or len(out) < 2:
        what = ("a tuple of %d item" % len(out)) if isinstance(out, tuple) else \
            "a single %s" % type(out).__name__
        raise ValueError("For '%s', when 'has_aux' is True, 'fn' must return a tuple "
                         "(output, aux, ...) of at least two items, but it returned %s"
                         % (api, what))


def aux_bare(out):
    """MindSpore's vjp/jvp/jacfwd/jacrev give one aux output bare, several as a tuple."""
    return out[1] if len(out) == 2 else tuple(out[1:])


def check_scalar(out, api, alternative, what="its output"):
    """Raise unless ``out`` is a single value of one element."""
    problem = scalar_output_problem(out)
    if problem is not None:
        raise ValueError(scalar_output_message(api, problem, alternative, what))


def leaves_of(x):
    """The leaves of values nested in tuples and lists, in order (outputs, tangents)."""
    if isinstance(x, (tuple, list)):
        out = []
        for e in x:
            out.extend(leaves_of(e))
        return out
    return [x]


def refused_inside(what, instead):
    """A stage hook (``__s2sad_stage__``) for an API function the frontend cannot
    inline: met inside a function being differentiated or compiled, it raises
    at the user's call naming ``what`` and saying what to do (``instead``),
    rather than failing on a statement of s2sad's own code."""
    def stage(builder, args, kwargs, loc, path):
        raise CompileError("%s cannot be called inside a function s2sad differentiates or "
                           "compiles (yet); %s" % (what, instead), loc)
    return stage

