"""Activation layers: each holds its primitive and applies it in ``construct``."""
from ... import ops
from ..cell import Cell

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "GELU", "Sigmoid", "SiLU", "Tanh", "Softplus",
           "Softmax", "LogSoftmax", "get_activation"]


class ReLU(Cell):
    """max(x, 0)."""

    def __init__(self):
        super().__init__()
        self.relu = ops.ReLU()

    def construct(self, x):
        return self.relu(x)


class ReLU6(Cell):
    """min(max(x, 0), 6)."""

    def __init__(self):
        super().__init__()
        self.relu6 = ops.ReLU6()

    def construct(self, x):
        return self.relu6(x)


class LeakyReLU(Cell):
    """x for x > 0, ``alpha * x`` otherwise."""

    def __init__(self, alpha=0.2):
        super().__init__()
        self.alpha = alpha
        self.leaky_relu = ops.LeakyReLU(alpha)

    def construct(self, x):
        return self.leaky_relu(x)

    def extend_repr(self):
        return "alpha={}".format(self.alpha)


class ELU(Cell):
    """x for x > 0, ``alpha * (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha=1.0):
        super().__init__()
        self.alpha = alpha
        self.elu = ops.ELU(alpha)

    def construct(self, x):
        return self.elu(x)


class GELU(Cell):
    """Gaussian error linear unit; ``approximate=True`` (MindSpore's default) is the tanh form."""

    def __init__(self, approximate=True):
        super().__init__()
        self.approximate = approximate
        self.gelu = ops.GeLU("tanh" if approximate else "none")

    def construct(self, x):
        return self.gelu(x)


class Sigmoid(Cell):
    """1 / (1 + exp(-x))."""

    def __init__(self):
        super().__init__()
        self.sigmoid = ops.Sigmoid()

    def construct(self, x):
        return self.sigmoid(x)


class SiLU(Cell):
    """x * sigmoid(x) (``ops.silu``)."""

    def construct(self, x):
        return ops.silu(x)


class Tanh(Cell):
    """tanh(x)."""

    def __init__(self):
        super().__init__()
        self.tanh = ops.Tanh()

    def construct(self, x):
        return self.tanh(x)


class Softplus(Cell):
    """log(1 + exp(x))."""

    def __init__(self):
        super().__init__()
        self.softplus = ops.Softplus()

    def construct(self, x):
        return self.softplus(x)


class Softmax(Cell):
    """exp(x) / sum(exp(x)) over ``axis``."""

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis
        self.softmax = ops.Softmax(axis)

    def construct(self, x):
        return self.softmax(x)

    def extend_repr(self):
        return "axis={}".format(self.axis)


class LogSoftmax(Cell):
    """x - log(sum(exp(x))) over ``axis``."""

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis
        self.log_softmax = ops.LogSoftmax(axis)

    def construct(self, x):
        return self.log_softmax(x)

    def extend_repr(self):
        return "axis={}".format(self.axis)


_ACTIVATIONS = {
    "relu": ReLU, "relu6": ReLU6, "leakyrelu": LeakyReLU, "elu": ELU, "gelu": GELU,
    "sigmoid": Sigmoid, "silu": SiLU, "tanh": Tanh, "softplus": Softplus, "softmax": Softmax,
    "logsoftmax": LogSoftmax,
}


def get_activation(name):
    """The activation Cell named ``name`` (``'relu'``, ``'tanh'``, ...); ``None`` for ``None``."""
    if name is None:
        return None
    key = str(name).lower().replace("_", "")
    if key not in _ACTIVATIONS:
        raise KeyError("Unknown activation %r; expected one of %s"
                       % (name, ", ".join(sorted(_ACTIVATIONS))))
    return _ACTIVATIONS[key]()
