"""The Optimizer base class: parameters, learning rate schedule, weight decay, step count.

Optimizers are plain Python run eagerly (never differentiated).  Calling one
with a tuple of gradients (one per parameter, as ``GradOperation(get_by_list=
True)`` returns them) updates the Parameters *in place*: the NumPy array inside
each Parameter is overwritten, so compiled adjoints, which read Parameters
afresh on every call, see the new values without recompiling.

Parameters can be grouped as in MindSpore: a list of dicts with ``'params'``
and optionally ``'lr'`` and ``'weight_decay'`` overriding the optimizer's
values for that group.  Without groups, ``weight_decay`` applies to the
Parameters whose names contain neither ``'beta'`` nor ``'gamma'`` (MindSpore's
rule: normalisation layers are not decayed).
"""
import numbers
import operator

import numpy as np

from ...tensor import Parameter, ParameterTuple, Tensor
from ..cell import Cell

__all__ = ["Optimizer"]


def _default_decay_filter(param):
    name = param.name or ""
    return "beta" not in name and "gamma" not in name


def _in_place(ufunc, op, param, value):
    """``param = op(param, value)`` written into ``param``'s array, cast to its
    dtype as ``Optimizer.assign`` casts: NumPy arrays through ``ufunc`` with
    ``out=``, arrays of other libraries (torch) through their own operator."""
    data = param._data
    if isinstance(data, np.ndarray):
        ufunc(data, value, out=data, casting="unsafe")
    else:
        data[...] = op(data, value)


def _as_array(value):
    if isinstance(value, Tensor):
        return value._data
    return np.asarray(value)


class _LR:
    """A learning rate: a constant, a per-step sequence, or a function of the step."""

    def __init__(self, lr, who):
        if isinstance(lr, bool):
            raise TypeError("For '%s', the 'learning_rate' must be a float, a Tensor, a list "
                            "or a callable, but got bool" % who)
        self.kind = "const"
        if isinstance(lr, numbers.Real):
            self.value = float(lr)
        elif isinstance(lr, (Tensor, np.ndarray, list, tuple)):
            arr = np.asarray(_as_array(lr) if not isinstance(lr, (list, tuple)) else lr,
                             dtype=np.float64)
            if arr.ndim == 0:
                self.value = float(arr)
            elif arr.ndim == 1 and arr.size:
                self.kind, self.value = "list", arr
            else:
                raise ValueError("For '%s', a learning rate Tensor must be a scalar or 1-D and "
                                 "not empty, but got shape %s" % (who, list(arr.shape)))
        elif callable(lr):
            self.kind, self.value = "fn", lr
        else:
            raise TypeError("For '%s', the 'learning_rate' must be a float, a Tensor, a list "
                            "or a callable, but got %s" % (who, type(lr).__name__))
        if self.kind == "const" and self.value < 0:
            raise ValueError("For '%s', the 'learning_rate' must not be negative, but got %r"
                             % (who, self.value))

    @property
    def dynamic(self):
        return self.kind != "const"

    def at(self, step):
        """The learning rate for 0-based step ``step``."""
        if self.kind == "const":
            return self.value
        if self.kind == "list":
            return float(self.value[min(step, self.value.size - 1)])
        return float(_as_array(self.value(Tensor(np.array(step, np.int32)))))


