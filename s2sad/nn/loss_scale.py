"""Loss scaling: ``TrainOneStepWithLossScaleCell`` and its scale-update Cells.

Loss scaling multiplies the gradient fed to the adjoint (the sens) by a scale
``S`` so that small float16 gradients do not underflow, then divides the
gradients by ``S`` before the optimizer sees them.  A step whose loss or
gradients are not all finite (an *overflow*) is skipped: the weights and the optimizer's
state stay as they were.

``scale_sense`` is a Tensor (a fixed scale, changed only by
``set_sense_scale``) or an update Cell: ``FixedLossScaleUpdateCell`` keeps the
scale, ``DynamicLossScaleUpdateCell`` divides it by ``scale_factor`` (never
below 1) on an overflow and multiplies it by ``scale_factor`` after
``scale_window`` steps in a row without one.
"""
import numpy as np

from ..tensor import Tensor, Parameter
from .cell import Cell
from .wrap import TrainOneStepCell

__all__ = ["TrainOneStepWithLossScaleCell", "DynamicLossScaleUpdateCell",
           "FixedLossScaleUpdateCell"]


class DynamicLossScaleUpdateCell(Cell):
    """Shrinks the scale on an overflow and grows it after ``scale_window`` clean steps.

    Called by ``TrainOneStepWithLossScaleCell`` as ``cell(scale, overflow)``
    with its scale Parameter, which it updates in place; returns ``overflow``.
    """

    def __init__(self, loss_scale_value, scale_factor, scale_window):
        super().__init__(auto_prefix=False)
        self.loss_scale_value = _positive(loss_scale_value, "loss_scale_value", self)
        self.scale_factor = _positive(scale_factor, "scale_factor", self)
        if isinstance(scale_window, bool) or not isinstance(scale_window, (int, np.integer)) \
                or scale_window < 1:
            raise ValueError("DynamicLossScaleUpdateCell: 'scale_window' must be a positive "
                             "int, but got %r" % (scale_window,))
        self.scale_window = int(scale_window)
        self.clean_steps = 0        # steps since the last overflow or growth

    def get_loss_scale(self):
        return self.loss_scale_value

    def construct(self, loss_scale, overflow):
        value = float(loss_scale.asnumpy().reshape(-1)[0])
        if bool(overflow):
            value = max(value / self.scale_factor, 1.0)
            self.clean_steps = 0
        else:
            self.clean_steps += 1
            if self.clean_steps >= self.scale_window:
                value *= self.scale_factor
                self.clean_steps = 0
        _assign_scale(loss_scale, value)
        return overflow


class FixedLossScaleUpdateCell(Cell):
    """Keeps the scale at ``loss_scale_value``; overflowing steps are still skipped."""

    def __init__(self, loss_scale_value):
        super().__init__(auto_prefix=False)
        self.loss_scale_value = _positive(loss_scale_value, "loss_scale_value", self)

    def get_loss_scale(self):
        return self.loss_scale_value

    def construct(self, loss_scale, overflow):
        return overflow


class TrainOneStepWithLossScaleCell(TrainOneStepCell):
    """A ``TrainOneStepCell`` whose sens is a loss scale; returns ``(loss, overflow, scale)``.

    - ``scale_sense``: a Tensor of shape ``()`` or ``(1,)`` (a fixed scale) or
      an update Cell (``DynamicLossScaleUpdateCell``,
      ``FixedLossScaleUpdateCell``) whose ``get_loss_scale()`` is the initial
      scale.

    Each call computes the gradients with a sens of the scale, multiplies them
    by ``1 / scale``, and applies the optimizer only when all of them are
    finite.  A loss that is not finite counts as an overflow too (its
    gradients are meaningless even where they come out finite).
    ``overflow`` is a bool Tensor; ``scale`` is the scale after this
    step's update (the one the next step uses).
    """

    def __init__(self, network, optimizer, scale_sense):
        super().__init__(network, optimizer, sens=None)
        self.loss_scaling_manager = None
        if isinstance(scale_sense, Cell):
            self.loss_scaling_manager = scale_sense
            initial = np.array(scale_sense.get_loss_scale(), np.float32)
        elif isinstance(scale_sense, Tensor):
            initial = _scale_array(scale_sense)
        else:
            raise TypeError("TrainOneStepWithLossScaleCell: 'scale_sense' must be a Tensor or "
                            "a loss-scale update Cell, but got %s" % type(scale_sense).__name__)
        self.scale_sense = Parameter(initial, name="scale_sense", requires_grad=False)

    def set_sense_scale(self, sens):
        """Replace the scale with ``sens`` (a Tensor of shape ``()`` or ``(1,)``)."""
        self.scale_sense.set_data(_scale_array(sens))

    def construct(self, *inputs):
        scale = self.scale_sense
        self.sens = float(scale.asnumpy().reshape(-1)[0])
        loss, grads = self._loss_and_grads(inputs)
        grads = tuple(Tensor(_array(g) * _array(g).dtype.type(1.0 / self.sens)) for g in grads)
        overflow = not all(np.all(np.isfinite(_array(v))) for v in (loss,) + grads)
        if self.loss_scaling_manager is not None:
            overflow = bool(self.loss_scaling_manager(scale, overflow))
        if not overflow:
            self.optimizer(grads)
        return loss, Tensor(np.array(overflow)), Tensor(scale.asnumpy().copy())


def _array(value):
    return value._data if isinstance(value, Tensor) else np.asarray(value)


def _scale_array(sens):
    arr = np.array(_array(sens))
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float32)
    if arr.shape not in ((), (1,)):
        raise ValueError("TrainOneStepWithLossScaleCell: the loss scale must have shape () or "
                         "(1,), but got %s" % (arr.shape,))
    return arr


def _assign_scale(param, value):
    """Write ``value`` into the scale Parameter, keeping its shape and dtype."""
    param.set_data(np.full(param.shape, value, dtype=param._data.dtype))


def _positive(value, name, cell):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or value <= 0:
        raise ValueError("%s: '%s' must be a positive number, but got %r"
                         % (type(cell).__name__, name, value))
    return float(value)

