"""Conv1d (NCL), Conv2d and Conv2dTranspose (NCHW)."""
from ... import ops
from ... import dtype as mstype
from ...common.initializer import initializer
from ...tensor import Parameter
from ..cell import Cell

__all__ = ["Conv1d", "Conv2d", "Conv2dTranspose"]


def _pair(value, name):
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError("For 'Conv2d', '%s' must be an int or a tuple of two ints, but got %r"
                         % (name, value))
    return value


def _set_up(cell, in_channels, out_channels, kernel_size, stride, dilation, pad_mode, padding,
            group, has_bias):
    """The attributes Conv2d and Conv2dTranspose share."""
    cell.in_channels = in_channels
    cell.out_channels = out_channels
    cell.kernel_size = _pair(kernel_size, "kernel_size")
    cell.stride = _pair(stride, "stride")
    cell.dilation = _pair(dilation, "dilation")
    cell.pad_mode = pad_mode
    cell.padding = padding
    cell.group = group
    cell.has_bias = bool(has_bias)


def _add_bias(cell, bias_init, dtype):
    """The bias ``[out_channels]``, made after the weight (Parameter order, random draws)."""
    if cell.has_bias:
        cell.bias = Parameter(initializer(bias_init, [cell.out_channels], dtype), name="bias")
        cell.bias_add = ops.BiasAdd()


