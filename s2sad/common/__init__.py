"""Global state shared by layers: the random seed and parameter initializers.

``s2sad.common.initializer`` mirrors ``mindspore.common.initializer``, and
``dtype``, ``tensor``, ``parameter`` and ``api`` are MindSpore's import paths
for the same objects; ``set_seed`` / ``get_seed`` are also exported as
``s2sad.set_seed`` and ``s2sad.get_seed``.
"""
from .seed import set_seed, get_seed
from . import initializer
from . import dtype, tensor, parameter, api
# MindSpore's ``from mindspore.common import Tensor, Parameter, ParameterTuple``
from .tensor import Tensor
from .parameter import Parameter, ParameterTuple

__all__ = ["set_seed", "get_seed", "initializer", "dtype", "tensor", "parameter", "api",
           "Tensor", "Parameter", "ParameterTuple"]
