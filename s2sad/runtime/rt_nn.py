"""Runtime helpers (``rt.<name>`` in generated code) for nn primitives.

Every helper keeps the floating dtype of its tensor inputs (Python numbers
never upcast a float32 array) and is written for NCHW layouts.  Names carry an
``nn_`` prefix so they cannot clash with other families' helpers.
"""
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .rt_math import math_erf

__all__ = [
    "nn_erf", "nn_relu6", "nn_leaky_relu", "nn_elu", "nn_gelu", "nn_gelu_grad", "nn_sigmoid",
    "nn_softplus",
    "nn_softmax", "nn_log_softmax", "nn_softmax_cross_entropy",
    "nn_sparse_softmax_cross_entropy", "nn_norm_axes", "nn_bias_add", "nn_conv2d",
    "nn_conv2d_backprop_input", "nn_conv2d_backprop_filter", "nn_max_pool",
    "nn_max_pool_grad", "nn_max_pool_grad_grad", "nn_avg_pool", "nn_avg_pool_grad",
    "nn_dropout", "nn_layer_norm", "nn_batch_norm",
]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_C = math.sqrt(2.0 / math.pi)
_TANH_K = 0.044715


def _float_dtype(x):
    """The floating dtype a result computed from ``x`` should have."""
    dt = np.result_type(x)
    return dt if np.issubdtype(dt, np.floating) else np.dtype(np.float64)


def _like(result, x):
    """``result`` cast to ``x``'s float dtype, a NumPy scalar when ``x`` is not an array."""
    out = np.asarray(result, dtype=_float_dtype(x))
    if out.ndim == 0 and not isinstance(x, np.ndarray):
        return out[()]
    return out


# ----------------------------------------------------------------- random state
_generator = None


def generator():
    """The NumPy ``Generator`` Dropout draws its masks from, made on first use
    (``numpy.random`` is a tenth of the import time of s2sad)."""
    global _generator
    if _generator is None:
        _generator = np.random.default_rng()
    return _generator


def set_seed(seed):
    """Reseed the generator Dropout draws its masks from, for reproducible runs."""
    global _generator
    _generator = np.random.default_rng(seed)


def _uniform(shape):
    return generator().random(shape)


# ------------------------------------------------------------------ activations
def nn_erf(x):
    """The error function, elementwise, in ``x``'s float dtype (``rt.math_erf``'s)."""
    return math_erf(x)


def nn_relu6(x):
    """min(max(x, 0), 6)."""
    return np.minimum(np.maximum(x, 0), 6)


def _scalar_like(out, x):
    """``out``, unwrapped from 0-d when ``x`` is a NumPy or Python scalar."""
    if isinstance(out, np.ndarray) and out.ndim == 0 and not isinstance(x, np.ndarray):
        return out[()]
    return out


def nn_leaky_relu(x, alpha):
    """x for x > 0, alpha * x otherwise."""
    return _scalar_like(np.where(x > 0, x, x * alpha), x)


def nn_elu(x, alpha):
    """x for x > 0, alpha * (exp(x) - 1) otherwise (no overflow for large x)."""
    return _scalar_like(np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))), x)


def nn_gelu(x, approximate):
    """GeLU: the exact erf form (``'none'``) or the tanh approximation (``'tanh'``)."""
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(_TANH_C * (x + _TANH_K * (x * x * x))))
    return 0.5 * x * (1 + nn_erf(x * _SQRT_HALF))


def nn_gelu_grad(dy, x, approximate):
    """``dy * gelu'(x)`` for either form of GeLU."""
    if approximate == "tanh":
        t = np.tanh(_TANH_C * (x + _TANH_K * (x * x * x)))
        du = _TANH_C * (1 + 3 * _TANH_K * (x * x))
        return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du)
    cdf = 0.5 * (1 + nn_erf(x * _SQRT_HALF))
    pdf = _INV_SQRT_2PI * np.exp(-0.5 * (x * x))
    return dy * (cdf + x * pdf)


