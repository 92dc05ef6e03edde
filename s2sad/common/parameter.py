"""``mindspore.common.parameter``: where MindSpore code imports ``Parameter`` from."""
from ..tensor import Parameter, ParameterTuple

__all__ = ["Parameter", "ParameterTuple"]