class Conv2d(Cell):
    """2-D convolution of ``x`` [N, C_in, H, W] with ``weight`` [C_out, C_in, kh, kw].

    ``pad_mode``: ``'same'`` (output H / stride, MindSpore's default),
    ``'valid'`` (no padding) or ``'pad'`` (``padding`` = int or (top, bottom,
    left, right)).  ``group`` must be 1.  ``has_bias`` defaults to False as in
    MindSpore.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init="normal",
                 bias_init="zeros", data_format="NCHW", dtype=mstype.float32):
        super().__init__()
        _set_up(self, in_channels, out_channels, kernel_size, stride, dilation, pad_mode,
                padding, group, has_bias)
        if in_channels % group or out_channels % group:
            raise ValueError("For 'Conv2d', in_channels and out_channels must be divisible by "
                             "group, but got %d, %d and %d" % (in_channels, out_channels, group))
        self.conv2d = ops.Conv2D(out_channel=out_channels, kernel_size=self.kernel_size, mode=1,
                                 pad_mode=pad_mode, pad=padding, stride=self.stride,
                                 dilation=self.dilation, group=group, data_format=data_format)
        shape = [out_channels, in_channels // group] + list(self.kernel_size)
        self.weight = Parameter(initializer(weight_init, shape, dtype), name="weight")
        _add_bias(self, bias_init, dtype)

    def construct(self, x):
        output = self.conv2d(x, self.weight)
        if self.has_bias:
            output = self.bias_add(output, self.bias)
        return output

    def extend_repr(self):
        return ("input_channels={}, output_channels={}, kernel_size={}, stride={}, "
                "pad_mode={}, padding={}, dilation={}, group={}, has_bias={}".format(
                    self.in_channels, self.out_channels, self.kernel_size, self.stride,
                    self.pad_mode, self.padding, self.dilation, self.group, self.has_bias))


def _check_int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError("For 'Conv1d', '%s' must be an int >= %d, but got %r"
                         % (name, minimum, value))
    return value


class Conv1d(Cell):
    """1-D convolution of ``x`` [N, C_in, L] with ``weight`` [C_out, C_in / group, kernel_size].

    Computed as a Conv2D over [N, C_in, 1, L] (so it shares Conv2d's rules).
    ``pad_mode`` is ``'same'`` (MindSpore's default), ``'valid'`` or
    ``'pad'`` (``padding`` zeros on both ends); ``padding`` must be 0 unless
    ``pad_mode='pad'``.  ``group`` must be 1, as for Conv2d.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init="normal",
                 bias_init="zeros", dtype=mstype.float32):
        super().__init__()
        self.in_channels = _check_int(in_channels, "in_channels", 1)
        self.out_channels = _check_int(out_channels, "out_channels", 1)
        self.kernel_size = _check_int(kernel_size, "kernel_size", 1)
        self.stride = _check_int(stride, "stride", 1)
        self.dilation = _check_int(dilation, "dilation", 1)
        self.padding = _check_int(padding, "padding", 0)
        self.group = _check_int(group, "group", 1)
        if pad_mode not in ("same", "valid", "pad"):
            raise ValueError("For 'Conv1d', 'pad_mode' must be 'same', 'valid' or 'pad', but got "
                             "%r" % (pad_mode,))
        if padding and pad_mode != "pad":
            raise ValueError("For 'Conv1d', 'padding' must be 0 when 'pad_mode' is %r, but got "
                             "%d" % (pad_mode, padding))
        if in_channels % group or out_channels % group:
            raise ValueError("For 'Conv1d', in_channels and out_channels must be divisible by "
                             "group, but got %d, %d and %d" % (in_channels, out_channels, group))
        if group != 1:
            raise NotImplementedError("For 'Conv1d', group=%d (grouped or depthwise convolution) "
                                      "is not supported yet; only group=1 is" % group)
        self.pad_mode = pad_mode
        self.has_bias = bool(has_bias)
        self.conv2d = ops.Conv2D(out_channel=out_channels, kernel_size=(1, kernel_size), mode=1,
                                 pad_mode=pad_mode, pad=(0, 0, padding, padding),
                                 stride=(1, stride), dilation=(1, dilation), group=group)
        shape = [out_channels, in_channels // group, kernel_size]
        self.weight = Parameter(initializer(weight_init, shape, dtype), name="weight")
        if self.has_bias:
            self.bias = Parameter(initializer(bias_init, [out_channels], dtype), name="bias")
            self.bias_add = ops.BiasAdd()

    def construct(self, x):
        output = self.conv2d(ops.expand_dims(x, 2), ops.expand_dims(self.weight, 2))
        output = ops.squeeze(output, 2)
        if self.has_bias:
            output = self.bias_add(output, self.bias)
        return output

    def extend_repr(self):
        return ("input_channels={}, output_channels={}, kernel_size={}, stride={}, "
                "pad_mode={}, padding={}, dilation={}, group={}, has_bias={}".format(
                    self.in_channels, self.out_channels, self.kernel_size, self.stride,
                    self.pad_mode, self.padding, self.dilation, self.group, self.has_bias))


class Conv2dTranspose(Cell):
    """Transposed 2-D convolution of ``x`` [N, C_in, H, W] with ``weight`` [C_in, C_out, kh, kw].

    The adjoint of Conv2d with the same geometry (``Conv2DBackpropInput``), so
    Conv2d's rules differentiate it.  Output height: ``H * stride`` for
    ``'same'`` (the default), ``(H - 1) * stride + dilation * (kh - 1) + 1``
    for ``'valid'``, and that less ``top + bottom`` padding plus
    ``output_padding`` for ``'pad'`` (the extra rows get only the bias).
    ``group`` must be 1.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, output_padding=0, dilation=1, group=1, has_bias=False,
                 weight_init="normal", bias_init="zeros", dtype=mstype.float32):
        super().__init__()
        _set_up(self, in_channels, out_channels, kernel_size, stride, dilation, pad_mode,
                padding, group, has_bias)
        self.output_padding = _pair(output_padding, "output_padding")
        if any(self.output_padding) and pad_mode != "pad":
            raise ValueError("For 'Conv2dTranspose', 'output_padding' must be 0 unless "
                             "'pad_mode' is 'pad', but got %r" % (output_padding,))
        if any(p >= max(s, d) for p, s, d in zip(self.output_padding, self.stride,
                                                  self.dilation)):
            raise ValueError("For 'Conv2dTranspose', 'output_padding' must be smaller than "
                             "'stride' or 'dilation', but got %r" % (output_padding,))
        # the Conv2d whose input gradient this layer is: [C_out, ...] -> [C_in, ...]
        self.conv2d_transpose = ops.Conv2DBackpropInput(
            out_channel=in_channels, kernel_size=self.kernel_size, pad_mode=pad_mode,
            pad=padding, stride=self.stride, dilation=self.dilation, group=group)
        pads = self.conv2d_transpose.pad
        self.shrink = (pads[0] + pads[1], pads[2] + pads[3]) if pad_mode == "pad" else (0, 0)
        shape = [in_channels, out_channels // group] + list(self.kernel_size)
        self.weight = Parameter(initializer(weight_init, shape, dtype), name="weight")
        _add_bias(self, bias_init, dtype)

    def _out_length(self, length, axis):
        if self.pad_mode == "same":
            return length * self.stride[axis]
        return ((length - 1) * self.stride[axis]
                + self.dilation[axis] * (self.kernel_size[axis] - 1) + 1
                - self.shrink[axis] + self.output_padding[axis])

    def construct(self, x):
        shape = ops.shape(x)
        size = (shape[0], self.out_channels, self._out_length(shape[2], 0),
                self._out_length(shape[3], 1))
        output = self.conv2d_transpose(x, self.weight, size)
        if self.has_bias:
            output = self.bias_add(output, self.bias)
        return output

    def extend_repr(self):
        return ("input_channels={}, output_channels={}, kernel_size={}, stride={}, "
                "pad_mode={}, padding={}, dilation={}, group={}, has_bias={}".format(
                    self.in_channels, self.out_channels, self.kernel_size, self.stride,
                    self.pad_mode, self.padding, self.dilation, self.group, self.has_bias))
