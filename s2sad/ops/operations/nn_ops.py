"""Neural-network primitives (activations, losses, convolution, pooling, normalisation).

Layouts are NCHW.  The gradient primitives (``GeLUGrad``, ``Conv2DBackpropInput``,
``MaxPoolGrad``, ...) exist because the rules are written with primitives only:
each has rules of its own, so adjoints can be differentiated again.
"""
from ...ir.primitive import Primitive


def _pair(value, name):
    """An int, a 2-tuple or MindSpore's 4-tuple ``(1, 1, h, w)`` as ``(h, w)``."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    value = tuple(int(v) for v in value)
    if len(value) == 4:
        value = value[2:]
    if len(value) != 2:
        raise ValueError("'%s' must be an int or a tuple of 2 or 4 ints, but got %r"
                         % (name, value))
    return value


def _pad4(pad):
    """An int, ``(ph, pw)`` or ``(top, bottom, left, right)`` as a 4-tuple."""
    if isinstance(pad, int) and not isinstance(pad, bool):
        return (pad,) * 4
    pad = tuple(int(p) for p in pad)
    if len(pad) == 2:
        return (pad[0], pad[0], pad[1], pad[1])
    if len(pad) != 4:
        raise ValueError("'pad' must be an int or a tuple of 2 or 4 ints, but got %r" % (pad,))
    return pad


def _check_pad_mode(pad_mode, pad, allowed, who):
    pad_mode = str(pad_mode).lower()
    if pad_mode not in allowed:
        raise ValueError("For '%s', pad_mode must be one of %s, but got %r"
                         % (who, ", ".join(repr(a) for a in allowed), pad_mode))
    if pad_mode != "pad" and any(pad):
        raise ValueError("For '%s', 'pad' must be zero when pad_mode is %r, but got %r"
                         % (who, pad_mode, pad))
    if any(p < 0 for p in pad):
        raise ValueError("For '%s', 'pad' must not be negative, but got %r" % (who, pad))
    return pad_mode


def _check_nchw(data_format, who):
    if data_format != "NCHW":
        raise NotImplementedError("For '%s', only data_format='NCHW' is supported, got %r"
                                  % (who, data_format))


# ------------------------------------------------------------------ activations
class ReLU(Primitive):
    """max(x, 0), elementwise."""
    linearity = "linear"
    elementwise = True
    formula = "dx = dout * (x > 0)"
    nondifferentiable = "x = 0 (subgradient 0 is used)"

    def __init__(self):
        super().__init__()

    def emit(self, x):
        return "xp.maximum(%s, 0)" % x


class ReLU6(Primitive):
    """min(max(x, 0), 6), elementwise."""
    linearity = "linear"
    elementwise = True
    formula = "dx = dout * (0 < x < 6)"
    nondifferentiable = "x = 0 and x = 6 (subgradient 0 is used)"

    def __init__(self):
        super().__init__()

    def emit(self, x):
        return "rt.nn_relu6(%s)" % x


class LeakyReLU(Primitive):
    """x for x > 0, alpha * x otherwise."""
    linearity = "linear"
    elementwise = True
    formula = "dx = dout * (1 if x > 0 else alpha)"
    nondifferentiable = "x = 0 (the slope alpha is used)"

    def __init__(self, alpha=0.2):
        super().__init__(alpha=float(alpha))

    def emit(self, x):
        return "rt.nn_leaky_relu(%s, %r)" % (x, self.alpha)


class ELU(Primitive):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    rounded = True
    taylor = "nested"   # no series rule written
    elementwise = True
    formula = "dx = dout * (1 if x > 0 else out + alpha)"
    nondifferentiable = "x = 0 unless alpha = 1 (the left derivative alpha is used)"

    def __init__(self, alpha=1.0):
        super().__init__(alpha=float(alpha))

    def emit(self, x):
        return "rt.nn_elu(%s, %r)" % (x, self.alpha)


Elu = ELU


class GeLU(Primitive):
    """Gaussian error linear unit: x * Phi(x), exact (``'none'``) or tanh-approximated.

    MindSpore's primitive is the tanh approximation, hence the default;
    ``ops.gelu`` defaults to the exact erf form.
    """
    rounded = True
    taylor = "nested"   # no series rule written
    elementwise = True
    formula = "dx = dout * (Phi(x) + x * phi(x)) (derivative of the tanh form for 'tanh')"

    def __init__(self, approximate="tanh"):
        if approximate not in ("none", "tanh"):
            raise ValueError("For 'GeLU', approximate must be 'none' or 'tanh', but got %r"
                             % (approximate,))
        super().__init__(approximate=approximate)

    def emit(self, x):
        return "rt.nn_gelu(%s, %r)" % (x, self.approximate)


GELU = GeLU


class GeLUGrad(Primitive):
    """dy * gelu'(x): GeLU's input gradient, a primitive so it can be differentiated again."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "d_dy = dout * gelu'(x); dx = dout * dy * gelu''(x)"

    def __init__(self, approximate="tanh"):
        super().__init__(approximate=approximate)

    def emit(self, dy, x):
        return "rt.nn_gelu_grad(%s, %s, %r)" % (dy, x, self.approximate)


