"""The caches of compiled code, and what tells users it keeps recompiling.

Compiled adjoints are kept by function, flags, argument structure and compile
options, each guarded by what compiling read (``GradCache``); the cache is
bounded (``S2SAD_CACHE_SIZE``), logs compiles on request
(``S2SAD_LOG_COMPILES=1``) and warns (``RecompileWarning``) when one function
is compiled again and again.  ``clear_caches`` empties every cache.
"""
import collections
import os
import sys
import threading
import warnings
import weakref

from .. import context as _context
from ..backend.compile import forget_source, forget_sources
from ..opt import pipeline
from ..opt.pipeline import current as current_options
from .tracing import display_path

#: compiled entries kept at most (least recently used dropped first); each
#: holds its IR and source, so an unbounded cache grows with every function
MAX_ENTRIES = int(os.environ.get("S2SAD_CACHE_SIZE", "256"))
#: compiles of one function after which a warning says what keeps changing
RECOMPILE_WARNING = 8


def _with_options(key):
    """``key`` and the compile options in force, unless they are the defaults.

    Code compiled with a pass disabled (or Taylor mode off) must never serve
    a call made without; the default options leave the key as it is, so the
    usual lookup hashes nothing more.  So is the context's array library and
    device (``set_context(array_library=...)``), which a Cell's Parameters
    are made on: code compiled for them is not reused for another's.
    """
    options = current_options()
    target = _context.array_target
    if target is not None:
        key = (key, target)
    return key if options is pipeline.DEFAULT else (key, options)


class GradCache:
    """Compiled adjoints by (function, flags, argument structure, options), each with its guards.

    An entry is reused only when its ``check`` holds: everything compiling
    read (globals, closure cells, attributes, defaults) is as it was.  At
    most ``MAX_ENTRIES`` are kept; what a dropped entry registered (its
    source in ``linecache``) goes with it.  Keys are completed with the
    compile options (``_with_options``), and changing the options bumps
    ``generation`` so that prepared call paths are not reused.
    """

    def __init__(self, what="gradient"):
        self._entries = collections.OrderedDict()     # key -> [Compiled]
        self._count = 0
        self._lock = threading.RLock()
        self._compiles = {}     # the key's function -> (count, last hints and specs, warned)
        self.what = what
        # bumped by ``clear``: callers that keep an entry check it is still cached
        self.generation = 0

    def get(self, key, root, fn=None):
        key = _with_options(key)
        entries = self._entries.get(key)
        if entries:
            for entry in entries:
                if entry.check(root, fn):
                    if len(self._entries) > 1:
                        self._entries.move_to_end(key)
                    return entry
        return None

    def put(self, key, entry, specs=None, family=None, fn=None, root=None):
        """Keep ``entry``; ``family`` is what stays the same across recompiles of one
        function ``fn`` (``key`` less the argument structure), for the recompile
        warning, which also says what the entries already there for ``key`` no
        longer match (read from ``root`` and ``fn``)."""
        with self._lock:
            family = _with_options(key[0] if family is None else family)
            key = _with_options(key)
            stale = [g for e in self._entries.get(key, ())
                     for g in e.guards.failing(root, fn)][:3]
            self._entries.setdefault(key, []).append(entry)
            self._entries.move_to_end(key)
            self._count += 1
            while self._count > max(MAX_ENTRIES, 1):
                self._drop_oldest()
            _note_compile(self, family, entry, specs, _weak(fn), stale)

    def _drop_oldest(self):
        key, entries = next(iter(self._entries.items()))
        old = entries.pop(0)
        if not entries:
            del self._entries[key]
        self._count -= 1
        filename = getattr(old.fn, "__s2sad_filename__", None)
        if filename is not None and not any(
                getattr(e.fn, "__s2sad_filename__", None) == filename
                for es in self._entries.values() for e in es):
            forget_source(filename)
        self.generation += 1    # prepared call paths may hold the dropped entry

    def lock(self):
        return self._lock

    def clear(self):
        with self._lock:
            for entries in self._entries.values():
                for e in entries:
                    forget_source(getattr(e.fn, "__s2sad_filename__", ""))
            self._entries.clear()
            self._compiles.clear()
            self._count = 0
            self.generation += 1

    def __len__(self):
        return self._count


