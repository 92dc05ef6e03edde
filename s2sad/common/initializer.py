"""Parameter initializers with MindSpore's names (``mindspore.common.initializer``).

``initializer(init, shape, dtype)`` returns a Tensor.  ``init`` is an
``Initializer`` instance, its name as a string (``'normal'``, ``'uniform'``,
``'xavier_uniform'``, ``'he_uniform'``, ``'he_normal'``, ``'xavier_normal'``,
``'truncated_normal'``, ``'zeros'``, ``'ones'``), a number (a constant), or a
Tensor / ndarray of the right shape (copied).  Random initializers draw from
the generator ``s2sad.set_seed`` reseeds, so a seeded program builds the same
weights every run.
"""
import math
import numbers

import numpy as np

from .. import dtype as mstype
from . import seed as _seed

__all__ = ["Initializer", "initializer", "Zero", "One", "Constant", "Normal", "Uniform",
           "TruncatedNormal", "XavierUniform", "XavierNormal", "HeUniform", "HeNormal"]


def _fans(shape):
    """(fan_in, fan_out) as MindSpore computes them: receptive field times channels."""
    shape = tuple(shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def _gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (as in MindSpore and PyTorch)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    raise ValueError("Unsupported nonlinearity %r" % (nonlinearity,))


class Initializer:
    """Base class: fills a NumPy array in place (``init(arr)``)."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def _initialize(self, arr):
        raise NotImplementedError

    def __call__(self, arr):
        self._initialize(arr)
        return arr

    def __repr__(self):
        inner = ", ".join("%s=%r" % kv for kv in sorted(self._kwargs.items()))
        return "%s(%s)" % (type(self).__name__, inner)


class Zero(Initializer):
    """All zeros."""

    def _initialize(self, arr):
        arr[...] = 0


class One(Initializer):
    """All ones."""

    def _initialize(self, arr):
        arr[...] = 1


class Constant(Initializer):
    """Every element ``value``."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _initialize(self, arr):
        arr[...] = self.value


class Normal(Initializer):
    """N(mean, sigma^2); MindSpore's default ``sigma=0.01``."""

    def __init__(self, sigma=0.01, mean=0.0):
        super().__init__(sigma=sigma, mean=mean)
        self.sigma = sigma
        self.mean = mean

    def _initialize(self, arr):
        arr[...] = _seed.generator().normal(self.mean, self.sigma, arr.shape)


class Uniform(Initializer):
    """U(-scale, scale); MindSpore's default ``scale=0.07``."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _initialize(self, arr):
        arr[...] = _seed.generator().uniform(-self.scale, self.scale, arr.shape)


class TruncatedNormal(Initializer):
    """N(mean, sigma^2) restricted to [a, b] (default two sigmas either side of the mean)."""

    def __init__(self, sigma=0.01, mean=0.0, a=None, b=None):
        super().__init__(sigma=sigma, mean=mean, a=a, b=b)
        self.sigma = sigma
        self.mean = mean
        self.a = mean - 2 * sigma if a is None else a
        self.b = mean + 2 * sigma if b is None else b

    def _initialize(self, arr):
        gen = _seed.generator()
        out = gen.normal(self.mean, self.sigma, arr.shape)
        bad = (out < self.a) | (out > self.b)
        while bad.any():  # resample the tails: exact truncation
            out[bad] = gen.normal(self.mean, self.sigma, int(bad.sum()))
            bad = (out < self.a) | (out > self.b)
        arr[...] = out


class XavierUniform(Initializer):
    """U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""

    def __init__(self, gain=1):
        super().__init__(gain=gain)
        self.gain = gain

    def _initialize(self, arr):
        fan_in, fan_out = _fans(arr.shape)
        bound = self.gain * math.sqrt(6.0 / (fan_in + fan_out))
        arr[...] = _seed.generator().uniform(-bound, bound, arr.shape)


class XavierNormal(Initializer):
    """N(0, s^2) with s = gain * sqrt(2 / (fan_in + fan_out)) (Glorot)."""

    def __init__(self, gain=1):
        super().__init__(gain=gain)
        self.gain = gain

    def _initialize(self, arr):
        fan_in, fan_out = _fans(arr.shape)
        std = self.gain * math.sqrt(2.0 / (fan_in + fan_out))
        arr[...] = _seed.generator().normal(0.0, std, arr.shape)


class _He(Initializer):
    def __init__(self, negative_slope=0, mode="fan_in", nonlinearity="leaky_relu"):
        if mode not in ("fan_in", "fan_out"):
            raise ValueError("For '%s', mode must be 'fan_in' or 'fan_out', but got %r"
                             % (type(self).__name__, mode))
        super().__init__(negative_slope=negative_slope, mode=mode, nonlinearity=nonlinearity)
        self.negative_slope = negative_slope
        self.mode = mode
        self.nonlinearity = nonlinearity

    def _std(self, shape):
        fan_in, fan_out = _fans(shape)
        fan = fan_in if self.mode == "fan_in" else fan_out
        return _gain(self.nonlinearity, self.negative_slope) / math.sqrt(fan)


class HeUniform(_He):
    """U(-b, b) with b = sqrt(3) * gain / sqrt(fan) (Kaiming); gain sqrt(2) for ReLU."""

    def _initialize(self, arr):
        bound = math.sqrt(3.0) * self._std(arr.shape)
        arr[...] = _seed.generator().uniform(-bound, bound, arr.shape)


class HeNormal(_He):
    """N(0, s^2) with s = gain / sqrt(fan) (Kaiming)."""

    def _initialize(self, arr):
        arr[...] = _seed.generator().normal(0.0, self._std(arr.shape), arr.shape)


_ALIASES = {
    "zeros": Zero, "zero": Zero, "ones": One, "one": One,
    "normal": Normal, "uniform": Uniform,
    "truncatednormal": TruncatedNormal, "truncated_normal": TruncatedNormal,
    "xavier_uniform": XavierUniform, "xavieruniform": XavierUniform,
    "xavier_normal": XavierNormal, "xaviernormal": XavierNormal,
    "he_uniform": HeUniform, "heuniform": HeUniform,
    "he_normal": HeNormal, "henormal": HeNormal,
}


def _from_name(name):
    cls = _ALIASES.get(name.lower())
    if cls is None:
        raise ValueError("Unknown initializer %r; expected one of %s"
                         % (name, ", ".join(sorted(k for k in _ALIASES if "_" in k or k in (
                             "zeros", "ones", "normal", "uniform")))))
    return cls()


def _shape(shape):
    if shape is None:
        return None
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def initializer(init, shape=None, dtype=mstype.float32):
    """A Tensor of ``shape`` and ``dtype`` filled by ``init``.

    ``init``: an ``Initializer``, its class, a name (``'normal'``, ``'zeros'``,
    ...), a number, or a Tensor / ndarray (its shape must equal ``shape`` when
    given).
    """
    from ..tensor import Tensor
    npdt = mstype.to_numpy(dtype) or np.float32
    if isinstance(init, (Tensor, np.ndarray)):
        # asnumpy: a Tensor of another library's data is copied off its device once
        arr = np.array(init.asnumpy() if isinstance(init, Tensor) else init)
        if shape is not None and tuple(arr.shape) != _shape(shape):
            raise ValueError("The shape of the initializer Tensor %s does not match the "
                             "shape %s" % (list(arr.shape), list(_shape(shape))))
        return Tensor(arr.astype(npdt, copy=False))
    if shape is None:
        raise ValueError("initializer needs a shape unless init is a Tensor")
    shape = _shape(shape)
    if any(s < 0 for s in shape):
        raise ValueError("Error shape %s: dimensions must not be negative" % (list(shape),))
    if isinstance(init, str):
        init = _from_name(init)
    elif isinstance(init, type) and issubclass(init, Initializer):
        init = init()
    elif isinstance(init, numbers.Number) and not isinstance(init, bool):
        init = Constant(init)
    if not isinstance(init, Initializer):
        raise TypeError("init must be an Initializer, a name, a number or a Tensor, but got %s"
                        % type(init).__name__)
    arr = np.zeros(shape, dtype=np.float64)
    init(arr)
    return Tensor(arr.astype(npdt))
