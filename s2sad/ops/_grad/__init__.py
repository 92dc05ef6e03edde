"""bprop, JVP and Taylor rules by primitive family, and the registries they register into."""
from .grad_base import bprop_getters, bprops, jvp_getters, taylor_rules
from . import grad_math_ops, grad_array_ops, grad_nn_ops, grad_control  # noqa: F401
from . import grad_elementwise_ops, grad_contract_ops, grad_linalg_ops  # noqa: F401
from . import grad_arrange_ops, grad_complex_ops, grad_special_ops, grad_fft_ops  # noqa: F401
