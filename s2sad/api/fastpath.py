"""The per-call path of a gradient function whose inputs are plain arrays.

After the first call, a ``GradFunction`` of arrays or Tensors skips argument
specs and the cache lookup: ``FastPath`` checks the few facts the compiled
entry depends on and calls it directly.  Kept apart from ``GradFunction`` so
the hot path reads on one screen.
"""
import numpy as np

from .. import driver as G
from ..backend.namespaces import foreign_grad
from ..opt.options import current as current_options
from ..runtime.xarrays import device_of, library_of_type
from ..tensor import Tensor, _wrap as _tensor_of
from .args import wrap_out
from .inputs import check_grad_shape, wrap_like

_ndarray = np.ndarray


class FastPath:
    """The call path of a function of plain arrays or Tensors, prepared once.

    Valid while the arguments have the same exact types (``np.ndarray`` or
    ``Tensor`` holding an ``ndarray``) in the same count, the flags are unchanged, the cache has
    not been cleared since and the entry's guards hold; any other call takes
    the general path (which may prepare a new one).  Only plain functions
    without weights, extra runtime inputs (global arrays) or a Cell qualify.
    A Tensor is passed as its array, and its gradient comes back a Tensor.
    """

    __slots__ = ("types", "arrays_only", "flags", "generation", "entry", "which", "check",
                 "fit_array", "fit_any", "devices", "options")

    @staticmethod
    def make(gf, args, with_value=False):
        """The path for ``gf`` called with ``args``, or None where it does not apply;
        ``with_value``: the caller (``PackedFastPath``) takes ``(value, gradients)``."""
        entry = gf.last
        op = gf.grad_op
        if gf.root is not None or gf._weights or entry is None or entry.inputs.entries \
                or op.get_by_list or len(args) <= op.sens_param or gf.with_value != with_value:
            return None
        types = tuple(map(type, args))
        if entry.backend is not None:
            return FastPath._foreign(gf, entry, args, types)
        if any(t is not _ndarray and t is not Tensor for t in types):
            return None
        if any(t is _ndarray and a.ndim == 0 for t, a in zip(types, args)):
            return None     # code compiled for 0-d arrays: ranks are checked by the spec
        fast = FastPath._made(gf, entry, types)
        fast.arrays_only = all(t is _ndarray for t in types)
        # a complex argument given to code compiled for real ones fails to fit
        # (``UnfitInput``): the caller then takes the general path, which compiles for it
        complex_ = getattr(entry, "complex", False)
        fast.fit_array = _array_grad_complex if complex_ else _array_grad
        fast.fit_any = _grad_like_complex if complex_ else _grad_like
        return fast

    @staticmethod
    def _made(gf, entry, types):
        op = gf.grad_op
        fast = FastPath()
        fast.types = types
        fast.devices = None
        fast.flags = (op.get_all, op.get_by_list, op.sens_param)
        fast.generation = G.cache.generation
        fast.options = current_options()     # the entry was compiled under these
        fast.entry = entry
        fast.check = entry.check
        fast.which = gf._which_inputs()
        return fast

    @staticmethod
    def _foreign(gf, entry, args, types):
        """The path for arrays of one other library (``torch.Tensor``, ``jax.Array``):
        valid while the types and devices are the same, as the spec would find."""
        if len(set(types)) != 1 or library_of_type(types[0]) is None:
            return None
        fast = FastPath._made(gf, entry, types)
        fast.arrays_only = True
        fast.devices = tuple(map(device_of, args))
        fast.fit_array = fast.fit_any = foreign_grad
        return fast

    def matches(self, gf, args):
        if len(args) != len(self.types) or G.cache.generation != self.generation \
                or current_options() is not self.options:
            return False
        op = gf.grad_op
        if (op.get_all, op.get_by_list, op.sens_param) != self.flags:
            return False
        if self.devices is not None:
            if tuple(map(type, args)) != self.types or tuple(map(device_of, args)) != self.devices:
                return False
            return self.check(None, gf.fn)
        if not self.arrays_only:
            # a Tensor holding another library's data takes the general path (its spec
            # chooses code compiled for that library)
            if tuple(map(type, args)) != self.types:
                return False
            for a in args:
                if type(a) is not _ndarray and type(a._data) is not _ndarray:
                    return False
            return self.check(None, gf.fn)
        for a in args:
            if type(a) is not _ndarray:
                return False
        return self.check(None, gf.fn)      # what compiling read (globals...) is unchanged

    def run(self, gf, args):
        entry = self.entry
        gf.last = entry
        if self.arrays_only:
            grads = entry.fn(*args)
            like = self.fit_array
        else:
            grads = entry.fn(*_arrays_of(args))
            like = self.fit_any
        if self.which == "first":
            return like(grads[0], args[0])
        return tuple(map(like, grads[:entry.n_flat], args))


class PackedFastPath:
    """``FastPath`` for the packed call ``gf(selected, others, layout)`` of ``s2sad.grad``.

    Both groups are tuples and the layout holds constants only, so the
    adjoint takes the selected arrays, then the others, and returns the
    selected ones' gradients first.  Valid while ``FastPath`` is for the
    arguments of both groups; the layout follows from their count (the
    selected positions are fixed).
    """

    __slots__ = ("inner", "nsel", "with_value")

    @staticmethod
    def make(gf, sel, others):
        with_value = gf.with_value and not gf.last.eager_only
        inner = FastPath.make(gf, sel + others, with_value)
        if inner is None:
            return None
        fast = PackedFastPath()
        fast.inner, fast.nsel, fast.with_value = inner, len(sel), with_value
        return fast

    def matches(self, gf, sel, rest):
        return len(rest) == 2 and self.inner.matches(gf, sel + rest[0])

    def run(self, gf, sel, others):
        entry = self.inner.entry
        gf.last = entry
        if self.inner.arrays_only:
            out = entry.fn(*sel, *others)
            like = self.inner.fit_array
        else:
            out = entry.fn(*_arrays_of(sel + others))
            like = self.inner.fit_any
        if self.with_value:
            value, grads = out
            return wrap_out(value, entry.tensor_out), tuple(map(like, grads[:self.nsel], sel))
        return tuple(map(like, out[:self.nsel], sel))


def _arrays_of(args):
    return [a._data if type(a) is Tensor else a for a in args]


def _grad_like_complex(g, like):
    """``_grad_like`` for code compiled for complex inputs."""
    if type(like) is _ndarray:
        return _array_grad_complex(g, like)
    return _grad_like(g, like)


def _array_grad_complex(g, like):
    """``_array_grad`` for code compiled for complex inputs: a complex gradient fits."""
    if type(g) is _ndarray and g.shape == like.shape and g.dtype == like.dtype:
        return g
    return wrap_like(check_grad_shape(g, like, "an input"), like, True)


def _grad_like(g, like):
    """The gradient of ``like``, an array or a Tensor: ``g`` itself, as a Tensor for a
    Tensor, when its shape and dtype already match."""
    if type(like) is _ndarray:
        return _array_grad(g, like)
    data = like._data
    if type(g) is _ndarray and g.shape == data.shape and g.dtype == data.dtype \
            and g.dtype.kind != "c":
        return _tensor_of(g)
    return wrap_like(check_grad_shape(g, like, "an input"), like)


def _array_grad(g, like):
    """The gradient of the array ``like``: ``g`` itself when it already matches
    (and is not complex, which ``wrap_like`` refuses)."""
    if type(g) is _ndarray and g.shape == like.shape and g.dtype == like.dtype \
            and g.dtype.kind != "c":
        return g
    return wrap_like(check_grad_shape(g, like, "an input"), like)