# below these, exp(-x) overflows: sigmoid takes the slower form that cannot
_SIGMOID_FAST_FROM = {np.dtype(np.float32): -88.0, np.dtype(np.float64): -709.0}


def nn_sigmoid(x):
    """1 / (1 + exp(-x)).

    That form unless some ``x`` of a float32/float64 array is below the point
    where ``exp(-x)`` overflows, or the dtype is another: then
    exp(-log(1 + exp(-x))), which never overflows and keeps the far negative
    tail's relative accuracy, but ``logaddexp`` costs about five times the
    three ops (an LSTM calls this three times per step).  A NaN takes the
    fast form (``min`` is NaN), which gives NaN there without a warning.
    """
    lo = _SIGMOID_FAST_FROM.get(getattr(x, "dtype", None))
    if lo is None or (x.size and x.min() < lo):
        return np.exp(-np.logaddexp(0, -x))
    return 1 / (1 + np.exp(-x))


def nn_softplus(x):
    """log(1 + exp(x)) without overflow."""
    return np.logaddexp(0, x)


def nn_softmax(x, axis):
    """exp(x) / sum(exp(x)) over ``axis`` (an int, a tuple, or None for all axes)."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def nn_log_softmax(x, axis):
    """x - logsumexp(x) over ``axis``."""
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def nn_softmax_cross_entropy(logits, labels):
    """(loss, backprop) of MindSpore's SoftmaxCrossEntropyWithLogits, over the last axis."""
    logp = nn_log_softmax(logits, -1)
    loss = -np.sum(labels * logp, axis=-1)
    return loss, np.exp(logp) - labels


def nn_sparse_softmax_cross_entropy(logits, labels, is_grad):
    """Mean cross entropy for integer labels, or its gradient when ``is_grad``."""
    logits = np.asarray(logits)
    labels = np.asarray(labels).astype(np.intp)
    n = labels.size
    logp = nn_log_softmax(logits, -1)
    if is_grad:
        grad = np.exp(logp)
        grad[np.arange(n), labels] -= 1
        return grad / n
    picked = np.take_along_axis(logp, labels[:, None], axis=-1)
    return -np.sum(picked) / n


# ------------------------------------------------------------------ layouts
def nn_norm_axes(x, begin_axis=0, channel_axis=None):
    """Axes ``begin_axis..ndim-1`` of ``x``, leaving out ``channel_axis`` if given."""
    ndim = np.ndim(x)
    begin = begin_axis + ndim if begin_axis < 0 else begin_axis
    axes = tuple(range(begin, ndim))
    if channel_axis is not None:
        c = channel_axis % ndim
        axes = tuple(a for a in axes if a != c)
    if not axes:
        raise ValueError("no axes to reduce over for an input of rank %d" % ndim)
    return axes


def _channel_shape(x, channel_axis):
    shape = [1] * np.ndim(x)
    shape[channel_axis] = np.shape(x)[channel_axis]
    return tuple(shape)


def nn_bias_add(x, bias, data_format):
    """x + bias along the channel axis (1 for NCHW, last for NHWC and 2-D inputs)."""
    if np.ndim(x) < 2:
        raise ValueError("For 'BiasAdd', the input must have rank >= 2, but got rank %d"
                         % np.ndim(x))
    axis = -1 if data_format == "NHWC" else 1
    if np.ndim(bias) != 1 or np.shape(bias)[0] != np.shape(x)[axis]:
        raise ValueError("For 'BiasAdd', the bias must be 1-D with %d elements, but got "
                         "shape %s" % (np.shape(x)[axis], list(np.shape(bias))))
    return x + np.reshape(bias, _channel_shape(x, axis))


