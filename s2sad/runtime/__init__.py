"""Helpers that generated code calls as ``rt.<name>``.

Generated code reaches arrays through ``xp`` (NumPy, or the arguments' library:
``backend/namespaces.py``) and these helpers,
never through hard-coded ``np.`` calls, so another array library can be put in
their place without touching the AD.  Each helper is one primitive's body when
NumPy has no single call for it.
"""
import operator
import threading
from math import prod
from sys import getrefcount
from typing import Any, Callable, TypeVar

import numpy as np

xp = np
_F = TypeVar("_F", bound=Callable[..., Any])


def constexpr(fn: _F) -> _F:
    """Mark ``fn`` as evaluated while compiling when all its arguments are known.

    The frontend calls such a function on constant arguments instead of
    inlining it (MindSpore's ``constexpr``): use it for shape and axis
    arithmetic in bprop rules and user code.
    """
    fn.__s2sad_constexpr__ = True
    return fn


class ShapeOf:
    """Stands for an array of this shape where only the shape is needed.

    The forward sweep of a loop pushes one of these instead of a whole array
    when the backward sweep reads nothing but the array's shape.
    """

    __slots__ = ("shape", "is_scalar")

    def __init__(self, x):
        # made once per loop iteration: the attribute read is much cheaper than np.shape
        if type(x) is np.ndarray:
            self.shape = x.shape
            self.is_scalar = False
        else:
            self.shape = np.shape(x)
            self.is_scalar = isinstance(x, np.generic)

    @classmethod
    def known(cls, shape):
        """Stands for any array of ``shape`` (at least one dimension: never a NumPy
        scalar), for code specialised to its shapes (``opt/static_shapes.py``)."""
        new = cls.__new__(cls)
        new.shape, new.is_scalar = tuple(shape), False
        return new


class GeneralCode:
    """The program for any shapes, which code specialised to one call's shapes hands
    calls with other shapes to; compiled on its first call by ``build``."""

    __slots__ = ("build", "fn", "lock")

    def __init__(self, build):
        self.build, self.fn, self.lock = build, None, threading.Lock()

    def __call__(self, *args):
        fn = self.fn
        if fn is None:
            with self.lock:     # one build, whichever thread calls first
                if self.fn is None:
                    self.fn, self.build = self.build(), None
                fn = self.fn
        return fn(*args)


def shape_of(x):
    """``np.shape`` that also accepts a ``ShapeOf`` (arrays' own attribute first: fast)."""
    try:
        return x.shape
    except AttributeError:
        return np.shape(x)


def unbroadcast(dx, x):
    """Sum ``dx`` down to the shape of ``x`` (the adjoint of broadcasting).

    Costs one shape comparison when the shapes already agree.  The summed
    axes of each pair of shapes are computed once; ``np.add.reduce`` is
    ``np.sum`` without its dispatch layer (half its cost on small arrays).
    """
    try:                    # shape_of, inlined: this runs for most operands of a step
        shape = x.shape
    except AttributeError:
        shape = np.shape(x)
    try:
        dshape = dx.shape
    except AttributeError:
        dshape = np.shape(dx)
    if dshape == shape:
        return dx
    axes = _SUMMED_AXES.get((dshape, shape))
    if axes is None:
        axes = _summed_axes(dshape, shape)
    out = np.add.reduce(dx, axis=axes, keepdims=True) if axes else dx
    if len(dshape) != len(shape):
        out = out.reshape(shape)
    return _same_kind(out, x)


# (shape of the gradient, shape of the input) -> axes unbroadcast sums over
_SUMMED_AXES = {}


def _summed_axes(dshape, shape):
    lead = len(dshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and dshape[i + lead] != 1)
    if len(_SUMMED_AXES) > 4096:     # many distinct shapes: start afresh
        _SUMMED_AXES.clear()
    _SUMMED_AXES[dshape, shape] = axes
    return axes


# elements a non-contiguous source of broadcast_like may have to be copied
_SMALL = 4096


def broadcast_like(a, x):
    """Broadcast ``a`` to the shape of ``x`` (the adjoint of ``unbroadcast``).

    A read-only view, as ``np.broadcast_to`` makes; an array of the same rank
    gets it from one constructor call (``np.broadcast_to`` costs seven times as
    much on small arrays), after a copy if it is small and not contiguous
    (itself often a broadcast view, from the adjoint of an outer reduction).
    """
    shape = shape_of(x)
    ashape = shape_of(a)
    if ashape == shape:
        return a
    if type(a) is np.ndarray and len(ashape) == len(shape):
        if not a.flags.c_contiguous:
            if a.size > _SMALL:
                return np.broadcast_to(a, shape)
            a = np.ascontiguousarray(a)
        strides = []
        for n, m, step in zip(ashape, shape, a.strides):
            if n == m:
                strides.append(step)
            elif n == 1:
                strides.append(0)
            else:
                return np.broadcast_to(a, shape)    # raises NumPy's error
        view = np.ndarray(shape, a.dtype, a, 0, tuple(strides))
        view.flags.writeable = False
        return view
    return np.broadcast_to(a, shape)


