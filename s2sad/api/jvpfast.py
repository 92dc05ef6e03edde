"""The per-call path of ``jvp`` on plain arrays, prepared after the first call.

``jvp`` is often called on a new lambda each time (``jvp(lambda w: g(w, x),
w, v)`` in a loop), so the path is filed under the function's code, as the
cache files its entries (``fn_key``), not under the function object.  It
skips the argument specs, the cache key and lookup and the tree checks, and
keeps what the entry depends on: the same code and closure functions, plain
real arrays of at least one dimension in the same count, tangents of their
inputs' shapes, the entry's guards, the compile options it was prepared under,
and the cache's generation (bumped when an entry is dropped or the cache cleared).
The guards and the reads of what the entry takes from the closure (``hvp``'s
data arrays) are one compiled function (``GuardSet.compile_reading``), which
follows each path once.
"""
import types

import numpy as np

from ..opt.options import current as current_options
from .gradfunction import fn_key

_ndarray = np.ndarray
_FUNCTION = types.FunctionType
#: at most this many codes keep a prepared path (each holds its compiled entry)
MAX_PREPARED = 64
#: what ``Prepared.call`` returns where no prepared path serves the call
MISS = object()


class JvpFastPath:
    """What one general ``jvp`` call found: valid while ``extra`` finds the call fits."""

    __slots__ = ("key", "count", "generation", "entry", "cache", "options", "read")

    def extra(self, fn, inputs, v):
        """The values the entry takes after ``inputs`` (what it reads through ``fn``),
        or None where this path does not serve the call."""
        if len(inputs) != self.count or len(v) != self.count \
                or self.cache.generation != self.generation \
                or current_options() is not self.options:
            return None
        for a, t in zip(inputs, v):
            if type(a) is not _ndarray or type(t) is not _ndarray or not a.ndim \
                    or a.shape != t.shape or a.dtype.kind == "c" or t.dtype.kind == "c":
                return None
        if not fn_key(fn) == self.key:
            return None
        return self.read(None, fn)      # None when a guard fails

    def matches(self, fn, inputs, v):
        return self.extra(fn, inputs, v) is not None


class Prepared:
    """The prepared paths of one cache, by code object: ``fn``'s, or the ``slot`` given
    (``hvp`` files its one wrapper's paths under the user's function's code, so that
    two functions alternating do not take each other's place)."""

    def __init__(self, cache):
        self.cache = cache
        self.paths = {}

    def lookup(self, fn, inputs, v, slot=None):
        """The path prepared for this call, or None (the one ``call`` takes: for inspection)."""
        return self._fitting(fn, inputs, v, slot)[0]

    def call(self, fn, inputs, v, slot=None):
        """The entry's outputs for this call through its prepared path, or ``MISS``
        where none serves it (take the general path)."""
        fast, extra = self._fitting(fn, inputs, v, slot)
        if fast is None:
            return MISS
        return fast.entry.fn(*inputs, *extra, *v)

    def _fitting(self, fn, inputs, v, slot):
        """``(path, the values it passes after the inputs)``, or ``(None, None)``."""
        if type(fn) is not _FUNCTION:
            return None, None
        fast = self.paths.get(fn.__code__ if slot is None else slot)
        extra = None if fast is None else fast.extra(fn, inputs, v)
        return (None, None) if extra is None else (fast, extra)

    def remember(self, fn, entry, inputs, v, slot=None):
        """Prepare the path for calls like this one, which the general path ran with
        ``entry``, where it applies: a plain function of real arrays."""
        if type(fn) is not _FUNCTION or getattr(entry, "backend", None) is not None:
            return
        fast = JvpFastPath()
        fast.key, fast.count, fast.entry, fast.cache = fn_key(fn), len(inputs), entry, self.cache
        fast.generation = self.cache.generation
        fast.options = current_options()
        fast.read = entry.guards.compile_reading(entry.inputs.plan())
        if not fast.matches(fn, inputs, v):
            return
        if len(self.paths) >= MAX_PREPARED:
            self.paths.clear()
        self.paths[fn.__code__ if slot is None else slot] = fast