# -------------------------------------------------------------- convolution
def _same_pads(size, kernel, stride, dilation):
    """TF/MindSpore 'same' padding (extra row/column at the end) for one spatial axis."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _pads(hw, kernel, stride, dilation, pad_mode, pad):
    """(top, bottom, left, right) padding for an input of spatial size ``hw``."""
    if pad_mode == "same":
        return (_same_pads(hw[0], kernel[0], stride[0], dilation[0])
                + _same_pads(hw[1], kernel[1], stride[1], dilation[1]))
    if pad_mode == "pad":
        return tuple(pad)
    return (0, 0, 0, 0)


def _pad_hw(x, pads, value=0):
    top, bottom, left, right = pads
    if not any(pads):
        return x
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def _windows(xp, kernel, stride, dilation):
    """[N, C, OH, OW, kh, kw] strided view of the (padded) input's sliding windows."""
    span = ((kernel[0] - 1) * dilation[0] + 1, (kernel[1] - 1) * dilation[1] + 1)
    if xp.shape[2] < span[0] or xp.shape[3] < span[1]:
        raise ValueError("the kernel (%d x %d with dilation) is larger than the padded input "
                         "(%d x %d)" % (span[0], span[1], xp.shape[2], xp.shape[3]))
    win = sliding_window_view(xp, span, axis=(2, 3))
    return win[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]]


def _scatter_windows(cols, padded_shape, kernel, stride, dilation, dtype):
    """Adjoint of ``_windows``: add ``cols`` [N, C, OH, OW, kh, kw] back onto the input."""
    out = np.zeros(padded_shape, dtype=dtype)
    oh, ow = cols.shape[2], cols.shape[3]
    for i in range(kernel[0]):
        r = i * dilation[0]
        for j in range(kernel[1]):
            c = j * dilation[1]
            out[:, :, r:r + stride[0] * (oh - 1) + 1:stride[0],
                c:c + stride[1] * (ow - 1) + 1:stride[1]] += cols[:, :, :, :, i, j]
    return out


def _crop(xp, pads, hw):
    top, _, left, _ = pads
    return xp[:, :, top:top + hw[0], left:left + hw[1]]


def _check_4d(x, what):
    if np.ndim(x) != 4:
        raise ValueError("For '%s', the input must be 4-D (NCHW), but got shape %s"
                         % (what, list(np.shape(x))))


def _check_conv_args(x, w, kernel_size):
    _check_4d(x, "Conv2D")
    _check_4d(w, "Conv2D")
    if np.shape(x)[1] != np.shape(w)[1]:
        raise ValueError("For 'Conv2D', the input has %d channels but the weight expects %d"
                         % (np.shape(x)[1], np.shape(w)[1]))
    if kernel_size is not None and tuple(kernel_size) != tuple(np.shape(w)[2:]):
        raise ValueError("For 'Conv2D', kernel_size %s does not match the weight's %s"
                         % (tuple(kernel_size), tuple(np.shape(w)[2:])))


def _im2col(x, kernel, stride, pads, dilation):
    """Patches of ``x`` as one contiguous [C*kh*kw, N*OH*OW] matrix (and OH, OW).

    One copy of the strided window view, laid out channel/kernel-major so that
    the copy's inner loop runs along an output row (long and unit-strided for
    stride 1) and both the forward and the filter gradient are one 2-D matmul
    on it without further copies."""
    win = _windows(_pad_hw(np.asarray(x), pads), kernel, stride, dilation)
    cols = np.ascontiguousarray(np.transpose(win, (1, 4, 5, 0, 2, 3)))
    return cols.reshape(_size(cols.shape[:3]), _size(cols.shape[3:])), win.shape[2:4]


def _size(shape):
    """Elements of ``shape`` (explicit reshapes: ``-1`` is ambiguous for empty arrays)."""
    return int(np.prod(shape, dtype=np.int64))


def _weight_matrix(w):
    """OIHW ``w`` as the [O, C*kh*kw] matrix of the im2col products."""
    return w.reshape(w.shape[0], _size(w.shape[1:]))


