"""Evaluation metrics: ``Accuracy``, ``Loss``, ``MAE``, ``MSE``.

Each metric accumulates over the batches of an evaluation: ``clear()``
starts over, ``update(...)`` adds one batch (Tensors, NumPy arrays or
numbers), ``eval()`` returns the value so far as a Python float.  They run
eagerly in NumPy; ``Model.eval`` drives them.
"""
import numpy as np

from ..tensor import Tensor

__all__ = ["Metric", "Accuracy", "Loss", "MAE", "MSE", "get_metric"]


class Metric:
    """Base class: subclasses define ``clear``, ``update`` and ``eval``."""

    def __init__(self):
        self.clear()

    def clear(self):
        raise NotImplementedError

    def update(self, *inputs):
        raise NotImplementedError

    def eval(self):
        raise NotImplementedError

    def __call__(self, *inputs):
        """The metric of these inputs alone (clears what was accumulated)."""
        self.clear()
        self.update(*inputs)
        return self.eval()

    def _check_inputs(self, inputs, count):
        if len(inputs) != count:
            raise ValueError("%s.update takes %d inputs, but got %d"
                             % (type(self).__name__, count, len(inputs)))
        return [_numpy(v) for v in inputs]

    def _result(self, total, count):
        if count == 0:
            raise RuntimeError("%s.eval: no batch was given to update() since clear(); "
                               "evaluate on a non-empty dataset" % type(self).__name__)
        return float(total / count)


class Accuracy(Metric):
    """The fraction of samples whose largest score is at their label.

    ``update(y_pred, y)``: ``y_pred`` is ``[N, C]`` scores; ``y`` is ``[N]``
    class indices or ``[N, C]`` one-hot labels.
    """

    def __init__(self, eval_type="classification"):
        if eval_type != "classification":
            raise ValueError("Accuracy: only eval_type='classification' is supported, but got "
                             "%r" % (eval_type,))
        self.eval_type = eval_type
        super().__init__()

    def clear(self):
        self._correct = 0
        self._total = 0

    def update(self, *inputs):
        y_pred, y = self._check_inputs(inputs, 2)
        if y_pred.ndim != 2:
            raise ValueError("Accuracy.update: 'y_pred' must be [N, C] scores, but got shape "
                             "%s" % (y_pred.shape,))
        if y.ndim == 2:
            y = y.argmax(axis=1)
        if y.shape != y_pred.shape[:1]:
            raise ValueError("Accuracy.update: 'y' must be [N] labels or [N, C] one-hot for "
                             "'y_pred' of shape %s, but got shape %s" % (y_pred.shape, y.shape))
        self._correct += int(np.sum(y_pred.argmax(axis=1) == y))
        self._total += len(y)

    def eval(self):
        return self._result(self._correct, self._total)


class Loss(Metric):
    """The mean over batches of each batch's mean loss (``update(loss)``)."""

    def clear(self):
        self._sum = 0.0
        self._batches = 0

    def update(self, *inputs):
        loss, = self._check_inputs(inputs, 1)
        if loss.ndim > 1:
            raise ValueError("Loss.update: the loss must be a scalar or 1-D, but got shape %s"
                             % (loss.shape,))
        self._sum += float(np.mean(loss))
        self._batches += 1

    def eval(self):
        return self._result(self._sum, self._batches)


class _ErrorSum(Metric):
    """Sum of an elementwise error over all samples, divided by the number of samples."""

    def clear(self):
        self._error = 0.0
        self._samples = 0

    def update(self, *inputs):
        y_pred, y = self._check_inputs(inputs, 2)
        if y.size != y_pred.size:
            raise ValueError("%s.update: 'y' must have as many elements as 'y_pred' %s, but "
                             "got shape %s" % (type(self).__name__, y_pred.shape, y.shape))
        self._error += float(np.sum(self._elementwise(y_pred - y.reshape(y_pred.shape))))
        self._samples += y.shape[0] if y.ndim else 1

    def eval(self):
        return self._result(self._error, self._samples)


class MAE(_ErrorSum):
    """Mean absolute error: the sum of ``|y_pred - y|`` per sample, averaged over samples."""

    @staticmethod
    def _elementwise(diff):
        return np.abs(diff)


class MSE(_ErrorSum):
    """Mean squared error: the sum of ``(y_pred - y)**2`` per sample, averaged over samples."""

    @staticmethod
    def _elementwise(diff):
        return diff * diff


_BY_NAME = {"accuracy": Accuracy, "loss": Loss, "mae": MAE, "mse": MSE}


def get_metric(name):
    """A fresh metric for one of the names ``Model(metrics={...})`` accepts."""
    if name not in _BY_NAME:
        raise ValueError("unknown metric name %r; the names are %s, or pass a dict "
                         "name -> Metric instance" % (name, sorted(_BY_NAME)))
    return _BY_NAME[name]()


def _numpy(value):
    if isinstance(value, Tensor):
        return np.asarray(value.asnumpy(), np.float64)
    return np.asarray(value, np.float64)
