"""``scipy.special`` past the basics and the ``scipy.stats`` distributions'
functions, as functional forms.

``SCIPY_SPECIAL`` maps a ``scipy.special`` name and ``SCIPY_STATS`` a
(distribution, method) pair, e.g. ``("norm", "logpdf")``, to its form: the
frontend looks both up in ``sys.modules`` only, so nothing here imports
SciPy.  The densities are written with primitives (log, xlogy, gammaln,
solve, slogdet); the CDFs of t, gamma, beta and chi2 call the incomplete
functions of ``ops/operations/special_ops.py``, whose shape parameters get no
derivative: ``NoGradient`` refuses one while compiling.  Conventions are in
docs/numpy-coverage.md, "SciPy".
"""
import math

from ..operations import array_ops as A
from ..operations import math_ops as M
from ..operations import special_ops as S
from .math_func import _unsupported, erfc
from .stats_func import gammaln, xlogy
from .linalg_func import slogdet, solve

_exp = M.Exp()
_log = M.Log()
_log1p = M.Log1p()
_floor = M.Floor()
_select = A.Select()
_sum_last = M.ReduceSum(False)
_LOG_PI = math.log(math.pi)
_LOG_2PI = math.log(2 * math.pi)
_SQRT1_2 = math.sqrt(0.5)
_INF = float("inf")


def _fixed(v, what):
    """``v`` as an argument without a derivative: asking for one is refused."""
    return S.NoGradient(what)(v)


# -------------------------------------------------------------- scipy.special
def gamma(x):
    return S.Gamma()(x)


def rgamma(x):
    return S.Rgamma()(x)


def gammasgn(x):
    return S.Gammasgn()(x)


def erfinv(y):
    return S.Erfinv()(y)


def erfcinv(y):
    return S.Erfcinv()(y)


def ndtr(x):
    """The standard normal CDF, ``erfc(-x / sqrt(2)) / 2`` (SciPy's own formula)."""
    return 0.5 * erfc(-x * _SQRT1_2)


def log_ndtr(x):
    return S.LogNdtr()(x)


def betaln(a, b):
    """``log |B(a, b)|`` from three gammaln."""
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def beta(a, b):
    return _exp(betaln(a, b))


def gammainc(a, x):
    return S.Gammainc()(_fixed(a, "the shape a of scipy.special.gammainc"), x)


def gammaincc(a, x):
    return S.Gammaincc()(_fixed(a, "the shape a of scipy.special.gammaincc"), x)


def betainc(a, b, x):
    return S.Betainc()(_fixed(a, "the shape a of scipy.special.betainc"),
                       _fixed(b, "the shape b of scipy.special.betainc"), x)


def stdtr(df, t):
    return S.Stdtr()(_fixed(df, "the degrees of freedom of scipy.special.stdtr"), t)


def jv(v, z):
    return S.Bessel("jv")(_fixed(v, "the order of scipy.special.jv"), z)


def yv(v, z):
    return S.Bessel("yv")(_fixed(v, "the order of scipy.special.yv"), z)


def iv(v, z):
    return S.Bessel("iv")(_fixed(v, "the order of scipy.special.iv"), z)


def ive(v, z):
    return S.Bessel("ive")(_fixed(v, "the order of scipy.special.ive"), z)


def j0(x):
    return S.Bessel("jv")(0, x)


def j1(x):
    return S.Bessel("jv")(1, x)


def y0(x):
    return S.Bessel("yv")(0, x)


def y1(x):
    return S.Bessel("yv")(1, x)


def i0(x):
    return S.Bessel("iv")(0, x)


def i1(x):
    return S.Bessel("iv")(1, x)


def multigammaln(a, d):
    """``log`` of the multivariate gamma function of dimension ``d`` (a Python int)."""
    out = 0.25 * d * (d - 1) * _LOG_PI
    for j in range(d):
        out = out + gammaln(a - 0.5 * j)
    return out


# ---------------------------------------------------------------- scipy.stats
def _z(x, loc, scale):
    return (x - loc) / scale


def norm_logpdf(x, loc=0, scale=1):
    z = _z(x, loc, scale)
    return -0.5 * (z * z) - _log(scale) - 0.5 * _LOG_2PI


def norm_pdf(x, loc=0, scale=1):
    return _exp(norm_logpdf(x, loc, scale))


def norm_cdf(x, loc=0, scale=1):
    return ndtr(_z(x, loc, scale))


def norm_logcdf(x, loc=0, scale=1):
    return log_ndtr(_z(x, loc, scale))


def norm_sf(x, loc=0, scale=1):
    return ndtr(-_z(x, loc, scale))