def _channels_first(dout):
    """NCHW ``dout`` as the [O, N*OH*OW] matrix the im2col products need."""
    dout = np.asarray(dout)
    return np.transpose(dout, (1, 0, 2, 3)).reshape(dout.shape[1],
                                                    _size(dout.shape[:1] + dout.shape[2:]))


def _col2im(dcols, padded_cn, kernel, stride, dilation, oh, ow):
    """Adjoint of ``_im2col``: each kernel tap's [C, N, OH, OW] block of ``dcols``
    added in place into one [C, N, Hp, Wp] buffer (kh*kw strided additions)."""
    out = np.zeros(padded_cn, dtype=dcols.dtype)
    dcols = dcols.reshape((padded_cn[0],) + tuple(kernel) + (padded_cn[1], oh, ow))
    for i in range(kernel[0]):
        r = i * dilation[0]
        for j in range(kernel[1]):
            c = j * dilation[1]
            out[:, :, r:r + stride[0] * (oh - 1) + 1:stride[0],
                c:c + stride[1] * (ow - 1) + 1:stride[1]] += dcols[:, i, j]
    return out


def nn_conv2d(x, w, stride, pad_mode, pad, dilation, kernel_size=None):
    """2-D cross-correlation of NCHW ``x`` with OIHW ``w`` (group 1): im2col + one matmul."""
    _check_conv_args(x, w, kernel_size)
    w = np.asarray(w)
    kernel = w.shape[2:]
    pads = _pads(np.shape(x)[2:], kernel, stride, dilation, pad_mode, pad)
    cols, (oh, ow) = _im2col(x, kernel, stride, pads, dilation)
    out = (_weight_matrix(w) @ cols).reshape(w.shape[0], np.shape(x)[0], oh, ow)
    return np.ascontiguousarray(np.transpose(out, (1, 0, 2, 3)))


def nn_conv2d_backprop_input(dout, w, input_size, stride, pad_mode, pad, dilation):
    """Gradient of Conv2D with respect to its input (a transposed convolution):
    one matmul to the patches' adjoint, then col2im."""
    input_size = tuple(int(v) for v in input_size)
    w = np.asarray(w)
    kernel = w.shape[2:]
    pads = _pads(input_size[2:], kernel, stride, dilation, pad_mode, pad)
    padded_cn = (input_size[1], input_size[0], input_size[2] + pads[0] + pads[1],
                 input_size[3] + pads[2] + pads[3])
    oh, ow = np.shape(dout)[2:]
    if ow < _LONG_ROW and tuple(stride) == (1, 1) and padded_cn[2:] == (
            oh + (kernel[0] - 1) * dilation[0], ow + (kernel[1] - 1) * dilation[1]):
        dxp = _col2im_rows(w, dout, padded_cn, kernel, dilation)
    else:
        dcols = _weight_matrix(w).T @ _channels_first(dout)
        dxp = _col2im(dcols, padded_cn, kernel, stride, dilation, oh, ow)
    return np.ascontiguousarray(np.transpose(_crop(dxp, pads, input_size[2:]), (1, 0, 2, 3)))


# Output rows at least this long are added row by row (``_col2im``): measured on
# 3x3 and 5x5 kernels, whole-channel additions win up to OW = 20 (1.1-1.9x) and
# lose from OW = 28 on (their larger matmul and buffer no longer pay).
_LONG_ROW = 24


