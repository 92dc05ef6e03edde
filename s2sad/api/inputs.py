"""Fitting computed gradients to the inputs they belong to.

A gradient takes its input's type and dtype (a Tensor for a Tensor, the
input's NumPy scalar type); a cast that would change a value raises
``UnfitInput`` rather than truncating.  Inputs that cannot be differentiated
(complex, Python constants) are refused or named in the message here, and
flat gradient lists are regrouped into the inputs' structure.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import tracebacks
from ..errors import UnfitInput
from .. import driver as G
from ..backend.namespaces import foreign_grad, library_of
from ..runtime.xarrays import subclass_problem
from ..tensor import Tensor, _wrap as _tensor_of


def wrap_like(grad, like, complex_ok=False):
    """Give a gradient the type and dtype of the input it belongs to.

    A cast that would change a value (a fractional gradient of an integer
    input) raises ``UnfitInput`` instead.  ``complex_ok``: the gradient was
    compiled for complex inputs, so a real input takes the real part of a
    complex gradient (JAX's convention); code compiled for real inputs
    refuses complex values (its rules were not chosen for them).
    """
    if isinstance(like, Tensor):
        data = like._data
        if type(data) is not np.ndarray and library_of(data) is not None:
            return _tensor_of(foreign_grad(grad, data))
        return _tensor_of(_cast_exact(grad, data.dtype, like))
    if isinstance(like, np.ndarray):
        return _cast_exact(grad, like.dtype, like, complex_ok)
    if isinstance(like, np.generic):
        return type(like)(_cast_exact(grad, like.dtype, like, complex_ok))
    if isinstance(like, G.Mutable):
        inner = like.value
        if isinstance(inner, (tuple, list)):
            return grad
        if isinstance(inner, (Tensor, np.ndarray, np.generic)):
            return wrap_like(grad, inner)
        if isinstance(inner, (bool, int, float, complex)):
            return type(inner)(_cast_exact(grad, np.dtype(type(inner)), inner))
    return grad


_COMPLEX = ("%s is complex (%s), and s2sad differentiates complex values only when they "
            "are NumPy arrays or scalars passed as inputs (not Tensors, not values made "
            "complex inside a program of real inputs); pass the complex value as an input "
            "array, or the real and imaginary parts as two real inputs")


def _cast_exact(grad, dtype, like, complex_ok=False):
    """``grad`` as ``dtype``, unless the cast would change a value.

    A float gradient of an integer or bool input is kept when every element
    survives the cast unchanged (``x * y`` on integers: exact integers);
    otherwise returning it in the input's dtype would truncate it silently.
    """
    g = np.asarray(grad)
    if dtype.kind == "c" or g.dtype.kind == "c":
        if not complex_ok:
            raise UnfitInput(like, _COMPLEX % ("%s", dtype if dtype.kind == "c" else g.dtype))
        if dtype.kind != "c":
            g = g.real      # a real input's gradient: the real part (JAX's convention)
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


def refuse_unfit(values, in_mutable=False, python_only=False, complex_ok=False):
    """Raise ``UnfitInput`` if a runtime leaf of ``values`` is complex, or an ndarray
    subclass whose operations compiled code would not follow (``subclass_problem``).

    Checked on the general path of the APIs; a Python ``complex`` is a
    constant unless wrapped in ``mutable``.  ``python_only``: complex NumPy
    arrays and scalars are accepted (the gradient APIs compile for them);
    Tensors and ``mutable`` values are not.  ``complex_ok``: only subclasses
    are refused (``vjp``'s check before its eager call; ``vjp_fn`` checks the rest).
    """
    for v in values:
        data = getattr(v, "_data", v)
        problem = subclass_problem(data)
        if problem is not None:
            raise UnfitInput(v, "%s is " + problem)
        if isinstance(data, G.Mutable):
            refuse_unfit([data.value], True, python_only, complex_ok)
        elif isinstance(data, (tuple, list)):
            refuse_unfit(data, in_mutable, python_only, complex_ok)
        elif complex_ok:
            continue
        elif isinstance(data, (np.ndarray, np.generic)) and data.dtype.kind == "c" \
                and (not python_only or in_mutable or isinstance(v, Tensor)) \
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


def check_grad_shape(grad, like, what):
    like = getattr(like, "_data", like)
    # arrays' own attribute first: np.shape costs a dispatch on every gradient of every call
    shape = like.shape if type(like) is np.ndarray else np.shape(like)
    if (grad.shape if type(grad) is np.ndarray else np.shape(grad)) != shape:
        raise AssertionError(
            "internal error: the gradient of %s has shape %s but the input has shape %s; "
            "please report this with the program that triggered it"
            % (what, list(np.shape(grad)), list(shape)))
    return grad


def regroup(values, specs, flat_grads, which="all", complex_ok=False):
    """Rebuild per-argument gradient structures from the flat list.

    ``which`` matches the compile: ``"first"`` regroups only the first
    argument with runtime leaves, ``"none"`` nothing; ``complex_ok`` as
    ``wrap_like``'s.
    """
    if which == "none":
        return ()
    it = iter(flat_grads)
    out = []
    for v, s in zip(values, specs):
        if G.has_runtime_leaves(s):
            out.append(_build(it, v, s, complex_ok))
            if which == "first":
                break
    return tuple(out)


def _build(it, value, spec, complex_ok=False):
    # a module-level function, not a closure: a recursive closure is a reference
    # cycle, which would keep the gradients alive until the next collection
    kind = spec[0]
    if kind in ("tensor", "array", "npscalar"):
        g = next(it)
        if type(g) is np.ndarray and type(value) is np.ndarray and g.shape == value.shape \
                and g.dtype == value.dtype:
            return g            # the common case, without the general checks' calls
        check_grad_shape(g, value, "an input")
        return wrap_like(g, value, complex_ok)
    if kind == "xarray":
        return foreign_grad(next(it), value)
    if kind == "mutable":
        inner = value.value
        if isinstance(inner, (tuple, list)):
            return tuple(wrap_like(next(it), v) for v in inner)
        return wrap_like(next(it), value)
    if kind in ("tuple", "list"):
        return tuple(_build(it, v, s, complex_ok) for v, s in zip(value, spec[1:]))
    return None
