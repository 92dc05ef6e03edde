"""Losses with MindSpore's names: each reduces per-element losses by ``reduction``.

``reduction`` is ``'mean'`` (the average over every element), ``'sum'`` or
``'none'`` (the per-element losses, shaped like the input).
"""
from .. import ops
from ..tensor import Tensor
from .cell import Cell

__all__ = ["LossBase", "MSELoss", "L1Loss", "SmoothL1Loss", "SoftmaxCrossEntropyWithLogits",
           "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "NLLLoss"]

_ALL = ()   # ReduceSum / ReduceMean over every axis


class LossBase(Cell):
    """Base class: ``get_loss(x, weights=None)`` applies the weights and the reduction.

    ``weights`` (a Tensor or number, broadcast against ``x``) multiplies the
    per-element losses first; ``None`` (MindSpore writes ``1.0``) skips the
    product so the adjoint has no multiplication by one.
    """

    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError("For '%s', the 'reduction' must be in ['mean', 'sum', 'none'], "
                             "but got %r" % (type(self).__name__, reduction))
        self.reduction = reduction
        self.reduce_mean = ops.ReduceMean()
        self.reduce_sum = ops.ReduceSum()

    def get_loss(self, x, weights=None):
        if weights is not None:
            x = x * weights
        if self.reduction == "mean":
            x = self.reduce_mean(x, _ALL)
        if self.reduction == "sum":
            x = self.reduce_sum(x, _ALL)
        return x

    def construct(self, logits, labels):
        raise NotImplementedError


class MSELoss(LossBase):
    """(logits - labels) ** 2, reduced."""

    def construct(self, logits, labels):
        x = ops.square(logits - labels)
        return self.get_loss(x)


class L1Loss(LossBase):
    """|logits - labels|, reduced."""

    def construct(self, logits, labels):
        x = ops.abs(logits - labels)
        return self.get_loss(x)


class SmoothL1Loss(LossBase):
    """0.5 * d^2 / beta where |d| < beta, |d| - 0.5 * beta elsewhere (d = logits - labels).

    MindSpore's default reduction here is ``'none'``.
    """

    def __init__(self, beta=1.0, reduction="none"):
        super().__init__(reduction)
        if beta <= 0:
            raise ValueError("For 'SmoothL1Loss', 'beta' must be positive, but got %r" % (beta,))
        self.beta = float(beta)

    def construct(self, logits, labels):
        diff = ops.abs(logits - labels)
        x = ops.select(diff < self.beta, 0.5 * ops.square(diff) / self.beta,
                       diff - 0.5 * self.beta)
        return self.get_loss(x)


class SoftmaxCrossEntropyWithLogits(LossBase):
    """-sum(labels * log_softmax(logits)) over the last axis, per sample, then reduced.

    ``sparse=True``: labels are class indices [N] instead of distributions
    [N, C].  MindSpore's default reduction here is ``'none'`` (one loss per
    sample).
    """

    def __init__(self, sparse=False, reduction="none"):
        super().__init__(reduction)
        self.sparse = bool(sparse)
        self.softmax_cross_entropy = ops.SoftmaxCrossEntropyWithLogits()
        self.one_hot = ops.OneHot()
        self.cast_like = ops.CastLike()

    def construct(self, logits, labels):
        if self.sparse:
            depth = ops.shape(logits)[-1]
            labels = self.cast_like(self.one_hot(labels, depth, 1.0, 0.0), logits)
        x, _ = self.softmax_cross_entropy(logits, labels)
        return self.get_loss(x)


class BCELoss(LossBase):
    """-weight * (labels * log(logits) + (1 - labels) * log(1 - logits)), reduced.

    ``logits`` are probabilities in (0, 1) (apply a Sigmoid first, or use
    ``BCEWithLogitsLoss``).  As MindSpore's kernel does, 1e-12 is added inside
    both logarithms so a probability of exactly 0 or 1 gives a finite loss.
    """

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.weight = weight
        self.has_weight = weight is not None

    def construct(self, logits, labels):
        eps = 1e-12
        x = -(labels * ops.log(logits + eps) + (1 - labels) * ops.log(1 - logits + eps))
        if self.has_weight:
            x = x * self.weight
        return self.get_loss(x)


class BCEWithLogitsLoss(LossBase):
    """Binary cross entropy of ``sigmoid(logits)``, computed stably from the logits.

    The formula is ``ops.binary_cross_entropy_with_logits``'s.
    """

    def __init__(self, reduction="mean", weight=None, pos_weight=None):
        super().__init__(reduction)
        self.weight = weight
        self.pos_weight = pos_weight

    def construct(self, logits, labels):
        return ops.binary_cross_entropy_with_logits(logits, labels, self.weight, self.pos_weight,
                                                    self.reduction)


def _check_class_loss_args(who, weight, ignore_index, label_smoothing=0.0):
    """ValueError/TypeError naming the argument of CrossEntropyLoss or NLLLoss that is wrong."""
    if weight is not None and not isinstance(weight, Tensor):
        raise TypeError("For '%s', 'weight' must be a Tensor of shape (C,) or None, but got %s"
                        % (who, type(weight).__name__))
    if weight is not None and len(weight.shape) != 1:
        raise ValueError("For '%s', 'weight' must have shape (C,), but got %s"
                         % (who, tuple(weight.shape)))
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
        raise TypeError("For '%s', 'ignore_index' must be an int, but got %r"
                        % (who, ignore_index))
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float)) \
            or not 0.0 <= label_smoothing <= 1.0:
        raise ValueError("For '%s', 'label_smoothing' must be a float in [0.0, 1.0], but got %r"
                         % (who, label_smoothing))


class CrossEntropyLoss(LossBase):
    """Cross entropy of ``softmax(logits)`` over the class axis (``ops.cross_entropy``).

    ``logits`` is [C], [N, C] or [N, C, d1, ...].  ``labels`` are class
    indices (one axis fewer; ``ignore_index`` marks entries that count for
    nothing) or class probabilities (``logits``' shape).  ``weight`` [C]
    weighs the classes; ``label_smoothing`` mixes a uniform distribution into
    the targets.
    """

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        _check_class_loss_args("CrossEntropyLoss", weight, ignore_index, label_smoothing)
        self.weight = weight
        self.ignore_index = ignore_index
        self.label_smoothing = float(label_smoothing)

    def construct(self, logits, labels):
        return ops.cross_entropy(logits, labels, self.weight, self.ignore_index, self.reduction,
                                 self.label_smoothing)


class NLLLoss(LossBase):
    """Negative log-likelihood of class indices under log-probabilities (``ops.nll_loss``).

    ``logits`` are log-probabilities ([N, C], [C] or [N, C, d1, ...]), for
    instance a LogSoftmax(axis=1) output; ``labels`` class indices.
    """

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        _check_class_loss_args("NLLLoss", weight, ignore_index)
        self.weight = weight
        self.ignore_index = ignore_index

    def construct(self, logits, labels):
        return ops.nll_loss(logits, labels, self.weight, self.ignore_index, self.reduction)
