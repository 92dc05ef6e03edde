"""bprop rules by primitive family, and the registry they register into."""
from .grad_base import bprop_getters, bprops, jvp_getters
from . import grad_math_ops, grad_array_ops, grad_nn_ops, grad_control  # noqa: F401
