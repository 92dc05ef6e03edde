"""Compile generated source into a callable, visible to tracebacks and pdb."""
import hashlib
import linecache

import numpy as np

from . import runtime


def compile_source(source, name, constants):
    """Exec ``source`` (defining function ``name``) and return that function.

    The source is registered with ``linecache`` under a name derived from its
    hash, so tracebacks and ``pdb`` show the generated lines.
    """
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = "<s2sad %s %s>" % (name, digest)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"xp": np, "rt": runtime, "__name__": "s2sad_generated"}
    namespace.update(constants)
    exec(compile(source, filename, "exec"), namespace)
    fn = namespace[name]
    fn.__s2sad_source__ = source
    return fn
