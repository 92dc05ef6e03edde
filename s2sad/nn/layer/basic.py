"""Dense, Flatten, Dropout and Identity."""
from ... import ops
from ... import dtype as mstype
from ...common.initializer import initializer
from ...ir.primitive import Primitive
from ...tensor import Parameter
from ..cell import Cell
from .activation import get_activation

__all__ = ["Dense", "Flatten", "Dropout", "Identity"]


def _check_positive_int(value, name, who):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError("For '%s', '%s' must be a positive int, but got %r" % (who, name, value))
    return value


def _activation(activation, who):
    """A Cell or Primitive to apply, from a name, a Cell, a Primitive or ``None``."""
    if activation is None or isinstance(activation, (Cell, Primitive)):
        return activation
    if isinstance(activation, str):
        return get_activation(activation)
    raise TypeError("For '%s', activation must be a str, a Cell, a Primitive or None, but got %s"
                    % (who, type(activation).__name__))


class Dense(Cell):
    """Fully connected layer: ``y = activation(x @ weight.T + bias)``.

    ``weight`` has shape ``[out_channels, in_channels]`` and ``bias``
    ``[out_channels]``; ``x`` is ``[..., in_channels]``.  ``weight_init`` and
    ``bias_init`` take anything ``s2sad.common.initializer.initializer`` does
    (``'normal'`` is N(0, 0.01^2)).  ``activation`` is a name (``'relu'``), a
    Cell or a primitive.
    """

    def __init__(self, in_channels, out_channels, weight_init="normal", bias_init="zeros",
                 has_bias=True, activation=None, dtype=mstype.float32):
        super().__init__()
        self.in_channels = _check_positive_int(in_channels, "in_channels", "Dense")
        self.out_channels = _check_positive_int(out_channels, "out_channels", "Dense")
        self.has_bias = bool(has_bias)
        self.weight = Parameter(initializer(weight_init, [out_channels, in_channels], dtype),
                                name="weight")
        if self.has_bias:
            self.bias = Parameter(initializer(bias_init, [out_channels], dtype), name="bias")
        self.matmul = ops.BatchMatMul(transpose_b=True)
        self.activation = _activation(activation, "Dense")
        self.activation_flag = self.activation is not None

    def construct(self, x):
        x = self.matmul(x, self.weight)
        if self.has_bias:
            x = x + self.bias
        if self.activation_flag:
            x = self.activation(x)
        return x

    def extend_repr(self):
        s = "input_channels={}, output_channels={}".format(self.in_channels, self.out_channels)
        if self.has_bias:
            s += ", has_bias=True"
        if self.activation_flag:
            s += ", activation={}".format(self.activation)
        return s


class Flatten(Cell):
    """Merge dims ``start_dim..end_dim``; the default gives ``[N, -1]``."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim
        self.flatten = ops.Flatten(start_dim, end_dim)

    def construct(self, x):
        return self.flatten(x)


class Dropout(Cell):
    """Zero elements with probability ``p = 1 - keep_prob`` in training, scale by 1/keep_prob.

    ``Dropout(keep_prob=0.8)`` (MindSpore 1.x) and ``Dropout(p=0.2)`` (2.x) are
    the same layer; the default drops half.  In evaluation mode (the default
    until ``set_train(True)``) it returns its input.  Masks come from the
    generator ``s2sad.set_seed`` seeds.
    """

    def __init__(self, keep_prob=None, p=None, dtype=mstype.float32):
        super().__init__()
        if keep_prob is not None and p is not None:
            raise ValueError("For 'Dropout', 'keep_prob' and 'p' cannot both be given")
        if p is not None:
            if not 0.0 <= float(p) < 1.0:
                raise ValueError("For 'Dropout', 'p' must be in [0, 1), but got %r" % (p,))
            keep_prob = 1.0 - float(p)
        elif keep_prob is None:
            keep_prob = 0.5
        keep_prob = float(keep_prob)
        if not 0.0 < keep_prob <= 1.0:
            raise ValueError("For 'Dropout', 'keep_prob' must be in (0, 1], but got %r"
                             % (keep_prob,))
        self.keep_prob = keep_prob
        self.p = 1.0 - keep_prob
        self.dropout = ops.Dropout(keep_prob)

    def construct(self, x):
        if not self.training:
            return x
        if self.keep_prob == 1.0:
            return x
        out, _ = self.dropout(x)
        return out

    def extend_repr(self):
        return "p={}".format(self.p)


class Identity(Cell):
    """Returns its input: a placeholder where a network may or may not have a layer."""

    def construct(self, x):
        return x