def sum_seed(x):
    """Ones of x's shape and of ``np.sum(x)``'s dtype, read-only (as ``broadcast_like``'s views).

    The seed of ``sum(x)`` broadcast back to ``x``: one constructor call over
    a single stored one, where summing ``x`` for the dtype and broadcasting
    ones would cost three NumPy calls and a pass over ``x``.
    """
    if type(x) is np.ndarray and x.dtype.kind in "fc":
        one = _ONE.get(x.dtype)
        if one is None:
            one = _ONE[x.dtype] = np.ones(1, x.dtype)
            one.flags.writeable = False
        return np.ndarray(x.shape, x.dtype, one, 0, (0,) * x.ndim)
    ones = reduction_seed(x, "sum")     # integers sum in a wider type; scalars stay 0-d
    return broadcast_like(expand_reduced(ones, x, (), False), x)


def reduction_seed(x, kind):
    """``np.ones_like(np.<kind>(x))`` for a full ``sum`` or ``mean``, without the reduction.

    Float and complex arrays keep their dtype under both; other inputs take
    the reduction's own (a mean of integers is float64).
    """
    if type(x) is np.ndarray and x.dtype.kind in "fc":
        return np.ones((), x.dtype)
    return np.ones_like(np.sum(x) if kind == "sum" else np.mean(x))


def mean_seed(x, sign, axis=None):
    """``sign / v.size`` in the dtype of ``mean(v)``, for ``v = x`` or ``v = sum(x, axis)``.

    The same NumPy operations as ``reduction_seed``, its negation and the
    division by ``reduced_count``, in one call; with ``axis``, float and
    complex ``x`` give the sum's dtype and size without summing.
    """
    if axis is not None:
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        fast = type(x) is np.ndarray and x.dtype.kind in "fc" and \
            all(-x.ndim <= a < x.ndim for a in axes)
        summed = {a % x.ndim for a in axes} if fast else ()
        if len(summed) != len(axes):    # NumPy's dtype for the rest, or its error
            return mean_seed(np.sum(x, axis=axis), sign)
        n = 1
        for k, d in enumerate(x.shape):
            if k not in summed:
                n *= d
        one = np.ones((), x.dtype)
    else:
        one, n = reduction_seed(x, "mean"), reduced_count(x, ())
    return (-one if sign < 0 else one) / n


# dtype -> a read-only array holding one 1 of it
_ONE = {}


def _same_kind(out, x):
    # a 0-d result for a NumPy scalar input stays a NumPy scalar
    scalar = x.is_scalar if type(x) is ShapeOf else isinstance(x, np.generic)
    if scalar and isinstance(out, np.ndarray) and out.ndim == 0:
        return out[()]
    return out


def reduce_axes(axis):
    """Normalise a MindSpore ``axis`` argument (``()`` means all axes)."""
    if axis is None or axis == ():
        return None
    return axis


def expand_reduced(dout, x, axis, keep_dims):
    """Reinsert reduced axes into ``dout`` so it broadcasts against ``x``."""
    if keep_dims:
        return dout
    ndim = len(shape_of(x))
    if axis is None or axis == () or not ndim:     # a 0-d array's sum or max over axis 0
        shape = (1,) * ndim
    else:
        if isinstance(axis, int):
            axis = (axis,)
        shape = list(shape_of(dout))
        for a in sorted(a % ndim if ndim else 0 for a in axis):
            shape.insert(a, 1)
    try:
        return dout.reshape(shape)      # np.expand_dims costs ten times as much
    except AttributeError:
        return np.reshape(dout, shape)


def reduced_count(x, axis):
    """Number of elements each reduced value averages over."""
    shape = shape_of(x)
    if axis is None or axis == ():
        return prod(shape)
    if isinstance(axis, int):
        axis = (axis,)
    n = 1
    for a in axis:
        n *= shape[a]
    return n


@constexpr
def inverse_permutation(perm):
    """The permutation undoing ``perm`` (a transpose's adjoint transposes by it)."""
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def check_sens(sens, out, path="output"):
    """Raise the MindSpore-style error when ``sens`` does not match ``out``."""
    if np.shape(sens) != np.shape(out):
        raise ValueError(
            "For 'GradOperation', the shape of sens (%s) must be the same as the "
            "shape of the %s (%s); pass a sens of the forward output's shape."
            % (list(np.shape(sens)), path, list(np.shape(out))))
    return sens


