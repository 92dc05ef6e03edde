"""Neural-network building blocks: Cell, layers, losses, optimizers and training wrappers.

Only ``Cell`` is imported with the package: the compiler needs it to recognise
networks.  The layers, losses, optimizers, wrappers and metrics are imported
on the first access to any other name (``nn.Dense``, ``from s2sad.nn import
*``), so programs that differentiate NumPy functions do not pay for them.
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


def __getattr__(name):
    if name.startswith("__") and name != "__all__":
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    _load_all()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError("module %r has no attribute %r" % (__name__, name)) from None


def __dir__():
    _load_all()
    return sorted(globals())
