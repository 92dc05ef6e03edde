"""Assign and Print: MindSpore operations that act on the world instead of computing a value.

``Assign`` writes a Parameter eagerly, and inside compiled code it is staged
as a write made on every call (as ``self.w = value`` in ``construct`` is);
``Print`` is a plain Python function whose ``print`` the frontend runs on
every call, like any ``print``.
"""
import inspect

import numpy as np

from ...errors import CompileError
from ...tensor import Parameter, Tensor

__all__ = ["Assign", "Print", "assign", "print_"]


class Assign:
    """``Assign()(variable, value)``: write ``value`` into the Parameter ``variable``.

    ``value`` (a Tensor, array or number) is broadcast to the Parameter's
    shape and cast to its dtype; the Parameter is returned.
    """

    def __s2sad_stage__(self, builder, args, kwargs, loc, path):
        """Met inside compiled code: a write of the Parameter on every call, whose
        new value later reads of the Parameter see (``frontend/writes.py``)."""
        try:
            bound = inspect.signature(self.__call__).bind(*args, **kwargs)
        except TypeError as e:
            raise CompileError("ops.assign: %s" % e, loc) from None
        return builder.write_parameter(bound.arguments["variable"], bound.arguments["value"], loc)

    def __call__(self, variable, value):
        if not isinstance(variable, Parameter):
            raise TypeError("For 'Assign', 'variable' must be a Parameter, but got %s"
                            % type(variable).__name__)
        data = value.asnumpy() if isinstance(value, Tensor) else np.asarray(value)
        try:
            data = np.broadcast_to(data, variable._data.shape)
        except ValueError:
            raise ValueError("For 'Assign', 'value' of shape %s cannot be written into "
                             "'variable' of shape %s"
                             % (np.shape(data), variable._data.shape)) from None
        variable._data[...] = data.astype(variable._data.dtype, copy=False)
        return variable

    def __repr__(self):
        return "Prim[Assign]"


#: ``ops.assign(variable, value)``: an Assign, so it is refused in compiled code alike
assign = Assign()


def print_(*input_x):
    """Print the inputs (MindSpore's ``ops.print_``); inside compiled code, on every call."""
    print(*input_x)


def Print():  # noqa: N802 - MindSpore's primitive name
    """``ops.Print()``: MindSpore's print primitive, here the function ``print_``.

    A function rather than a Primitive so that compiled code inlines it and
    runs its ``print`` on every call; ``self.print = ops.Print()`` followed by
    ``self.print('x:', x)`` in ``construct`` works as in MindSpore.
    """
    return print_