def getitem_grad(dout, x, index):
    """Zeros like ``x`` with ``dout`` scattered (added) at ``index``."""
    out = np.zeros(shape_of(x), dtype=np.result_type(dout))
    if _basic_index(index):
        out[index] = dout
    else:
        np.add.at(out, index, dout)
    return out


def getitem_grad_zeros(x, *parts):
    """The one zero array that several ``getitem_grad`` terms of ``x``'s adjoint are
    added into (``getitem_grad_into``): ``x``'s shape, and the dtype that summing
    the separate ``getitem_grad`` arrays of ``parts`` would have."""
    dtype = getattr(parts[0], "dtype", None)
    if dtype is None or any(getattr(p, "dtype", None) != dtype for p in parts):
        dtype = np.result_type(*[np.result_type(p) for p in parts])
    return np.zeros(shape_of(x), dtype=dtype)


def getitem_grad_into(buf, index, dout):
    """``buf`` with ``dout`` added at ``index``, in place: ``buf`` is a fresh
    ``getitem_grad_zeros`` array no other name holds.  A basic index names each
    position once, so adding is exact even where two indices overlap."""
    if _basic_index(index):
        region = buf[index]
        if type(region) is np.ndarray and getattr(dout, "ndim", 0) <= region.ndim:
            region += dout      # a view: no copy back (``dout`` broadcasts to it)
        else:
            buf[index] += dout  # one element, or ``dout`` with extra leading 1s
    else:
        np.add.at(buf, index, dout)
    return buf


def getitem_grad_concat(x, axis, slices, parts):
    """The sum of ``getitem_grad(part, x, (:, ..., slice))`` over ``parts`` and ``slices``
    (each slice at ``axis``): the parts' concatenation when the slices tile the axis
    and every part is a plain array of one dtype with its slice's exact shape,
    else each part added into one zero buffer (``getitem_grad_into``)."""
    shape = shape_of(x)
    plan = _concat_plan(shape, axis, slices)
    if plan is not None:
        shapes, order = plan
        dtype = getattr(parts[0], "dtype", None)
        for d, want in zip(parts, shapes):
            if type(d) is not np.ndarray or d.shape != want or d.dtype is not dtype:
                break
        else:
            return np.concatenate([parts[k] for k in order], axis=axis)
    buf = getitem_grad_zeros(x, *parts)
    lead = (slice(None),) * axis
    for s, d in zip(slices, parts):
        buf = getitem_grad_into(buf, lead + (s,) if axis else s, d)
    return buf


# (shape, axis, each slice's (start, stop, step)) -> _tiling's answer: a loop
# passes the same slices every step, and the answer depends on nothing else
_CONCAT_PLANS = {}


def _concat_plan(shape, axis, slices):
    """``_tiling(shape, axis, slices)``, remembered.  The bounds were indices of the
    forward read, so equal bounds (``1`` and ``True``, ``np.int64(1)``) mean the same
    slice; unhashable ones (0-d arrays) are worked out every time.  The last call's
    very slice objects (a loop's, made once before it) skip building the key."""
    last = _LAST_PLAN[0]
    if last[1] == shape and last[2] == axis and len(last[0]) == len(slices) \
            and all(map(operator.is_, last[0], slices)):
        return last[3]
    try:
        key = (shape, axis, tuple([(s.start, s.stop, s.step) for s in slices]))
        plan = _CONCAT_PLANS[key]
    except KeyError:
        if len(_CONCAT_PLANS) > 1024:       # many distinct shapes: start afresh
            _CONCAT_PLANS.clear()
        plan = _CONCAT_PLANS[key] = _tiling(shape, axis, slices)
    except (AttributeError, TypeError):     # not slices, or bounds that do not hash
        return _tiling(shape, axis, slices)
    _LAST_PLAN[0] = (tuple(slices), shape, axis, plan)
    return plan


# the last plan looked up, with the slice objects (held: ``is`` stays meaningful)
_LAST_PLAN = [((), None, None, None)]


def _tiling(shape, axis, slices):
    """When the slices (at ``axis`` of ``shape``) cover ``[0, shape[axis])`` once
    each (step 1, each non-empty one starting where another ended): the shape each
    part must have, and the order of the non-empty parts along the axis; else None."""
    if axis >= len(shape) or not all(type(s) is slice for s in slices):
        return None
    n, shapes, spans = shape[axis], [], []
    for k, s in enumerate(slices):
        start, stop, step = s.indices(n)
        if step != 1:
            return None
        size = stop - start if stop > start else 0
        shapes.append(shape[:axis] + (size,) + shape[axis + 1:])
        if size:
            spans.append((start, stop, k))
    spans.sort()
    end = 0
    for start, stop, _ in spans:
        if start != end:
            return None
        end = stop
    if end != n or not spans:
        return None
    return tuple(shapes), tuple([k for _, _, k in spans])