def norm_logsf(x, loc=0, scale=1):
    return log_ndtr(-_z(x, loc, scale))


def t_logpdf(x, df, loc=0, scale=1):
    z = _z(x, loc, scale)
    half = 0.5 * (df + 1)
    return (gammaln(half) - gammaln(0.5 * df) - 0.5 * (_log(df) + _LOG_PI) - _log(scale)
            - half * _log1p(z * z / df))


def t_pdf(x, df, loc=0, scale=1):
    return _exp(t_logpdf(x, df, loc, scale))


def t_cdf(x, df, loc=0, scale=1):
    return S.Stdtr()(_fixed(df, "the degrees of freedom df of scipy.stats.t.cdf"),
                     _z(x, loc, scale))


def t_logcdf(x, df, loc=0, scale=1):
    return _log(t_cdf(x, df, loc, scale))


def gamma_logpdf(x, a, loc=0, scale=1):
    """-inf outside the support x >= loc, as SciPy's."""
    z = _z(x, loc, scale)
    inside = xlogy(a - 1, z) - z - gammaln(a) - _log(scale)
    return _select(z < 0, -_INF, inside)


def gamma_pdf(x, a, loc=0, scale=1):
    return _exp(gamma_logpdf(x, a, loc, scale))


def gamma_cdf(x, a, loc=0, scale=1):
    z = _z(x, loc, scale)
    p = S.Gammainc()(_fixed(a, "the shape a of scipy.stats.gamma.cdf"), _select(z < 0, 0, z))
    return _select(z < 0, 0, p)


def chi2_logpdf(x, df, loc=0, scale=1):
    return gamma_logpdf(x, 0.5 * df, loc, 2 * scale)


def chi2_pdf(x, df, loc=0, scale=1):
    return _exp(chi2_logpdf(x, df, loc, scale))


def chi2_cdf(x, df, loc=0, scale=1):
    z = _z(x, loc, 2 * scale)
    p = S.Gammainc()(_fixed(0.5 * df, "the degrees of freedom df of scipy.stats.chi2.cdf"),
                     _select(z < 0, 0, z))
    return _select(z < 0, 0, p)


def beta_logpdf(x, a, b, loc=0, scale=1):
    """-inf outside the support [loc, loc + scale], as SciPy's."""
    z = _z(x, loc, scale)
    inside = xlogy(a - 1, z) + xlogy(b - 1, 1 - z) - betaln(a, b) - _log(scale)
    return _select((z < 0) | (z > 1), -_INF, inside)


def beta_pdf(x, a, b, loc=0, scale=1):
    return _exp(beta_logpdf(x, a, b, loc, scale))


def beta_cdf(x, a, b, loc=0, scale=1):
    z = _z(x, loc, scale)
    clipped = _select(z < 0, 0, _select(z > 1, 1, z))
    return S.Betainc()(_fixed(a, "the shape a of scipy.stats.beta.cdf"),
                       _fixed(b, "the shape b of scipy.stats.beta.cdf"), clipped)


def poisson_logpmf(k, mu, loc=0):
    """-inf where k - loc is negative or not an integer, as SciPy's; no gradient in k."""
    n = k - loc
    inside = xlogy(n, mu) - mu - gammaln(n + 1)
    return _select((n < 0) | (_floor(n) != n), -_INF, inside)


def poisson_pmf(k, mu, loc=0):
    return _exp(poisson_logpmf(k, mu, loc))


def poisson_cdf(k, mu, loc=0):
    """``Q(floor(k) + 1, mu)``: piecewise constant in k, so no gradient in k."""
    n = _floor(k - loc)
    q = S.Gammaincc()(_select(n < 0, 0, n) + 1, mu)
    return _select(n < 0, 0, q)


def _mvn_parts(x, mean, cov, allow_singular, what):
    """(Mahalanobis distances, log det cov) of a 2-D ``cov`` (the linear algebra
    refuses another at run time)."""
    _unsupported(what, "allow_singular", True if allow_singular else None)
    dev = x if mean is None else x - mean
    if dev.ndim == 1:
        maha = _sum_last(dev * solve(cov, dev), (-1,))
    else:
        maha = _sum_last(dev * A.SwapAxes(0, 1)(solve(cov, A.SwapAxes(0, 1)(dev))), (-1,))
    return maha, slogdet(cov)[1]


def mvn_logpdf(x, mean=None, cov=1, allow_singular=False):
    """Of a 1-D x, or a (n, d) x row by row; cov a 2-D matrix."""
    maha, logdet = _mvn_parts(x, mean, cov, allow_singular,
                              "scipy.stats.multivariate_normal.logpdf")
    return -0.5 * (cov.shape[0] * _LOG_2PI + logdet + maha)


