"""The NumPy functions s2sad differentiates, each checked in every mode.

``docs/primitives.md`` lists every NumPy (and ``scipy.special``) function
the frontend maps to primitives (``s2sad.ops.function.NUMPY``).  Each row is
the result of running the function here, not a claim: a small program
``sum(sin(f(x, ...)))`` (or the case below) is differentiated

- in reverse mode (``s2sad.grad`` with respect to every array argument),
- in forward mode (``s2sad.jvp`` along a random direction),
- to second order (reverse over reverse: the gradient of ``grad(f) . v``),

and each result is compared with float64 central differences of the
function run eagerly by NumPy.  A cell says ``yes`` when they agree,
``refused`` when s2sad raises (the message names what is missing) and
``WRONG`` when a value disagrees; ``tests/docs/test_primitives_doc.py``
fails on any ``WRONG`` and when the page is out of date, so a row is only
ever what the code does.
"""
import functools
import operator

import numpy as np

import s2sad
from s2sad.errors import S2SADError
from s2sad.ops.function import NUMPY, SCIPY_SPECIAL

RTOL, ATOL, EPS = 1e-5, 1e-7, 1e-6


def _rng(seed):
    return np.random.default_rng(seed)


def _square(seed=0, n=3):
    """A well-conditioned, positive matrix (inverses, determinants, logs all defined)."""
    r = _rng(seed)
    return np.eye(n) * 2.0 + r.uniform(0.1, 0.5, (n, n))


def _vector(seed=1, n=4):
    return _rng(seed).uniform(0.2, 0.9, n)


#: functions whose output carries no gradient by nature: (reason, example call)
#: casts whose rounding finite differences cannot see through: checked in closed form
_LOW_PRECISION = ("a cast to a low-precision float (finite differences cannot see through "
                  "its rounding): tested against the closed form in tests/prims/")
ROUNDED = {"np.float16": _LOW_PRECISION, "np.float32": _LOW_PRECISION}

NO_GRADIENT = {
    "np.logical_and": "a boolean result", "np.logical_or": "a boolean result",
    "np.logical_not": "a boolean result", "np.bitwise_and": "an integer operation",
    "np.bitwise_or": "an integer operation", "np.bitwise_xor": "an integer operation",
    "np.invert": "an integer operation", "np.shape": "a shape", "np.size": "a size",
    "np.ndim": "a rank", "np.zeros": "a constant array", "np.ones": "a constant array",
    "np.eye": "a constant array", "np.arange": "a constant range",
    "np.zeros_like": "a constant array (only the shape is read)",
    "np.ones_like": "a constant array (only the shape is read)",
    "scipy.special.gammasgn": "a sign",
    "np.fft.fftfreq": "constant sample frequencies",
    "np.fft.rfftfreq": "constant sample frequencies",
}

