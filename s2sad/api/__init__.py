"""The user's API: gradient functions, the functional transforms, checks, inspection.

Modules by idea: ``gradoperation`` (MindSpore's ``GradOperation`` flags),
``gradfunction`` (the callable it returns: compile on first call, run the
cached entry after), ``fastpath`` (that per-call path for plain arrays),
``inputs`` (fitting gradients to the inputs they belong to), ``weights``
(where each Parameter lives), ``functional`` (``grad``/``value_and_grad``),
``packing`` and ``args`` (what those share), ``vjp_jvp`` (with ``jvpfast``, its
per-call path), ``hessvec`` (``hvp``), ``jacobians``
(``jacfwd``/``jacrev``/``hessian``), ``jacobian`` (the lazy ``Jacobian`` and
``Hessian`` matrices), ``check`` (``check_grads``), ``inspection``
(``get_source``/``get_ir``), ``jit`` (compiled forward execution),
``staged`` and ``closuregrad`` (transforms met inside compiled code).
"""
from .gradoperation import GradOperation
from .gradfunction import GradFunction
from .functional import grad, value_and_grad, get_grad
from .vjp_jvp import vjp, jvp
from .hessvec import hvp
from .vmap import vmap
from .jacobians import jacfwd, jacrev, hessian
from . import closuregrad as _closuregrad  # noqa: F401  (stage hooks of grad, value_and_grad)
from .jacobian import Jacobian, Hessian
from .check import check_grads, GradCheckError
from .inspection import get_source, get_ir
from .jit import jit, ms_function, jit_class, ms_class, JitEagerWarning
