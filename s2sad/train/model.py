"""``Model``: MindSpore's high-level training, evaluation and prediction.

``Model(network, loss_fn, optimizer, metrics)`` builds the usual wrappers:
the training network is ``TrainOneStepCell(WithLossCell(network, loss_fn),
optimizer)`` (``network`` itself when it already computes the loss and no
``loss_fn`` is given; ``network`` as it is when no optimizer is given, e.g. a
``TrainOneStepWithLossScaleCell``), and the evaluation network
``WithEvalCell(network, loss_fn)`` unless ``eval_network`` is given.  Each
method runs eagerly, batch after batch; only the gradients are compiled.
"""
import numpy as np

from ..nn.cell import Cell
from ..nn.metrics import Metric, Loss, get_metric
from ..nn.optim import Optimizer
from ..nn.wrap import WithLossCell, WithEvalCell, TrainOneStepCell
from .callback import RunContext, _CallbackList, _CallbackParams

__all__ = ["Model"]


class Model:
    """Train, evaluate and predict with ``network``.

    - ``loss_fn``: a loss Cell, or None when ``network`` returns the loss;
    - ``optimizer``: an ``nn.Optimizer``, or None when ``network`` is already
      a training step (called once per batch; it updates the weights);
    - ``metrics``: a set or list of names (``"accuracy"``, ``"loss"``,
      ``"mae"``, ``"mse"``) or a dict name -> ``nn.Metric``; ``eval`` returns
      a dict with the same names;
    - ``eval_network``: a Cell returning ``(loss, outputs, label)`` (with
      ``eval_indexes`` saying where each is) or what the metrics take.

    ``amp_level`` other than ``"O0"``, ``loss_scale_manager`` and the other
    distributed or acceleration options are not supported: wrap the network in
    ``nn.TrainOneStepWithLossScaleCell`` yourself for loss scaling.
    """

    def __init__(self, network, loss_fn=None, optimizer=None, metrics=None, eval_network=None,
                 eval_indexes=None, amp_level="O0", boost_level="O0", **kwargs):
        _check_cell(network, "network")
        if loss_fn is not None:
            _check_cell(loss_fn, "loss_fn")
        if optimizer is not None and not isinstance(optimizer, Optimizer):
            raise TypeError("Model: 'optimizer' must be an nn.Optimizer, but got %s"
                            % type(optimizer).__name__)
        if eval_network is not None:
            _check_cell(eval_network, "eval_network")
        if amp_level != "O0" or boost_level != "O0" or kwargs:
            unsupported = ["amp_level=%r" % amp_level] if amp_level != "O0" else []
            unsupported += ["boost_level=%r" % boost_level] if boost_level != "O0" else []
            unsupported += sorted(kwargs)
            raise ValueError("Model: %s not supported; mixed precision and loss-scale managers "
                             "are not available: for loss scaling pass an "
                             "nn.TrainOneStepWithLossScaleCell as 'network' and no optimizer"
                             % ", ".join(unsupported))
        self._network = network
        self._loss_fn = loss_fn
        self._optimizer = optimizer
        self._metric_fns = _metrics(metrics)
        self._train_network = self._build_train_network()
        self._eval_network, self._eval_indexes = self._build_eval_network(eval_network,
                                                                          eval_indexes)

    # ------------------------------------------------------------ properties
    @property
    def train_network(self):
        return self._train_network

    @property
    def predict_network(self):
        return self._network

    @property
    def eval_network(self):
        return self._eval_network

    # --------------------------------------------------------------- building
    def _build_train_network(self):
        if self._optimizer is None:
            return self._network
        network = self._network
        if self._loss_fn is not None:
            network = WithLossCell(network, self._loss_fn)
        return TrainOneStepCell(network, self._optimizer)

    def _build_eval_network(self, eval_network, eval_indexes):
        if eval_network is not None:
            if eval_indexes is not None and len(eval_indexes) != 3:
                raise ValueError("Model: 'eval_indexes' must hold 3 indexes (loss, outputs, "
                                 "label), but got %r" % (eval_indexes,))
            return eval_network, eval_indexes
        if self._loss_fn is None:
            return self._network, None
        return WithEvalCell(self._network, self._loss_fn), [0, 1, 2]

    # --------------------------------------------------------------- training
    def train(self, epoch, train_dataset, callbacks=None, dataset_sink_mode=False, sink_size=-1,
              initial_epoch=0):
        """Run ``epoch`` epochs over ``train_dataset``, one training step per batch.

        ``dataset_sink_mode`` and ``sink_size`` are accepted and have no
        effect: batches are always fed from Python, one call per step.
        ``initial_epoch`` counts epochs already done (training resumes at
        ``initial_epoch + 1``).
        """
        epoch = _count(epoch, "epoch", minimum=1)
        initial_epoch = _count(initial_epoch, "initial_epoch", minimum=0)
        if initial_epoch >= epoch:
            raise ValueError("Model.train: 'initial_epoch' (%d) must be less than 'epoch' (%d)"
                             % (initial_epoch, epoch))
        batch_num = _dataset_size(train_dataset, "train")
        cbs = _CallbackList(callbacks)
        params = _CallbackParams(
            train_network=self._train_network, network=self._train_network,
            optimizer=self._optimizer, loss_fn=self._loss_fn, train_dataset=train_dataset,
            epoch_num=epoch, batch_num=batch_num, cur_epoch_num=initial_epoch,
            cur_step_num=initial_epoch * batch_num, net_outputs=None, mode="train",
            dataset_sink_mode=dataset_sink_mode, list_callback=cbs.callbacks,
            parallel_mode="stand_alone", device_number=1)
        context = RunContext(params)
        self._train_network.set_train(True)
        cbs.call("on_train_begin", context)
        for epoch_index in range(initial_epoch + 1, epoch + 1):
            params.cur_epoch_num = epoch_index
            cbs.call("on_train_epoch_begin", context)
            for row in train_dataset.create_tuple_iterator(num_epochs=1):
                params.cur_step_num += 1
                cbs.call("on_train_step_begin", context)
                params.net_outputs = self._train_network(*row)
                cbs.call("on_train_step_end", context)
                if context.get_stop_requested():
                    break
            cbs.call("on_train_epoch_end", context)
            if context.get_stop_requested():
                break
        cbs.call("on_train_end", context)

    # ------------------------------------------------------------- evaluating
    def eval(self, valid_dataset, callbacks=None, dataset_sink_mode=False):
        """The metrics over ``valid_dataset``: a dict name -> float."""
        if not self._metric_fns:
            raise ValueError("Model.eval: no metrics to compute; pass metrics={'accuracy'} "
                             "(or another name, or a dict of nn.Metric) to Model")
        _dataset_size(valid_dataset, "eval")
        cbs = _CallbackList(callbacks)
        params = _CallbackParams(eval_network=self._eval_network, valid_dataset=valid_dataset,
                                 cur_step_num=0, net_outputs=None, mode="eval", metrics=None,
                                 batch_num=valid_dataset.get_dataset_size(),
                                 list_callback=cbs.callbacks)
        context = RunContext(params)
        for metric in self._metric_fns.values():
            metric.clear()
        self._eval_network.set_train(False)
        cbs.call("on_eval_begin", context)
        for row in valid_dataset.create_tuple_iterator(num_epochs=1):
            params.cur_step_num += 1
            cbs.call("on_eval_step_begin", context)
            outputs = self._eval_network(*row)
            params.net_outputs = outputs
            self._update_metrics(outputs)
            cbs.call("on_eval_step_end", context)
        params.metrics = {name: metric.eval() for name, metric in self._metric_fns.items()}
        cbs.call("on_eval_end", context)
        return dict(params.metrics)

    def _update_metrics(self, outputs):
        if not isinstance(outputs, (tuple, list)):
            outputs = (outputs,)
        for metric in self._metric_fns.values():
            if self._eval_indexes is None:
                metric.update(*outputs)
            elif isinstance(metric, Loss):
                metric.update(outputs[self._eval_indexes[0]])
            else:
                metric.update(outputs[self._eval_indexes[1]], outputs[self._eval_indexes[2]])

    # ------------------------------------------------------------- predicting
    def predict(self, *predict_data):
        """``network(*predict_data)`` in evaluation mode."""
        self._network.set_train(False)
        return self._network(*predict_data)


