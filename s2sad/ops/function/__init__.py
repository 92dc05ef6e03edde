"""Functional forms of the primitives, by family.

Each is a small Python function over primitive instances.  Called eagerly it
runs the primitives; met inside a differentiated function, the frontend
inlines its source like any user helper, so these need no rules of their own.
Each family module also lists the NumPy functions (``NUMPY``) and the
Tensor/ndarray methods and attributes (``TENSOR_METHODS``,
``TENSOR_PROPERTIES``) that map to its functional forms.
"""
from ...tensor import register_methods
from . import math_func, array_func, arrange_func, nn_func, stats_func, contract_func, \
    linalg_func, scipy_func, misc_func, fft_func
from .math_func import *  # noqa: F401,F403
from .array_func import *  # noqa: F401,F403
from .nn_func import *  # noqa: F401,F403
from .stats_func import *  # noqa: F401,F403
from .contract_func import *  # noqa: F401,F403
from .linalg_func import *  # noqa: F401,F403
from ..operations.effect_ops import assign, print_  # noqa: F401

FAMILIES = (math_func, array_func, arrange_func, nn_func, stats_func, contract_func,
            linalg_func, scipy_func, misc_func, fft_func)


def _merged(attr):
    out = {}
    for family in FAMILIES:
        out.update(getattr(family, attr, {}))
    return out


NUMPY = _merged("NUMPY")
TENSOR_METHODS = _merged("TENSOR_METHODS")
TENSOR_PROPERTIES = _merged("TENSOR_PROPERTIES")
#: builtins (``abs``) applied to runtime values -> a replacement over primitives
BUILTINS = _merged("BUILTINS")
SCIPY_SPECIAL = _merged("SCIPY_SPECIAL")
#: ``scipy.stats`` distribution methods by (distribution name, method name)
SCIPY_STATS = _merged("SCIPY_STATS")
#: ``scipy.signal`` functions by name
SCIPY_SIGNAL = _merged("SCIPY_SIGNAL")
SCIPY_LINALG = _merged("SCIPY_LINALG")
NUMPY_INDEXED = _merged("NUMPY_INDEXED")

register_methods(TENSOR_METHODS, TENSOR_PROPERTIES)
