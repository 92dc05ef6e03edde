"""MaxPool2d and AvgPool2d (NCHW)."""
from ... import ops
from ..cell import Cell

__all__ = ["MaxPool2d", "AvgPool2d"]


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