def _check_cell(value, name):
    if not isinstance(value, Cell):
        raise TypeError("Model: '%s' must be an nn.Cell, but got %s"
                        % (name, type(value).__name__))


def _metrics(metrics):
    """{name: Metric} from a set/list of names or a dict name -> Metric."""
    if metrics is None:
        return {}
    if isinstance(metrics, dict):
        for name, metric in metrics.items():
            if not isinstance(metric, Metric):
                raise TypeError("Model: metrics[%r] must be an nn.Metric, but got %s"
                                % (name, type(metric).__name__))
        return dict(metrics)
    if isinstance(metrics, str) or not isinstance(metrics, (set, frozenset, list, tuple)):
        raise TypeError("Model: 'metrics' must be a set of names such as {'accuracy'} or a "
                        "dict name -> nn.Metric, but got %r" % (metrics,))
    return {name: get_metric(name) for name in sorted(metrics)}


def _count(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError("Model.train: '%s' must be an int >= %d, but got %r"
                         % (name, minimum, value))
    return int(value)


def _dataset_size(dataset, what):
    if not hasattr(dataset, "create_tuple_iterator"):
        raise TypeError("Model.%s: the dataset must be an s2sad.dataset Dataset (e.g. "
                        "NumpySlicesDataset(...).batch(n)), but got %s"
                        % (what, type(dataset).__name__))
    size = dataset.get_dataset_size()
    if size == 0:
        raise ValueError("Model.%s: the dataset is empty" % what)
    return size
