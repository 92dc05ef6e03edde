"""``mindspore.train``: checkpoints (``Model`` is not there yet: write the loop)."""
from .serialization import save_checkpoint, load_checkpoint, load_param_into_net
from . import serialization

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net", "serialization"]
