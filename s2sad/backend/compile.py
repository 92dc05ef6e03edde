"""Compile generated source into a callable, visible to tracebacks and pdb."""
import hashlib
import linecache
import logging
import random
import warnings

import numpy as np

from .. import runtime
from ..runtime.userlines import pointing_at_user_lines


def compile_source(source, name, constants, where=None, shown=None, backend=None):
    """Exec ``source`` (defining function ``name``) and return that function.

    The source is registered with ``linecache`` under a name derived from its
    hash, so tracebacks and ``pdb`` show the generated lines -- those of
    ``shown``, the printed form of the same lines, when given; with ``where``
    (location comment -> user's ``Loc``, from codegen) an exception raised
    inside it also names the user's file and line.  ``backend``: the array
    library (``namespaces.Backend``) whose ``xp`` and ``rt`` the code calls,
    None for NumPy.
    """
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = "<s2sad %s %s>" % (name, digest)
    lines = (shown or source).splitlines(True)
    linecache.cache[filename] = (len(shown or source), None, lines, filename)
    # ``random``: the module of Python's own random draws a user's function makes
    xp, rt = (np, runtime) if backend is None else (backend.xp, backend.rt)
    namespace = {"xp": xp, "rt": rt, "random": random, "logging": logging,
                 "warnings": warnings, "__name__": "s2sad_generated"}
    namespace.update(constants)
    exec(compile(source, filename, "exec"), namespace)
    fn = pointing_at_user_lines(namespace[name], filename, source, where)
    fn.__s2sad_source__ = source
    fn.__s2sad_filename__ = filename
    return fn


def forget_source(filename):
    """Drop a generated source from ``linecache`` (its compiled function is gone)."""
    linecache.cache.pop(filename, None)


def forget_sources():
    """Drop every generated source from ``linecache`` (``s2sad.clear_caches``)."""
    for name in [k for k in linecache.cache if str(k).startswith("<s2sad ")]:
        linecache.cache.pop(name, None)
