"""Negations fold into additions, sums and divisions (``fold_negations``).

Results are compared with the unoptimised pipeline; the generated code is
checked for the negations that are gone.
"""
import re

import numpy as np

from s2sad import ops

from gradcheck import numeric_grad
from passes_common import both


# ----------------------------------------------------------------- negations
def test_negations_fold_into_additions(mod):
    rng = np.random.default_rng(7)
    args = (rng.standard_normal(9), rng.standard_normal(9))
    got, src, want, src0 = both(lambda: ops.GradOperation(get_all=True)(
        mod.negations), args)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)         # exact: only signs move
    for i in range(2):
        np.testing.assert_allclose(got[i], numeric_grad(mod.negations, args, i),
                                   rtol=1e-7, atol=1e-9)
    negs = lambda text: sum(" = -" in ln for ln in text.splitlines())     # noqa: E731
    assert negs(src) < negs(src0)
    assert " - " in src


def test_elementwise_benchmark_adjoint_has_no_negation(mod):
    x = np.random.default_rng(8).standard_normal(20)
    got, src, want, src0 = both(lambda: ops.GradOperation()(mod.seeded), (x,))
    np.testing.assert_array_equal(got, want)
    bwd = src.split("# -- backward sweep --")[1]
    assert " = -" not in bwd and bwd.count(" - ") == 2, src


def log_softmax_loss(z, t):
    z = z - np.max(z, axis=1, keepdims=True)
    return np.sum((z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))) * t)


def test_negations_move_through_sums_and_divisions():
    rng = np.random.default_rng(17)
    args = (rng.standard_normal((5, 4)), rng.standard_normal((5, 4)))
    got, src, want, src0 = both(lambda: ops.GradOperation()(log_softmax_loss), args)
    np.testing.assert_array_equal(got, want)         # exact: only signs move
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(got, numeric_grad(log_softmax_loss, args, 0), rtol=1e-6,
                               atol=1e-9)
    # -log's adjoint goes through a row sum, a division and a product to reach a
    # subtraction (the max carries no gradient: test_shift.py)
    code = lambda text: [ln for ln in text.split("# -- backward sweep --")[1].splitlines()
                         if not ln.strip().startswith("#")]        # noqa: E731
    assert any(" = -" in ln for ln in code(src0))
    assert not any(" = -" in ln for ln in code(src)), src
    assert sum(" - " in ln for ln in code(src)) == 1, src


def sin_of_cos(x):
    return np.sum(np.sin(np.cos(x)))


def test_double_negations_cancel():
    x = np.linspace(-2, 2, 7)
    make = lambda: ops.GradOperation()(ops.GradOperation()(sin_of_cos))     # noqa: E731
    got, src, want, src0 = both(make, (x,))
    np.testing.assert_array_equal(got, want)         # exact: only signs move
    # closed form: d2/dx2 sin(cos x) = -sin(cos x) sin^2 x - cos(cos x) cos x
    closed = -np.sin(np.cos(x)) * np.sin(x) ** 2 - np.cos(np.cos(x)) * np.cos(x)
    np.testing.assert_allclose(got, closed, rtol=1e-13, atol=1e-15)
    negs = lambda text: sum(bool(re.search(r"(= |else )-\w", ln))     # noqa: E731
                            for ln in text.splitlines())
    # -sin(x) (cos's slope) times sin(cos x), negated by cos's rule again: the
    # signs cancel, and the product is the adjoint, named as such (no copy line)
    assert re.search(r"d_cos_x = sin_x \* sin_cos_x$", src, re.M), src
    assert not any(re.fullmatch(r"\s*\w+ = \w+", ln) for ln in src.splitlines()), src
    assert negs(src) == 1 and negs(src0) >= 3, (src, src0)
