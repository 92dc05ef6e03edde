"""Functional forms of the primitives (MindSpore's ``ops.functional``, usually F)."""
from functools import partial  # noqa: F401  (MindSpore's F.partial, used with HyperMap)

from .function import *  # noqa: F401,F403
from .function import NUMPY, TENSOR_METHODS, TENSOR_PROPERTIES  # noqa: F401
# MindSpore exports its gradient transforms here too (``ops.grad``,
# ``ops.functional.vjp``); they are the same objects as ``s2sad.grad`` etc.
from ..api import (grad, value_and_grad, get_grad, vjp, jvp, vmap,  # noqa: F401
                   jacfwd, jacrev, hessian)
