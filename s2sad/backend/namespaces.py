"""Which array library runs the generated code: NumPy, or the inputs' own.

Generated code reaches arrays through two names, ``xp`` and ``rt``.  NumPy
binds them to ``numpy`` and ``s2sad.runtime``; for the arrays of another
library (a ``torch.Tensor``, a ``jax.Array``) the same code is compiled
again with ``xp`` its array-API namespace (from ``array-api-compat``, the
maintained adapter, rather than a table of our own) and ``rt`` the
helpers of ``runtime/rt_neutral.py``.  A name the code calls that the
library's namespace or those helpers lack is refused while compiling,
naming the primitive (never converted through NumPy).
"""
import types

import numpy as np

from ..errors import CompileError
from ..runtime.xarrays import device_of, library_of, missing_names, namespaces


class Backend:
    """``xp`` and ``rt`` for one library and device, and how values reach them."""

    def __init__(self, library, device, xp, rt):
        self.library, self.device, self.xp, self.rt = library, device, xp, rt

    def __repr__(self):
        return "Backend(%s, %s)" % (self.library, self.device)

    def constant(self, value):
        """A NumPy array constant of the program as an array of this library."""
        if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
            return self.xp.asarray(value, device=self._device())
        return value

    def _device(self):
        if self.library == "torch":
            return self.device
        if self.library == "cupy":
            import cupy
            return cupy.cuda.Device(int(self.device.partition(":")[2]))
        return None                 # JAX puts constants on its default device


    def run_mode(self, fn):
        """How ``fn`` (compiled for this backend) runs, in words (``get_source``'s header)."""
        mode = getattr(fn, "__s2sad_run_mode__", "op by op")
        return "runs on %s arrays (%s), %s" % (self.library, self.device, mode)

    def jitted(self, fn):
        """``fn`` under ``jax.jit`` (for JAX; other libraries run it op by op)."""
        if self.library != "jax":
            return fn
        return JaxJitted(fn)


class JaxJitted:
    """Generated code under ``jax.jit``, op by op once its control flow reads a value.

    ``jax.jit`` traces the code with abstract arrays: Python control flow on
    a value (``if loss > 0``, a ``while`` loop until convergence) cannot be
    traced, and JAX says so on the first call.  Then the code runs op by op
    from that call on (the same source, the same values), and
    ``__s2sad_run_mode__`` (``get_source``'s header) says so and why.
    """

    def __init__(self, fn):
        import jax
        self.fn = fn
        self.jax_fn = jax.jit(fn)
        self.untraceable = (jax.errors.ConcretizationTypeError,
                            jax.errors.TracerBoolConversionError,
                            jax.errors.TracerIntegerConversionError)
        self.__s2sad_run_mode__ = "jax.jit"
        for name in ("__s2sad_source__", "__s2sad_filename__", "__name__", "__qualname__"):
            setattr(self, name, getattr(fn, name))

    def __call__(self, *args):
        if self.jax_fn is not None:
            try:
                return self.jax_fn(*args)
            except self.untraceable as err:
                self.jax_fn = None
                reason = str(err).strip().splitlines()[0][:120]
                self.__s2sad_run_mode__ = ("op by op: jax.jit cannot trace its control flow "
                                           "(%s)" % reason)
        return self.fn(*args)


_BACKENDS = {}


def backend_for(library, device):
    """The ``Backend`` of ``library`` on ``device`` (made once; raises if unsupported)."""
    key = (library, device)
    backend = _BACKENDS.get(key)
    if backend is None:
        backend = _BACKENDS[key] = _make_backend(library, device)
    return backend


def _make_backend(library, device):
    """A Backend whose ``rt`` makes arrays from nothing (``rt.array_zeros``) on ``device``
    (PyTorch's; JAX and CuPy put them on their current device)."""
    from ..runtime.rt_neutral import runtime_for
    xp = namespaces(library)[0]
    if library == "torch" and device != "cpu":
        xp = _creating_on(xp, device)
    return Backend(library, device, xp, runtime_for(xp, library, device if library == "torch"
                                                    else None))


#: the namespace's functions that make arrays from numbers alone
_CREATING = ("arange", "zeros", "ones", "empty", "full", "eye", "linspace")


def _creating_on(xp, device):
    """``xp`` whose array-making functions put their arrays on ``device`` unless told
    otherwise: generated code writes ``xp.arange(0, n, 1)`` (a pooling window's
    positions), which PyTorch would make on the CPU next to CUDA operands."""
    on = types.ModuleType("%s_%s" % (xp.__name__, device))
    on.__dict__.update(vars(xp))

    def placed(make):
        def make_on(*args, **kwargs):
            kwargs.setdefault("device", device)
            return make(*args, **kwargs)
        make_on.__name__ = make.__name__
        return make_on
    for name in _CREATING:
        if hasattr(xp, name):
            setattr(on, name, placed(getattr(xp, name)))
    return on


def check_supported(source, ir, backend):
    """Raise a ``CompileError`` if ``source`` calls a name ``backend`` does not have.

    The error names the primitive whose code calls it (and its line in the
    user's code when known), and the library.
    """
    for call in missing_names(source, backend.xp, backend.rt):
        prim, loc = _calling(ir, call)
        raise CompileError(
            "the primitive %s has no implementation for %s arrays yet (its code calls "
            "%s, which s2sad has only for NumPy); pass NumPy arrays to run this "
            "program" % (prim, backend.library, call), loc)


def _calling(ir, call):
    """The name and location of a primitive of ``ir`` whose code calls ``call``."""
    from ..ir.nodes import walk_ops
    for op in walk_ops(ir.body):
        try:
            text = op.prim.emit(*["a%d" % i for i in range(len(op.args))])
        except Exception:       # a primitive whose code depends on its arguments' kinds
            continue
        if call in text:
            return op.prim.name, op.loc
    return "behind '%s'" % call, None


def foreign_grad(g, like):
    """``g`` as the gradient of ``like``, an array of another library: its type and dtype."""
    if type(g) is type(like) and g.dtype == like.dtype and tuple(g.shape) == tuple(like.shape):
        return g
    xp = backend_for(library_of(like), device_of(like)).xp
    if not hasattr(g, "shape"):             # a Python number: a zero gradient
        g = xp.asarray(g, dtype=like.dtype, device=like.device)
    elif g.dtype != like.dtype:
        g = xp.astype(g, like.dtype)
    if tuple(g.shape) != tuple(like.shape):
        if g.shape:
            raise AssertionError(
                "internal error: the gradient of an input has shape %s but the input has "
                "shape %s; please report this with the program that triggered it"
                % (list(g.shape), list(like.shape)))
        g = xp.broadcast_to(g, tuple(like.shape))     # a zero gradient, as a 0-d array
    return g
