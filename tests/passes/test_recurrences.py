"""A value a loop only scales by constants is scaled once (``opt/recurrences.py``).

Results are compared with closed forms, central differences, and the same
pipeline without the pass; the generated code is checked for the one call
that replaces the loop.
"""
import re

import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.runtime.rt_math import math_scale_repeated

from gradcheck import numeric_grad
from test_call_overhead import d2l
from passes_common import both, assert_same
from sources import load_source

SOURCE = """
def decay(x, steps):
    for t in range(steps.shape[0]):
        x = 0.9 * x / 3
    return np.sum(np.sin(x))


def strided(x, steps):
    for t in range(steps.shape[0] * 3, 0, -2):
        x = x * -1.5
    return np.sum(x * x)


def mixed(x, steps):
    s = x
    for t in range(steps.shape[0]):
        s = s + x
        x = x * 2
    return np.sum(s * s)
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("recur"), SOURCE, "recurrences_src")


def _d2l_closed_form(a):
    """D2L's gradient: 2 per doubling (and the first), times 100 when the sum is not positive."""
    b, k = a * 2, 2.0
    while np.linalg.norm(b) < 1000:
        b, k = b * 2, k * 2
    return np.full_like(a, k if b.sum() > 0 else 100 * k)


@pytest.mark.parametrize("sign", [1, -1])
def test_d2l_backward_loop_is_one_scaling(sign):
    a = sign * np.abs(np.random.default_rng(3).standard_normal(1000))
    make = lambda: ops.GradOperation()(d2l)         # noqa: E731
    got, src, want, src0 = both(make, (a,))
    # powers of two: the closed form and both pipelines agree exactly
    np.testing.assert_array_equal(got, _d2l_closed_form(a))
    np.testing.assert_array_equal(got, want)
    # the first line's `* 2` joins the scaling; the result keeps its input's name
    assert "d_a = rt.math_scale_repeated(d_b_1, 2, n_iter, then=2)" in src
    assert "reversed(" not in src and "reversed(" in src0
    assert src.rstrip().endswith("return (d_a,)")


@pytest.mark.parametrize("name, factor", [("decay", "0.3"), ("strided", "(-1.5)")])
def test_constant_scalings_leave_their_loops(mod, name, factor):
    fn = getattr(mod, name)
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((3, 4)), np.zeros(4))
    make = lambda: ops.GradOperation()(fn)      # noqa: E731
    got, src, want, src0 = both(make, args)
    # one product by factor ** n against n products: a few ulps apart
    assert_same(got, want)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(got, numeric_grad(fn, args, 0), rtol=1e-6, atol=1e-9)
    # the forward loop and its backward sweep are both gone
    loop = re.compile(r"^ *for ", re.M)
    assert src.count("rt.math_scale_repeated(") == 2 and not loop.search(src)
    assert loop.search(src0)
    assert "(x, %s, " % factor in src


def test_a_scaling_read_elsewhere_keeps_its_loop(mod):
    args = (np.random.default_rng(6).standard_normal(5), np.zeros(3))
    make = lambda: ops.GradOperation()(mod.mixed)       # noqa: E731
    got, src, want, src0 = both(make, args)
    assert_same(got, want)
    # d(sum(s^2))/dx with s = x (1 + 1 + 2 + 4) = 8x: 2 * 8 * 8x
    np.testing.assert_allclose(got, 128 * args[0], rtol=1e-14)
    assert "math_scale_repeated" not in src


def test_float32_keeps_its_dtype(mod):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(6).astype(np.float32)
    args = (x, np.zeros(5))
    make = lambda: ops.GradOperation()(mod.decay)       # noqa: E731
    got, src, want, src0 = both(make, args)
    assert got.dtype == want.dtype == np.float32
    # closed form: cos(0.3^5 x) 0.3^5; float32 rounding over a few products
    k = 0.3 ** 5
    np.testing.assert_allclose(got, np.cos(k * x.astype(np.float64)) * k, rtol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_forward_mode_and_second_order(mod):
    rng = np.random.default_rng(8)
    x, steps, v = rng.standard_normal(4), np.zeros(3), rng.standard_normal(4)
    k = 0.3 ** 3
    out, tangent = s2sad.jvp(mod.decay, (x, steps), (v, np.zeros(3)))
    # closed forms of sum(sin(k x)): its tangent along v, its second derivative
    np.testing.assert_allclose(tangent, np.sum(np.cos(k * x) * k * v), rtol=1e-13)
    np.testing.assert_allclose(out, np.sum(np.sin(k * x)), rtol=1e-13)
    g2 = ops.GradOperation()(ops.GradOperation()(mod.decay))(x, steps)
    np.testing.assert_allclose(g2, -np.sin(k * x) * k * k, rtol=1e-12)


def _looped(x, factor, *bounds, then=1):
    for _ in range(*bounds):
        x = x * factor
    return x * then


@pytest.mark.parametrize("then", [1, 3, 1.0, 0.5])
@pytest.mark.parametrize("x, factor, bounds", [
    (np.linspace(-3, 3, 7), 2, (9,)),                       # exact: powers of two
    (np.linspace(-3, 3, 7).astype(np.float32), 0.5, (0, 10, 3)),
    (np.arange(5), 3, (4,)),                                # integers keep exact products
    (np.array([1.0, -2.0, 0.0]), 10.0, (400,)),             # 10^400 overflows: the loop's inf
    (np.array([np.inf, 1.0, 0.0]), 0.5, (2000,)),           # 0.5^2000 vanishes: inf stays inf
    (np.array([1.5, 2.5]), 7.0, (10, 0, -3)),
    (np.float32(1.5), 3, (5,)),                             # scalars run the loop
    (np.ones(3), 2.0, (0,)),
])
def test_scale_repeated_is_the_loop(x, factor, bounds, then):
    with np.errstate(over="ignore", invalid="ignore"):
        got = math_scale_repeated(x, factor, *bounds, then=then)
        want = _looped(x, factor, *bounds, then=then)
    assert type(got) is type(want) and np.result_type(got) == np.result_type(want)
    # one product by factor ** n against n products: a few ulps apart
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np.result_type(got)).eps
                               if np.result_type(got).kind == "f" else 0)

