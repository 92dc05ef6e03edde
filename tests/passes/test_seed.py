"""The seed of the backward pass: a sum or mean of the loss is folded into the seed
(``ones_to_shape``, ``seed_without_reduction``, ``seed_each_of_mean``).

Results are compared with the unoptimised pipeline and finite differences;
the generated code is checked for what the passes remove.
"""
import re

import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad import runtime as rt

from gradcheck import numeric_grad
from passes_common import both, assert_same


# ------------------------------------------------------------- seed of a sum
def test_seed_of_full_sum_is_folded(mod):
    x = np.random.default_rng(0).standard_normal(50)
    got, src, want, src0 = both(lambda: ops.GradOperation()(mod.seeded), (x,))
    assert_same(got, want)
    np.testing.assert_allclose(got, numeric_grad(mod.seeded, (x,), 0), rtol=1e-7, atol=1e-9)
    # before: the product and its sum exist only to give the seed a shape
    assert "rt.math_sum(" in src0 and "rt.broadcast_like(" in src0 and "xp.ones_like(" in src0
    assert "rt.math_sum(" not in src and "rt.broadcast_like(" not in src
    assert "ones_like" not in src and "expand_reduced" not in src
    assert len(_statements(src)) <= len(_statements(src0)) - 4


def _statements(src):
    return [ln for ln in src.splitlines()
            if ln.strip() and not ln.strip().startswith(("#", "del "))]


def test_seed_that_does_not_fold_keeps_the_broadcast_view(mod):
    rng = np.random.default_rng(1)
    W, x = rng.standard_normal((4, 3)), rng.standard_normal(3)
    got, src, want, src0 = both(lambda: ops.GradOperation(get_all=True)(
        mod.seeded_matmul), (W, x))
    assert_same(got, want)
    # matmul's rule reads the seed as it is: it stays a view of one stored 1, not
    # a full array of ones, and the sum that only gave it a dtype is gone
    assert "rt.broadcast_like(" in src0 and "xp.ones_like(reduce_sum" in src0
    assert "rt.sum_seed(mat_mul_ext_W)" in src and "rt.math_sum(" not in src


def test_seed_into_a_loop(mod):
    x, steps = np.linspace(-1, 1, 7), np.zeros(4)
    got, src, want, src0 = both(lambda: ops.GradOperation()(mod.seeded_loop),
                                (x, steps))
    assert_same(got, want)
    np.testing.assert_allclose(got, numeric_grad(mod.seeded_loop, (x, steps), 0),
                               rtol=1e-7, atol=1e-9)
    assert "rt.sum_seed(x_1)" in src and "rt.math_sum(" not in src


def test_seed_rewrite_with_the_sum_returned(mod):
    x = np.random.default_rng(2).standard_normal(6)
    make = lambda: s2sad.value_and_grad(mod.returns_sum)        # noqa: E731
    got, src, want, src0 = both(make, (x,))
    assert_same(got, want)
    s2sad.check_grads(mod.returns_sum, (x,), order=1, modes=("rev", "fwd"))


def test_float32_seed_keeps_dtype(mod):
    x = np.random.default_rng(3).standard_normal(8).astype(np.float32)
    got, src, want, src0 = both(lambda: ops.GradOperation()(mod.seeded), (x,))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_seed_of_a_mean_loss_skips_the_mean(mod):
    rng = np.random.default_rng(12)
    args = (rng.standard_normal((3, 4)), rng.standard_normal((5, 3)))
    for fn in (mod.mean_loss, mod.negated_mean):
        got, src, want, src0 = both(lambda: ops.GradOperation()(fn), args)
        assert_same(got, want)
        # central differences in float64 (step 1e-6): ~1e-9 relative error at most
        np.testing.assert_allclose(got, numeric_grad(fn, args, 0), rtol=1e-6, atol=1e-9)
        # the loss itself is not returned: the forward no longer computes it
        assert "xp.mean(" in src0 and "xp.mean(" not in src
        assert "rt.mean_seed(" in src


def test_seed_of_a_mean_divides_in_one_call(mod):
    rng = np.random.default_rng(14)
    args = (rng.standard_normal((3, 4)), rng.standard_normal((5, 3)))
    got, src, want, src0 = both(lambda: ops.GradOperation()(mod.negated_mean), args)
    np.testing.assert_array_equal(got, want)        # the same NumPy operations
    # the seed reads the row sums' operand: the forward no longer sums the rows
    assert "rt.reduced_count(" in src0 and "rt.reduced_count(" not in src
    fwd = src.split("# -- backward sweep --")[0]
    assert "rt.math_sum(" in src0 and "rt.math_sum(" not in fwd, src
    assert "rt.mean_seed(tanh, -1, 1)" in src, src
    # a mean of a product (no row sums): the seed reads the product
    got, src, want, src0 = both(lambda: ops.GradOperation()(mod.mean_loss), args)
    np.testing.assert_array_equal(got, want)
    assert re.search(r"rt\.mean_seed\(\w+, 1\)", src), src


def test_mean_seed_needs_the_count_of_the_seeded_value():
    from s2sad.ir.nodes import Func, Op, Var, Const
    from s2sad.opt.seed import seed_each_of_mean
    from s2sad.ops.operations import array_ops as A, math_ops as M
    a, b, s, c, r = (Var(h) for h in "abscr")
    ops_ = [Op(A.ReductionSeed("mean"), [a], [s]), Op(A.ReducedCount(), [b, Const(())], [c]),
            Op(M.RealDiv(), [s, c], [r])]
    seed_each_of_mean(Func("f", [a, b], ops_, r))
    assert type(ops_[2].prim) is M.RealDiv         # a's seed over b's size: left alone
    ops_[1].args[0] = a
    seed_each_of_mean(Func("f", [a, b], ops_, r))
    assert type(ops_[2].prim) is A.MeanSeed and ops_[2].args == [a]


