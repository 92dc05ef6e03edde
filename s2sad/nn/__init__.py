"""Neural-network building blocks: Cell, layers, losses, optimizers and training wrappers.

Only ``Cell`` is imported with the package: the compiler needs it to recognise
networks.  The layers, losses, optimizers, wrappers and metrics are imported
on the first access to one of their names, each submodule on its own
(``nn.Dense`` imports the layers, not the optimizers nor the distributed
wrappers), and all of them for ``from s2sad.nn import *`` or ``dir(nn)``, so
programs that differentiate NumPy functions do not pay for them, nor
networks for what they do not use.
"""
import importlib

from .cell import Cell

# submodule -> the names it gives this package (``None``: its ``__all__``)
_EXPORTS = (
    ("layer", None),
    ("loss", ("LossBase", "MSELoss", "L1Loss", "SmoothL1Loss", "SoftmaxCrossEntropyWithLogits",
              "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "NLLLoss")),
    ("optim", ("Optimizer", "SGD", "Momentum", "Adam", "AdamWeightDecay")),
    ("wrap", ("WithLossCell", "WithEvalCell", "TrainOneStepCell", "WithGradCell",
              "ForwardValueAndGrad", "Jvp", "Vjp")),
    ("grad_reducer", ("DistributedGradReducer",)),
    ("loss_scale", ("TrainOneStepWithLossScaleCell", "DynamicLossScaleUpdateCell",
                    "FixedLossScaleUpdateCell")),
    ("metrics", ("Metric", "Accuracy", "Loss", "MAE", "MSE")),
)

# name -> the submodule exporting it (the layers, exported by their ``__all__``,
# are what any other name is looked for in first)
_OWNER = {name: sub for sub, exported in _EXPORTS if exported for name in exported}

_loading = []


def _load_all():
    """Import every submodule and bind its public names and ``__all__`` here.

    ``import_module``, not ``from . import``: that form asks this package for
    the submodule's name first, which would come back here.
    """
    if _loading:                # a submodule asked for a name while loading
        return
    _loading.append(True)
    try:
        names = ["Cell"]
        for sub, exported in _EXPORTS:
            names += _bind(importlib.import_module(__name__ + "." + sub), exported)
    finally:
        _loading.clear()
    globals()["__all__"] = names


def _bind(module, exported):
    """Bind ``exported`` names of ``module`` (``None``: its ``__all__``) here; their list."""
    exported = module.__all__ if exported is None else exported
    for name in exported:
        globals()[name] = getattr(module, name)
    return list(exported)


def _load(sub):
    """Import the submodule ``sub`` and bind its exported names here (a name asked for
    while it loads is looked up as before: in what is bound already)."""
    _loading.append(True)
    try:
        _bind(importlib.import_module(__name__ + "." + sub), dict(_EXPORTS)[sub])
    finally:
        _loading.clear()


def __getattr__(name):
    if name.startswith("__") and name != "__all__":
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    if name != "__all__" and not _loading:
        _load(_OWNER.get(name, "layer"))    # all of them only when that does not have it
    if name not in globals():
        _load_all()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError("module %r has no attribute %r" % (__name__, name)) from None


def __dir__():
    _load_all()
    return sorted(globals())