def mvn_pdf(x, mean=None, cov=1, allow_singular=False):
    return _exp(mvn_logpdf(x, mean, cov, allow_singular))


def mvn_entropy(mean=None, cov=1):
    """``(d (1 + log 2 pi) + log det cov) / 2``; cov a 2-D matrix."""
    return 0.5 * (cov.shape[0] * (1 + _LOG_2PI) + slogdet(cov)[1])


def dirichlet_logpdf(x, alpha):
    """Of a 1-D x, or of each column of a (K, n) x (SciPy's layout)."""
    if x.ndim == 2:
        x = A.SwapAxes(0, 1)(x)
    log_norm = _sum_last(gammaln(alpha), (-1,)) - gammaln(_sum_last(alpha, (-1,)))
    return _sum_last(xlogy(alpha - 1, x), (-1,)) - log_norm


def dirichlet_pdf(x, alpha):
    return _exp(dirichlet_logpdf(x, alpha))


# --------------------------------------------------------------- scipy.signal
def convolve(in1, in2, mode="full", method="auto"):
    """n-d convolution, ``mode`` 'full', 'valid' or 'same'; ``method`` only
    changes how SciPy computes it."""
    return S.Convolve(mode)(in1, in2)


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """2-d convolution with zero padding (``boundary='fill'``, ``fillvalue=0``)."""
    _unsupported("scipy.signal.convolve2d", "boundary", None if boundary == "fill" else boundary)
    _unsupported("scipy.signal.convolve2d", "fillvalue", None if fillvalue == 0 else fillvalue)
    return S.Convolve(mode)(in1, in2)


#: ``scipy.signal`` functions by name (looked up only when the program imported SciPy)
SCIPY_SIGNAL = {"convolve": convolve, "convolve2d": convolve2d}

# --------------------------------------------------------------- scipy.linalg
def solve_sylvester(a, b, q):
    return S.SolveSylvester()(a, b, q)


def sqrtm(A, disp=True, blocksize=64):
    """The principal square root of a real matrix whose root is real."""
    _unsupported("scipy.linalg.sqrtm", "disp", None if disp is True else disp)
    return S.Sqrtm()(A)


#: ``scipy.linalg`` functions by name
SCIPY_LINALG = {"solve_sylvester": solve_sylvester, "sqrtm": sqrtm}

#: ``scipy.special`` functions by name (looked up only when the program imported SciPy)
SCIPY_SPECIAL = {
    "gamma": gamma, "rgamma": rgamma, "gammasgn": gammasgn, "erfinv": erfinv,
    "erfcinv": erfcinv, "ndtr": ndtr, "log_ndtr": log_ndtr, "beta": beta, "betaln": betaln,
    "betainc": betainc, "gammainc": gammainc, "gammaincc": gammaincc, "stdtr": stdtr,
    "jv": jv, "jn": jv, "yv": yv, "yn": yv, "iv": iv, "ive": ive, "j0": j0, "j1": j1,
    "y0": y0, "y1": y1, "i0": i0, "i1": i1, "multigammaln": multigammaln,
}

#: ``scipy.stats`` distributions' methods by (distribution, method name)
SCIPY_STATS = {
    ("norm", "pdf"): norm_pdf, ("norm", "logpdf"): norm_logpdf, ("norm", "cdf"): norm_cdf,
    ("norm", "logcdf"): norm_logcdf, ("norm", "sf"): norm_sf, ("norm", "logsf"): norm_logsf,
    ("t", "pdf"): t_pdf, ("t", "logpdf"): t_logpdf, ("t", "cdf"): t_cdf,
    ("t", "logcdf"): t_logcdf,
    ("gamma", "pdf"): gamma_pdf, ("gamma", "logpdf"): gamma_logpdf, ("gamma", "cdf"): gamma_cdf,
    ("beta", "pdf"): beta_pdf, ("beta", "logpdf"): beta_logpdf, ("beta", "cdf"): beta_cdf,
    ("chi2", "pdf"): chi2_pdf, ("chi2", "logpdf"): chi2_logpdf, ("chi2", "cdf"): chi2_cdf,
    ("poisson", "pmf"): poisson_pmf, ("poisson", "logpmf"): poisson_logpmf,
    ("poisson", "cdf"): poisson_cdf,
    ("multivariate_normal", "pdf"): mvn_pdf, ("multivariate_normal", "logpdf"): mvn_logpdf,
    ("multivariate_normal", "entropy"): mvn_entropy,
    ("dirichlet", "pdf"): dirichlet_pdf, ("dirichlet", "logpdf"): dirichlet_logpdf,
}

__all__ = []    # reached through the SciPy tables only (names like ``gamma`` would clash)
