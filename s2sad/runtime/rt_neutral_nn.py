"""The neural-network helpers of ``rt`` for arrays of another library than NumPy.

The same formulas as ``rt_nn`` (each stable where NumPy's is: the softmax
shifted by its maximum, the sigmoid without overflow), written against the
array API standard so that a Cell's layers and losses run on PyTorch's
arrays, on any device.  A helper missing here is refused with the primitive
named (``runtime.xarrays.missing_names``), never run through NumPy.
"""
from math import prod

from . import rt_nn
from .rt_nn import _crop, _pads, nn_norm_axes, _INV_SQRT_2PI, _SQRT_HALF, _TANH_C, _TANH_K


class NNHelpers:
    """Mixed into ``rt_neutral.Helpers``: ``self.xp`` is the library's namespace."""

    def nn_sigmoid(self, x):
        """1 / (1 + exp(-x)) as exp(-log(1 + exp(-x))): no side overflows."""
        xp = self.xp
        return xp.exp(-xp.logaddexp(xp.zeros_like(x), -x))

    def nn_relu6(self, x):
        """min(max(x, 0), 6)."""
        zero = self.xp.zeros_like(x)
        return self.xp.minimum(self.xp.maximum(x, zero), zero + 6)

    def nn_leaky_relu(self, x, alpha):
        """x for x > 0, alpha * x otherwise."""
        return self.xp.where(x > 0, x, x * alpha)

    def nn_elu(self, x, alpha):
        """x for x > 0, alpha * (exp(x) - 1) otherwise (no overflow for large x)."""
        xp = self.xp
        return xp.where(x > 0, x, alpha * xp.expm1(xp.minimum(x, xp.zeros_like(x))))

    def nn_erf(self, x):
        return self.math_erf(x)

    def nn_gelu(self, x, approximate):
        """GeLU: the exact erf form (``'none'``) or the tanh approximation (``'tanh'``)."""
        if approximate == "tanh":
            return 0.5 * x * (1 + self.xp.tanh(_TANH_C * (x + _TANH_K * (x * x * x))))
        return 0.5 * x * (1 + self.math_erf(x * _SQRT_HALF))

    def nn_gelu_grad(self, dy, x, approximate):
        """``dy * gelu'(x)`` for either form of GeLU."""
        xp = self.xp
        if approximate == "tanh":
            t = xp.tanh(_TANH_C * (x + _TANH_K * (x * x * x)))
            du = _TANH_C * (1 + 3 * _TANH_K * (x * x))
            return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du)
        cdf = 0.5 * (1 + self.math_erf(x * _SQRT_HALF))
        return dy * (cdf + x * (_INV_SQRT_2PI * xp.exp(-0.5 * (x * x))))

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

    # ------------------------------------------------------ normalisation
    def nn_layer_norm(self, x, gamma, beta, begin_norm_axis, epsilon):
        """(y, mean, variance) normalising over axes ``begin_norm_axis..``, stats kept as dims."""
        xp = self.xp
        axes = nn_norm_axes(x, begin_norm_axis)
        mean = xp.mean(x, axis=axes, keepdims=True)
        centred = x - mean
        var = xp.mean(centred * centred, axis=axes, keepdims=True)
        return centred / xp.sqrt(var + epsilon) * gamma + beta, mean, var

    def nn_batch_norm(self, x, scale, bias, mean, variance, is_training, epsilon, momentum):
        """(y, batch_mean, batch_variance, new moving mean, new moving variance) over axis 1:
        ``rt_nn.nn_batch_norm``'s formulas."""
        xp = self.xp
        axes = nn_norm_axes(x, 0, 1)
        shape = [1] * len(x.shape)
        shape[1] = x.shape[1]
        shape = tuple(shape)
        if is_training:
            n = prod(x.shape[a] for a in axes)
            if n < 2:
                raise ValueError("For 'BatchNorm' in training mode, each channel needs more "
                                 "than one value, but the input has shape %s" % list(x.shape))
            batch_mean = xp.mean(x, axis=axes)
            centred = x - xp.reshape(batch_mean, shape)
            batch_var = xp.mean(centred * centred, axis=axes)
            new_mean = (1 - momentum) * mean + momentum * batch_mean
            new_var = (1 - momentum) * variance + (momentum * n / (n - 1)) * batch_var
        else:
            batch_mean, batch_var = mean, variance
            centred = x - xp.reshape(mean, shape)
            new_mean, new_var = mean, variance
        y = centred / xp.sqrt(xp.reshape(batch_var, shape) + epsilon) * xp.reshape(scale, shape) \
            + xp.reshape(bias, shape)
        return y, batch_mean, batch_var, new_mean, new_var


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


def _padded(x, pads, value=0.0):
    """``x`` with ``pads`` (top, bottom, left, right) of ``value`` around its last two axes."""
    if not any(pads):
        return x
    from torch.nn import functional
    top, bottom, left, right = pads
    return functional.pad(x, (left, right, top, bottom), value=value)


