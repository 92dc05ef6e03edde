"""Statistics (``var``, ``std``, ``average``, ``median``, ``quantile``, ``ptp``,
``cumprod``, ``diff``, ``gradient``, ``nansum``/``nanmean``) and the
``scipy.special`` basics: reverse and forward mode against float64 central
differences, second order, ``axis``/``keepdims`` variants, and values and
dtypes against NumPy's (and SciPy's) own.
"""
import sys

import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError
from s2sad.ops.composite import GradOperation

from gradcheck import check_jvp, check_vjp

RNG = np.random.default_rng(7)
X = RNG.permutation(12).reshape(3, 4) * 0.31 + 0.2 + RNG.uniform(0, 0.05, (3, 4))  # no ties
CUBE = RNG.standard_normal((2, 3, 4))
W_ROW = RNG.uniform(0.5, 1.5, (4,))
W_FULL = RNG.uniform(0.5, 1.5, (3, 4))


def f_var_std(x):
    return (np.var(x, axis=1, ddof=1) + np.std(x, axis=0, keepdims=True).sum(axis=0)[:3]
            + np.var(x) + np.std(x, ddof=1))


def f_var_methods(x):
    return x.var(ddof=1) + x.std(axis=0).sum() + x.var(axis=1, keepdims=True).sum()


def f_average_row_weights(x, w):
    return np.average(x, axis=1, weights=w)


def f_average_full_weights(x, w):
    return np.average(x, axis=0, weights=w, keepdims=True)


def f_average_plain(x):
    return np.average(x) + np.average(x, axis=0)


def f_average_returned(x, w):
    avg, total = np.average(x, axis=-1, weights=w, returned=True)
    return avg * total


def f_median(x):
    return np.median(x, axis=1) + np.median(x) + np.median(x, axis=1, keepdims=True)[:, 0]


def f_median_even(x):
    return np.median(x, axis=0)


def f_quantile(x):
    return np.quantile(x, [0.1, 0.5, 0.85], axis=1)


def f_quantile_keepdims(x):
    return np.quantile(x, 0.3, axis=0, keepdims=True) + np.quantile(x, 0.7, keepdims=True)


def f_percentile(x):
    return np.percentile(x, 40, axis=-1) + np.percentile(x, [25, 75]).sum()


def f_ptp(x):
    return np.ptp(x, axis=1) + np.ptp(x)


def f_cumprod(x):
    return np.cumprod(x, axis=1) + np.cumprod(x, axis=0)


def f_cumprod_flat(x):
    return np.cumprod(x) * 2.0


def f_cumprod_method(x):
    return x.cumprod(axis=-1)


def f_diff(x):
    return np.diff(x) + np.diff(x, n=2, axis=0).sum()


def f_diff_cube(x):
    return np.diff(x, n=2, axis=1)


def f_gradient_1d(x):
    return np.gradient(x[0]) + np.gradient(x[1], 0.5)


def f_gradient_axes(x):
    d0, d1 = np.gradient(x, 0.5, 2.0, axis=(0, 1))
    return d0 * d1 + np.gradient(x, axis=-1)


def f_nan_sums(x):
    return np.nansum(x, axis=0) + np.nanmean(x, axis=0) + np.nanmean(x)


CASES = [
    ("var_std", f_var_std, (X,)),
    ("var_methods", f_var_methods, (X,)),
    ("average_row_weights", f_average_row_weights, (X, W_ROW)),
    ("average_full_weights", f_average_full_weights, (X, W_FULL)),
    ("average_plain", f_average_plain, (X,)),
    ("average_returned", f_average_returned, (X, W_ROW)),
    ("median", f_median, (X,)),
    ("median_even", f_median_even, (X[:2],)),
    ("quantile", f_quantile, (X,)),
    ("quantile_keepdims", f_quantile_keepdims, (X,)),
    ("percentile", f_percentile, (X,)),
    ("ptp", f_ptp, (X,)),
    ("cumprod", f_cumprod, (X,)),
    ("cumprod_flat", f_cumprod_flat, (X,)),
    ("cumprod_method", f_cumprod_method, (s2sad.Tensor(X),)),
    ("diff", f_diff, (X,)),
    ("diff_cube", f_diff_cube, (CUBE,)),
    ("gradient_1d", f_gradient_1d, (X,)),
    ("gradient_axes", f_gradient_axes, (X,)),
    ("nan_sums", f_nan_sums, (X,)),
]


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_reverse_mode_against_finite_differences(name, fn, args):
    check_vjp(fn, args)


