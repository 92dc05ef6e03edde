"""``mindspore.train``: ``Model``, callbacks, metrics and checkpoints."""
from .serialization import save_checkpoint, load_checkpoint, load_param_into_net
from .callback import (Callback, RunContext, LossMonitor, TimeMonitor, ModelCheckpoint,
                       CheckpointConfig)
from .model import Model
from ..nn.metrics import Metric, Accuracy, Loss, MAE, MSE
from . import serialization, callback, model

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net", "serialization",
           "Model", "Callback", "RunContext", "LossMonitor", "TimeMonitor", "ModelCheckpoint",
           "CheckpointConfig", "Metric", "Accuracy", "Loss", "MAE", "MSE", "callback", "model"]
