"""The forward value of a differentiated program, checked against NumPy's own."""
import numpy as np

import s2sad


def check_value_and_dtype(fn, x):
    """``fn``'s value through ``s2sad.jvp`` equals NumPy's, with its dtype, in float64
    and float32."""
    for arg in (x, x.astype(np.float32)):
        got, _ = s2sad.jvp(fn, (arg,), (np.ones_like(arg),))
        want = fn(arg)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
