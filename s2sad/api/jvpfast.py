"""The per-call path of ``jvp`` on plain arrays, prepared after the first call.

``jvp`` is often called on a new lambda each time (``jvp(lambda w: g(w, x),
w, v)`` in a loop), so the path is filed under the function's code, as the
cache files its entries (``fn_key``), not under the function object.  It
skips the argument specs, the cache key and lookup and the tree checks, and
keeps what the entry depends on: the same code and closure functions, plain
real arrays of at least one dimension in the same count, tangents of their
inputs' shapes, the entry's guards, the compile options it was prepared under,
and the cache's generation (bumped when an entry is dropped or the cache cleared).
"""
import types

import numpy as np

from ..opt.options import current as current_options
from .gradfunction import fn_key

_ndarray = np.ndarray
_FUNCTION = types.FunctionType
#: at most this many codes keep a prepared path (each holds its compiled entry)
MAX_PREPARED = 64


class JvpFastPath:
    """What one general ``jvp`` call found: valid while ``matches`` holds."""

    __slots__ = ("key", "count", "generation", "entry", "cache", "options")

    def matches(self, fn, inputs, v):
        if len(inputs) != self.count or len(v) != self.count \
                or self.cache.generation != self.generation \
                or current_options() is not self.options:
            return False
        for a, t in zip(inputs, v):
            if type(a) is not _ndarray or type(t) is not _ndarray or not a.ndim \
                    or a.shape != t.shape or a.dtype.kind == "c" or t.dtype.kind == "c":
                return False
        return fn_key(fn) == self.key and self.entry.check(None, fn)

    def run(self, fn, inputs, v):
        entry = self.entry
        return entry.fn(*inputs, *entry.inputs.read(None, fn), *v)


class Prepared:
    """The prepared paths of one cache, by code object: ``fn``'s, or the ``slot`` given
    (``hvp`` files its one wrapper's paths under the user's function's code, so that
    two functions alternating do not take each other's place)."""

    def __init__(self, cache):
        self.cache = cache
        self.paths = {}

    def lookup(self, fn, inputs, v, slot=None):
        """The path prepared for this call, or None (take the general path)."""
        if type(fn) is not _FUNCTION:
            return None
        fast = self.paths.get(fn.__code__ if slot is None else slot)
        if fast is None or not fast.matches(fn, inputs, v):
            return None
        return fast

    def remember(self, fn, entry, inputs, v, slot=None):
        """Prepare the path for calls like this one, which the general path ran with
        ``entry``, where it applies: a plain function of real arrays."""
        if type(fn) is not _FUNCTION or getattr(entry, "backend", None) is not None:
            return
        fast = JvpFastPath()
        fast.key, fast.count, fast.entry, fast.cache = fn_key(fn), len(inputs), entry, self.cache
        fast.generation = self.cache.generation
        fast.options = current_options()
        if not fast.matches(fn, inputs, v):
            return
        if len(self.paths) >= MAX_PREPARED:
            self.paths.clear()
        self.paths[fn.__code__ if slot is None else slot] = fast
