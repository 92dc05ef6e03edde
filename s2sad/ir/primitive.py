"""The Primitive base class (the IR's unit of work; the primitives themselves are in ``ops``).

A primitive is the unit the AD works on. Each primitive class says how it is
written in generated code (``emit``: a Python expression over the array
namespace ``xp`` and the runtime helpers ``rt``); its eager implementation is
compiled from that same expression, so eager results and generated code cannot
disagree.  Its reverse rule lives in ``ops/_grad`` next to its family.
"""
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from .. import runtime
from ..runtime import xarrays
from ..tensor import Tensor, _wrap as _tensor_of


def _unwrap(value):
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, (tuple, list)):
        return type(value)(_unwrap(v) for v in value)
    return value


def _has_tensor(values):
    for v in values:
        if isinstance(v, Tensor):
            return True
        if isinstance(v, (tuple, list)) and _has_tensor(v):
            return True
    return False


def _wrap(value):
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, (np.ndarray, np.generic)):
        return Tensor(np.asarray(value))
    if xarrays.library_of(value) is not None:
        return _tensor_of(value)
    return value


def _foreign(values, found=None):
    """``(library, device)`` of the arrays of another library among ``values`` (nested
    tuples and lists), or None when there are none; mixing raises a ``TypeError``."""
    numpy_seen = False
    for v in values:
        if type(v) is np.ndarray:
            numpy_seen = True
        elif isinstance(v, (tuple, list)):
            inner = _foreign(v, found)
            found = inner or found
        else:
            library = xarrays.library_of(v)
            if library is not None:
                where = (library, xarrays.device_of(v))
                if found is not None and found != where:
                    raise TypeError("an operation mixes %s data on %s with %s data on %s; "
                                    "convert one of them first" % (found + where))
                found = where
    if found is not None and numpy_seen:
        raise TypeError(
            "an operation mixes %s data on %s with a NumPy array; s2sad does not convert "
            "between libraries behind your back: make both under the same "
            "set_context(array_library=...), or convert one explicitly" % found)
    return found


_EAGER_NAMESPACE = {"xp": np, "rt": runtime}



# Whether the program being compiled has complex inputs: rules with a
# complex form of their own (``np.abs``, ``np.real``...) read it while
# differentiating, so a real program's code stays as it was.
_COMPLEX = ContextVar("s2sad_complex", default=False)


def complex_mode():
    """True while compiling a program that has complex inputs."""
    return _COMPLEX.get()


@contextmanager
def compiling_complex(on):
    """Compile in complex mode (``on``) or real mode within the block."""
    token = _COMPLEX.set(bool(on))
    try:
        yield
    finally:
        _COMPLEX.reset(token)


