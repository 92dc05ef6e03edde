"""bprop and JVP rules for neural-network primitives."""
from ..operations import nn_ops as N  # noqa: F401
from .grad_base import bprop_getters, jvp_getters  # noqa: F401