def _col2im_rows(w, dout, padded_cn, kernel, dilation):
    """``_col2im`` of ``w^T @ dout`` for stride 1, each tap one long contiguous addition.

    ``dout`` is placed in a zero [N, O, Hp, Wp] array (the padded input's size),
    so a tap's block, read as N*Hp*Wp consecutive elements, lands shifted by
    ``i*Wp + j`` on consecutive elements of the [C, N*Hp*Wp] buffer: each real
    output (r < OH, c < OW) reaches (r + i, c + j) of its own image, and what
    crosses a row or an image (or is cut off at the end) is zero.  kh*kw
    additions over whole channels instead of C*N*OH short rows each, for a
    matmul on (Hp*Wp)/(OH*OW) times the columns."""
    dout = np.asarray(dout)
    c, n, hp, wp = padded_cn
    oh, ow = dout.shape[2:]
    full = np.zeros(dout.shape[:2] + (hp, wp), dtype=dout.dtype)
    full[:, :, :oh, :ow] = dout
    length = n * hp * wp
    dcols = (_weight_matrix(w).T @ _channels_first(full)).reshape(
        (c,) + tuple(kernel) + (length,))
    out = np.zeros((c, length), dtype=dcols.dtype)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            off = i * dilation[0] * wp + j * dilation[1]
            out[:, off:] += dcols[:, i, j, :length - off]
    return out.reshape(padded_cn)


def nn_conv2d_backprop_filter(dout, x, filter_size, stride, pad_mode, pad, dilation):
    """Gradient of Conv2D with respect to its weight: im2col + one matmul."""
    filter_size = tuple(int(v) for v in filter_size)
    pads = _pads(np.shape(x)[2:], filter_size[2:], stride, dilation, pad_mode, pad)
    cols, _ = _im2col(x, filter_size[2:], stride, pads, dilation)
    return (_channels_first(dout) @ cols.T).reshape(filter_size)


# ------------------------------------------------------------------ pooling
def _pool_setup(x, kernel, strides, pad_mode, pad):
    _check_4d(x, "pooling")
    pads = _pads(np.shape(x)[2:], kernel, strides, (1, 1), pad_mode, pad)
    return pads


def _argmax_windows(x, kernel, strides, pad_mode, pad):
    """(flat argmax index within each window, padding, windows) of a max pooling."""
    pads = _pool_setup(x, kernel, strides, pad_mode, pad)
    fill = -np.inf if np.issubdtype(np.result_type(x), np.floating) else np.iinfo(
        np.result_type(x)).min
    win = _windows(_pad_hw(np.asarray(x), pads, fill), kernel, strides, (1, 1))
    flat = win.reshape(win.shape[:4] + (-1,))
    return np.argmax(flat, axis=-1), pads, flat


def nn_max_pool(x, kernel, strides, pad_mode, pad):
    """Max over each kernel window (padding never wins)."""
    pads = _pool_setup(x, kernel, strides, pad_mode, pad)
    fill = -np.inf if np.issubdtype(np.result_type(x), np.floating) else np.iinfo(
        np.result_type(x)).min
    win = _windows(_pad_hw(np.asarray(x), pads, fill), kernel, strides, (1, 1))
    return np.max(win, axis=(4, 5))


def nn_max_pool_grad(x, out, dout, kernel, strides, pad_mode, pad):
    """Each window's ``dout`` added at the position of its maximum (first one on ties)."""
    idx, pads, _ = _argmax_windows(x, kernel, strides, pad_mode, pad)
    k = np.arange(kernel[0] * kernel[1]).reshape(kernel)
    cols = (idx[..., None, None] == k) * np.asarray(dout)[..., None, None]
    padded = np.shape(x)[:2] + (np.shape(x)[2] + pads[0] + pads[1],
                                np.shape(x)[3] + pads[2] + pads[3])
    dxp = _scatter_windows(cols, padded, kernel, strides, (1, 1), cols.dtype)
    return np.ascontiguousarray(_crop(dxp, pads, np.shape(x)[2:]))


def nn_max_pool_grad_grad(x, out, grad, kernel, strides, pad_mode, pad):
    """``grad`` (shaped like x) read at each window's maximum: MaxPool's tangent map."""
    idx, pads, _ = _argmax_windows(x, kernel, strides, pad_mode, pad)
    gwin = _windows(_pad_hw(np.asarray(grad), pads), kernel, strides, (1, 1))
    gflat = gwin.reshape(gwin.shape[:4] + (-1,))
    return np.take_along_axis(gflat, idx[..., None], axis=-1)[..., 0]