class Optimizer(Cell):
    """Base class of optimizers.

    Attributes: ``parameters`` (a ParameterTuple), ``global_step`` (a Parameter
    holding the number of updates done so far), ``learning_rate``,
    ``weight_decay`` (per Parameter, in ``weight_decays``).  Subclasses
    implement ``construct(gradients)`` with ``self.get_lr()`` /
    ``self.step_lrs()``, ``self.decay_weight(gradients)`` and
    ``self.assign(param, value)``.
    """

    def __init__(self, learning_rate, parameters, weight_decay=0.0, loss_scale=1.0):
        super().__init__(auto_prefix=False)
        who = type(self).__name__
        groups = self._groups(parameters, who)
        params, lrs, decays, flags = [], [], [], []
        for group in groups:
            lr = _LR(group.get("lr", learning_rate), who)
            wd = self._check_decay(group.get("weight_decay", weight_decay), who)
            for p in group["params"]:
                params.append(p)
                lrs.append(lr)
                decays.append(wd)
                flags.append(True if "weight_decay" in group or len(groups) > 1
                             else _default_decay_filter(p))
        if not params:
            raise ValueError("For '%s', the argument 'params' must not be empty" % who)
        if not isinstance(loss_scale, numbers.Real) or loss_scale <= 0:
            raise ValueError("For '%s', 'loss_scale' must be a positive number, but got %r"
                             % (who, loss_scale))
        self.parameters = ParameterTuple(params)
        self.learning_rate = learning_rate
        self._lrs = lrs
        self.is_group = len(groups) > 1
        self.is_group_lr = len({id(lr) for lr in lrs}) > 1
        self.dynamic_lr = any(lr.dynamic for lr in lrs)
        self.weight_decay = weight_decay
        self.weight_decays = tuple(wd if f else 0.0 for wd, f in zip(decays, flags))
        self.decay_flags = tuple(f and wd > 0 for wd, f in zip(decays, flags))
        self.loss_scale = float(loss_scale)
        self.reciprocal_scale = 1.0 / float(loss_scale)
        self.global_step = Parameter(np.array([0], np.int32), name="global_step",
                                     requires_grad=False)

    # ---------------------------------------------------------------- setup
    @staticmethod
    def _groups(parameters, who):
        if isinstance(parameters, Parameter):
            parameters = [parameters]
        parameters = list(parameters)
        if parameters and all(isinstance(g, dict) for g in parameters):
            groups = []
            for g in parameters:
                unknown = set(g) - {"params", "lr", "weight_decay", "order_params"}
                if unknown:
                    raise ValueError("For '%s', unknown keys in a parameter group: %s"
                                     % (who, ", ".join(sorted(unknown))))
                if "params" in g:
                    groups.append(dict(g, params=list(g["params"])))
            for g in groups:
                for p in g["params"]:
                    if not isinstance(p, Parameter):
                        raise TypeError("For '%s', every item of a group's 'params' must be a "
                                        "Parameter, but got %s" % (who, type(p).__name__))
            return groups
        for p in parameters:
            if not isinstance(p, Parameter):
                raise TypeError("For '%s', the argument 'params' must be Parameters or dicts of "
                                "parameter groups, but got %s" % (who, type(p).__name__))
        return [{"params": parameters}]

    @staticmethod
    def _check_decay(wd, who):
        if isinstance(wd, bool) or not isinstance(wd, numbers.Real) or wd < 0:
            raise ValueError("For '%s', 'weight_decay' must be a non-negative float, but got %r"
                             % (who, wd))
        return float(wd)

    # ---------------------------------------------------------------- steps
    @property
    def step(self):
        """Updates done so far (the value of ``global_step``)."""
        return int(self.global_step._data[0])

    def get_lr(self):
        """The learning rate of the current step (a tuple, one per parameter, if grouped)."""
        lrs = self.step_lrs()
        return lrs if self.is_group_lr else lrs[0]

    def step_lrs(self):
        """The current step's learning rate for every parameter."""
        step = self.step
        cache = {}
        out = []
        for lr in self._lrs:
            if id(lr) not in cache:
                cache[id(lr)] = lr.at(step)
            out.append(cache[id(lr)])
        return tuple(out)

    def advance(self):
        """Count one update (called by ``construct`` after updating)."""
        self.global_step._data[0] += 1

    # ------------------------------------------------------------- helpers
    def gradients_arrays(self, gradients):
        """The gradients as float arrays, checked against the parameters, loss scale undone."""
        gradients = tuple(gradients)
        if len(gradients) != len(self.parameters):
            raise ValueError("For '%s', expected %d gradients (one per parameter), but got %d"
                             % (type(self).__name__, len(self.parameters), len(gradients)))
        out = []
        for g, p in zip(gradients, self.parameters):
            g = _as_array(g)
            if g.shape != p._data.shape:
                raise ValueError("For '%s', the gradient of '%s' has shape %s but the parameter "
                                 "has shape %s" % (type(self).__name__, p.name, list(g.shape),
                                                   list(p._data.shape)))
            if self.loss_scale != 1.0:
                g = g * self.reciprocal_scale
            out.append(g)
        return out

    def decay_weight(self, gradients):
        """``g + weight_decay * param`` for every parameter that is decayed (L2 penalty)."""
        return [g + wd * p._data if flag else g
                for g, p, wd, flag in zip(gradients, self.parameters, self.weight_decays,
                                          self.decay_flags)]

    @staticmethod
    def follow_dtype(param, *states):
        """Cast state Parameters to ``param``'s dtype if it changed since construction."""
        dtype = param._data.dtype
        for state in states:
            if state._data.dtype != dtype:
                state.set_data(state._data.astype(dtype))

    @staticmethod
    def assign(param, value):
        """Overwrite ``param``'s array in place (keeping its dtype)."""
        param._data[...] = value

    @staticmethod
    def subtract(param, value):
        """``param -= value`` in place (no temporary of the new weights, no copy back)."""
        _in_place(np.subtract, operator.sub, param, value)

    @staticmethod
    def add_to(param, value):
        """``param += value`` in place."""
        _in_place(np.add, operator.add, param, value)

    def construct(self, gradients):
        raise NotImplementedError("%s must implement construct(gradients)" % type(self).__name__)

    def extend_repr(self):
        return "learning_rate={}, weight_decay={}".format(self.learning_rate, self.weight_decay)
