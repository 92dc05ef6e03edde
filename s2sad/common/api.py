"""``mindspore.common.api``: an import path MindSpore code uses, nothing in it yet.

MindSpore keeps ``jit`` (formerly ``ms_function``) and ``jit_class`` here.
s2sad has neither: calling a Cell or function runs it eagerly and only
gradients are compiled.  Importing one of them fails with that explanation
instead of a bare "cannot import name".
"""
__all__ = []

_NOT_YET = ("jit", "ms_function", "jit_class", "ms_class")


def __getattr__(name):
    if name in _NOT_YET:
        # ImportError, not AttributeError: ``from ... import jit`` would
        # replace an AttributeError's message with its own
        raise ImportError(
            "mindspore.common.api.%s is not available in s2sad: calls run eagerly and only "
            "gradients are compiled, so remove the decorator (the code runs as written)"
            % name, name=name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
