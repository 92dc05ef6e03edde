"""``GradOperation``: MindSpore's gradient-function builder and its flags.

``GradOperation(get_all, get_by_list, sens_param)(fn, weights)`` only checks
its arguments and returns a ``GradFunction``; which Parameters ``weights``
names, and where each lives inside the Cell, is worked out here so the
compiled program can read them by attribute path.
"""
from __future__ import annotations

from typing import Any, Callable

from ..tensor import Weights
from .gradfunction import GradFunction


#: ``weights`` left out.  An explicit ``None`` with ``get_by_list`` means no
#: weights (MindSpore's ``grad_op(net, None)``); leaving it out is more likely
#: a forgotten argument than a request for an empty result, so it raises.
_NOT_GIVEN: Any = type("NotGiven", (), {"__repr__": lambda self: "<not given>"})()


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise TypeError("For 'GradOperation', the '%s' should be bool, but got %s"
                        % (name, type(value).__name__))


class GradOperation:
    """Builds gradient functions: ``GradOperation(get_all, get_by_list, sens_param)(net)``.

    - default: the gradient of the first input, as a bare Tensor (``()`` if none);
    - ``get_all``: a tuple with the gradient of every input;
    - ``get_by_list``: gradients of ``weights`` mirroring them (tuple/list -> tuple,
      one Parameter -> bare Tensor); with ``get_all`` too: ``(inputs, weights)``;
    - ``sens_param``: the last argument is the sens, mirroring the output; by
      default every output leaf gets a sens of ones.
    """

    #: Applied inside code being compiled, it is called then with the Parameters
    #: themselves: ``grad_op(self.net, self.params)`` only needs to know which.
    __s2sad_takes_inputs_whole__ = True

    def __init__(self, get_all: bool = False, get_by_list: bool = False,
                 sens_param: bool = False) -> None:
        _check_bool("get_all", get_all)
        _check_bool("get_by_list", get_by_list)
        _check_bool("sens_param", sens_param)
        self.get_all = get_all
        self.get_by_list = get_by_list
        self.sens_param = sens_param

    def __call__(self, fn: Callable[..., Any], weights: Weights = _NOT_GIVEN) -> GradFunction:
        if self.get_by_list and weights is _NOT_GIVEN:
            raise TypeError("For 'GradOperation', 'weights' must be given when 'get_by_list' "
                            "is True: call grad_op(net, weights) (None or [] for no weights)")
        if not self.get_by_list or weights is _NOT_GIVEN:
            weights = None
        elif weights is None:
            weights = []        # MindSpore: no weights, so the weights' part is ()
        return GradFunction(fn, weights, self)

    def __repr__(self):
        return "GradOperation(get_all=%s, get_by_list=%s, sens_param=%s)" % (
            self.get_all, self.get_by_list, self.sens_param)
