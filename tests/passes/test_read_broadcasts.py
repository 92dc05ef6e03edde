"""Broadcasts read unexpanded (``read_broadcasts_unexpanded``): an expansion is
not built where an operand already has the shape.

Results are compared with the unoptimised pipeline; the generated code is
checked for the expansions that are gone and those that must stay.
"""
import numpy as np

import s2sad
from s2sad import ops
from s2sad import driver as G

from gradcheck import numeric_grad
from passes_common import both, assert_same, G_leaves, reads_name


# ------------------------------------------- broadcasts read unexpanded
def _checked(fn, args):
    """Sources of ``fn``'s gradients (all inputs) with and without the passes, after
    checking that they agree and match central differences."""
    got, src, want, src0 = both(lambda: ops.GradOperation(get_all=True)(fn), args)
    assert_same(got, want)
    for k, g in enumerate(G_leaves(got)):
        assert np.shape(g) == np.shape(args[k])
        # central differences in float64 (step 1e-6): ~1e-9 relative error at most
        np.testing.assert_allclose(g, numeric_grad(fn, args, k), rtol=1e-6, atol=1e-9)
    return src, src0


def test_broadcast_into_a_same_shaped_operand_is_not_built(mod):
    z = np.random.default_rng(7).standard_normal((5, 4))
    got, src, want, src0 = both(lambda: ops.GradOperation()(mod.row_logsumexp), (z,))
    assert_same(got, want)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(got, numeric_grad(mod.row_logsumexp, (z,), 0), rtol=1e-6)
    # exp's rule multiplies the row sums' adjoint by exp(z), which broadcasts it
    assert "broadcast_like" in src0 and "broadcast_like" not in src


def test_broadcast_stays_where_no_operand_has_its_shape(mod):
    # w is a row: (5, 1) * (1, 4) would not be (5, 4) without the broadcast
    rng = np.random.default_rng(8)
    args = (rng.standard_normal((5, 4)), rng.standard_normal((1, 4)))
    src, _ = _checked(mod.scaled_rows, args)
    assert "broadcast_like" in src


def test_mean_of_row_sums_expands_its_seed_once(mod):
    rng = np.random.default_rng(9)
    args = (rng.standard_normal((3, 4)), rng.standard_normal((5, 3)))
    src, src0 = _checked(mod.negated_mean, args)
    # before: the mean's seed expanded and broadcast to the row sums, then
    # expanded and broadcast again; now one expansion, read where tanh's rule
    # multiplies it with a full-shaped operand
    assert src0.count("rt.expand_reduced(") == 2 and src0.count("rt.broadcast_like(") == 2
    assert src.count("rt.expand_reduced(") == 1 and "rt.broadcast_like(" not in src
    # the seed and the values made from it are scalars: neither released nor
    # written in place
    for name in ("mean_seed_tanh", "expand_reduced"):
        assert name + " = " in src and not _reads_in(src, "del ", name), name
    g = ops.GradOperation(get_all=True)(mod.negated_mean)
    g(*args)
    assert "rt.spare(" not in g.last.executed_source


def _reads_in(src, prefix, name):
    return any(line.strip().startswith(prefix) and reads_name(line, name) for line in src.splitlines())


def test_sums_of_sums_collapse_to_one_expansion(mod):
    z = np.random.default_rng(10).standard_normal((2, 3, 4))
    src, src0 = _checked(mod.mean_of_sums_of_sums, (z,))
    assert src0.count("rt.expand_reduced(") == 3
    assert src.count("rt.expand_reduced(") == 1 and "rt.broadcast_like(" not in src


def test_kept_dims_and_kept_broadcasts_stay_right(mod):
    rng = np.random.default_rng(11)
    z = rng.standard_normal((3, 4))
    _checked(mod.mean_of_kept_row_sums, (z,))
    # w is a row: exp(z) * w has z's shape, but no operand of the product's
    # adjoint has it without the broadcast, which stays (reading the seed's expansion)
    src, src0 = _checked(mod.mean_of_scaled_row_sums, (z, rng.standard_normal((1, 4))))
    assert src.count("rt.broadcast_like(") < src0.count("rt.broadcast_like(")


def test_broadcast_in_a_forward_loop_is_not_read_past_it(mod):
    # second order: the backward loop reads the forward loop's broadcast through
    # a stack slot, which the unbroadcast operand would not have (a stale value)
    x = np.random.default_rng(11).standard_normal((4, 3))
    # check_grads raises beyond its own rtol (1e-5); the stale value was 25% off
    assert s2sad.check_grads(mod.loop_of_sums, (x,), order=2, modes=("rev",)) < 1e-5


def test_literal_axes_are_written_as_they_are(mod):
    G.cache.clear()
    g = ops.GradOperation()(mod.row_logsumexp)
    g(np.ones((2, 3)))
    src = s2sad.get_source(g)
    assert "axis=1)" in src and "reduce_axes" not in src