class Sigmoid(Primitive):
    """1 / (1 + exp(-x)), without overflow for either sign."""
    rounded = True
    elementwise = True
    formula = "dx = dout * out * (1 - out)"

    def __init__(self):
        super().__init__()

    def emit(self, x):
        return "rt.nn_sigmoid(%s)" % x


class Softplus(Primitive):
    """log(1 + exp(x)), without overflow."""
    rounded = True
    taylor = "nested"   # no series rule written
    elementwise = True
    formula = "dx = dout * sigmoid(x)"

    def __init__(self):
        super().__init__()

    def emit(self, x):
        return "rt.nn_softplus(%s)" % x


def _axis_attr(axis):
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) for a in axis)
    return None if axis is None else int(axis)


class Softmax(Primitive):
    """exp(x) / sum(exp(x)) over ``axis`` (an int or a tuple of ints)."""
    taylor = "nested"   # no series rule written
    formula = "dx = out * (dout - sum(dout * out, axis))"

    def __init__(self, axis=-1):
        super().__init__(axis=_axis_attr(axis))

    def emit(self, x):
        return "rt.nn_softmax(%s, %r)" % (x, self.axis)


class LogSoftmax(Primitive):
    """x - log(sum(exp(x))) over ``axis``."""
    taylor = "nested"   # no series rule written
    formula = "dx = dout - exp(out) * sum(dout, axis)"

    def __init__(self, axis=-1):
        super().__init__(axis=_axis_attr(axis))

    def emit(self, x):
        return "rt.nn_log_softmax(%s, %r)" % (x, self.axis)


# ----------------------------------------------------------------------- losses
class SoftmaxCrossEntropyWithLogits(Primitive):
    """(loss [N], backprop [N, C]) of softmax cross entropy over the last axis.

    ``loss = -sum(labels * log_softmax(logits))`` and ``backprop = softmax(logits)
    - labels``, as in MindSpore.  Both outputs carry gradients: the logits'
    gradient from ``loss`` is ``dloss * (sum(labels) * softmax - labels)``, which
    is MindSpore's ``dloss * backprop`` when each label row sums to 1 and stays
    exact (also for higher derivatives) when it does not.
    """
    taylor = "nested"   # no series rule written
    num_outputs = 2
    formula = ("dlogits = dloss * backprop (labels summing to 1) + softmax-vjp(dbackprop); "
               "dlabels = -dloss * log_softmax(logits) - dbackprop")

    def __init__(self):
        super().__init__()

    def emit(self, logits, labels):
        return "rt.nn_softmax_cross_entropy(%s, %s)" % (logits, labels)


class SparseSoftmaxCrossEntropyWithLogits(Primitive):
    """Mean softmax cross entropy of logits [N, C] for integer labels [N].

    With ``is_grad=True`` it returns the loss's gradient with respect to the
    logits, ``(softmax(logits) - one_hot(labels)) / N``, as in MindSpore.
    Labels get no gradient.
    """
    taylor = "nested"   # no series rule written
    formula = "dlogits = dout * (softmax(logits) - one_hot(labels)) / N"

    def __init__(self, is_grad=False):
        super().__init__(is_grad=bool(is_grad))

    def emit(self, logits, labels):
        return "rt.nn_sparse_softmax_cross_entropy(%s, %s, %r)" % (logits, labels, self.is_grad)


# ---------------------------------------------------------------- bias, layouts
class BiasAdd(Primitive):
    """x + bias, the 1-D bias added along the channel axis (1, or last for NHWC)."""
    linearity = "linear"
    formula = "dx = dout; dbias = sum of dout over every axis but the channel axis"

    def __init__(self, data_format="NCHW"):
        if data_format not in ("NCHW", "NHWC", "NCDHW"):
            raise ValueError("For 'BiasAdd', data_format must be 'NCHW', 'NHWC' or 'NCDHW', "
                             "but got %r" % (data_format,))
        super().__init__(data_format=data_format)

    @property
    def channel_axis(self):
        return -1 if self.data_format == "NHWC" else 1

    def emit(self, x, bias):
        return "rt.nn_bias_add(%s, %s, %r)" % (x, bias, self.data_format)


