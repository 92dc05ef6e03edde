"""The neural-network helpers of ``rt`` for arrays of another library than NumPy.

The same formulas as ``rt_nn`` (each stable where NumPy's is: the softmax
shifted by its maximum, the sigmoid without overflow), written against the
array API standard so that a Cell's layers and losses run on PyTorch's
arrays, on any device.  A helper missing here is refused with the primitive
named (``runtime.xarrays.missing_names``), never run through NumPy.
"""
from .rt_nn import _crop, _pads


class NNHelpers:
    """Mixed into ``rt_neutral.Helpers``: ``self.xp`` is the library's namespace."""

    def nn_sigmoid(self, x):
        """1 / (1 + exp(-x)) as exp(-log(1 + exp(-x))): no side overflows."""
        xp = self.xp
        return xp.exp(-xp.logaddexp(xp.zeros_like(x), -x))

    def nn_softplus(self, x):
        """log(1 + exp(x)) without overflow."""
        return self.xp.logaddexp(self.xp.zeros_like(x), x)

    def nn_softmax(self, x, axis):
        """exp(x) / sum(exp(x)) over ``axis``."""
        xp = self.xp
        e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
        return e / xp.sum(e, axis=axis, keepdims=True)

    def nn_log_softmax(self, x, axis):
        """x - logsumexp(x) over ``axis``."""
        xp = self.xp
        shifted = x - xp.max(x, axis=axis, keepdims=True)
        return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))

    def nn_softmax_cross_entropy(self, logits, labels):
        """(loss, backprop) of SoftmaxCrossEntropyWithLogits over the last axis."""
        logp = self.nn_log_softmax(logits, -1)
        return -self.xp.sum(labels * logp, axis=-1), self.xp.exp(logp) - labels

    def nn_bias_add(self, x, bias, data_format):
        """x + bias along the channel axis (1 for NCHW, last for NHWC and 2-D inputs)."""
        shape = tuple(x.shape)
        if len(shape) < 2:
            raise ValueError("For 'BiasAdd', the input must have rank >= 2, but got rank %d"
                             % len(shape))
        axis = len(shape) - 1 if data_format == "NHWC" else 1
        if len(bias.shape) != 1 or bias.shape[0] != shape[axis]:
            raise ValueError("For 'BiasAdd', the bias must be 1-D with %d elements, but got "
                             "shape %s" % (shape[axis], list(bias.shape)))
        channel = [1] * len(shape)
        channel[axis] = shape[axis]
        return x + self.xp.reshape(bias, tuple(channel))

    def nn_sparse_softmax_cross_entropy(self, logits, labels, is_grad):
        """Mean cross entropy for integer labels, or its gradient when ``is_grad``."""
        xp = self.xp
        logp = self.nn_log_softmax(logits, -1)
        classes = xp.arange(logits.shape[-1], device=logits.device)
        onehot = xp.astype(xp.reshape(labels, (-1, 1)) == classes, logp.dtype)
        n = onehot.shape[0]
        if is_grad:
            return (xp.exp(logp) - onehot) / n
        return -xp.sum(logp * onehot) / n


class TorchConvHelpers:
    """2-D convolution for PyTorch arrays, by PyTorch's own kernels (the array API has
    no convolution): MindSpore's padding (``rt_nn._pads``) applied first, then an
    unpadded cross-correlation, its input gradient and its weight gradient."""

    def nn_conv2d(self, x, w, stride, pad_mode, pad, dilation, kernel_size=None):
        """NCHW ``x`` cross-correlated with OIHW ``w`` (group 1), checked as NumPy's is."""
        from torch.nn import functional
        _check_conv(x, w, kernel_size)
        pads = _pads(tuple(x.shape[2:]), tuple(w.shape[2:]), stride, dilation, pad_mode, pad)
        return functional.conv2d(_padded(x, pads), w, stride=tuple(stride),
                                 dilation=tuple(dilation))

    def nn_conv2d_backprop_input(self, dout, w, input_size, stride, pad_mode, pad, dilation):
        """The gradient of ``nn_conv2d`` with respect to its input."""
        import torch
        size = tuple(int(v) for v in input_size)
        pads = _pads(size[2:], tuple(w.shape[2:]), stride, dilation, pad_mode, pad)
        padded = size[:2] + (size[2] + pads[0] + pads[1], size[3] + pads[2] + pads[3])
        dxp = torch.nn.grad.conv2d_input(padded, w, dout, stride=tuple(stride),
                                         dilation=tuple(dilation))
        return _crop(dxp, pads, size[2:])

    def nn_conv2d_backprop_filter(self, dout, x, filter_size, stride, pad_mode, pad, dilation):
        """The gradient of ``nn_conv2d`` with respect to its weight."""
        import torch
        size = tuple(int(v) for v in filter_size)
        pads = _pads(tuple(x.shape[2:]), size[2:], stride, dilation, pad_mode, pad)
        return torch.nn.grad.conv2d_weight(_padded(x, pads), size, dout, stride=tuple(stride),
                                           dilation=tuple(dilation))


def _check_conv(x, w, kernel_size):
    for a in (x, w):
        if len(a.shape) != 4:
            raise ValueError("For 'Conv2D', the input must be 4-D (NCHW), but got shape %s"
                             % list(a.shape))
    if x.shape[1] != w.shape[1]:
        raise ValueError("For 'Conv2D', the input has %d channels but the weight expects %d"
                         % (x.shape[1], w.shape[1]))
    if kernel_size is not None and tuple(kernel_size) != tuple(w.shape[2:]):
        raise ValueError("For 'Conv2D', kernel_size %s does not match the weight's %s"
                         % (tuple(kernel_size), tuple(w.shape[2:])))


def _padded(x, pads):
    """``x`` with ``pads`` (top, bottom, left, right) zeros around its last two axes."""
    if not any(pads):
        return x
    from torch.nn import functional
    top, bottom, left, right = pads
    return functional.pad(x, (left, right, top, bottom))
