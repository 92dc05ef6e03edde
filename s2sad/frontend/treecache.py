"""Parsed trees of s2sad's own functions, kept on disk beside their bytecode.

A first gradient reads, parses and converts (``ast`` to ``gast``) the source
of each of s2sad's functions it inlines: the NumPy functional forms, the
bprop rules.  For a LeNet of 440 ops that was 38 sources, 8 ms of its 58 ms
cold start, the same work in every process.  Like Python's bytecode, the trees
of a module are written to its ``__pycache__`` (``importlib.util
.cache_from_source``: ``PYTHONPYCACHEPREFIX`` and ``PYTHONDONTWRITEBYTECODE``
hold for them too) when the process exits, and later processes read them.

A module's trees are valid for the size and modification time of its source
file (what Python checks a ``.pyc`` by), for this Python (the cache tag in the
file's name), this gast, this format and the files that make and check trees
(this one, ``parse.py``, ``fence.py``: an edited parser or fence is not
answered by trees the old one made); any other file is ignored and
rewritten.  The stamp is read at each lookup and before a source is read,
and checked again before its tree is kept: a module edited in a running
process (and reloaded) gets no tree of its old text.  Each tree is pickled as it is parsed, before compiling reads or
marks it; that it passed the fence is kept with it, so a kept tree is not
walked again.  Only s2sad's own files are kept: a user's change as they
work.  A cache that cannot be read or written (a read-only install, a
damaged file) is left out, never an error.
"""
import atexit
import importlib.util
import os
import pickle
import sys
import threading

import gast

#: what a cached tree is: changed whenever parsing makes other trees
FORMAT = 1

_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SUFFIX = ".s2sad-trees"

_lock = threading.Lock()
# source file -> [stamp, {first line: pickled (tree, column shift)}, changed since read,
#                 {first lines of the trees that passed the fence}]
_modules = {}
_flush_registered = [False]


def is_own(filename):
    """Whether ``filename`` is one of s2sad's own source files."""
    return bool(filename) and filename.startswith(_OWN_DIR) and filename.endswith(".py")


def _file_stamp(filename):
    st = os.stat(filename)
    return st.st_size, st.st_mtime_ns


def _producer():
    """What made and checked the trees: this module, the parser and the fence,
    and gast, as files (so an edited s2sad never reads trees an older one made;
    gast before 0.5.3 has no ``__version__``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        return tuple(_file_stamp(os.path.join(here, name))
                     for name in ("treecache.py", "parse.py", "fence.py")) + \
            (getattr(gast, "__version__", None), _file_stamp(gast.gast.__file__))
    except (OSError, AttributeError, TypeError):
        return None


_PRODUCER = _producer()


def _stamp(filename):
    if _PRODUCER is None:
        raise OSError("s2sad's own parser files cannot be read")
    return (FORMAT, _PRODUCER) + _file_stamp(filename)


def cache_path(filename):
    """Where the trees of source file ``filename`` are kept, or None (no cache)."""
    try:
        pyc = importlib.util.cache_from_source(filename)
    except (NotImplementedError, ValueError):
        return None
    return pyc[:-len(".pyc")] + _SUFFIX


def _entry(filename, stamp):
    """The trees of ``filename`` as of ``stamp`` (its stamp now): read from disk the
    first time, and again whenever the file changed (an edited module reloaded)."""
    entry = _modules.get(filename)
    if entry is None or entry[0] != stamp:
        blobs, fenced = {}, set()
        path = cache_path(filename)
        if path is not None:
            try:
                with open(path, "rb") as f:
                    kept_stamp, kept, kept_fenced = pickle.load(f)
                if kept_stamp == stamp and type(kept) is dict and type(kept_fenced) is set:
                    blobs, fenced = kept, kept_fenced
            except Exception:       # absent, unreadable, damaged: parsed again
                pass
        entry = _modules[filename] = [stamp, blobs, False, fenced]
    return entry


def get(filename, first_line):
    """``(kept, stamp)``: ``kept`` is ``(tree, column shift, passed the fence)`` of
    the function at ``first_line`` of ``filename`` as the file is now, or None;
    ``stamp`` is the file's stamp now (None: nothing is kept for it), to give
    ``put`` with the tree parsed instead.  (Asked once per function and process:
    the file's stamp is read each time, a few microseconds.)"""
    try:
        stamp = _stamp(filename)
    except OSError:
        return None, None
    with _lock:
        entry = _entry(filename, stamp)
        blob, fenced = entry[1].get(first_line), first_line in entry[3]
    if blob is None:
        return None, stamp
    try:
        tree, col_shift = pickle.loads(blob)
    except Exception:
        return None, stamp
    if not isinstance(tree, gast.FunctionDef) or type(col_shift) is not int:
        return None, stamp
    return (tree, col_shift, fenced), stamp


def put(filename, first_line, tree, col_shift, stamp):
    """Keep the tree just parsed of the function at ``first_line`` of ``filename``,
    whose stamp was ``stamp`` before it was read: not kept if it changed since."""
    try:
        blob = pickle.dumps((tree, col_shift), protocol=pickle.HIGHEST_PROTOCOL)
        if _stamp(filename) != stamp:
            return
    except Exception:
        return
    with _lock:
        entry = _entry(filename, stamp)
        entry[1][first_line] = blob
        entry[2] = True
        if not _flush_registered[0]:
            _flush_registered[0] = True
            atexit.register(flush)


def passed_fence(filename, first_line, stamp):
    """Keep that the tree of the function at ``first_line`` of ``filename``, as kept
    under ``stamp``, passed the fence."""
    with _lock:
        entry = _modules.get(filename)
        if entry is not None and entry[0] == stamp and first_line in entry[1] \
                and first_line not in entry[3]:
            entry[3].add(first_line)
            entry[2] = True


def flush():
    """Write the trees parsed since their file was read (at exit; by tests)."""
    if sys.dont_write_bytecode:
        return
    with _lock:
        changed = [(f, e) for f, e in _modules.items() if e[2]]
        for filename, entry in changed:
            entry[2] = False
            path = cache_path(filename)
            if path is not None:
                _write(path, (entry[0], entry[1], entry[3]))


def _write(path, content):
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            pickle.dump(content, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)       # a reader sees the old file or the new, whole
    except Exception:               # at exit: nothing to report, nothing lost but time
        try:
            os.remove(tmp)
        except OSError:
            pass


def forget():
    """Drop what was read or parsed (``s2sad.clear_caches``), written first."""
    flush()
    with _lock:
        _modules.clear()