class NormAxes(Primitive):
    """The axes ``begin_axis..ndim-1`` of x, without ``channel_axis`` (no gradient).

    Normalisation and bias rules reduce over axes that depend on the input's
    rank, which compiled code only learns at run time.
    """
    differentiable = False

    def __init__(self, begin_axis=0, channel_axis=None):
        super().__init__(begin_axis=int(begin_axis),
                         channel_axis=None if channel_axis is None else int(channel_axis))

    def emit(self, x):
        return "rt.nn_norm_axes(%s, %r, %r)" % (x, self.begin_axis, self.channel_axis)


# ------------------------------------------------------------------ convolution
class _ConvBase(Primitive):
    """Shared attributes of Conv2D and its two gradient primitives."""

    def __init__(self, out_channel, kernel_size, mode=1, pad_mode="valid", pad=0, stride=1,
                 dilation=1, group=1, data_format="NCHW"):
        who = type(self).__name__
        if int(group) != 1:
            raise NotImplementedError(
                "For '%s', group=%d (grouped or depthwise convolution) is not supported yet; "
                "only group=1 is" % (who, group))
        if int(mode) != 1:
            raise ValueError("For '%s', mode must be 1 (cross-correlation), but got %r"
                             % (who, mode))
        _check_nchw(data_format, who)
        pad = _pad4(pad)
        pad_mode = _check_pad_mode(pad_mode, pad, ("valid", "same", "pad"), who)
        stride = _pair(stride, "stride")
        dilation = _pair(dilation, "dilation")
        if min(stride) < 1 or min(dilation) < 1:
            raise ValueError("For '%s', stride and dilation must be positive, but got %r and %r"
                             % (who, stride, dilation))
        super().__init__(out_channel=None if out_channel is None else int(out_channel),
                         kernel_size=_pair(kernel_size, "kernel_size"), mode=1,
                         pad_mode=pad_mode, pad=pad, stride=stride, dilation=dilation, group=1,
                         data_format=data_format)

    def _geometry(self):
        return "%r, %r, %r, %r" % (self.stride, self.pad_mode, self.pad, self.dilation)

    def conv_attrs(self):
        """Keyword arguments rebuilding any of the three conv primitives with these attributes."""
        return dict(out_channel=self.out_channel, kernel_size=self.kernel_size,
                    pad_mode=self.pad_mode, pad=self.pad, stride=self.stride,
                    dilation=self.dilation)


class Conv2D(_ConvBase):
    """2-D convolution (cross-correlation) of NCHW x [N, C, H, W] with weight [O, C, kh, kw].

    ``pad_mode`` is ``'valid'`` (no padding), ``'same'`` (output size
    ceil(H / stride), the extra row/column at the end) or ``'pad'`` (``pad`` =
    int or (top, bottom, left, right)).  ``out_channel`` and ``kernel_size``
    may be ``None`` to take them from the weight.
    """
    linearity = "bilinear"
    formula = ("dx = Conv2DBackpropInput(dout, w, shape(x)); "
               "dw = Conv2DBackpropFilter(dout, x, shape(w))")

    def emit(self, x, w):
        return "rt.nn_conv2d(%s, %s, %s, %r)" % (x, w, self._geometry(), self.kernel_size)


class Conv2DBackpropInput(_ConvBase):
    """Gradient of Conv2D with respect to its input: (dout, weight, input_size) -> dx.

    Linear in dout and in the weight (a transposed convolution).
    """
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = ("d_dout = Conv2D(ddx, w); dw = Conv2DBackpropFilter(dout, ddx, shape(w))")

    def __init__(self, out_channel, kernel_size, pad_mode="valid", pad=0, pad_list=None, mode=1,
                 stride=1, dilation=1, group=1, data_format="NCHW"):
        if pad_list is not None and any(pad_list):
            pad = pad_list
        super().__init__(out_channel, kernel_size, mode=mode, pad_mode=pad_mode, pad=pad,
                         stride=stride, dilation=dilation, group=group, data_format=data_format)

    def emit(self, dout, w, input_size):
        return "rt.nn_conv2d_backprop_input(%s, %s, %s, %s)" % (
            dout, w, input_size, self._geometry())


