"""SGD and Momentum (MindSpore's update rules)."""
import numbers

from ...runtime import xarrays
from ...tensor import Parameter, ParameterTuple
from .optimizer import Optimizer

__all__ = ["SGD", "Momentum"]


def _zeros_like_params(params, prefix, fill=0.0):
    return ParameterTuple(
        Parameter(xarrays.full_like(p._data, fill),
                  name="%s.%s" % (prefix, p.name), requires_grad=False)
        for p in params)


def _check_non_negative(value, name, who):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
        raise ValueError("For '%s', '%s' must be a non-negative float, but got %r"
                         % (who, name, value))
    return float(value)


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening and Nesterov.

    With ``g`` the gradient (plus ``weight_decay * p``)::

        v = g                                  on the first step
        v = momentum * v + (1 - dampening) * g afterwards
        p = p - lr * (g + momentum * v)        if nesterov
        p = p - lr * v                         otherwise

    State: ``accum`` (the ``v`` of each parameter) and ``stat`` (1 until a
    parameter's first update, then 0), both ParameterTuples.
    """

    def __init__(self, params, learning_rate=0.1, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.momentum = _check_non_negative(momentum, "momentum", "SGD")
        self.dampening = _check_non_negative(dampening, "dampening", "SGD")
        if not isinstance(nesterov, bool):
            raise TypeError("For 'SGD', 'nesterov' must be a bool, but got %s"
                            % type(nesterov).__name__)
        if nesterov and (self.momentum <= 0.0 or self.dampening != 0.0):
            raise ValueError("For 'SGD', if 'nesterov' is true, 'momentum' must be > 0.0 and "
                             "'dampening' must equal 0.0, but got momentum %r and dampening %r"
                             % (momentum, dampening))
        self.nesterov = nesterov
        self.accum = _zeros_like_params(self.parameters, "accum")
        self.stat = _zeros_like_params(self.parameters, "stat", fill=1.0)

    def construct(self, gradients):
        grads = self.decay_weight(self.gradients_arrays(gradients))
        lrs = self.step_lrs()
        for p, g, v, stat, lr in zip(self.parameters, grads, self.accum, self.stat, lrs):
            self.follow_dtype(p, v)
            if stat._data.reshape(-1)[0] > 0:
                self.assign(v, g)
                stat._data[...] = 0
            else:
                self._accumulate(v, g)
            if self.nesterov:
                self.subtract(p, lr * (g + self.momentum * v._data))
            else:
                self.subtract(p, lr * v._data)
        self.advance()
        return True

    def _accumulate(self, v, g):
        """``v = momentum * v + (1 - dampening) * g`` in v's buffer; with neither
        momentum nor dampening that is a copy of ``g``, which a plain SGD step
        does each call."""
        if self.momentum == 0.0 and self.dampening == 0.0:
            self.assign(v, g)
            return
        v._data *= self.momentum
        self.add_to(v, (1.0 - self.dampening) * g)


class Momentum(Optimizer):
    """Momentum SGD: ``v = momentum * v + g``; ``p -= lr * v``.

    With ``use_nesterov``: ``p -= lr * (g + momentum * v)``.

    ``g`` is the gradient plus ``weight_decay * p``.  State: ``moments`` (the
    ``v`` of each parameter, zeros at first).
    """

    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0,
                 use_nesterov=False):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.momentum = _check_non_negative(momentum, "momentum", "Momentum")
        if not isinstance(use_nesterov, bool):
            raise TypeError("For 'Momentum', 'use_nesterov' must be a bool, but got %s"
                            % type(use_nesterov).__name__)
        self.use_nesterov = use_nesterov
        self.moments = _zeros_like_params(self.parameters, "moments")

    def construct(self, gradients):
        grads = self.decay_weight(self.gradients_arrays(gradients))
        lrs = self.step_lrs()
        for p, g, v, lr in zip(self.parameters, grads, self.moments, lrs):
            self.follow_dtype(p, v)
            v._data *= self.momentum
            self.add_to(v, g)
            if self.use_nesterov:
                self.subtract(p, g * lr + v._data * self.momentum * lr)
            else:
                self.subtract(p, lr * v._data)
        self.advance()
        return True
