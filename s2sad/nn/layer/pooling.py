"""MaxPool2d, AvgPool2d and AdaptiveAvgPool2d (NCHW)."""
from ... import ops
from ..cell import Cell

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"]

_cast_like = ops.CastLike()


class _Pool2d(Cell):
    _prim = None

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0,
                 data_format="NCHW"):
        super().__init__()
        pad_mode = str(pad_mode).lower()
        if pad_mode == "valid" and padding not in (0, (0, 0), (0, 0, 0, 0)):
            pad_mode = "pad"   # MindSpore 2.x: an explicit padding means pad_mode 'pad'
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad_mode = pad_mode
        self.padding = padding
        self.pool = type(self)._prim(kernel_size=kernel_size, strides=stride, pad_mode=pad_mode,
                                     data_format=data_format, pad=padding)

    def construct(self, x):
        return self.pool(x)

    def extend_repr(self):
        return "kernel_size={}, stride={}, pad_mode={}".format(
            self.kernel_size, self.stride, self.pad_mode)


class MaxPool2d(_Pool2d):
    """Maximum over each ``kernel_size`` window of ``x`` [N, C, H, W], moved by ``stride``."""
    _prim = ops.MaxPool


class AvgPool2d(_Pool2d):
    """Mean over each ``kernel_size`` window of ``x`` [N, C, H, W], moved by ``stride``."""
    _prim = ops.AvgPool


def _output_size(output_size):
    """``(out_h, out_w)`` from an int or a pair whose entries are ints >= 1 or ``None``."""
    pair = (output_size, output_size) if not isinstance(output_size, (tuple, list)) \
        else tuple(output_size)
    if len(pair) != 2 or not all(
            v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1)
            for v in pair):
        raise ValueError("For 'AdaptiveAvgPool2d', 'output_size' must be a positive int or a "
                         "tuple of two positive ints or None, but got %r" % (output_size,))
    return pair


def _bin_means(size, bins, like):
    """The [bins, size] matrix whose row i averages positions floor(i*size/bins) to
    ceil((i+1)*size/bins) - 1: the bins of adaptive average pooling.

    ``size`` is a runtime length, so the matrix is built at run time (it
    carries no gradient); when ``bins`` divides ``size`` the rows are the
    windows of an AvgPool with kernel = stride = size // bins.
    """
    positions = ops.arange(size)
    index = ops.expand_dims(ops.arange(bins), 1)
    start = (index * size) // bins
    end = ((index + 1) * size + bins - 1) // bins
    inside = ops.logical_and(positions >= start, positions < end)
    return _cast_like(inside, like) / _cast_like(end - start, like)


class AdaptiveAvgPool2d(Cell):
    """Average pooling of ``x`` [N, C, H, W] (or [C, H, W]) to ``output_size`` [out_h, out_w].

    Output cell (i, j) averages rows floor(i*H/out_h) .. ceil((i+1)*H/out_h) - 1
    and the matching columns, so H need not be a multiple of out_h (bins then
    overlap by a row, as in MindSpore).  ``None`` keeps that axis' size;
    ``output_size=1`` is the global average.
    """

    def __init__(self, output_size):
        super().__init__()
        self.output_size = _output_size(output_size)
        self.out_h, self.out_w = self.output_size
        self.is_global = self.output_size == (1, 1)

    def construct(self, x):
        if self.is_global:
            return ops.mean(x, (-2, -1), True)
        if self.out_h is not None:
            x = ops.matmul(_bin_means(ops.shape(x)[-2], self.out_h, x), x)
        if self.out_w is not None:
            x = ops.matmul(x, ops.swapaxes(_bin_means(ops.shape(x)[-1], self.out_w, x), 0, 1))
        return x

    def extend_repr(self):
        return "output_size={}".format(self.output_size)
