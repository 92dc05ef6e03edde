"""Every differentiable primitive's rules differentiate again.

For each differentiable primitive exported by ``s2sad.ops.operations`` this file
has at least one small float64 function using it, checked with
``s2sad.check_grads(f, args, order=2, modes=("rev", "fwd"))``: the first
derivative by reverse and forward mode against central finite differences,
then the derivative of a random directional gradient ``x -> <w, vjp(f, x)(u)>``
the same way (reverse over reverse, forward over reverse), again against float64
central finite differences.

Each function feeds the primitive's output into a nonlinearity (``q * sin(q)``,
``q * sin(x)``, ...) so that the second derivative passes through the
primitive's bprop rule *and* through the rules of the primitives that bprop is
made of, even for primitives that are linear.  Primitives whose own second
derivative is zero almost everywhere (ReLU, Abs, Floor, Maximum, MaxPool, ...)
are checked the same way: any non-zero term their rules produced would show.
Inputs keep clear of the points listed in each primitive's
``nondifferentiable`` (kinks, jumps, ties, poles) by more than the finite
difference steps move them.

``test_every_differentiable_primitive_has_a_second_order_case`` fails when a
differentiable primitive is added without a case here, and
``test_case_uses_its_primitive`` makes sure each case really stages the
primitive it is filed under.  The whole table runs in a few seconds, so every
case runs by default (``S2SAD_FULL`` is not needed).
"""
import inspect
import re

import numpy as np
import pytest

import s2sad
from s2sad.runtime import rt_nn
from s2sad.ops import GradOperation
from s2sad.ops import operations as P
from s2sad.ops.primitive import Primitive

from second_order_cases import ARRAY, CONTRACT, ELEMENTWISE, FFT, MATH, SPECIAL, normal, \
    off_integers
from second_order_linalg_cases import LINALG
from second_order_nn_cases import FixedDraws, NN


CASES = MATH + ARRAY + NN + CONTRACT + ELEMENTWISE + LINALG + SPECIAL + FFT

#: Differentiable primitives deliberately left without a second-order case, with
#: the reason.  Empty where SciPy is installed: every one has a case.
NO_CASE = {"NoGradient": "refuses every derivative (an argument with none in closed form)"}
# check_grads is real-valued: their second order is checked on complex values instead
NO_CASE.update(dict.fromkeys(["Real", "Imag", "Conj", "Angle", "RealOutput"],
                             "complex values: tests/prims/test_prims_complex.py"))
NO_CASE["RealLike"] = "complex values: tests/prims/test_prims_complex_more.py"
if not SPECIAL:
    NO_CASE.update(dict.fromkeys(
        ["Gammaln", "Polygamma", "Gamma", "Rgamma", "Erfinv", "Erfcinv", "LogNdtr", "Gammainc",
         "Gammaincc", "Betainc", "Stdtr", "Bessel", "Convolve", "ConvolveCrop",
         "ConvolvePad", "SolveSylvester", "Sqrtm"],
        "computed by SciPy at run time, which is not installed"))


# ================================================================== tests
def _primitive_classes():
    """Every primitive class exported by ``s2sad.ops.operations`` (aliases once)."""
    seen = []
    for name in sorted(dir(P)):
        cls = getattr(P, name)
        if inspect.isclass(cls) and issubclass(cls, Primitive) and cls is not Primitive \
                and cls not in seen:
            seen.append(cls)
    return seen


def _needs_fixed_dropout_mask(case, monkeypatch):
    if case.prim == "Dropout":
        monkeypatch.setattr(rt_nn, "_generator", FixedDraws())


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_second_order(case, monkeypatch):
    _needs_fixed_dropout_mask(case, monkeypatch)
    s2sad.check_grads(case.fn, case.args, order=2, modes=("rev", "fwd"))


def test_every_differentiable_primitive_has_a_second_order_case():
    differentiable = {cls.__name__ for cls in _primitive_classes() if cls.differentiable}
    covered = {case.prim for case in CASES}
    missing = sorted(differentiable - covered - set(NO_CASE))
    assert not missing, (
        "differentiable primitives without a second-order case in tests/prims/second_order_cases.py "
        "(add a Case using each): %s" % ", ".join(missing))
    unknown = sorted((covered | set(NO_CASE)) - differentiable)
    assert not unknown, "cases filed under names that are not differentiable primitives: %s" \
        % ", ".join(unknown)


_IR_OP = re.compile(r"=\s*([A-Za-z_][A-Za-z0-9_]*)[\[(]")  # "= Name(" or "= Name[attrs]("


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_case_uses_its_primitive(case):
    """The forward program of each case stages the primitive it is filed under."""
    grad_fn = GradOperation(get_all=True)(case.fn)
    staged = set(_IR_OP.findall(s2sad.get_ir(grad_fn, *case.args, stage="forward")))
    assert case.prim in staged, (case.id, sorted(staged))


# --------------------------------------- zero second derivatives, in closed form
relu = P.ReLU()
abs_ = P.Abs()
floor = P.Floor()
maximum = P.Maximum()


def piecewise_linear_sum(x, y):
    return (relu(x) + abs_(x) * 2.0 + floor(x) * 3.0 + maximum(x, y)).sum()


first_derivative = GradOperation(get_all=True)(piecewise_linear_sum)


def directional_first_derivative(x, y, w):
    gx, gy = first_derivative(x, y)
    return (gx * w).sum() + (gy * w).sum()


def test_piecewise_linear_second_derivative_is_exactly_zero():
    """Away from the kinks, d/dx <w, grad f(x)> = 0 for f piecewise linear (closed form),
    and the first derivative is the closed-form slope."""
    x = off_integers((2, 3), 260)
    y = x + np.where(normal((2, 3), 261) > 0, 0.3, -0.3)
    w = normal((2, 3), 262)
    gx, gy = first_derivative(x, y)
    np.testing.assert_array_equal(gx, (x > 0) + 2.0 * np.sign(x) + (x > y))
    np.testing.assert_array_equal(gy, (y > x).astype(np.float64))
    hx, hy, hw = GradOperation(get_all=True)(directional_first_derivative)(x, y, w)
    np.testing.assert_array_equal(hx, np.zeros((2, 3)))
    np.testing.assert_array_equal(hy, np.zeros((2, 3)))
    np.testing.assert_array_equal(hw, gx + gy)
