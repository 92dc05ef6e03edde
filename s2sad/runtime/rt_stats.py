"""Runtime helpers (``stats_*`` in ``rt``) for the elementwise and statistics primitives
of ``ops/operations/elementwise_ops.py``.

``scipy.special`` is imported only by the helpers that need it, when generated
code calls them: a program reaches them only if its own code used SciPy.
"""
import numpy as np

from .rt_math import _keep_dtype, _scipy_special


def stats_sinc_slope(x):
    """d/dx sinc(x) = (cos(pi x) - sinc(x)) / x, with its limit 0 at x = 0."""
    x = np.asarray(x)
    zero = x == 0
    safe = np.where(zero, np.ones_like(x), x)
    out = np.where(zero, np.zeros_like(x), (np.cos(np.pi * x) - np.sinc(x)) / safe)
    return out[()] if out.ndim == 0 else out


def stats_check_real(x, what):
    """``x`` itself when it is real; complex arrays need rules of their own."""
    if np.iscomplexobj(x):
        raise TypeError("%s: complex input is not supported by s2sad's rules; pass a real "
                        "array (or split it into real and imaginary parts yourself)" % what)
    return x


def check_float_output(value):
    """Raise unless ``value`` (an output no gradient flows into) is floating-point
    or complex: its derivative is not a zero, it is undefined."""
    kind = np.result_type(value).kind
    if kind not in "fc":
        raise TypeError("grad needs a floating-point output, but the function returned %s: "
                        "a comparison, a boolean or an integer has no gradient"
                        % np.result_type(value))


def scalar_output_problem(out):
    """Why ``out`` is not one value of one element (``"has shape [3]"``), or None."""
    if isinstance(out, tuple):
        return "is a tuple of %d outputs" % len(out)
    data = getattr(out, "_data", out)       # a Tensor's array
    if np.size(data) != 1:
        return "has shape %s" % list(np.shape(data))
    return None


def scalar_output_message(api, problem, alternative, what="its output"):
    """The error of ``api`` (``hessian``) given a function whose output ``problem``."""
    return ("For '%s', the function must return a scalar, but %s %s; reduce it first (for "
            "example return out.sum()) or use '%s' for the full Jacobian"
            % (api, what, problem, alternative))


def check_scalar_output(value, api, alternative):
    """Raise a ValueError unless ``value`` has one element: the output of a function
    ``api`` needs a scalar of (``hessian``), checked where it is computed."""
    problem = scalar_output_problem(value)
    if problem is not None:
        err = ValueError(scalar_output_message(api, problem, alternative))
        err.__s2sad_api_error__ = True      # about the call, not a line: no user-line note
        raise err


def check_real_output(value):
    """``value`` itself, unless it is complex: ``grad`` of a function with complex
    inputs needs a real-valued output, or ``holomorphic=True``."""
    if np.iscomplexobj(value):
        raise TypeError("grad of a function with complex inputs needs a real-valued output, "
                        "but got %s; for the complex derivative of a holomorphic function "
                        "pass holomorphic=True, or differentiate np.real or np.abs of the "
                        "output" % np.asarray(value).dtype)
    return value


def real_like(t, like):
    """``t``'s real part when ``like`` is real and ``t`` complex, else ``t``."""
    if np.iscomplexobj(t) and not np.iscomplexobj(like):
        return np.real(t)
    return t


def _order_weights(n, q, dtype):
    """(low index, high index, high weight) of NumPy's linear quantile method."""
    position = np.asarray(q, dtype=np.float64) * (n - 1)
    low = np.floor(position).astype(np.intp)
    high = np.minimum(low + 1, n - 1)
    return low, high, (position - low).astype(dtype)