@pytest.mark.parametrize("x, axis", [
    (np.ones((3, 4), np.float32), 1), (np.ones((3, 4)), -1), (np.ones((2, 3, 4), np.float16), (0, 2)),
    (np.arange(12).reshape(3, 4), 1), (np.ones((3, 0)), 1), (np.ones((2, 3), np.complex64), 0),
    (np.array([True, False]), 0), (np.ones((3, 4)), None), (np.float32(2.0), None)],
    ids=lambda v: "%s%s" % (type(v).__name__, np.shape(v)) if not isinstance(v, (int, tuple))
    else str(v))
@pytest.mark.parametrize("sign", [1, -1])
def test_mean_seed_is_the_seed_divided_by_the_count(x, axis, sign):
    v = x if axis is None else np.sum(x, axis=axis)
    one = rt.reduction_seed(v, "mean")
    want = (-one if sign < 0 else one) / rt.reduced_count(v, ())
    got = rt.mean_seed(x, sign, axis)
    assert type(got) is type(want) and np.array_equal(got, want)


@pytest.mark.parametrize("axis, error", [(2, np.exceptions.AxisError), ((1, 1), ValueError)])
def test_mean_seed_raises_numpys_axis_errors(axis, error):
    with pytest.raises(error):
        rt.mean_seed(np.ones((3, 4)), -1, axis)


def test_value_and_grad_of_a_mean_still_returns_the_mean(mod):
    rng = np.random.default_rng(13)
    args = (rng.standard_normal((3, 4)), rng.standard_normal((5, 3)))
    got, src, want, src0 = both(lambda: s2sad.value_and_grad(mod.negated_mean),
                                args)
    assert_same(got, want)
    # the same float64 forward, run by value_and_grad: rounding only
    np.testing.assert_allclose(got[0], mod.negated_mean(*args), rtol=1e-14)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(got[1], numeric_grad(mod.negated_mean, args, 0), rtol=1e-6,
                               atol=1e-9)


@pytest.mark.parametrize("x", [
    np.ones((2, 3), np.float32), np.arange(6).reshape(2, 3), np.array([True, False]),
    np.array([1 + 1j]), np.float64(2.0), 3, np.ones(4, np.float16)],
    ids=lambda x: "%s%s" % (type(x).__name__, np.shape(x)))
@pytest.mark.parametrize("kind", ["sum", "mean"])
def test_reduction_seed_is_ones_of_the_reductions_dtype(x, kind):
    got = rt.reduction_seed(x, kind)
    want = np.ones_like(getattr(np, kind)(x))
    assert np.shape(got) == () and np.asarray(got).dtype == np.asarray(want).dtype
    assert got == 1


# --------------------------------------- a sum or mean negated and scaled by numbers
def cross_entropy(w, x, y):
    z = x @ w
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(y * logp) / x.shape[0]


def half_squares(w, x, y):
    return 0.5 * np.sum((x @ w - y) ** 2)


def tripled(w, x, y):
    return np.sum(np.tanh(x @ w) * y) * 3


def halved_mean(w, x, y):
    return -np.mean(np.sin(x @ w) + y) / 2.0


@pytest.mark.parametrize("loss", [cross_entropy, half_squares, tripled, halved_mean],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_seed_of_a_scaled_reduction_skips_the_loss(loss, dtype):
    rng = np.random.default_rng(21)
    args = tuple(a.astype(dtype) for a in (rng.standard_normal((3, 4)),
                                            rng.standard_normal((5, 3)),
                                            rng.standard_normal((5, 4))))
    got, src, want, src0 = both(lambda: ops.GradOperation()(loss), args)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == np.float64 else 1e-6)
    if dtype == np.float64:
        np.testing.assert_allclose(got, numeric_grad(loss, args, 0), rtol=1e-6, atol=1e-9)
    # the forward no longer computes the loss: its reduction, sign and scale are gone
    fwd, fwd0 = (s.split("# -- backward sweep --")[0] for s in (src, src0))
    assert "xp.ones_like(" in src0 and "xp.ones_like(" not in src, src
    assert len(_statements(fwd)) <= len(_statements(fwd0)) - 2, src


def test_value_and_grad_of_a_scaled_sum_still_returns_the_loss():
    rng = np.random.default_rng(22)
    args = (rng.standard_normal((3, 4)), rng.standard_normal((5, 3)),
            np.eye(4)[rng.integers(0, 4, 5)])
    got, src, want, src0 = both(lambda: s2sad.value_and_grad(cross_entropy), args)
    assert_same(got, want)
    np.testing.assert_allclose(got[0], cross_entropy(*args), rtol=1e-14)


def test_a_scale_that_is_not_a_number_keeps_the_loss():
    rng = np.random.default_rng(23)
    w, x, y = rng.standard_normal((3, 4)), rng.standard_normal((5, 3)), rng.standard_normal(4)

    def by_array(w, x, y):      # y.sum() is a runtime value: its dtype could change the loss's
        return np.sum(np.tanh(x @ w)) / y.sum()
    got, src, want, src0 = both(lambda: ops.GradOperation()(by_array), (w, x, y))
    assert_same(got, want)
    assert "xp.ones_like(" in src, src