def _avg_counts(x, kernel, strides, pad_mode, pad, count_include_pad, dtype):
    """How many elements each window averages over."""
    pads = _pool_setup(x, kernel, strides, pad_mode, pad)
    if count_include_pad or not any(pads):
        return pads, kernel[0] * kernel[1]
    ones = np.ones((1, 1) + tuple(np.shape(x)[2:]), dtype=dtype)
    counts = np.sum(_windows(_pad_hw(ones, pads), kernel, strides, (1, 1)), axis=(4, 5))
    return pads, counts


def nn_avg_pool(x, kernel, strides, pad_mode, pad, count_include_pad):
    """Mean over each kernel window (padding excluded from the count unless asked)."""
    x = np.asarray(x)
    pads, counts = _avg_counts(x, kernel, strides, pad_mode, pad, count_include_pad,
                               _float_dtype(x))
    win = _windows(_pad_hw(x, pads), kernel, strides, (1, 1))
    return np.sum(win, axis=(4, 5)) / counts


def nn_avg_pool_grad(x, out, dout, kernel, strides, pad_mode, pad, count_include_pad):
    """Each window's ``dout / count`` spread evenly over the window."""
    dout = np.asarray(dout)
    pads, counts = _avg_counts(x, kernel, strides, pad_mode, pad, count_include_pad,
                               dout.dtype)
    share = dout / counts
    cols = np.broadcast_to(share[..., None, None], share.shape + tuple(kernel))
    padded = np.shape(x)[:2] + (np.shape(x)[2] + pads[0] + pads[1],
                                np.shape(x)[3] + pads[2] + pads[3])
    dxp = _scatter_windows(cols, padded, kernel, strides, (1, 1), share.dtype)
    return np.ascontiguousarray(_crop(dxp, pads, np.shape(x)[2:]))


# ------------------------------------------------------ dropout, normalisation
def nn_dropout(x, keep_prob):
    """(x * mask / keep_prob, mask) with a fresh Bernoulli(keep_prob) mask in x's dtype."""
    dtype = _float_dtype(x)
    mask = (_uniform(np.shape(x)) < keep_prob).astype(dtype)
    out = x * mask / keep_prob
    return _like(out, x), _like(mask, x)


def nn_layer_norm(x, gamma, beta, begin_norm_axis, epsilon):
    """(y, mean, variance) normalising over axes ``begin_norm_axis..``, stats kept as dims."""
    axes = nn_norm_axes(x, begin_norm_axis)
    mean = np.mean(x, axis=axes, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=axes, keepdims=True)
    y = centred / np.sqrt(var + epsilon) * gamma + beta
    return y, mean, var


def nn_batch_norm(x, scale, bias, mean, variance, is_training, epsilon, momentum):
    """(y, batch_mean, batch_variance, new moving mean, new moving variance) over axis 1."""
    axes = nn_norm_axes(x, 0, 1)
    shape = _channel_shape(x, 1)
    if is_training:
        n = int(np.prod([np.shape(x)[a] for a in axes]))
        if n < 2:
            raise ValueError("For 'BatchNorm' in training mode, each channel needs more "
                             "than one value, but the input has shape %s" % list(np.shape(x)))
        batch_mean = np.mean(x, axis=axes)
        centred = x - np.reshape(batch_mean, shape)
        batch_var = np.mean(centred * centred, axis=axes)
        new_mean = (1 - momentum) * mean + momentum * batch_mean
        new_var = (1 - momentum) * variance + (momentum * n / (n - 1)) * batch_var
    else:
        batch_mean, batch_var = mean, variance
        centred = x - np.reshape(mean, shape)
        new_mean, new_var = mean, variance
    y = centred / np.sqrt(np.reshape(batch_var, shape) + epsilon) * np.reshape(scale, shape) \
        + np.reshape(bias, shape)
    return y, batch_mean, batch_var, new_mean, new_var