#: name -> (function of the differentiated arrays, the arrays); the default is
#: the function applied to one square matrix, or to two when it takes two
CASES = {
    "np.arcsin": (lambda x: np.arcsin(x), (_vector(2) - 0.5,)),
    "np.arccos": (lambda x: np.arccos(x), (_vector(3) - 0.5,)),
    "np.arctanh": (lambda x: np.arctanh(x), (_vector(4) - 0.5,)),
    "np.arccosh": (lambda x: np.arccosh(x), (_vector(5) + 1.5,)),
    "np.round": (lambda x: np.round(x, 1), (_vector(6),)),
    "np.floor_divide": (lambda x, y: np.floor_divide(x, y), (_vector(7) * 5, _vector(8))),
    "np.mod": (lambda x, y: np.mod(x, y), (_vector(9) * 5, _vector(10))),
    "np.power": (lambda x, y: np.power(x, y), (_vector(11) + 0.5, _vector(12))),
    "np.cumsum": (lambda x: np.cumsum(x, axis=1), (_square(13),)),
    "np.tensordot": (lambda x, y: np.tensordot(x, y, axes=1), (_square(14), _square(15))),
    "np.linalg.norm": (lambda x: np.linalg.norm(x), (_square(16),)),
    "np.reshape": (lambda x: np.reshape(x, (9,)), (_square(17),)),
    "np.transpose": (lambda x: np.transpose(x), (_square(18),)),
    "np.expand_dims": (lambda x: np.expand_dims(x, 0), (_square(19),)),
    "np.squeeze": (lambda x: np.squeeze(x[None]), (_square(20),)),
    "np.concatenate": (lambda x, y: np.concatenate([x, y], axis=1), (_square(21), _square(22))),
    "np.stack": (lambda x, y: np.stack([x, y]), (_square(23), _square(24))),
    "np.hstack": (lambda x, y: np.hstack([x, y]), (_square(25), _square(26))),
    "np.vstack": (lambda x, y: np.vstack([x, y]), (_square(27), _square(28))),
    "np.split": (lambda x: np.split(x, 3)[1], (_square(29),)),
    "np.tile": (lambda x: np.tile(x, (2, 1)), (_square(30),)),
    "np.broadcast_to": (lambda x: np.broadcast_to(x, (2, 4)), (_vector(31),)),
    "np.where": (lambda x, y: np.where(x > 1.0, x, y), (_square(32), _square(33))),
    "np.take": (lambda x: np.take(x, [2, 0, 2]), (_vector(34),)),
    "np.flip": (lambda x: np.flip(x, 0), (_square(35),)),
    "np.pad": (lambda x: np.pad(x, 1), (_square(36),)),
    "np.swapaxes": (lambda x: np.swapaxes(x, 0, 1), (_square(37),)),
    "np.moveaxis": (lambda x: np.moveaxis(x, 0, 1), (_square(38),)),
    "np.repeat": (lambda x: np.repeat(x, 2), (_vector(39),)),
    "np.full": (lambda x: np.full((2, 3), x), (np.float64(0.7),)),
    "np.clip": (lambda x: np.clip(x, 2.2, 2.4), (_square(40),)),
    "np.einsum": (lambda x, y: np.einsum("ij,jk->ik", x, y), (_square(41), _square(42))),
    "np.quantile": (lambda x: np.quantile(x, 0.3), (_vector(43, 6),)),
    "np.percentile": (lambda x: np.percentile(x, 30.0, axis=0), (_square(44),)),
    "np.gradient": (lambda x: np.gradient(x, axis=0), (_square(45),)),
    "functools.reduce": (lambda x: functools.reduce(operator.mul, [x, x, 2.0]), (_vector(46),)),
    "np.linalg.slogdet": (lambda x: np.linalg.slogdet(x)[1], (_square(49),)),
    "np.linalg.eigh": (lambda x: np.linalg.eigh(x @ x.T)[0], (_square(53),)),
    "np.linalg.svd": (lambda x: np.linalg.svd(x)[1], (_square(54),)),
    "np.linalg.qr": (lambda x: np.linalg.qr(x)[1], (_square(55),)),
    "np.argpartition": (lambda x: x[np.argpartition(x, 2)], (_vector(61, 5),)),
    "np.partition": (lambda x: np.partition(x, 2), (_vector(62, 5),)),
    "np.array_split": (lambda x: np.array_split(x, 2)[1], (_vector(63, 5),)),
    "np.hsplit": (lambda x: np.hsplit(x, 3)[1], (_square(64),)),
    "np.vsplit": (lambda x: np.vsplit(x, 3)[2], (_square(65),)),
    "np.dsplit": (lambda x: np.dsplit(x.reshape(1, 3, 3), 3)[0], (_square(66),)),
    "np.lib.stride_tricks.sliding_window_view": (
        lambda x: np.lib.stride_tricks.sliding_window_view(x, 3), (_vector(67, 6),)),
    "np.roll": (lambda x: np.roll(x, 1, axis=0), (_square(68),)),
    "np.rollaxis": (lambda x: np.rollaxis(x, 1), (_square(69),)),
    "np.select": (lambda x, y: np.select([x > 2.2, x > 2.0], [x, y], 0.5),
                  (_square(70), _square(71))),
    "np.take_along_axis": (lambda x: np.take_along_axis(x, np.array([[0, 2], [1, 1], [2, 0]]),
                                                        axis=1), (_square(72),)),
    "np.linalg.eig": (lambda x: np.linalg.eig(x)[0].real, (_square(59),)),
    # NumPy 2.5 returns complex eigenvalues of a real matrix even when they are real
    "np.linalg.eigvals": (lambda x: np.linalg.eigvals(x).real, (_square(59),)),
    "np.linalg.tensorinv": (lambda x: np.linalg.tensorinv(x, ind=1), (_square(60),)),
    "np.linalg.matrix_power": (lambda x: np.linalg.matrix_power(x, 3), (_square(56),)),
    "np.linalg.tensorsolve": (lambda x, y: np.linalg.tensorsolve(x, y), (_square(57),
                                                                          _vector(58, 3))),
    "np.append": (lambda x, y: np.append(x, y, axis=0), (_square(73), _square(74))),
    "np.allclose": (lambda x, y: x * np.allclose(x, y), (_square(75), _square(76))),
    "np.array_equal": (lambda x, y: x * np.array_equal(x, y), (_square(77), _square(78))),
    "np.isclose": (lambda x, y: x * np.isclose(x, y), (_square(79), _square(85))),
    # a real loss of a transform of real arrays (complex mode inside: docs/numpy-coverage.md)
    "np.fft.fft": (lambda x: np.abs(np.fft.fft(x, n=5)), (_square(61),)),
    "np.fft.ifft": (lambda x: np.abs(np.fft.ifft(x, axis=0, norm="ortho")), (_square(62),)),
    "np.fft.fft2": (lambda x: np.abs(np.fft.fft2(x)), (_square(63),)),
    "np.fft.ifft2": (lambda x: np.real(np.fft.ifft2(x, s=(2, 4))) ** 3, (_square(64),)),
    "np.fft.fftn": (lambda x: np.abs(np.fft.fftn(x)), (_square(65),)),
    "np.fft.ifftn": (lambda x: np.imag(np.fft.ifftn(x, axes=(0,))), (_square(66),)),
    "np.fft.rfft": (lambda x: np.abs(np.fft.rfft(x, n=4)), (_square(67),)),
    "np.fft.irfft": (lambda x: np.fft.irfft(np.fft.rfft(x) * (1 + 2j)), (_square(68),)),
    "np.fft.rfft2": (lambda x: np.abs(np.fft.rfft2(x)), (_square(69),)),
    "np.fft.irfft2": (lambda x: np.fft.irfft2(np.fft.rfft2(x) * 1j, s=(3, 3)), (_square(73),)),
    "np.fft.rfftn": (lambda x: np.abs(np.fft.rfftn(x, norm="forward")), (_square(74),)),
    "np.fft.irfftn": (lambda x: np.fft.irfftn(np.fft.fftn(x), s=(3, 5)), (_square(75),)),
    "np.fft.hfft": (lambda x: np.fft.hfft(np.fft.fft(x) * 1j, n=5), (_square(76),)),
    "np.fft.ihfft": (lambda x: np.abs(np.fft.ihfft(x)), (_square(77),)),
    "np.fft.fftshift": (lambda x: np.abs(np.fft.fftshift(np.fft.fft(x))), (_square(78),)),
    "np.fft.ifftshift": (lambda x: np.fft.ifftshift(x, axes=0) * np.arange(3.0),
                         (_square(79),)),
}

