"""Adam and AdamWeightDecay (MindSpore's update rules)."""
import numbers

import numpy as np

from ...runtime import xarrays
from ...tensor import Parameter
from .optimizer import Optimizer
from .sgd import _zeros_like_params

__all__ = ["Adam", "AdamWeightDecay"]


def _check_beta(value, name, who):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < value < 1.0:
        raise ValueError("For '%s', '%s' must be in (0, 1), but got %r" % (who, name, value))
    return float(value)


def _check_eps(value, who):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value <= 0:
        raise ValueError("For '%s', 'eps' must be positive, but got %r" % (who, value))
    return float(value)


class Adam(Optimizer):
    """Adam (Kingma and Ba) with MindSpore's update, for step ``t = 1, 2, ...``::

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        p = p - lr * sqrt(1 - beta2 ** t) / (1 - beta1 ** t) * m / (sqrt(v) + eps)

    ``g`` is the gradient plus ``weight_decay * p`` (an L2 penalty; use
    ``AdamWeightDecay`` for decoupled decay).  ``use_nesterov`` replaces ``m``
    in the last line by ``beta1 * m + (1 - beta1) * g``.  State: ``moment1``,
    ``moment2`` (ParameterTuples), ``beta1_power``, ``beta2_power``
    (``beta ** t`` after step t) and ``global_step``.
    """

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 use_locking=False, use_nesterov=False, weight_decay=0.0, loss_scale=1.0,
                 use_amsgrad=False):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.beta1 = _check_beta(beta1, "beta1", "Adam")
        self.beta2 = _check_beta(beta2, "beta2", "Adam")
        self.eps = _check_eps(eps, "Adam")
        if use_amsgrad:
            raise NotImplementedError("For 'Adam', use_amsgrad=True is not supported by s2sad")
        self.use_locking = use_locking
        self.use_nesterov = bool(use_nesterov)
        self.moment1 = _zeros_like_params(self.parameters, "moment1")
        self.moment2 = _zeros_like_params(self.parameters, "moment2")
        self.beta1_power = Parameter(np.array([1.0], np.float32), name="beta1_power",
                                     requires_grad=False)
        self.beta2_power = Parameter(np.array([1.0], np.float32), name="beta2_power",
                                     requires_grad=False)
        self._powers = [1.0, 1.0]   # exact float64 beta ** t (the Parameters show them)

    def construct(self, gradients):
        grads = self.decay_weight(self.gradients_arrays(gradients))
        lrs = self.step_lrs()
        self._powers = [self._powers[0] * self.beta1, self._powers[1] * self.beta2]
        self.beta1_power._data[...] = self._powers[0]
        self.beta2_power._data[...] = self._powers[1]
        b1, b2 = self.beta1, self.beta2
        correction = np.sqrt(1.0 - self._powers[1]) / (1.0 - self._powers[0])
        for p, g, m, v, lr in zip(self.parameters, grads, self.moment1, self.moment2, lrs):
            self.follow_dtype(p, m, v)
            self.assign(m, b1 * m._data + (1.0 - b1) * g)
            self.assign(v, b2 * v._data + (1.0 - b2) * g * g)
            mom = b1 * m._data + (1.0 - b1) * g if self.use_nesterov else m._data
            self.assign(p, p._data - (lr * correction) * mom / (xarrays.namespace_of(v._data).sqrt(v._data) + self.eps))
        self.advance()
        return True


class AdamWeightDecay(Optimizer):
    """Adam with decoupled weight decay, MindSpore's form (no bias correction)::

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        update = m / (sqrt(v) + eps) + weight_decay * p
        p = p - lr * update

    ``weight_decay`` applies to the Parameters whose names contain neither
    ``'beta'`` nor ``'gamma'`` unless parameters are grouped.  State:
    ``moments1``, ``moments2`` (also as ``moment1``, ``moment2``).
    """

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6,
                 weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        self.beta1 = _check_beta(beta1, "beta1", "AdamWeightDecay")
        self.beta2 = _check_beta(beta2, "beta2", "AdamWeightDecay")
        self.eps = _check_eps(eps, "AdamWeightDecay")
        self.moments1 = _zeros_like_params(self.parameters, "adam_m")
        self.moments2 = _zeros_like_params(self.parameters, "adam_v")

    @property
    def moment1(self):
        return self.moments1

    @property
    def moment2(self):
        return self.moments2

    def construct(self, gradients):
        grads = self.gradients_arrays(gradients)
        lrs = self.step_lrs()
        b1, b2 = self.beta1, self.beta2
        for p, g, m, v, lr, wd, flag in zip(self.parameters, grads, self.moments1,
                                            self.moments2, lrs, self.weight_decays,
                                            self.decay_flags):
            self.follow_dtype(p, m, v)
            self.assign(m, b1 * m._data + (1.0 - b1) * g)
            self.assign(v, b2 * v._data + (1.0 - b2) * g * g)
            update = m._data / (xarrays.namespace_of(v._data).sqrt(v._data) + self.eps)
            if flag:
                update = update + wd * p._data
            self.assign(p, p._data - lr * update)
        self.advance()
        return True