def spare(buf, *others):
    """Whether an elementwise op on ``buf`` and ``others`` may write its result into ``buf``.

    Generated code asks this for an operand whose name dies at the op, so a
    large temporary is reused instead of a new one allocated next to it.
    Yes only when nothing else can see the write and the result is exactly
    what the op would return: ``buf`` is a float or complex array of at
    least one dimension that owns its data and is held by the caller's one
    name alone (not a user's array, a view, an alias or a pushed value), and
    every other operand has its dtype and shape or is a Python number.
    """
    if type(buf) is not np.ndarray or not buf.ndim or buf.base is not None \
            or getrefcount(buf) != _UNIQUE or buf.dtype.kind not in "fc" \
            or not buf.flags.writeable:
        return False
    for o in others:
        t = type(o)
        if t is np.ndarray:
            if o.shape != buf.shape or o.dtype != buf.dtype:
                return False
        elif t is not float and t is not int:
            if not isinstance(o, np.generic) or o.dtype != buf.dtype:
                return False
    return True


def _references_when_unique():
    """``getrefcount(buf)`` inside ``spare`` when one local name holds ``buf``.

    Measured by a call written like the generated one rather than assumed,
    since what the count includes depends on the interpreter.
    """
    import types
    probe = types.SimpleNamespace(spare=lambda buf, *others: getrefcount(buf))
    namespace = {"rt": probe, "xp": np}
    exec(compile("def f(n):\n    a = xp.ones(n)\n    b = rt.spare(a, 2.0)\n"
                 "    return b\n", "<s2sad probe>", "exec"), namespace)
    return namespace["f"](3)


def check_assert(test, message):
    """A user's ``assert test, message`` on a runtime value, checked on every run.

    A function rather than an ``assert`` statement in generated code, so the
    check does not depend on how that code was compiled (the frontend drops
    the user's asserts itself under ``python -O``, as Python does).
    """
    if not test:
        raise AssertionError(message) if message is not None else AssertionError()


def assign_parameter(param, value):
    """Write ``value`` into the Parameter ``param`` (``self.w = value`` in compiled code).

    Broadcast to the Parameter's shape and cast to its dtype, as ``ops.assign``
    does eagerly; stored as a new array rather than in place, because the
    compiled code may still read the old one (a backward sweep).
    """
    old = param._data
    data = np.asarray(value)
    try:
        data = np.broadcast_to(data, old.shape)
    except ValueError:
        raise ValueError("cannot assign a value of shape %s to the Parameter '%s' of shape %s"
                         % (data.shape, param.name, old.shape)) from None
    param._data = data.astype(old.dtype, copy=True)


_UNIQUE = _references_when_unique()


# each primitive family keeps its own helpers; generated code sees them all as rt.<name>
from .rt_array import _basic_index  # noqa: E402
from .rt_math import *  # noqa: E402,F401,F403
from .rt_array import *  # noqa: E402,F401,F403
from .rt_nn import *  # noqa: E402,F401,F403
from .rt_rows import *  # noqa: E402,F401,F403
from .rt_stats import *  # noqa: E402,F401,F403
from .rt_special import *  # noqa: E402,F401,F403
from .rt_fft import *  # noqa: E402,F401,F403
from .rt_contract import *  # noqa: E402,F401,F403
from .rt_linalg import *  # noqa: E402,F401,F403
from .rt_arrange import *  # noqa: E402,F401,F403
from .rt_batch import *  # noqa: E402,F401,F403


class Undefined:
    """The value of a variable on a path that never assigned it."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "rt.UNDEFINED"


UNDEFINED = Undefined()


class UndefinedVariableError(NameError):
    """A variable was read on a path of the program that never assigned it."""


def check_defined(value, name, lineno, filename):
    """``value`` unless it is the marker of a variable no path assigned."""
    if value is UNDEFINED:
        raise UndefinedVariableError(
            "variable '%s' is used at %s line %s, but the path the program took did not "
            "assign it (it is assigned only in some branches or loop iterations); assign it "
            "before the 'if' or loop" % (name, filename, lineno))
    return value


def check_grad_shape(g, x, rule, position):
    """``g`` unless a user-written rule returned a gradient of the wrong shape."""
    if np.shape(g) != shape_of(x):
        from ..errors import RuleError
        raise RuleError(
            "bprop rule %s returned a gradient of shape %s for its input %d, which has shape "
            "%s; a bprop must return one gradient per input, shaped like that input"
            % (rule, list(np.shape(g)), position, list(shape_of(x))))
    return g