class Conv2DBackpropFilter(_ConvBase):
    """Gradient of Conv2D with respect to its weight: (dout, x, filter_size) -> dw.

    Linear in dout and in x.
    """
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = ("d_dout = Conv2D(x, ddw); dx = Conv2DBackpropInput(dout, ddw, shape(x))")

    def __init__(self, out_channel, kernel_size, pad_mode="valid", pad=0, pad_list=None, mode=1,
                 stride=1, dilation=1, group=1, data_format="NCHW"):
        if pad_list is not None and any(pad_list):
            pad = pad_list
        super().__init__(out_channel, kernel_size, mode=mode, pad_mode=pad_mode, pad=pad,
                         stride=stride, dilation=dilation, group=group, data_format=data_format)

    def emit(self, dout, x, filter_size):
        return "rt.nn_conv2d_backprop_filter(%s, %s, %s, %s)" % (
            dout, x, filter_size, self._geometry())


# ---------------------------------------------------------------------- pooling
class _PoolBase(Primitive):
    """Shared attributes of the pooling primitives.

    Besides MindSpore's ``'valid'`` and ``'same'``, ``pad_mode='pad'`` with
    ``pad`` (int, (ph, pw) or (top, bottom, left, right)) serves the functional
    forms' explicit ``padding``.
    """
    _avg = False

    def __init__(self, kernel_size=1, strides=1, pad_mode="valid", data_format="NCHW", pad=0,
                 count_include_pad=False):
        who = type(self).__name__
        _check_nchw(data_format, who)
        pad = _pad4(pad)
        pad_mode = _check_pad_mode(pad_mode, pad, ("valid", "same", "pad"), who)
        kernel_size = _pair(kernel_size, "kernel_size")
        strides = _pair(strides, "strides")
        if min(kernel_size) < 1 or min(strides) < 1:
            raise ValueError("For '%s', kernel_size and strides must be positive, but got %r "
                             "and %r" % (who, kernel_size, strides))
        if pad[0] + pad[1] >= kernel_size[0] * 2 or pad[2] + pad[3] >= kernel_size[1] * 2:
            raise ValueError("For '%s', padding %r is too large for kernel %r"
                             % (who, pad, kernel_size))
        attrs = dict(kernel_size=kernel_size, strides=strides, pad_mode=pad_mode,
                     data_format=data_format, pad=pad)
        if self._avg:
            attrs["count_include_pad"] = bool(count_include_pad)
        super().__init__(**attrs)

    def _geometry(self):
        text = "%r, %r, %r, %r" % (self.kernel_size, self.strides, self.pad_mode, self.pad)
        if self._avg:
            text += ", %r" % self.count_include_pad
        return text

    def pool_attrs(self):
        """Keyword arguments rebuilding a pooling primitive with these attributes."""
        attrs = dict(kernel_size=self.kernel_size, strides=self.strides,
                     pad_mode=self.pad_mode, pad=self.pad)
        if self._avg:
            attrs["count_include_pad"] = self.count_include_pad
        return attrs


class MaxPool(_PoolBase):
    """Max over each kernel window of NCHW x; padding never wins."""
    linearity = "linear"
    formula = "dx = MaxPoolGrad(x, out, dout) (dout routed to each window's maximum)"
    nondifferentiable = "ties inside a window (the first maximum gets the gradient)"

    def __init__(self, kernel_size=1, strides=1, pad_mode="valid", data_format="NCHW", pad=0):
        super().__init__(kernel_size, strides, pad_mode, data_format, pad)

    def emit(self, x):
        return "rt.nn_max_pool(%s, %s)" % (x, self._geometry())


class MaxPoolGrad(_PoolBase):
    """(x, out, dout) -> zeros like x with each window's dout added at its maximum."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "d_dout = MaxPoolGradGrad(x, out, ddx); no gradient to x or out"
    nondifferentiable = "ties inside a window of x (the argmax is locally constant elsewhere)"

    def __init__(self, kernel_size=1, strides=1, pad_mode="valid", data_format="NCHW", pad=0):
        super().__init__(kernel_size, strides, pad_mode, data_format, pad)

    def emit(self, x, out, dout):
        return "rt.nn_max_pool_grad(%s, %s, %s, %s)" % (x, out, dout, self._geometry())


class MaxPoolGradGrad(_PoolBase):
    """(x, out, g) -> g read at the maximum of each window of x: MaxPool's tangent map."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    formula = "d_g = MaxPoolGrad(x, out, dout); no gradient to x or out"
    nondifferentiable = "ties inside a window of x"

    def __init__(self, kernel_size=1, strides=1, pad_mode="valid", data_format="NCHW", pad=0):
        super().__init__(kernel_size, strides, pad_mode, data_format, pad)

    def emit(self, x, out, grad):
        return "rt.nn_max_pool_grad_grad(%s, %s, %s, %s)" % (x, out, grad, self._geometry())


