"""Training wrappers: ``WithLossCell``, ``TrainOneStepCell``, ``WithEvalCell``.

``TrainOneStepCell(network, optimizer, sens=1.0)`` is MindSpore's: one call
runs ``network`` (usually a ``WithLossCell``) on a batch, differentiates it
with ``GradOperation(get_by_list=True, sens_param=True)`` with respect to the
optimizer's parameters, with a sens of ``sens`` shaped like the loss, applies
the optimizer, and returns the loss.
"""
import numpy as np

from .. import ops
from ..runtime import rt_nn
from ..tensor import Tensor
from .cell import Cell

__all__ = ["WithLossCell", "WithEvalCell", "TrainOneStepCell"]


class WithLossCell(Cell):
    """``loss_fn(backbone(data), label)``."""

    def __init__(self, backbone, loss_fn):
        super().__init__(auto_prefix=False)
        if not isinstance(backbone, Cell) or not isinstance(loss_fn, Cell):
            raise TypeError("WithLossCell expects two Cells (a backbone and a loss), but got "
                            "%s and %s" % (type(backbone).__name__, type(loss_fn).__name__))
        self._backbone = backbone
        self._loss_fn = loss_fn

    def construct(self, data, label):
        out = self._backbone(data)
        return self._loss_fn(out, label)

    @property
    def backbone_network(self):
        return self._backbone


class WithEvalCell(Cell):
    """``(loss, outputs, label)`` of ``network`` on a batch, for evaluation."""

    def __init__(self, network, loss_fn):
        super().__init__(auto_prefix=False)
        self._network = network
        self._loss_fn = loss_fn

    def construct(self, data, label):
        outputs = self._network(data)
        loss = self._loss_fn(outputs, label)
        return loss, outputs, label


class TrainOneStepCell(Cell):
    """One optimisation step per call: ``loss = step(*inputs)`` updates the weights.

    - ``network``: a Cell returning the loss (e.g. ``WithLossCell``);
    - ``optimizer``: an ``nn.Optimizer``; its ``parameters`` are the weights
      differentiated;
    - ``sens``: the gradient of the loss fed to the adjoint (1.0 gives the
      plain gradient; a loss scale multiplies it).

    Each call first runs ``network`` eagerly (this returns the loss and lets
    layers such as BatchNorm update their running statistics), then the
    compiled gradient, which replays the same Dropout masks: the random
    generator is rewound between the two, so the gradient is the gradient of
    the loss returned.  ``self.grad_fn`` is the gradient function used.
    """

    def __init__(self, network, optimizer, sens=1.0):
        super().__init__(auto_prefix=False)
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.grad_fn = self.grad(self.network, self.weights)
        self.sens = sens

    def construct(self, *inputs):
        rng_state = rt_nn._generator.bit_generator.state
        loss = self.network(*inputs)
        sens = _fill_like(loss, self.sens)
        rt_nn._generator.bit_generator.state = rng_state
        grads = self.grad_fn(*inputs, sens)
        self.optimizer(grads)
        return loss


def _fill_like(loss, value):
    """A Tensor of the loss's shape and dtype filled with ``value`` (MindSpore's ``F.fill``)."""
    arr = loss._data if isinstance(loss, Tensor) else np.asarray(loss)
    return Tensor(np.full(arr.shape, value, dtype=arr.dtype))
