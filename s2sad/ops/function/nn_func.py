"""Functional forms of neural-network primitives (``ops.relu``, ``ops.softmax``, ...).

MindSpore 2.x names and signatures.  Forms whose primitive depends on their
arguments get it from ``_nn_prim``, which is evaluated while compiling and
caches instances so eager calls do not rebuild a primitive every time.
"""
from ...runtime import constexpr
from ..operations import array_ops as A
from ..operations import math_ops as M
from ..operations import nn_ops as N

_relu = N.ReLU()
_relu6 = N.ReLU6()
_sigmoid = N.Sigmoid()
_softplus = N.Softplus()
_bias_add = N.BiasAdd()
_one_hot = A.OneHot()
_cast_like = A.CastLike()
_shape = A.Shape()
_size = A.Size()
_expand_dims = A.ExpandDims()
_class_axis_last = A.MoveAxis(1, -1)
_reduce_sum = M.ReduceSum()
_reduce_min = M.ReduceMin()

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


def silu(input):
    """x * sigmoid(x) (also called swish)."""
    return input * _sigmoid(input)


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


# ---------------------------------------------------------------------- losses
@constexpr
def _check_reduction(reduction, who):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError("For '%s', the 'reduction' must be in ['mean', 'sum', 'none'], "
                         "but got %r" % (who, reduction))
    return None


@constexpr
def _check_label_smoothing(label_smoothing, who):
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float)) \
            or not 0.0 <= label_smoothing <= 1.0:
        raise ValueError("For '%s', 'label_smoothing' must be a float in [0.0, 1.0], but got "
                         "%r" % (who, label_smoothing))
    return None


def _reduce_loss(loss, reduction, count):
    """``loss`` summed (``'sum'``), summed and divided by ``count`` (``'mean'``) or as is."""
    if reduction == "none":
        return loss
    total = _reduce_sum(loss, ())
    if reduction == "sum":
        return total
    return total / count


def _class_last(x):
    """``x`` with MindSpore's class axis (1; 0 of a 1-D ``x``) moved last.

    For 1-D and 2-D inputs the class axis already is the last one.
    """
    if x.ndim > 2:
        return _class_axis_last(x)
    return x


def _index_targets(target, like, ignore_index):
    """One-hot rows [..., C] of the class indices ``target``, zero where ``ignore_index``.

    Also checks at run time that every other index is a class: an index out
    of range would otherwise drop its sample from the loss silently.
    """
    n_classes = _shape(like)[-1]
    hits = _cast_like(_one_hot(target, n_classes, 1.0, 0.0), like)
    kept = _cast_like(target != ignore_index, like)
    assert _reduce_min(_reduce_sum(hits, -1) + 1.0 - kept, ()) > 0.5, \
        "For 'nll_loss'/'cross_entropy', every target must be a class index in [0, C) or " \
        "equal 'ignore_index'"
    return hits * _expand_dims(kept, -1), kept


def _class_loss(log_probs, target, weight, ignore_index, reduction, label_smoothing,
                probabilities):
    """-sum_c weight_c * target_c * log_probs_c per sample, smoothed and reduced.

    ``log_probs`` is [C], [N, C] or [N, C, d1, ...]; ``target`` holds class
    indices (one axis fewer) or, when ``probabilities``, class probabilities
    shaped like ``log_probs``.  As MindSpore: ``'mean'`` divides by the summed
    weights of the kept targets for indices and by the number of samples for
    probabilities; label smoothing mixes ``label_smoothing / C`` into every
    kept target.
    """
    x = _class_last(log_probs)
    n_classes = _shape(x)[-1]
    if probabilities:
        probs = _class_last(target)
        count = _size(x) / n_classes
        if label_smoothing > 0:
            probs = probs * (1.0 - label_smoothing) + label_smoothing / n_classes
    else:
        probs, kept = _index_targets(target, x, ignore_index)
        if weight is None:
            count = _reduce_sum(kept, ())
        else:
            count = _reduce_sum(probs * weight, ())
        if label_smoothing > 0:
            probs = probs * (1.0 - label_smoothing) \
                + _expand_dims(kept, -1) * (label_smoothing / n_classes)
    if weight is not None:
        probs = probs * weight
    return _reduce_loss(-_reduce_sum(x * probs, -1), reduction, count)


def nll_loss(inputs, target, weight=None, ignore_index=-100, reduction="mean",
             label_smoothing=0.0):
    """Negative log-likelihood of the class indices ``target`` under log-probabilities ``inputs``.

    ``inputs`` is [N, C] (or [C], [N, C, d1, ...]) and ``target`` [N] (or
    [], [N, d1, ...]); ``weight`` [C] weighs each class; targets equal to
    ``ignore_index`` count for nothing, not even in the mean's denominator.
    """
    _check_reduction(reduction, "nll_loss")
    _check_label_smoothing(label_smoothing, "nll_loss")
    return _class_loss(inputs, target, weight, ignore_index, reduction, label_smoothing, False)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """Cross entropy of ``softmax(input)`` over the class axis (1; 0 of a 1-D input).

    ``target`` holds class indices (one axis fewer than ``input``, as
    ``nll_loss``) or class probabilities (``input``'s shape): told apart by
    rank, which is what MindSpore's documented shapes imply.
    """
    _check_reduction(reduction, "cross_entropy")
    _check_label_smoothing(label_smoothing, "cross_entropy")
    if input.ndim == 1:
        log_probs = _nn_prim(N.LogSoftmax, 0)(input)
    else:
        log_probs = _nn_prim(N.LogSoftmax, 1)(input)
    if target.ndim == input.ndim:
        return _class_loss(log_probs, target, weight, ignore_index, reduction, label_smoothing,
                           True)
    return _class_loss(log_probs, target, weight, ignore_index, reduction, label_smoothing,
                       False)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction="mean"):
    """Binary cross entropy of ``sigmoid(input)`` against ``target``, from the logits.

    ``-[pos_weight * y * log(sigmoid(z)) + (1 - y) * log(1 - sigmoid(z))] * weight``
    with ``log(sigmoid(z)) = -softplus(-z)``, so large logits neither
    overflow nor lose the gradient.  ``'mean'`` averages over every element.
    """
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    if pos_weight is None:
        loss = target * _softplus(-input) + (1 - target) * _softplus(input)
    else:
        loss = pos_weight * target * _softplus(-input) + (1 - target) * _softplus(input)
    if weight is not None:
        loss = loss * weight
    return _reduce_loss(loss, reduction, _size(loss))


# ---------------------------------------------------- NumPy-side mappings, methods
def _sp_softmax(x, axis=None):
    return _nn_prim(N.Softmax, axis)(x)


def _sp_log_softmax(x, axis=None):
    return _nn_prim(N.LogSoftmax, axis)(x)


def _method_softmax(x, axis=-1):
    return softmax(x, axis)


#: NumPy has no nn functions
NUMPY = {}
#: ``scipy.special`` functions (by name) that map to the same primitives.  Looked
#: up only when SciPy is already imported -- a program calling them imported
#: it -- so importing s2sad never imports SciPy (a third of a second)
SCIPY_SPECIAL = {"expit": sigmoid, "softmax": _sp_softmax, "log_softmax": _sp_log_softmax}

TENSOR_METHODS = {"sigmoid": sigmoid, "relu": relu, "softmax": _method_softmax}

TENSOR_PROPERTIES = {}

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v)
           and getattr(_v, "__module__", None) == __name__]
