"""Primitives, their functional forms, and GradOperation (MindSpore's ``ops``)."""
from .primitive import Primitive, PrimitiveWithInfer, PrimitiveWithCheck, prim_attr_register
from .operations import *  # noqa: F401,F403
from . import operations
from .functional import *  # noqa: F401,F403
from . import functional
from ._grad import bprop_getters, jvp_getters
from . import composite
from .composite import GradOperation, HyperMap, Map, MultitypeFuncGraph
from ..runtime import constexpr

# MindSpore's module aliases: ``mindspore.ops.operations as P`` etc.
P = operations
F = functional
C = composite
