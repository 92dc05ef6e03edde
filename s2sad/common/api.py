"""``mindspore.common.api``: the import path MindSpore code uses for ``jit`` and its aliases.

``jit`` (formerly ``ms_function``) compiles a function or ``construct`` and
runs the compiled forward; ``jit_class`` (``ms_class``) returns the class
unchanged (see ``s2sad.api.jit``).  They are read on first access: this
module is imported while ``s2sad.nn`` loads, before the API can be.
"""
_LAZY = ("jit", "ms_function", "jit_class", "ms_class")
__all__ = list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        from .. import api      # its ``jit`` module is shadowed there by the function
        return getattr(api, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
