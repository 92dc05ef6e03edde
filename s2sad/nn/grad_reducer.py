"""``nn.DistributedGradReducer``: the gradients of all ranks, summed or averaged.

In data-parallel training every rank runs the same model on its own shard
of the batch; before the optimizer step the gradients are summed over the
ranks (an allreduce) and, with ``mean``, divided by ``degree``, so every rank
applies the same update: the gradient of the mean loss over the whole batch.

The gradients travel in one fused buffer per dtype rather than one
allreduce per gradient: each allreduce is a round of messages, and a model
has many small gradients (``docs/backends.md`` has the measurement).
"""
import numpy as np

from .. import communication
from ..communication.collective import allreduce_sum
from ..context import get_auto_parallel_context
from ..tensor import Tensor
from .cell import Cell

__all__ = ["DistributedGradReducer"]


class DistributedGradReducer(Cell):
    """``reducer(grads)``: ``grads`` (a tuple, one per Parameter) summed over the ranks.

    - ``parameters``: the Parameters the gradients belong to (their count is
      checked against each call's gradients);
    - ``mean``: divide the sum by ``degree``; ``None`` (the default, as in
      MindSpore) takes ``gradients_mean`` from ``set_auto_parallel_context``;
    - ``degree``: the divisor, by default ``device_num`` when set, else the
      number of ranks.

    Needs ``s2sad.communication.init()`` first.  With one rank and no other
    divisor the gradients are returned as they are.
    """

    def __init__(self, parameters, mean=None, degree=None, fusion_type=1,
                 group=communication.GlobalComm.WORLD_COMM_GROUP):
        super().__init__(auto_prefix=False)
        if not communication.management.initialized():
            raise RuntimeError("DistributedGradReducer: the communication service is not "
                               "initialized; call s2sad.communication.init() first (and launch "
                               "the script with mpirun -n N python script.py)")
        if mean is not None and not isinstance(mean, bool):
            raise TypeError("DistributedGradReducer: 'mean' must be a bool or None, but got %s"
                            % type(mean).__name__)
        if degree is not None and (isinstance(degree, bool) or not isinstance(degree, int)
                                   or degree <= 0):
            raise ValueError("DistributedGradReducer: 'degree' must be a positive int or "
                             "None, but got %r" % (degree,))
        self.group_size = communication.get_group_size(group)
        self.mean = get_auto_parallel_context("gradients_mean") if mean is None else mean
        self.degree = degree or get_auto_parallel_context("device_num") or self.group_size
        self.parameter_count = len(tuple(parameters))

    def construct(self, grads):
        grads = tuple(grads)
        if len(grads) != self.parameter_count:
            raise ValueError("DistributedGradReducer: got %d gradients for %d parameters"
                             % (len(grads), self.parameter_count))
        if self.group_size == 1 and (not self.mean or self.degree == 1):
            return grads
        arrays = reduce_arrays([_array(g) for g in grads],
                               self.degree if self.mean else 1)
        return tuple(Tensor(a) if isinstance(g, Tensor) else a for g, a in zip(grads, arrays))


def reduce_arrays(arrays, divisor):
    """``arrays`` summed over the ranks and divided by ``divisor``: one allreduce per dtype."""
    out = [None] * len(arrays)
    groups = {}
    for i, array in enumerate(arrays):
        groups.setdefault(array.dtype, []).append(i)
    for dtype, members in groups.items():
        buffer = np.concatenate([arrays[i].ravel() for i in members])   # a fresh, contiguous copy
        allreduce_sum(buffer)
        if divisor != 1:
            buffer /= dtype.type(divisor)
        offset = 0
        for i in members:
            size = arrays[i].size
            out[i] = buffer[offset:offset + size].reshape(arrays[i].shape)
            offset += size
    return out


def _array(value):
    return value._data if isinstance(value, Tensor) else np.asarray(value)
