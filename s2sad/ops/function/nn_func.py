"""Functional forms of neural-network primitives (``ops.relu``, ``ops.softmax``, ...)."""
import numpy as np  # noqa: F401

from ..operations import nn_ops as N  # noqa: F401

NUMPY = {}

TENSOR_METHODS = {}

TENSOR_PROPERTIES = {}

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
