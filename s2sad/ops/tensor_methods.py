"""Tensor (and ndarray) attributes and methods inside differentiated code.

``x.sum()`` or ``x.T`` on a runtime value is rewritten to the functions each
primitive family lists in ``ops/function/*_func.py``, which the frontend
inlines.  Keyword names accept both MindSpore's (``keep_dims``) and NumPy's
(``keepdims``) spelling, because a runtime value may be a Tensor or an ndarray.
"""
from .function import TENSOR_METHODS as METHODS  # noqa: F401
from .function import TENSOR_PROPERTIES as PROPERTIES  # noqa: F401
