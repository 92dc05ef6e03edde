"""``scipy.special`` past the basics and ``scipy.stats`` distributions' functions:
reverse and forward mode against float64 central differences, second order,
values against SciPy's own, and the refusal of derivatives with respect to
arguments that have none in closed form (shape parameters, Bessel orders).
"""
import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError

from gradcheck import check_jvp, check_vjp

sp = pytest.importorskip("scipy.special", reason="the SciPy mappings apply only with SciPy")
stats = pytest.importorskip("scipy.stats", reason="the SciPy mappings apply only with SciPy")

RNG = np.random.default_rng(11)
POS = RNG.uniform(0.6, 3.0, (2, 3))          # gamma, Bessel and incomplete-gamma arguments
UNIT = RNG.uniform(0.15, 0.85, (2, 3))       # erfinv, betainc
NORMAL = RNG.standard_normal((2, 3))
ROW = RNG.standard_normal((1, 3))
COL = RNG.uniform(0.5, 2.0, (2, 1))          # scales, broadcasting against (2, 3)
SHAPE = RNG.uniform(1.5, 3.5, (2, 3))        # shape parameters, degrees of freedom
COUNTS = np.array([[0.0, 2.0, 5.0], [1.0, 3.0, 7.0]])


# ------------------------------------------------------------- scipy.special
def f_gamma(x):
    return sp.gamma(x) + sp.rgamma(x) * sp.gammasgn(x - 1.9)


def f_beta(a, b):
    return sp.beta(a, b) + sp.betaln(a, b)


def f_incomplete(x):
    return sp.gammainc(1.7, x) + sp.gammaincc(2.5, x) + sp.betainc(2.0, 3.0, x / 3.5)


def f_inverse_erf(y):
    return sp.erfinv(y * 1.6 - 0.8) + 2.0 * sp.erfcinv(y * 1.5 + 0.1)


def f_bessel_first(x):
    return sp.j0(x) + sp.j1(x) + sp.jn(2, x) + sp.jv(1.5, x) + sp.i0(x) + sp.i1(x)


def f_bessel_second(x):
    return sp.y0(x) + sp.y1(x) + sp.yn(2, x) + sp.yv(0.5, x) + sp.iv(2.5, x) + sp.ive(1, x)


def f_ive_negative(x):
    return sp.ive(2, -x)


def f_multigammaln(a):
    return sp.multigammaln(a + 2.0, 3)


def f_log_ndtr(x):
    return sp.log_ndtr(x * 4.0) + sp.ndtr(x)


SPECIAL = [
    ("gamma", f_gamma, (POS,)), ("beta", f_beta, (POS, SHAPE)),
    ("incomplete", f_incomplete, (POS,)), ("inverse_erf", f_inverse_erf, (UNIT,)),
    ("bessel_first", f_bessel_first, (POS,)), ("bessel_second", f_bessel_second, (POS,)),
    ("ive_negative", f_ive_negative, (POS,)), ("multigammaln", f_multigammaln, (POS,)),
    ("log_ndtr", f_log_ndtr, (NORMAL,)),
]


@pytest.mark.parametrize("name,fn,args", SPECIAL, ids=[c[0] for c in SPECIAL])
def test_special_both_modes_and_second_order(name, fn, args):
    check_vjp(fn, args)
    check_jvp(fn, args)
    assert s2sad.check_grads(fn, args, order=2, modes=("rev", "fwd")) < 1e-5


@pytest.mark.parametrize("name,fn,args", SPECIAL, ids=[c[0] for c in SPECIAL])
def test_special_values_are_scipys(name, fn, args):
    got, want = s2sad.jit(fn)(*args), fn(*args)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def v_special32(x):
    return sp.gamma(x), sp.erfinv(x * 0.3), sp.jv(1, x), sp.gammainc(2.0, x)


def test_special_keep_a_float32_input_dtype():
    x = POS.astype(np.float32)
    for got, want in zip(s2sad.jit(v_special32)(x), v_special32(x)):
        assert np.asarray(got).dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-6)


# ---------------------------------------------------------------- scipy.stats
def f_norm(x, loc, scale):
    return (stats.norm.pdf(x, loc, scale) + stats.norm.logpdf(x, loc, scale)
            + stats.norm.cdf(x, loc, scale) + stats.norm.logcdf(x, loc, scale)
            + stats.norm.sf(x, loc, scale) + stats.norm.logsf(x, loc, scale))


def f_norm_defaults(x):
    return stats.norm.logpdf(x) + stats.norm.cdf(x, scale=2.0) + stats.norm.logsf(x, 0.5)


def f_t(x, df, loc, scale):
    return stats.t.pdf(x, df, loc, scale) + stats.t.logpdf(x, df, loc, scale)


def f_t_cdf(x, loc):
    return stats.t.cdf(x, 3.5, loc, 1.5) + stats.t.logcdf(x, 2.5, loc)