class TorchNNHelpers(TorchConvHelpers):
    """What the array API lacks, by PyTorch's own calls: convolution, pooling (its
    kernels after MindSpore's padding) and the random numbers of Dropout."""

    def nn_dropout(self, x, keep_prob):
        """(x * mask / keep_prob, mask), the Bernoulli(keep_prob) mask in ``x``'s dtype drawn
        by PyTorch's generator on ``x``'s device (not NumPy's: no copy to the device)."""
        mask = self.xp.astype(self._uniform(x) < keep_prob, x.dtype)
        return x * mask / keep_prob, mask

    def nn_max_pool(self, x, kernel, strides, pad_mode, pad):
        """Max over each kernel window; MindSpore's padding is -inf, so it never wins."""
        from torch.nn import functional
        padded, _ = _pool_input(x, kernel, strides, pad_mode, pad, _lowest(x))
        return functional.max_pool2d(padded, tuple(kernel), tuple(strides))

    def nn_max_pool_grad(self, x, out, dout, kernel, strides, pad_mode, pad):
        """Each window's ``dout`` added at its maximum (the first one on ties, as NumPy's)."""
        import torch
        padded, pads = _pool_input(x, kernel, strides, pad_mode, pad, _lowest(x))
        _, idx = torch.nn.functional.max_pool2d_with_indices(padded, tuple(kernel), tuple(strides))
        dxp = torch.ops.aten.max_pool2d_with_indices_backward(
            dout, padded, list(kernel), list(strides), [0, 0], [1, 1], False, idx)
        return _crop(dxp, pads, tuple(x.shape[2:]))

    def nn_max_pool_grad_grad(self, x, out, grad, kernel, strides, pad_mode, pad):
        """``grad`` (shaped like x) read at each window's maximum: MaxPool's tangent map."""
        import torch
        padded, pads = _pool_input(x, kernel, strides, pad_mode, pad, _lowest(x))
        _, idx = torch.nn.functional.max_pool2d_with_indices(padded, tuple(kernel), tuple(strides))
        flat = torch.flatten(_padded(grad, pads), 2)
        return torch.gather(flat, 2, torch.flatten(idx, 2)).reshape(idx.shape)

    def nn_avg_pool(self, x, kernel, strides, pad_mode, pad, count_include_pad):
        """Mean over each kernel window (padding left out of the count unless asked)."""
        from torch.nn import functional
        padded, pads = _pool_input(x, kernel, strides, pad_mode, pad)
        sums = functional.avg_pool2d(padded, tuple(kernel), tuple(strides), divisor_override=1)
        return sums / _avg_counts(x, kernel, strides, pads, count_include_pad)

    def nn_avg_pool_grad(self, x, out, dout, kernel, strides, pad_mode, pad, count_include_pad):
        """Each window's ``dout / count`` spread evenly over the window."""
        import torch
        padded, pads = _pool_input(x, kernel, strides, pad_mode, pad)
        share = dout / _avg_counts(x, kernel, strides, pads, count_include_pad)
        dxp = torch.ops.aten.avg_pool2d_backward(share, padded, list(kernel), list(strides),
                                                 [0, 0], False, True, 1)
        return _crop(dxp, pads, tuple(x.shape[2:]))

    def _uniform(self, like):
        """Uniform [0, 1) numbers shaped like ``like`` on its device, from a PyTorch
        generator seeded from ``rt_nn.generator()`` (so ``set_seed`` repeats a run)."""
        import torch
        return torch.rand(tuple(like.shape), generator=_torch_generator(like.device),
                          device=like.device, dtype=like.dtype if like.dtype.is_floating_point
                          else torch.float32)


_TORCH_GENERATORS = {}      # device -> (the rt_nn generator it was seeded from, generator)


def _torch_generator(device):
    """The PyTorch generator of ``device``, seeded afresh whenever ``rt_nn.set_seed``
    has replaced NumPy's generator since it was made."""
    import torch
    source = rt_nn.generator()
    made = _TORCH_GENERATORS.get(str(device))
    if made is None or made[0] is not source:
        gen = torch.Generator(device=device)
        gen.manual_seed(int(source.integers(2 ** 62)))
        made = _TORCH_GENERATORS[str(device)] = (source, gen)
    return made[1]


def _pool_input(x, kernel, strides, pad_mode, pad, value=0.0):
    """(``x`` padded as MindSpore pads it for pooling, the pads): PyTorch's kernels then
    pool without padding of their own (theirs is symmetric; 'same' is not)."""
    if len(x.shape) != 4:
        raise ValueError("For 'pooling', the input must be 4-D (NCHW), but got shape %s"
                         % list(x.shape))
    pads = _pads(tuple(x.shape[2:]), kernel, strides, (1, 1), pad_mode, pad)
    padded = _padded(x, pads, value)
    if padded.shape[2] < kernel[0] or padded.shape[3] < kernel[1]:
        raise ValueError("the kernel (%d x %d) is larger than the padded input (%d x %d)"
                         % (kernel[0], kernel[1], padded.shape[2], padded.shape[3]))
    return padded, pads


def _lowest(x):
    """The value max pooling pads with: -inf, or the least integer of ``x``'s dtype."""
    import torch
    return -float("inf") if x.dtype.is_floating_point else torch.iinfo(x.dtype).min


def _avg_counts(x, kernel, strides, pads, count_include_pad):
    """How many elements each window of an average pooling averages over."""
    if count_include_pad or not any(pads):
        return kernel[0] * kernel[1]
    from torch.nn import functional
    import torch
    ones = torch.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype, device=x.device)
    return functional.avg_pool2d(_padded(ones, pads), tuple(kernel), tuple(strides),
                                 divisor_override=1)
