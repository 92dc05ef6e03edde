"""Functional forms of the primitives (MindSpore's ``ops.functional``, usually F)."""
from .function import *  # noqa: F401,F403
from .function import NUMPY, TENSOR_METHODS, TENSOR_PROPERTIES  # noqa: F401
