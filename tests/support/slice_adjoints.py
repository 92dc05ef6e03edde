"""The unoptimised adjoint of several slices of one array, for the slice-adjoint tests."""
import numpy as np

from s2sad import runtime as rt


def summed_getitem_grads(x_shape, slices, parts, axis):
    """The sum of the separate ``getitem_grad`` arrays, one per slice at ``axis``."""
    lead = (slice(None),) * axis
    out = 0
    for s, d in zip(slices, parts):
        out = out + rt.getitem_grad(d, np.empty(x_shape), lead + (s,))
    return out