class Primitive:
    """Base class of primitives.

    Subclasses pass their attributes to ``__init__`` as keywords; they become
    instance attributes (``MatMul(transpose_a=True).transpose_a``) and part of
    the primitive's identity (``key``), which the compile cache specialises on.

    Class attributes:
      ``num_outputs``: how many values one call produces.
      ``differentiable``: False for comparisons, shapes and the like: their
      outputs carry no gradient and need no rule.
      ``stateful``: True for random primitives: never constant-folded.
      ``num_inputs`` / ``input_defaults``: how many inputs the rule sees, and
      the values of trailing ones a call may omit.

    A differentiable primitive also needs, next to each other in
    ``ops/_grad``, a bprop, a JVP and a Taylor-mode decision: ``linearity``,
    a rule in ``taylor_rules``, or ``taylor = "nested"`` (the registry test
    names any primitive missing one; see "Adding a primitive" in docs/design.md).
    """

    num_outputs = 1
    differentiable = True
    stateful = False
    #: a stateful op whose runs differ (a random draw, a Parameter written): a transform
    #: that runs a program more than once per call cannot run it whole again
    draws = False
    #: values of trailing inputs a call may leave out (``ReduceSum()(x)`` -> axis ``()``)
    input_defaults = ()
    num_inputs = None
    #: inputs of which only the shape is read (``rt`` accepts a ``ShapeOf`` there)
    shape_only_inputs = ()
    #: the output has the (broadcast) shape of the inputs: elementwise math
    elementwise = False
    #: the output has exactly the shape of this input (``ZerosLike``, ``Unbroadcast``...)
    output_shape_of = None

    # -- facts the passes read (one place per primitive, not a table per pass) --
    #: the NumPy ufunc the primitive is written as (``"sin"``), for elementwise
    #: ops that keep a float or complex operand's dtype: codegen may give them
    #: an ``out=`` operand, and loops may run them once over stacked rows
    ufunc = None
    #: ``"linear"``: linear (or piecewise linear) in its differentiable inputs
    #: jointly, so Taylor mode propagates coefficient k with the JVP rule;
    #: ``"bilinear"``: linear in each of its first two inputs (Leibniz's rule)
    linearity = None
    #: ``True``: its two inputs may be swapped, the result is the same to the bit
    #: (``cse`` merges ``a * b`` with ``b * a``); ``"numbers"``: only when one input
    #: is a numeric constant (``+`` also joins strings and tuples, in order)
    commutative = False
    #: ``"nested"``: Taylor mode has no rule for it on purpose, and a program
    #: using it takes the nested reverse-mode path (each class says why)
    taylor = None
    #: the result may be the first input itself or a view of it (``x op= e``
    #: on either name must not change the other silently)
    view = False
    #: the result is always a boolean array (a comparison, a logical op): as an
    #: index it selects a copy, never a view
    boolean = False
    #: elementwise output that is a rounded, transcendental value: the
    #: polynomial collector keeps it an atom instead of expanding around it
    rounded = False
    #: the output is a number or a shape whatever the size of the inputs:
    #: liveness writes no ``del`` for it
    small_result = False
    #: its rules hold for complex values under JAX's convention (a cotangent
    #: is the transpose, not the adjoint): programs with complex inputs may use it
    complex_ok = False
    #: makes complex values of real ones (``np.fft.rfft``): a derivative of a
    #: program using it compiles in complex mode, whatever its inputs
    complex_result = False

    def __init__(self, **attrs):
        self.name = type(self).__name__
        self.attrs = dict(attrs)
        for k, v in attrs.items():
            object.__setattr__(self, k, v)
        self._eager = {}

    # -- identity -------------------------------------------------------------
    def key(self):
        """Hashable identity: class plus attributes."""
        return (type(self), tuple(sorted((k, _freeze(v)) for k, v in self.attrs.items())))

    def __eq__(self, other):
        return type(self) is type(other) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        if not self.attrs:
            return "Prim[%s]" % self.name
        inner = ", ".join("%s=%r" % kv for kv in sorted(self.attrs.items()))
        return "Prim[%s]<%s>" % (self.name, inner)

    # -- MindSpore's attribute API (user primitives call it in ``__init__``) ----
    def add_prim_attr(self, name, value):
        """Record the attribute ``name``: an instance attribute, part of ``key``."""
        self.attrs[name] = value
        object.__setattr__(self, name, value)
        return self

    def init_prim_io_names(self, inputs, outputs):
        """Record the names of the inputs and outputs (attributes, as MindSpore keeps them)."""
        self.add_prim_attr("input_names", list(inputs))
        return self.add_prim_attr("output_names", list(outputs))

    # -- code -----------------------------------------------------------------
    def has_code(self):
        """Whether the class says how it is computed (defines ``emit``)."""
        return type(self).emit is not Primitive.emit

    def emit(self, *args):
        """Python expression computing this primitive from argument expressions."""
        raise NotImplementedError(missing_code_message(self))

    def shares_input(self, args, is_boolean):
        """Whether the result may be ``args[0]`` or a view of it (``view``); an
        index decides it for some (``is_boolean(var)``: a boolean array)."""
        return self.view

    # -- eager execution ------------------------------------------------------
    def impl(self, *args):
        """Run on raw NumPy values (compiled once per arity from ``emit``)."""
        fn = self._eager.get(len(args))
        if fn is None:
            names = ["a%d" % i for i in range(len(args))]
            src = "lambda %s: %s" % (", ".join(names), self.emit(*names))
            fn = eval(compile(src, "<primitive %s>" % self.name, "eval"), dict(_EAGER_NAMESPACE))
            self._eager[len(args)] = fn
        return fn(*args)

    def staged_form(self, args):
        """``(primitive, args)`` that compiled code stages for this call; ``None`` as the
        primitive: the first input itself.  A primitive whose outputs depend on a
        shape (``Unstack`` without ``num``) stages a shape-polymorphic equivalent."""
        return self, args

    def complete_inputs(self, args):
        """``args`` with omitted trailing inputs filled from ``input_defaults``."""
        if self.num_inputs is None or len(args) >= self.num_inputs:
            return list(args)
        missing = self.num_inputs - len(args)
        if missing > len(self.input_defaults):
            raise TypeError("For '%s', expected %d inputs, but got %d"
                            % (self.name, self.num_inputs, len(args)))
        return list(args) + list(self.input_defaults[len(self.input_defaults) - missing:])

    def impl_on(self, library, *args):
        """Run on arrays of ``library`` (another than NumPy), from the same ``emit``,
        with its array-API namespace; a primitive whose code calls a name only
        NumPy's helpers have raises a ``TypeError`` naming it."""
        key = (library, len(args))
        fn = self._eager.get(key)
        if fn is None:
            names = ["a%d" % i for i in range(len(args))]
            src = "lambda %s: %s" % (", ".join(names), self.emit(*names))
            xp, rt = xarrays.namespaces(library)
            missing = xarrays.missing_names(src, xp, rt)
            if missing:
                raise TypeError(
                    "the primitive %s has no implementation for %s arrays yet (its code calls "
                    "%s, which s2sad has only for NumPy); run it on NumPy data: "
                    "set_context(array_library='numpy') before creating the Tensors"
                    % (self.name, library, missing[0]))
            fn = eval(compile(src, "<primitive %s>" % self.name, "eval"), {"xp": xp, "rt": rt})
            self._eager[key] = fn
        return fn(*args)

    def __call__(self, *args):
        args = self.complete_inputs(args)
        raw = _unwrap(args)
        where = _foreign(raw)
        if where is not None:
            return _wrap(self.impl_on(where[0], *raw))
        result = self.impl(*raw)
        return _wrap(result) if _has_tensor(args) else result


def missing_code_message(prim):
    """Why the primitive ``prim``, which defines no ``emit``, cannot run."""
    return ("%s has no code template: a Primitive s2sad runs defines emit(self, *inputs), "
            "returning the Python expression that computes it from its inputs' expressions "
            "(such as '%%s ** 3' %% x); infer_shape and infer_dtype alone do not compute it"
            % type(prim).__name__)


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, v.tobytes())
    return v


def constexpr(value):
    """Render a compile-time constant attribute as Python source."""
    if isinstance(value, float) and not np.isfinite(value):
        return "float(%r)" % repr(value)
    return repr(value)
