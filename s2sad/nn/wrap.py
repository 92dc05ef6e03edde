"""Training wrappers: ``WithLossCell``, ``TrainOneStepCell``, ``WithEvalCell``,
``WithGradCell`` and ``ForwardValueAndGrad``.

``TrainOneStepCell(network, optimizer, sens=1.0)`` is MindSpore's: one call
runs ``network`` (usually a ``WithLossCell``) on a batch, differentiates it
with ``GradOperation(get_by_list=True, sens_param=True)`` with respect to the
optimizer's parameters, with a sens of ``sens`` shaped like the loss, applies
the optimizer, and returns the loss.  When ``set_auto_parallel_context`` says
``ParallelMode.DATA_PARALLEL``, the gradients are summed (averaged, with
``gradients_mean``) over the ranks by ``self.grad_reducer`` before the
optimizer sees them, as in MindSpore.
"""
import numpy as np

from .. import api, ops
from ..context import ParallelMode, get_auto_parallel_context
from ..runtime import rt_nn
from ..tensor import Tensor, ParameterTuple
from .cell import Cell

__all__ = ["WithLossCell", "WithEvalCell", "TrainOneStepCell", "WithGradCell", "Jvp", "Vjp",
           "ForwardValueAndGrad", "Jvp", "Vjp"]


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

    With ``sens=1.0`` (the default) each call runs the forward once: the
    compiled gradient returns the loss with the gradients
    (``value_and_grad(network, None, weights)``).  When ``network`` holds a
    Cell whose eager call does more than its ``construct`` (BatchNorm moving
    its running statistics), or ``sens`` is another value (a loss scale seeds
    the adjoint, so intermediate gradients are scaled as MindSpore's are), the
    forward runs eagerly first and then inside the compiled gradient
    ``self.grad_fn``, which replays the same Dropout masks: the random
    generator is rewound between the two, so the gradient is the gradient of
    the loss returned.  ``self.value_and_grad_fn`` and ``self.grad_fn`` are
    the gradient functions of the two paths.
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
        self.value_and_grad_fn = api.value_and_grad(self.network, None, self.weights)
        self.parallel_mode = get_auto_parallel_context("parallel_mode")
        self.reducer_flag = self.parallel_mode == ParallelMode.DATA_PARALLEL
        self.grad_reducer = _reducer(self.weights) if self.reducer_flag else _identity

    def construct(self, *inputs):
        loss, grads = self._loss_and_grads(inputs)
        self.optimizer(grads)
        return loss

    def _loss_and_grads(self, inputs):
        """(loss, gradients reduced over the ranks) of one batch, with a sens of
        ``self.sens``; nothing updated."""
        if isinstance(self.sens, (int, float)) and self.sens == 1.0:
            loss, grads = self.value_and_grad_fn(*inputs)
            return loss, self.grad_reducer(grads)
        rng_state = rt_nn.generator().bit_generator.state
        loss = self.network(*inputs)
        sens = _fill_like(loss, self.sens)
        rt_nn.generator().bit_generator.state = rng_state
        return loss, self.grad_reducer(self.grad_fn(*inputs, sens))


class WithGradCell(Cell):
    """The gradients of a loss with respect to ``network.trainable_params()``.

    ``loss_fn`` given, the loss is ``loss_fn(network(data), label)``; without
    it ``network`` returns the loss.  ``sens`` is the gradient fed to the
    adjoint (ones, the plain gradient, when None).  Returns a tuple of
    gradients, one per trainable Parameter, in order; nothing is updated.
    """

    def __init__(self, network, loss_fn=None, sens=None):
        super().__init__(auto_prefix=False)
        self.network = network
        self.loss_fn = loss_fn
        self.network_with_loss = network if loss_fn is None else WithLossCell(network, loss_fn)
        self.network_with_loss.set_grad()
        self.weights = ParameterTuple(network.trainable_params())
        self.sens = sens
        self.grad = ops.GradOperation(get_by_list=True, sens_param=sens is not None)
        self.grad_fn = self.grad(self.network_with_loss, self.weights)

    def construct(self, *inputs):
        if self.sens is None:
            return self.grad_fn(*inputs)
        return self.grad_fn(*inputs, self.sens)


class ForwardValueAndGrad(Cell):
    """``(value, gradients)`` of ``network``, the gradients as ``GradOperation`` gives them.

    ``get_all``, ``get_by_list`` and ``sens_param`` mean what they mean for
    ``GradOperation``; ``weights`` (required with ``get_by_list``) are the
    Parameters differentiated.  With ``sens_param`` the last input is the
    sens: the network runs on the inputs before it.  Dropout masks drawn by
    the forward run are replayed by the gradient, as in ``TrainOneStepCell``.
    """

    def __init__(self, network, weights=None, get_all=False, get_by_list=False,
                 sens_param=False):
        super().__init__(auto_prefix=False)
        if get_by_list and weights is None:
            raise TypeError("ForwardValueAndGrad: 'weights' must be given when get_by_list "
                            "is True (e.g. network.trainable_params())")
        self.network = network
        self.network.set_grad()
        self.weights = weights
        self.get_by_list = get_by_list
        self.sens_param = sens_param
        self.grad = ops.GradOperation(get_all=get_all, get_by_list=get_by_list,
                                      sens_param=sens_param)
        self.grad_fn = (self.grad(network, weights) if get_by_list
                        else self.grad(network))

    def construct(self, *inputs):
        rng_state = rt_nn.generator().bit_generator.state
        value = self.network(*(inputs[:-1] if self.sens_param else inputs))
        rt_nn.generator().bit_generator.state = rng_state
        return value, self.grad_fn(*inputs)


def _reducer(weights):
    """The data-parallel reducer of ``weights``'s gradients; imported here, so a
    training step on one process does not load ``s2sad.communication``."""
    from .grad_reducer import DistributedGradReducer
    return DistributedGradReducer(weights)


def _identity(grads):
    """The gradient reducer of a single-process run."""
    return grads


def _fill_like(loss, value):
    """A Tensor of the loss's shape and dtype filled with ``value`` (MindSpore's ``F.fill``)."""
    arr = loss._data if isinstance(loss, Tensor) else np.asarray(loss)
    return Tensor(np.full(arr.shape, value, dtype=arr.dtype))


class Jvp(Cell):
    """MindSpore's ``nn.Jvp(fn)``: ``Jvp(fn)(*inputs, v)`` is ``(fn(*inputs), J v)``.

    ``v`` is one tangent per input (a tuple, or a Tensor for one input),
    shaped like the inputs; forward mode computes ``J v`` in one pass.
    """

    def __init__(self, fn):
        super().__init__(auto_prefix=False)
        self.fn = fn

    def construct(self, *args):
        if len(args) < 2:
            raise TypeError("For 'Jvp', call it with the inputs and then 'v', but got %d "
                            "argument(s)" % len(args))
        inputs, v = args[:-1], args[-1]
        return api.jvp(self.fn, tuple(inputs), v if isinstance(v, (tuple, list)) else (v,))


class Vjp(Cell):
    """MindSpore's ``nn.Vjp(fn)``: ``Vjp(fn)(*inputs, v)`` is ``(fn(*inputs), v^T J)``.

    ``v`` is shaped like ``fn``'s output; the second item holds one
    cotangent per input (a bare Tensor for a single input).
    """

    def __init__(self, fn):
        super().__init__(auto_prefix=False)
        self.fn = fn

    def construct(self, *args):
        if len(args) < 2:
            raise TypeError("For 'Vjp', call it with the inputs and then 'v', but got %d "
                            "argument(s)" % len(args))
        inputs, v = args[:-1], args[-1]
        out, pull = api.vjp(self.fn, *inputs)
        grads = pull(v)
        return out, grads[0] if len(inputs) == 1 else grads

