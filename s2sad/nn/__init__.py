"""Neural-network building blocks: Cell, layers, losses, optimizers and training wrappers."""
from .cell import Cell
from .layer import *  # noqa: F401,F403
from .layer import __all__ as _layer_all
from .loss import (LossBase, MSELoss, L1Loss, SmoothL1Loss, SoftmaxCrossEntropyWithLogits,
                   BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, NLLLoss)
from .optim import Optimizer, SGD, Momentum, Adam, AdamWeightDecay
from .wrap import (WithLossCell, WithEvalCell, TrainOneStepCell, WithGradCell,
                   ForwardValueAndGrad, Jvp, Vjp)
from .grad_reducer import DistributedGradReducer
from .loss_scale import (TrainOneStepWithLossScaleCell, DynamicLossScaleUpdateCell,
                         FixedLossScaleUpdateCell)
from .metrics import Metric, Accuracy, Loss, MAE, MSE
from . import layer, loss, optim, wrap, loss_scale, metrics, grad_reducer

__all__ = (["Cell"] + list(_layer_all)
           + ["LossBase", "MSELoss", "L1Loss", "SmoothL1Loss", "SoftmaxCrossEntropyWithLogits",
              "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "NLLLoss", "Optimizer", "SGD",
              "Momentum", "Adam", "AdamWeightDecay", "WithLossCell", "WithEvalCell",
              "TrainOneStepCell", "WithGradCell", "ForwardValueAndGrad", "Jvp", "Vjp", "DistributedGradReducer",
              "TrainOneStepWithLossScaleCell", "DynamicLossScaleUpdateCell",
              "FixedLossScaleUpdateCell", "Metric", "Accuracy", "Loss", "MAE", "MSE"])