def stats_quantile_weights(x, q, axis):
    """Weights ``w`` with ``sum(w * x, axis)`` the ``q`` quantiles of ``x``.

    ``axis=None``: over all elements (the weights keep x's shape).  A list
    ``q`` adds a leading axis of ``len(q)``.  Order statistics come from a
    stable argsort, so of tied elements the first gets the weight; NaN sorts
    last, and ``0 * nan`` makes the quantile NaN as NumPy's is.
    """
    x = np.asarray(x)
    # NumPy's result dtype: a list q is a float64 array, a Python float q is weak
    dtype = np.result_type(x.dtype if x.dtype.kind == "f" else np.float64,
                           np.asarray(q) if np.ndim(q) else q)
    flat = axis is None
    data = x.reshape(-1) if flat else np.moveaxis(x, axis, -1)
    n = data.shape[-1]
    if n == 0:
        raise ValueError("quantile of an empty axis")
    order = np.argsort(data, axis=-1, kind="stable")
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if np.any((qs < 0) | (qs > 1)):
        raise ValueError("quantiles must be in [0, 1] (percentiles in [0, 100]), got %r" % (q,))
    weights = np.zeros((len(qs),) + data.shape, dtype=dtype)
    for k, qk in enumerate(qs):
        low, high, frac = _order_weights(n, qk, dtype)
        lo = np.take(order, [low], axis=-1)
        hi = np.take(order, [high], axis=-1)
        np.put_along_axis(weights[k], lo, 1 - frac, axis=-1)
        slot = np.take_along_axis(weights[k], hi, axis=-1)
        np.put_along_axis(weights[k], hi, slot + frac, axis=-1)   # low == high adds up
    if flat:
        weights = weights.reshape((len(qs),) + x.shape)
    else:
        weights = np.moveaxis(weights, -1, axis + 1 if axis >= 0 else axis)
    return weights if np.ndim(q) else weights[0]


def stats_shape(a, w, kind, axis, what):
    """``'weights'``: the shape that lays ``np.average``'s weights ``w`` along
    ``axis`` of ``a`` (``w``'s own when the shapes match); ``'vector'``: ``a``'s
    shape, which must be 1-D."""
    shape = np.shape(a)
    if kind == "vector":
        if len(shape) != 1:
            raise ValueError("%s: a %d-d input needs axis= (s2sad compiles for every "
                             "rank at once, so the number of results cannot follow the "
                             "input's rank): axis=%r gives one result per axis"
                             % (what, len(shape), tuple(range(len(shape)))))
        return shape
    wshape = np.shape(w)
    if wshape == shape:
        return wshape
    if axis is None:
        raise TypeError("%s: axis must be specified when shapes of a and weights differ"
                        % what)
    if len(wshape) != 1 or not isinstance(axis, int):
        raise TypeError("%s: 1D weights expected when shapes of a and weights differ" % what)
    axis = axis % len(shape)
    if wshape[0] != shape[axis]:
        raise ValueError("%s: length of weights not compatible with specified axis" % what)
    return (1,) * axis + wshape + (1,) * (len(shape) - axis - 1)


def _special(what):
    special = _scipy_special()
    if special is None:
        raise ImportError("scipy.special.%s: SciPy is not installed (the program used "
                          "it; install scipy)" % what)
    return special


def stats_special(name, x):
    """``scipy.special.<name>(x)`` in x's floating dtype."""
    return _keep_dtype(getattr(_special(name), name)(x), x)


def stats_polygamma(n, x):
    """``scipy.special.polygamma(n, x)`` (``digamma`` for n = 0) in x's floating dtype."""
    special = _special("polygamma")
    if n == 0:
        return _keep_dtype(special.digamma(x), x)
    return _keep_dtype(special.polygamma(n, x), x)


def stats_xlogy(x, y):
    """``x * log(y)``, 0 where x == 0 (``scipy.special.xlogy``, computed with NumPy: the
    primitive also serves rules, which must not need SciPy)."""
    x, y = np.asarray(x), np.asarray(y)
    zero = x == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(zero, 0, x * np.log(np.where(zero, np.ones_like(y), y)))
    out = out.astype(np.result_type(x, y, np.float16), copy=False)
    return out[()] if out.ndim == 0 else out


def stats_xdivy(x, y):
    """``x / y``, 0 where x == 0 (the slope of xlogy in y)."""
    x, y = np.asarray(x), np.asarray(y)
    zero = x == 0
    out = np.where(zero, 0, x / np.where(zero, np.ones_like(y), y))
    return out[()] if out.ndim == 0 else out
