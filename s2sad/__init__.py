"""s2sad: source-to-source automatic differentiation with a MindSpore-like API.

``import s2sad as mindspore`` runs MindSpore code: ``nn.Cell``, ``ops``,
``Tensor``, ``Parameter`` and ``GradOperation`` behave as there, and the
gradient is generated Python you can read with ``s2sad.get_source``.
"""
from . import dtype
from .dtype import (float16, float32, float64, int8, int16, int32, int64, uint8, bool_)
from .tensor import Tensor, Parameter, ParameterTuple, tensor
from . import ops
from .driver import mutable, clear_caches, RecompileWarning
from .opt.options import options
from .api import (grad, value_and_grad, get_grad, vjp, jvp, hvp, vmap, jacfwd, jacrev, hessian,
                  Jacobian, Hessian, check_grads, GradCheckError, get_source, get_ir, jit, ms_function,
                  jit_class, ms_class, JitEagerWarning)
from .api.pytree import (register_pytree_node, tree_flatten, tree_unflatten, tree_leaves,
                         tree_structure, tree_map)
from .errors import S2SADError, CompileError, UnsupportedSyntaxError, NoGradientRuleError
from .common import set_seed, get_seed
from . import context
from .context import set_context, get_context, GRAPH_MODE, PYNATIVE_MODE
from .context import (ParallelMode, set_auto_parallel_context, get_auto_parallel_context,
                      reset_auto_parallel_context)

__version__ = "0.1.0"

# Imported on first access (``s2sad.nn``, ``from s2sad import Model``): a
# program that differentiates NumPy functions never pays for them.
_LAZY_MODULES = ("nn", "train", "dataset", "communication")
_LAZY_NAMES = {name: "train" for name in (
    "save_checkpoint", "load_checkpoint", "load_param_into_net", "Model", "Callback",
    "RunContext", "LossMonitor", "TimeMonitor", "ModelCheckpoint", "CheckpointConfig")}


def __getattr__(name):
    import importlib
    if name in _LAZY_MODULES:
        return importlib.import_module(__name__ + "." + name)
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(__name__ + "." + _LAZY_NAMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def __dir__():
    return sorted(set(globals()) | set(_LAZY_MODULES) | set(_LAZY_NAMES))


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
    sys.meta_path.insert(0, _MindSporeAliases)


class _MindSporeAliases:
    """Finds ``mindspore.<x>`` as the module ``s2sad.<x>`` itself.

    The submodules ``import s2sad`` does not load (``nn``'s layers, ``train``,
    ``dataset``...) are not in ``sys.modules`` when the aliases above are made;
    without this finder ``from mindspore.nn.loss import MSELoss`` would load a
    second copy of ``s2sad/nn/loss.py``, with classes of its own.
    """

    def __init__(self, real):
        self.real = real
        self.spec = None

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        import importlib.machinery
        import importlib.util
        import sys
        if not fullname.startswith("mindspore.") or \
                sys.modules.get("mindspore") is not sys.modules[__name__]:
            return None
        real = __name__ + fullname[len("mindspore"):]
        spec = importlib.util.find_spec(real)
        if spec is None:
            return None
        return importlib.machinery.ModuleSpec(
            fullname, cls(real), is_package=spec.submodule_search_locations is not None)

    def create_module(self, spec):
        import importlib
        module = importlib.import_module(self.real)
        self.spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self.spec     # the import system set the alias's own


_alias_as_mindspore()