@pytest.mark.parametrize("name,fn,args", [c for c in CASES if c[0] != "cumprod_method"],
                         ids=[c[0] for c in CASES if c[0] != "cumprod_method"])
def test_forward_mode_against_finite_differences(name, fn, args):
    check_jvp(fn, args)


SECOND_ORDER = ["var_std", "average_row_weights", "median", "quantile", "cumprod", "diff",
                "gradient_axes", "nan_sums"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_reverse_and_forward_over_reverse(name):
    fn, args = {c[0]: (c[1], c[2]) for c in CASES}[name]
    assert s2sad.check_grads(fn, args, order=2) < 1e-5


# ------------------------------------------------------------------- cumprod
ZEROS = np.array([[0.5, 0.0, 2.0, 3.0],
                  [1.5, 2.0, -0.7, 0.0],
                  [0.0, 1.1, 1.3, -0.4]])


def sum_cumprod(x):
    return np.sum(np.cumprod(x, axis=1) * np.arange(1.0, 5.0))


def test_cumprod_gradient_with_zeros_is_exact_not_nan():
    got = GradOperation()(sum_cumprod)(ZEROS)
    assert np.isfinite(got).all()
    check_vjp(sum_cumprod, (ZEROS,))
    check_jvp(sum_cumprod, (ZEROS,))
    # two zeros, by hand: d/dx0 = 1 (only out_0 = x0 is not 0), d/dx1 = 2 * 2 + 3 * 2 * 3,
    # and every product with x2 or x3 in it also has the zero x1
    two = np.array([[2.0, 0.0, 3.0, 0.0]])
    np.testing.assert_array_equal(GradOperation()(sum_cumprod)(two), [[1.0, 22.0, 0.0, 0.0]])


def test_cumprod_second_order_with_one_zero_per_row():
    assert s2sad.check_grads(sum_cumprod, (ZEROS,), order=2) < 1e-5


# ------------------------------------------------------- ties and conventions
def sum_median(x):
    return np.median(x)


def sum_ptp(x):
    return np.ptp(x)


def test_median_of_ties_goes_to_the_middle_of_a_stable_sort():
    # sorted stably: 1 (0), 2 (1), 2 (2), 2 (4), 3 (3): the middle is element 2
    got = GradOperation()(sum_median)(np.array([1.0, 2.0, 2.0, 3.0, 2.0]))
    np.testing.assert_array_equal(got, [0.0, 0.0, 1.0, 0.0, 0.0])
    # an even count averages the two middle elements
    got = GradOperation()(sum_median)(np.array([4.0, 1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(got, [0.0, 0.0, 0.5, 0.5])


def test_ptp_ties_split_as_max_and_min_do():
    got = GradOperation()(sum_ptp)(np.array([1.0, 3.0, 3.0, 1.0]))
    np.testing.assert_array_equal(got, [-0.5, 0.5, 0.5, -0.5])


def median_nan(x):
    return np.median(x, axis=1)


def test_quantile_of_a_slice_with_nan_is_nan_as_numpy():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(s2sad.jit(median_nan)(x), np.median(x, axis=1))


def nan_mean(x):
    return np.nanmean(x) + np.nansum(x * 2.0)


def test_nan_elements_get_no_gradient():
    got = GradOperation()(nan_mean)(np.array([1.0, np.nan, 3.0]))
    np.testing.assert_array_equal(got, [2.5, 0.0, 2.5])


def traced_q(x, q):
    return np.quantile(x, q)


def gradient_2d_without_axis(x):
    return np.sum(np.gradient(x))


def average_mismatched(x):
    return np.sum(np.average(x, weights=np.ones(4)))


def test_refusals_name_what_to_do():
    with pytest.raises(CompileError, match="_quantiles"):
        GradOperation()(traced_q)(X, np.float64(0.3))
    with pytest.raises(ValueError, match="needs axis="):
        GradOperation()(gradient_2d_without_axis)(X)
    with pytest.raises(TypeError, match="axis must be specified"):
        GradOperation()(average_mismatched)(X)


# ------------------------------------------------- values and dtypes as NumPy's
def v_var(x):
    return np.var(x, axis=0, ddof=1)


def v_std(x):
    return np.std(x, keepdims=True)


def v_average(x):
    return np.average(x, axis=1, weights=np.arange(1.0, 5.0))


def v_median(x):
    return np.median(x, axis=0)


def v_quantile_list(x):
    return np.quantile(x, [0.2, 0.5], axis=0)


def v_percentile(x):
    return np.percentile(x, 35, axis=1, keepdims=True)


def v_ptp(x):
    return np.ptp(x, axis=0)


def v_cumprod(x):
    return np.cumprod(x, axis=1)


def v_diff(x):
    return np.diff(x, 2)


def v_gradient(x):
    return np.gradient(x, 0.25, axis=1)


def v_nanmean(x):
    return np.nanmean(x, axis=0)


VALUES = [v_var, v_std, v_average, v_median, v_quantile_list, v_percentile, v_ptp, v_cumprod,
          v_diff, v_gradient, v_nanmean]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", VALUES, ids=lambda f: f.__name__)
def test_values_and_dtypes_are_numpys(fn, dtype):
    x = X.astype(dtype)
    want = fn(x)
    got = s2sad.jit(fn)(x)
    assert np.asarray(got).dtype == want.dtype
    assert np.shape(got) == np.shape(want)
    # quantiles interpolate as (1 - t) a + t b, NumPy as a + t (b - a): a few ulps
    # of the input's precision apart
    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dtype).eps, atol=0)


# ------------------------------------------------------------- scipy.special
def _special():
    return pytest.importorskip("scipy.special",
                               reason="scipy.special mappings apply only when SciPy is installed")


def f_special_smooth(x, y):
    sp = sys.modules["scipy.special"]
    return (sp.expit(x) + sp.logit(x * 0.5 + 0.2) + sp.erf(y) + sp.erfc(x) + sp.gammaln(x + 1.0)
            + sp.digamma(x + 0.5) + sp.xlogy(x, y * y + 0.5) + sp.softmax(y, axis=1)
            + sp.log_softmax(x, axis=0))


def f_logsumexp(x):
    sp = sys.modules["scipy.special"]
    return (sp.logsumexp(x, axis=1) + sp.logsumexp(x) + sp.logsumexp(x, axis=0, keepdims=True)[0, :3])


def f_logsumexp_b(x, b):
    sp = sys.modules["scipy.special"]
    return sp.logsumexp(x, axis=1, b=b) + sp.logsumexp(x, b=b, keepdims=True)[0]


SPECIAL_CASES = [
    ("smooth", f_special_smooth, (X * 0.3 + 0.1, CUBE[0])),
    ("logsumexp", f_logsumexp, (CUBE[1],)),
    ("logsumexp_b", f_logsumexp_b, (CUBE[1], W_ROW)),
]


@pytest.mark.parametrize("name,fn,args", SPECIAL_CASES, ids=[c[0] for c in SPECIAL_CASES])
def test_scipy_special_both_modes_and_second_order(name, fn, args):
    _special()
    check_vjp(fn, args)
    check_jvp(fn, args)
    assert s2sad.check_grads(fn, args, order=2) < 1e-5


def v_special(x):
    sp = sys.modules["scipy.special"]
    return (sp.gammaln(x), sp.digamma(x), sp.xlogy(x, x), sp.logit(x * 0.5), sp.erf(x),
            sp.logsumexp(x, axis=0, b=x[0], keepdims=True))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scipy_special_values_and_dtypes_are_scipys(dtype):
    _special()
    x = (X * 0.4 + 0.05).astype(dtype)
    for got, want in zip(s2sad.jit(v_special)(x), v_special(x)):
        assert np.asarray(got).dtype == want.dtype
        # logsumexp sums in another order than SciPy: ulps of its largest term
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps,
                                   atol=8 * np.finfo(dtype).eps * np.abs(want).max())


def xlogy_at_zero(x, y):
    sp = sys.modules["scipy.special"]
    return np.sum(sp.xlogy(x, y))


def test_xlogy_slopes_at_x_zero():
    _special()
    dx, dy = GradOperation(get_all=True)(xlogy_at_zero)(np.array([0.0, 2.0]), np.array([3.0, 4.0]))
    np.testing.assert_allclose(dx, np.log([3.0, 4.0]))
    np.testing.assert_allclose(dy, [0.0, 0.5])


def median_only(x):
    return np.sum(np.median(x, axis=0) * x)


def test_generated_code_needs_no_scipy_unless_the_program_used_it():
    source = s2sad.get_source(GradOperation()(median_only), X)
    assert "special" not in source and "scipy" not in source