class AvgPool(_PoolBase):
    """Mean over each kernel window of NCHW x.

    Padding does not count towards a window's size (as TensorFlow's and
    MindSpore's 'same') unless ``count_include_pad`` (used by ``ops.avg_pool2d``).
    """
    linearity = "linear"
    _avg = True
    formula = "dx = AvgPoolGrad(x, out, dout) (dout / window size spread over each window)"

    def emit(self, x):
        return "rt.nn_avg_pool(%s, %s)" % (x, self._geometry())


class AvgPoolGrad(_PoolBase):
    """(x, out, dout) -> each window's dout / window size spread over x's shape (linear)."""
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    _avg = True
    formula = "d_dout = AvgPool(ddx); no gradient to x or out"

    def emit(self, x, out, dout):
        return "rt.nn_avg_pool_grad(%s, %s, %s, %s)" % (x, out, dout, self._geometry())


# ------------------------------------------------------- dropout, normalisation
class Dropout(Primitive):
    """(x * mask / keep_prob, mask) with a random Bernoulli(keep_prob) mask.

    The mask (same shape and dtype as x) comes from ``s2sad.runtime.rt_nn``'s
    generator; ``s2sad.runtime.rt_nn.set_seed`` makes runs reproducible.  The mask output
    carries no gradient.
    """
    taylor = "nested"   # random: Taylor mode takes no stateful op
    num_outputs = 2
    stateful = True
    formula = "dx = dout * mask / keep_prob"

    def __init__(self, keep_prob=0.5, Seed0=0, Seed1=0):
        keep_prob = float(keep_prob)
        if not 0.0 < keep_prob <= 1.0:
            raise ValueError("For 'Dropout', keep_prob must be in (0, 1], but got %r"
                             % keep_prob)
        super().__init__(keep_prob=keep_prob, Seed0=int(Seed0), Seed1=int(Seed1))

    def emit(self, x):
        return "rt.nn_dropout(%s, %r)" % (x, self.keep_prob)


class LayerNorm(Primitive):
    """(y, mean, variance): x normalised over axes begin_norm_axis.., then * gamma + beta.

    gamma and beta have the shape ``x.shape[begin_params_axis:]`` (they
    broadcast from the right); mean and variance keep the normalised axes as
    size-1 dims, as in MindSpore.  All three outputs carry gradients.
    """
    taylor = "nested"   # no series rule written
    num_outputs = 3
    formula = ("dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma; "
               "dgamma = sum(dy * xhat); dbeta = sum(dy)")

    def __init__(self, begin_norm_axis=1, begin_params_axis=1, epsilon=1e-7):
        super().__init__(begin_norm_axis=int(begin_norm_axis),
                         begin_params_axis=int(begin_params_axis), epsilon=float(epsilon))

    def emit(self, x, gamma, beta):
        return "rt.nn_layer_norm(%s, %s, %s, %r, %r)" % (
            x, gamma, beta, self.begin_norm_axis, self.epsilon)


class BatchNorm(Primitive):
    """Batch normalisation over every axis but the channel axis 1 (x is [N, C] or NCHW).

    Inputs (x, scale, bias, mean, variance), all but x of shape [C]. Outputs
    follow MindSpore's five: (y, batch_mean, batch_variance, reserve_space_1,
    reserve_space_2), where the reserve spaces hold the updated moving mean and
    moving variance, ``(1 - momentum) * old + momentum * batch`` (unbiased batch
    variance): compiled code never updates its inputs in place, so the caller
    assigns these.  In training mode y uses the batch statistics (biased
    variance); with ``is_training=False`` it uses ``mean`` and ``variance``, which
    the other outputs return unchanged.  Every output carries gradients.
    """
    taylor = "nested"   # no series rule written
    num_outputs = 5
    formula = ("training: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * scale; "
               "dscale = sum(dy * xhat); dbias = sum(dy)")

    def __init__(self, is_training=False, epsilon=1e-5, momentum=0.1, data_format="NCHW"):
        _check_nchw(data_format, "BatchNorm")
        super().__init__(is_training=bool(is_training), epsilon=float(epsilon),
                         momentum=float(momentum), data_format=data_format)

    def emit(self, x, scale, bias, mean, variance):
        return "rt.nn_batch_norm(%s, %s, %s, %s, %s, %r, %r, %r)" % (
            x, scale, bias, mean, variance, self.is_training, self.epsilon, self.momentum)


__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and isinstance(_v, type) and issubclass(_v, Primitive)
           and _v is not Primitive]