#: name -> the arrays to call the function with (domains other than the default's)
ARGS = {"scipy.special.logit": (_vector(47),), "scipy.special.erfinv": (_vector(80),),
        "scipy.special.erfcinv": (_vector(81),)}

#: name -> (program, arrays) made from the function itself (SciPy's, not imported here)
MADE = {"scipy.special.polygamma": lambda fn: ((lambda x: fn(1, x)), (_vector(48) + 0.5,))}
# the shape parameters and Bessel orders have no derivative: fixed numbers here
for _name, _param in (("gammainc", 1.5), ("gammaincc", 1.5), ("stdtr", 3.5), ("jv", 1.5),
                      ("jn", 2), ("yv", 0.5), ("yn", 1), ("iv", 2.5), ("ive", 1)):
    MADE["scipy.special." + _name] = (
        lambda fn, p=_param: ((lambda x: fn(p, x)), (_vector(82) + 0.5,)))
MADE["scipy.special.betainc"] = lambda fn: ((lambda x: fn(2.0, 3.0, x)), (_vector(83),))
MADE["scipy.special.multigammaln"] = lambda fn: ((lambda x: fn(x + 2.0, 3)), (_vector(84),))


def _names():
    """``{function: [names]}`` for NumPy's namespaces (``np.abs`` is ``np.absolute``)."""
    found = {}
    for module, prefix in ((np, "np"), (np.linalg, "np.linalg"), (np.fft, "np.fft"),
                           (np.lib.stride_tricks, "np.lib.stride_tricks")):
        for attr in sorted(dir(module)):
            if attr.startswith("_"):
                continue
            value = getattr(module, attr, None)
            try:
                found.setdefault(value, [])
            except TypeError:
                continue
            found[value].append("%s.%s" % (prefix, attr))
    return found


def _scipy_special():
    try:
        import scipy.special as special
    except ImportError:
        return {}
    found = {}
    for name in sorted(SCIPY_SPECIAL):     # aliases (jn is jv, psi is digamma) share a row
        if hasattr(special, name):
            found.setdefault(getattr(special, name), []).append("scipy.special." + name)
    return found