def _note_compile(cache, fn_key, entry, specs, function_ref=None, stale=()):
    """Log a compile when asked (``S2SAD_LOG_COMPILES=1``); warn when one function recompiles often.

    The warning names the arguments whose kind or Python value changed
    between the last two compiles, or says that something read while
    compiling (a global, a closure variable, an attribute) changed.
    """
    count, last, warned, ref = cache._compiles.get(fn_key, (0, None, False, None))
    if ref is not None and ref() is None:     # another function, at a reused id
        count, last, warned = 0, None, False
    count += 1
    now = _leaf_specs(getattr(entry, "hints", None), specs)
    changed = [name for name, spec in now if last is not None and
               dict(last).get(name, spec) != spec]
    display = getattr(entry, "display", "?")
    where = "%s:%s" % (display_path(entry.info.filename), entry.info.tree.lineno) \
        if getattr(entry, "info", None) is not None else "?"
    if os.environ.get("S2SAD_LOG_COMPILES"):
        why = "first compile" if last is None else (
            "argument%s %s changed" % ("s" if len(changed) > 1 else "",
                                       ", ".join(repr(n) for n in changed))
            if changed else _what_changed(stale))
        print("s2sad: compiling the %s of %s (%s), compile #%d: %s"
              % (cache.what, display, where, count, why), file=sys.stderr)
    if count >= RECOMPILE_WARNING and not warned:
        warned = True
        if changed:
            why = ("the argument%s %s changed between calls; a Python number is a constant "
                   "compiled into the code, so pass it as an array (np.asarray(...)) or wrap "
                   "it in s2sad.mutable(...) to make it a runtime value"
                   % ("s" if len(changed) > 1 else "", ", ".join(repr(n) for n in changed)))
        else:
            why = _what_changed(stale) + " between calls"
        warnings.warn("s2sad: the %s of %s (%s) has been compiled %d times: %s. Set "
                      "S2SAD_LOG_COMPILES=1 to see each compile." % (cache.what, display, where,
                                                                     count, why),
                      RecompileWarning, stacklevel=_user_stacklevel())
    cache._compiles[fn_key] = (count, now, warned, function_ref)
    while len(cache._compiles) > 4 * max(MAX_ENTRIES, 1):
        del cache._compiles[next(iter(cache._compiles))]


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_stacklevel():
    """The ``stacklevel`` of the first frame outside s2sad (the user's call), for ``warn``."""
    frame, level = sys._getframe(2), 2
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE)
                                 or frame.f_code.co_filename.startswith("<s2sad")):
        frame, level = frame.f_back, level + 1
    return level


def _what_changed(stale):
    if stale:
        return "changed: %s" % ", ".join(stale)
    return "something it read while compiling (a global, a closure variable, an attribute " \
        "or a default) changed"


def _weak(obj):
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


class RecompileWarning(UserWarning):
    """One function was compiled again and again (a Python number argument that changes)."""


def _leaf_specs(hints, specs):
    """``(name, spec)`` of each argument leaf, names from the parameters' hints."""
    out = []
    hints = list(hints or ())
    hints += ["sens"] * (len(specs or ()) - len(hints))     # a sens follows the inputs
    for h, s in zip(hints, specs or ()):
        _leaves_into(out, h, s)
    return out


def _leaves_into(out, hint, spec):
    # module-level, not a closure calling itself: that would be a reference cycle
    if isinstance(spec, tuple) and spec and spec[0] in ("tuple", "list"):
        named = isinstance(hint, tuple) and len(hint) == len(spec) - 1
        for i, s in enumerate(spec[1:]):
            _leaves_into(out, hint[i] if named else "%s[%d]" % (hint, i), s)
    else:
        out.append((hint if isinstance(hint, str) else str(hint), spec))


cache = GradCache()


def clear_caches():
    """Drop every compiled gradient and what compiling kept (parsed sources, sources).

    Compiled code is cached by function and argument structure, guarded by
    what it read; this frees the memory it holds (each entry is also dropped
    on its own once ``S2SAD_CACHE_SIZE`` newer ones exist).
    """
    from ..frontend import parse
    for c in list(_caches):
        c.clear()
    parse.clear_cache()
    forget_sources()    # also those of code compiled outside the caches (rules, probes)


_caches = [cache]



def register_cache(c):
    """Another ``GradCache`` (forward mode's) that ``clear_caches`` empties too."""
    _caches.append(c)
    return c
