"""``scipy.special`` functions past the basics: gamma, the regularized
incomplete gamma and beta functions, the inverse error functions, the log of
the normal CDF, Student's t CDF and the Bessel functions.

Each is computed by SciPy at run time (``rt.special_call``), so a program
needs SciPy only when its own code used it.  Their slopes are compositions of
primitives, so second derivatives come from the same rules.  An argument with
no closed-form derivative (a Bessel function's order, an incomplete
function's shape parameters) gets none: the functional forms of
``ops/function/scipy_func.py`` pass it through ``NoGradient``, which refuses
while compiling when a derivative with respect to it is asked for.
"""
from ...ir.primitive import Primitive
from .math_ops import _NO_GRAD


def _special(name, sp_name, doc, formula, **facts):
    """An elementwise primitive written as ``rt.special_call('<sp_name>', args...)``."""
    def emit(self, *args):
        return "rt.special_call(%r, %s)" % (sp_name, ", ".join(args))
    body = {"emit": emit, "__doc__": doc, "formula": formula, "__module__": __name__,
            "elementwise": True, "rounded": True, **facts}
    return type(name, (Primitive,), body)


Gamma = _special("Gamma", "gamma", "The gamma function (``scipy.special.gamma``).",
                 "dx = dout * out * digamma(x)", nondifferentiable="x = 0, -1, -2, ... (poles)",
                 taylor="nested")
Rgamma = _special("Rgamma", "rgamma", "1 / gamma(x) (``scipy.special.rgamma``).",
                  "dx = -dout * out * digamma(x) (0 at the poles of gamma)", taylor="nested")
Gammasgn = _special("Gammasgn", "gammasgn",
                    "The sign of gamma(x) (``scipy.special.gammasgn``; no gradient).", _NO_GRAD,
                    differentiable=False)
Erfinv = _special("Erfinv", "erfinv", "The inverse of erf (``scipy.special.erfinv``).",
                  "dx = dout * sqrt(pi) / 2 * exp(out^2)", nondifferentiable="x = -1, 1",
                  taylor="nested")
Erfcinv = _special("Erfcinv", "erfcinv", "The inverse of erfc (``scipy.special.erfcinv``).",
                   "dx = -dout * sqrt(pi) / 2 * exp(out^2)", nondifferentiable="x = 0, 2",
                   taylor="nested")
LogNdtr = _special("LogNdtr", "log_ndtr",
                   "log of the standard normal CDF, accurate in both tails "
                   "(``scipy.special.log_ndtr``).",
                   "dx = dout * exp(-x^2 / 2 - out) / sqrt(2 pi)", taylor="nested")
Gammainc = _special("Gammainc", "gammainc",
                    "The regularized lower incomplete gamma function P(a, x) "
                    "(``scipy.special.gammainc``).",
                    "dx = dout * x^(a-1) exp(-x) / gamma(a); no gradient in a",
                    nondifferentiable="x = 0 for a < 1", taylor="nested")
Gammaincc = _special("Gammaincc", "gammaincc",
                     "The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) "
                     "(``scipy.special.gammaincc``).",
                     "dx = -dout * x^(a-1) exp(-x) / gamma(a); no gradient in a",
                     nondifferentiable="x = 0 for a < 1", taylor="nested")
Betainc = _special("Betainc", "betainc",
                   "The regularized incomplete beta function I_x(a, b) "
                   "(``scipy.special.betainc``).",
                   "dx = dout * x^(a-1) (1-x)^(b-1) / B(a, b); no gradient in a, b",
                   nondifferentiable="x = 0 for a < 1, x = 1 for b < 1", taylor="nested")
Stdtr = _special("Stdtr", "stdtr",
                 "Student's t CDF with df degrees of freedom (``scipy.special.stdtr``).",
                 "dt = dout * (t pdf at t); no gradient in df", taylor="nested")


