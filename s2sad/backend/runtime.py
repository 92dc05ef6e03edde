"""The runtime library's former home, kept for modules written by ``s2sad dump``.

Standalone modules dumped before the runtime library moved to
``s2sad.runtime`` import it as ``from s2sad.backend import runtime as rt``;
this name makes that import give the one runtime module.  New code imports
``s2sad.runtime``.
"""
import sys

from .. import runtime as _runtime

sys.modules[__name__] = _runtime
