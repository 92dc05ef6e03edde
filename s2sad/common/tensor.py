"""``mindspore.common.tensor``: where MindSpore code imports ``Tensor`` from."""
from ..tensor import Tensor

__all__ = ["Tensor"]
