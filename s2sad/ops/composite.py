"""MindSpore's ``mindspore.ops.composite`` (imported as ``C``): operations built from others.

The implementations live in the user-API layer (``s2sad.api``); this module
is the import path MindSpore code uses.
"""
from ..api.gradoperation import GradOperation
from ..api.hypermap import HyperMap, Map, MultitypeFuncGraph

__all__ = ["GradOperation", "HyperMap", "Map", "MultitypeFuncGraph"]