def entries():
    """``[(names, function)]``: every mapped function once, NumPy's first, by name."""
    names = _names()
    rows = []
    for fn in NUMPY:
        rows.append((sorted(names.get(fn) or [_qualified(fn)]), fn))
    for fn, fn_names in _scipy_special().items():
        rows.append((fn_names, fn))
    return sorted(rows, key=lambda row: row[0][0])


def _qualified(fn):
    """``operator.mul``, ``functools.reduce``: a mapped function outside NumPy."""
    module = (getattr(fn, "__module__", None) or "?").lstrip("_")
    return "%s.%s" % (module, getattr(fn, "__name__", "?"))


def _default_case(fn):
    """``fn`` on one matrix, or on two when it needs two arguments."""
    for args in ((_square(50),), (_square(51), _square(52))):
        try:
            with np.errstate(all="ignore"):
                fn(*args)
        except Exception:       # noqa: BLE001 -- any refusal: try the next arity, or no case
            continue
        return (lambda *a: fn(*a)), args
    return None


def case_for(names, fn):
    """(program, arrays) for the function, or None when none can be made."""
    for name in names:
        if name in CASES:
            return CASES[name]
        if name in MADE:
            return MADE[name](fn)
        if name in ARGS:
            return (lambda *a: fn(*a)), ARGS[name]
    return _default_case(fn)


# ------------------------------------------------------------------ checks
def _objective(f):
    def objective(*args):
        return np.sum(np.sin(f(*args)))
    return objective


def _numeric_grad(fn, args, i):
    args = [np.array(a, dtype=np.float64) for a in args]
    g = np.zeros_like(args[i])
    flat = args[i].reshape(-1)
    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + EPS
        up = float(fn(*args))
        flat[k] = old - EPS
        down = float(fn(*args))
        flat[k] = old
        g.reshape(-1)[k] = (up - down) / (2 * EPS)
    return g


def _close(a, b):
    return np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=RTOL,
                       atol=ATOL)


def _attempt(check):
    """``"yes"``, ``"refused"`` or ``"WRONG"`` for one mode."""
    try:
        ok = check()
    except (S2SADError, TypeError, ValueError, NotImplementedError, IndexError,
            AttributeError):
        return "refused"
    return "yes" if ok else "WRONG"


def check_modes(program, arrays):
    """``(reverse, forward, order 2)`` statuses of ``program`` at ``arrays``."""
    objective = _objective(program)
    arrays = tuple(np.array(a, dtype=np.float64) for a in arrays)
    n = len(arrays)
    expected = [_numeric_grad(objective, arrays, i) for i in range(n)]
    r = _rng(99)
    tangents = tuple(r.standard_normal(np.shape(a)) for a in arrays)

    def reverse():
        grads = s2sad.grad(objective, tuple(range(n)))(*arrays)
        return all(_close(g, e) for g, e in zip(grads, expected))

    def forward():
        _, t_out = s2sad.jvp(objective, arrays, tangents)
        return _close(t_out, sum(np.sum(e * t) for e, t in zip(expected, tangents)))

    def second():
        v, w = tangents[0], r.standard_normal(np.shape(arrays[0]))
        first = s2sad.grad(objective)

        def directional(*a):
            return np.sum(first(*a) * v)
        hv = s2sad.grad(directional)(*arrays)
        fd = _numeric_grad(lambda *a: np.sum(first(*a) * v), arrays, 0)
        return _close(np.sum(hv * w), np.sum(fd * w))

    return _attempt(reverse), _attempt(forward), _attempt(second)


def rows():
    """``[(names, reverse, forward, order 2, note)]`` for every mapped function."""
    out = []
    for names, fn in entries():
        reason = next((NO_GRADIENT[n] for n in names if n in NO_GRADIENT), None)
        rounded = next((ROUNDED[n] for n in names if n in ROUNDED), None)
        if rounded is not None:
            out.append((names, "—", "—", "—", rounded))
            continue
        if reason is not None:
            out.append((names, "—", "—", "—", "no gradient: " + reason))
            continue
        case = case_for(names, fn)
        if case is None:
            out.append((names, "—", "—", "—", "no example call"))
            continue
        try:
            with np.errstate(all="ignore"):
                out.append((names,) + check_modes(*case) + ("",))
        except (TypeError, ValueError) as err:     # NumPy itself refuses the example call
            out.append((names, "—", "—", "—", "the example call fails in NumPy: %s"
                        % type(err).__name__))
    return out