class Bessel(Primitive):
    """A Bessel function of order v (``jv``, ``yv``, ``iv``, ``ive`` of ``scipy.special``)."""
    elementwise = True
    rounded = True
    taylor = "nested"   # no series rule written
    formula = ("dx = dout * (f(v-1, x) - f(v+1, x)) / 2 (jv, yv), "
               "(f(v-1, x) + f(v+1, x)) / 2 (iv; ive less sign(x) out); no gradient in v")
    nondifferentiable = "x = 0 for v < 1 (yv: x <= 0)"
    KINDS = ("jv", "yv", "iv", "ive")

    def __init__(self, kind):
        if kind not in self.KINDS:
            raise ValueError("Bessel: kind must be one of %s, got %r" % (self.KINDS, kind))
        super().__init__(kind=kind)

    def emit(self, v, x):
        return "rt.special_call(%r, %s, %s)" % (self.kind, v, x)


class Convolve(Primitive):
    """The n-d convolution of ``a`` and ``b`` (``scipy.signal.convolve``), ``mode``
    ``'full'``, ``'valid'`` or ``'same'``; both inputs have the same rank."""
    linearity = "bilinear"
    formula = ("out = crop(full(a, b)): da = valid(pad(dout), flip(b)), "
               "db = valid(pad(dout), flip(a))")
    MODES = ("full", "valid", "same")

    def __init__(self, mode="full"):
        if mode not in self.MODES:
            raise ValueError("scipy.signal.convolve: mode must be one of %s, got %r"
                             % (self.MODES, mode))
        super().__init__(mode=mode)

    def emit(self, a, b):
        return "rt.special_convolve(%s, %s, %r)" % (a, b, self.mode)


class ConvolveCrop(Primitive):
    """The part of a full convolution of ``a`` and ``b`` (each lending its shape)
    that ``mode`` keeps (a rule helper)."""
    linearity = "linear"
    formula = "dg = convolve_pad(dout, a, b); no gradient in a, b (their shapes only)"

    def __init__(self, mode):
        super().__init__(mode=mode)

    def emit(self, g, a, b):
        return "rt.special_convolve_crop(%s, %s, %s, %r)" % (g, a, b, self.mode)


class ConvolvePad(Primitive):
    """``d`` placed where ``mode`` crops a full convolution of ``a`` and ``b``, zeros
    elsewhere: the adjoint of ``ConvolveCrop`` (a rule helper)."""
    linearity = "linear"
    formula = "dd = convolve_crop(dout, a, b); no gradient in a, b (their shapes only)"

    def __init__(self, mode):
        super().__init__(mode=mode)

    def emit(self, d, a, b):
        return "rt.special_convolve_pad(%s, %s, %s, %r)" % (d, a, b, self.mode)


class SolveSylvester(Primitive):
    """X with ``a X + X b = q`` for square matrices (``scipy.linalg.solve_sylvester``)."""
    taylor = "nested"   # no series rule written
    formula = ("g = solve_sylvester(a^T, b^T, dout): da = -g X^T, db = -X^T g, dq = g")
    nondifferentiable = "a and -b sharing an eigenvalue (no unique solution)"

    def emit(self, a, b, q):
        return "rt.special_linalg('solve_sylvester', %s, %s, %s)" % (a, b, q)


class Sqrtm(Primitive):
    """The principal square root of a matrix with a real one (``scipy.linalg.sqrtm``)."""
    taylor = "nested"   # no series rule written
    formula = "da = solve_sylvester(out^T, out^T, dout)"
    nondifferentiable = "a singular a (the root's derivative is unbounded)"

    def emit(self, a):
        return "rt.special_linalg('sqrtm', %s)" % a


class NoGradient(Primitive):
    """``x`` itself, for an argument with no derivative in closed form: asking
    for a derivative with respect to it is an error while compiling, naming
    ``what`` (e.g. ``"the order v of scipy.special.jv"``)."""
    view = True         # the result is the operand itself
    taylor = "nested"   # its rules refuse
    formula = "refused: no derivative in closed form"

    def __init__(self, what):
        super().__init__(what=str(what))

    def emit(self, x):
        return x


__all__ = [_n for _n, _v in list(globals().items())
           if isinstance(_v, type) and issubclass(_v, Primitive) and _v is not Primitive
           and not _n.startswith("_")]
