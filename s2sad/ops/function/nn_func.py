"""Functional forms of neural-network primitives (``ops.relu``, ``ops.softmax``, ...).

MindSpore 2.x names and signatures.  Forms whose primitive depends on their
arguments get it from ``_nn_prim``, which is evaluated while compiling and
caches instances so eager calls do not rebuild a primitive every time.
"""
from ...runtime import constexpr
from ..operations import nn_ops as N

_relu = N.ReLU()
_relu6 = N.ReLU6()
_sigmoid = N.Sigmoid()
_softplus = N.Softplus()
_bias_add = N.BiasAdd()

_PRIM_CACHE = {}


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


@constexpr
def _nn_prim(cls, *args, **kwargs):
    """The primitive ``cls(*args, **kwargs)``, one shared instance per set of attributes."""
    key = (cls, _freeze(args), tuple(sorted((k, _freeze(v)) for k, v in kwargs.items())))
    try:
        prim = _PRIM_CACHE.get(key)
    except TypeError:
        return cls(*args, **kwargs)
    if prim is None:
        prim = _PRIM_CACHE[key] = cls(*args, **kwargs)
    return prim


@constexpr
def _unsupported(what, condition):
    if condition:
        raise NotImplementedError("%s is not supported by s2sad yet" % what)
    return None


@constexpr
def _pad_mode_for(padding):
    """'pad' when an explicit padding is non-zero, else 'valid'."""
    values = padding if isinstance(padding, (tuple, list)) else (padding,)
    return "pad" if any(values) else "valid"


@constexpr
def _begin_axis(normalized_shape):
    """The first normalised axis, counted from the end, for ``normalized_shape``."""
    if isinstance(normalized_shape, int):
        return -1
    return -len(tuple(normalized_shape))


# ------------------------------------------------------------------ activations
def relu(input):
    return _relu(input)


def relu6(x):
    return _relu6(x)


def leaky_relu(input, alpha=0.2):
    return _nn_prim(N.LeakyReLU, alpha)(input)


def elu(input_x, alpha=1.0):
    return _nn_prim(N.ELU, alpha)(input_x)


def gelu(input_x, approximate="none"):
    """GeLU; ``approximate='none'`` is the exact erf form, ``'tanh'`` the approximation."""
    return _nn_prim(N.GeLU, approximate)(input_x)


def sigmoid(input):
    return _sigmoid(input)


def softplus(input, beta=1, threshold=20):
    """log(1 + exp(beta * x)) / beta.

    Computed without overflow everywhere, so ``threshold`` (where MindSpore
    switches to the identity) changes nothing measurable and is ignored.
    """
    if beta == 1:
        return _softplus(input)
    return _softplus(input * beta) / beta


def softmax(input, axis=-1, *, dtype=None):
    _unsupported("softmax with dtype", dtype is not None)
    return _nn_prim(N.Softmax, axis)(input)


def log_softmax(logits, axis=-1):
    return _nn_prim(N.LogSoftmax, axis)(logits)


# ------------------------------------------------------ bias, convolution, pooling
def bias_add(input_x, bias):
    return _bias_add(input_x, bias)


def conv2d(input, weight, bias=None, stride=1, pad_mode="valid", padding=0, dilation=1,
           groups=1):
    """2-D convolution of NCHW ``input`` with weight [O, C, kh, kw], plus ``bias`` [O]."""
    out = _nn_prim(N.Conv2D, None, None, pad_mode=pad_mode, pad=padding, stride=stride,
                   dilation=dilation, group=groups)(input, weight)
    if bias is not None:
        out = _bias_add(out, bias)
    return out


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
               ceil_mode=False):
    """Max pooling over NCHW ``x``; ``padding`` pads with -inf."""
    _unsupported("max_pool2d with dilation other than 1", dilation not in (1, (1, 1)))
    _unsupported("max_pool2d with return_indices=True", return_indices)
    _unsupported("max_pool2d with ceil_mode=True", ceil_mode)
    if stride is None:
        stride = kernel_size
    return _nn_prim(N.MaxPool, kernel_size, stride, _pad_mode_for(padding), "NCHW",
                    padding)(x)


def avg_pool2d(input_x, kernel_size=1, stride=1, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Average pooling over NCHW ``input_x``; padding counts when ``count_include_pad``."""
    _unsupported("avg_pool2d with ceil_mode=True", ceil_mode)
    _unsupported("avg_pool2d with divisor_override", divisor_override is not None)
    return _nn_prim(N.AvgPool, kernel_size, stride, _pad_mode_for(padding), "NCHW", padding,
                    count_include_pad)(input_x)


# ------------------------------------------------------- dropout, normalisation
def dropout(input, p=0.5, training=True, seed=None):
    """Zero each element with probability ``p`` (the DROP probability) and scale by 1/(1-p)."""
    if not training or p == 0:
        return input
    return _nn_prim(N.Dropout, 1.0 - p)(input)[0]


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` axes, then scale and shift."""
    begin = _begin_axis(normalized_shape)
    gamma = 1.0 if weight is None else weight
    beta = 0.0 if bias is None else bias
    return _nn_prim(N.LayerNorm, begin, begin, eps)(input, gamma, beta)[0]


# ---------------------------------------------------- NumPy-side mappings, methods
def _sp_softmax(x, axis=None):
    return _nn_prim(N.Softmax, axis)(x)


def _sp_log_softmax(x, axis=None):
    return _nn_prim(N.LogSoftmax, axis)(x)


def _method_softmax(x, axis=-1):
    return softmax(x, axis)


#: NumPy has no nn functions; SciPy's (when installed) map to the same primitives
NUMPY = {}
try:
    import scipy.special as _sp
except ImportError:  # pragma: no cover - depends on the environment
    _sp = None
if _sp is not None:
    NUMPY.update({_sp.expit: sigmoid, _sp.softmax: _sp_softmax,
                  _sp.log_softmax: _sp_log_softmax})

TENSOR_METHODS = {"sigmoid": sigmoid, "relu": relu, "softmax": _method_softmax}

TENSOR_PROPERTIES = {}

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v)
           and getattr(_v, "__module__", None) == __name__]