def f_gamma_dist(x, a):
    return stats.gamma.pdf(x, a) + stats.gamma.logpdf(x, a, scale=1.5) + stats.gamma.cdf(x, 2.5)


def f_beta_dist(x, a, b):
    return stats.beta.pdf(x, a, b) + stats.beta.logpdf(x, a, b) + stats.beta.cdf(x, 2.5, 1.5)


def f_chi2(x):
    return stats.chi2.pdf(x, 3) + stats.chi2.logpdf(x, 2.5) + stats.chi2.cdf(x, 4)


def f_poisson(mu):
    return (stats.poisson.pmf(COUNTS, mu) + stats.poisson.logpmf(COUNTS, mu)
            + stats.poisson.cdf(COUNTS, mu))


COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
MEAN = np.array([0.1, -0.3, 0.2])
XS = RNG.standard_normal((4, 3))


def f_mvn(x, mean, cov):
    cov = 0.5 * (cov + cov.T)      # keep the finite differences symmetric
    return (stats.multivariate_normal.logpdf(x, mean, cov)
            + stats.multivariate_normal.pdf(x, mean, cov))


def f_mvn_entropy(cov):
    return stats.multivariate_normal.entropy(MEAN, 0.5 * (cov + cov.T))


ALPHA = np.array([1.5, 2.5, 3.0])
SIMPLEX = np.array([0.2, 0.5, 0.3])


def f_dirichlet(x, alpha):
    x = x / np.sum(x)
    return stats.dirichlet.logpdf(x, alpha) + stats.dirichlet.pdf(x, alpha)


def f_dirichlet_columns(alpha):
    return stats.dirichlet.logpdf(np.array([[0.2, 0.6], [0.5, 0.1], [0.3, 0.3]]), alpha)


STATS = [
    ("norm", f_norm, (NORMAL, ROW, COL)), ("norm_defaults", f_norm_defaults, (NORMAL,)),
    ("t", f_t, (NORMAL, SHAPE, ROW, COL)), ("t_cdf", f_t_cdf, (NORMAL, ROW)),
    ("gamma", f_gamma_dist, (POS, SHAPE)), ("beta", f_beta_dist, (UNIT, SHAPE, COL + 1.0)),
    ("chi2", f_chi2, (POS,)), ("poisson", f_poisson, (POS,)),
    ("mvn", f_mvn, (XS, MEAN, COV)), ("mvn_one", f_mvn, (XS[0], MEAN, COV)),
    ("mvn_entropy", f_mvn_entropy, (COV,)), ("dirichlet", f_dirichlet, (SIMPLEX, ALPHA)),
    ("dirichlet_columns", f_dirichlet_columns, (ALPHA,)),
]


@pytest.mark.parametrize("name,fn,args", STATS, ids=[c[0] for c in STATS])
def test_stats_both_modes_and_second_order(name, fn, args):
    check_vjp(fn, args)
    check_jvp(fn, args)
    assert s2sad.check_grads(fn, args, order=2, modes=("rev", "fwd")) < 1e-5


@pytest.mark.parametrize("name,fn,args", STATS, ids=[c[0] for c in STATS])
def test_stats_values_are_scipys(name, fn, args):
    got, want = s2sad.jit(fn)(*args), fn(*args)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def v_support(x):
    return (stats.gamma.logpdf(x, 2.0), stats.gamma.cdf(x, 2.0), stats.beta.pdf(x, 2.0, 3.0),
            stats.beta.cdf(x, 2.0, 3.0), stats.chi2.cdf(x, 3), stats.poisson.pmf(x, 1.5),
            stats.poisson.cdf(x, 1.5))


