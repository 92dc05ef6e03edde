"""s2sad: source-to-source automatic differentiation with a MindSpore-like API.

``import s2sad as mindspore`` runs MindSpore code: ``nn.Cell``, ``ops``,
``Tensor``, ``Parameter`` and ``GradOperation`` behave as there, and the
gradient is generated Python you can read with ``s2sad.get_source``.
"""
from . import dtype
from .dtype import (float16, float32, float64, int8, int16, int32, int64, uint8, bool_)
from .tensor import Tensor, Parameter, ParameterTuple, tensor
from . import ops, nn
from .driver import mutable, clear_caches, RecompileWarning
from .opt.options import options
from .api import (grad, value_and_grad, get_grad, vjp, jvp, vmap, jacfwd, jacrev, hessian,
                  Jacobian, Hessian, check_grads, GradCheckError, get_source, get_ir, jit, ms_function,
                  jit_class, ms_class, JitEagerWarning)
from .api.pytree import (register_pytree_node, tree_flatten, tree_unflatten, tree_leaves,
                         tree_structure, tree_map)
from .errors import S2SADError, CompileError, UnsupportedSyntaxError, NoGradientRuleError
from .common import set_seed, get_seed
from . import context, communication
from .context import set_context, get_context, GRAPH_MODE, PYNATIVE_MODE
from .context import (ParallelMode, set_auto_parallel_context, get_auto_parallel_context,
                      reset_auto_parallel_context)
from . import train, dataset
from .train import save_checkpoint, load_checkpoint, load_param_into_net
from .train import (Model, Callback, RunContext, LossMonitor, TimeMonitor, ModelCheckpoint,
                    CheckpointConfig)

__version__ = "0.1.0"


def _alias_as_mindspore():
    """Make ``from mindspore import nn`` work after ``import s2sad as mindspore``.

    ``import x as y`` binds a name only; ``from mindspore import ...`` looks in
    ``sys.modules``.  So, when no real MindSpore is installed, s2sad and its
    submodules are also registered under ``mindspore``.
    """
    import importlib.util
    import sys
    if "mindspore" in sys.modules:
        return
    try:
        if importlib.util.find_spec("mindspore") is not None:
            return
    except (ImportError, ValueError):
        return
    for name, module in list(sys.modules.items()):
        if name == __name__ or name.startswith(__name__ + "."):
            sys.modules["mindspore" + name[len(__name__):]] = module


_alias_as_mindspore()