def test_stats_values_outside_the_support_are_scipys():
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.5, 2.0])
    for got, want in zip(s2sad.jit(v_support)(x), v_support(x)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_norm_logcdf_stays_finite_in_the_far_tail():
    x = np.array([-40.0, -10.0, 0.0, 10.0])
    got = s2sad.jit(f_norm_defaults)(x)
    np.testing.assert_allclose(got, f_norm_defaults(x), rtol=1e-12)
    g = s2sad.grad(lambda x: np.sum(stats.norm.logcdf(x)))(x)
    np.testing.assert_allclose(g, np.exp(stats.norm.logpdf(x) - stats.norm.logcdf(x)),
                               rtol=1e-10)


# ------------------------------------------------------------------ refusals
def shape_of_gammainc(a, x):
    return np.sum(sp.gammainc(a, x))


def order_of_jv(v, x):
    return np.sum(sp.jv(v, x))


def df_of_t_cdf(x, df):
    return np.sum(stats.t.cdf(x, df))


def shapes_of_beta_cdf(x, a):
    return np.sum(stats.beta.cdf(x, a, 2.0))


REFUSED = [
    (shape_of_gammainc, (SHAPE, POS), 0, "shape a of scipy.special.gammainc"),
    (order_of_jv, (SHAPE, POS), 0, "order of scipy.special.jv"),
    (df_of_t_cdf, (NORMAL, SHAPE), 1, "degrees of freedom df of scipy.stats.t.cdf"),
    (shapes_of_beta_cdf, (UNIT, SHAPE), 1, "shape a of scipy.stats.beta.cdf"),
]


@pytest.mark.parametrize("fn,args,argnum,what", REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_derivative_without_closed_form_is_refused_in_both_modes(fn, args, argnum, what):
    with pytest.raises(CompileError) as err:
        s2sad.grad(fn, argnum)(*args)
    assert what in str(err.value) and "test_prims_scipy.py" in str(err.value)
    tangents = tuple(np.ones_like(a) if i == argnum else np.zeros_like(a)
                     for i, a in enumerate(args))
    with pytest.raises(CompileError, match=what):
        s2sad.jvp(fn, args, tangents)


def test_the_other_arguments_still_differentiate():
    g = s2sad.grad(shape_of_gammainc, 1)(SHAPE, POS)
    np.testing.assert_allclose(g, stats.gamma.pdf(POS, SHAPE), rtol=1e-10)


def test_mvn_allow_singular_is_refused():
    def f(x):
        return stats.multivariate_normal.logpdf(x, MEAN, COV, allow_singular=True)
    with pytest.raises((ValueError, CompileError), match="allow_singular"):
        s2sad.grad(f)(XS[0])


# --------------------------------------------------------------- scipy.signal
signal = pytest.importorskip("scipy.signal", reason="the SciPy mappings apply only with SciPy")

CONV_SHAPES = [((5,), (3,)), ((4,), (6,)), ((4, 3), (2, 2)), ((6, 7), (4, 1)),
               ((3, 4), (4, 5)), ((2, 3, 4), (2, 2, 3))]


def conv_full(a, b):
    return signal.convolve(a, b)


def conv_valid(a, b):
    return signal.convolve(a, b, mode="valid")


def conv_same(a, b):
    return signal.convolve(a, b, "same", method="direct")


@pytest.mark.parametrize("fn", [conv_full, conv_valid, conv_same], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shapes", CONV_SHAPES, ids=str)
def test_convolve_both_modes_second_order_and_values(fn, shapes):
    a, b = (RNG.standard_normal(s) for s in shapes)
    check_vjp(fn, (a, b))
    check_jvp(fn, (a, b))
    assert s2sad.check_grads(fn, (a, b), order=2, modes=("rev", "fwd")) < 1e-5
    np.testing.assert_allclose(s2sad.jit(fn)(a, b), fn(a, b), rtol=1e-12, atol=1e-12)


def conv2d_all(a, b):
    return (signal.convolve2d(a, b).sum() + signal.convolve2d(a, b, "valid").sum()
            + signal.convolve2d(a, b, mode="same", boundary="fill", fillvalue=0)[1:, :2].sum())


def test_convolve2d_both_modes_and_values():
    a, b = RNG.standard_normal((5, 4)), RNG.standard_normal((2, 3))
    check_vjp(conv2d_all, (a, b))
    check_jvp(conv2d_all, (a, b))
    np.testing.assert_allclose(s2sad.jit(conv2d_all)(a, b), conv2d_all(a, b), rtol=1e-12)


def conv2d_wrap(a, b):
    return signal.convolve2d(a, b, boundary="wrap")


def test_convolve2d_other_boundaries_are_refused():
    with pytest.raises(CompileError, match="boundary"):
        s2sad.grad(lambda a, b: np.sum(conv2d_wrap(a, b)))(np.ones((3, 3)), np.ones((2, 2)))


# --------------------------------------------------------------- scipy.linalg
linalg = pytest.importorskip("scipy.linalg", reason="the SciPy mappings apply only with SciPy")
SQ = [RNG.standard_normal((3, 3)) for _ in range(3)]


def sylvester(a, b, q):
    return linalg.solve_sylvester(a, b, q)


def sqrtm_spd(m):
    return linalg.sqrtm(m @ m.T + np.eye(3))


@pytest.mark.parametrize("fn,args", [(sylvester, tuple(SQ)), (sqrtm_spd, (SQ[0],))],
                         ids=["solve_sylvester", "sqrtm"])
def test_scipy_linalg_both_modes_second_order_and_values(fn, args):
    check_vjp(fn, args)
    check_jvp(fn, args)
    assert s2sad.check_grads(fn, args, order=2, modes=("rev", "fwd")) < 1e-5
    np.testing.assert_allclose(s2sad.jit(fn)(*args), fn(*args), rtol=1e-10, atol=1e-12)


def sqrtm_plain(m):
    return linalg.sqrtm(m)


def test_sqrtm_with_a_complex_root_is_refused():
    with pytest.raises(ValueError, match="complex"):
        s2sad.jit(sqrtm_plain)(np.diag([-1.0, 2.0]))
