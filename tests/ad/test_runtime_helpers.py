"""The runtime's shape helpers (``rt.broadcast_like``, ``rt.expand_reduced``,
``rt.unbroadcast``...) against NumPy.
"""
import numpy as np
import pytest

from s2sad import runtime as rt


# ------------------------------------------------------------ runtime helpers
def test_shape_helpers_accept_every_kind_of_value():
    a = np.ones((2, 3))
    for v, shape in ((a, (2, 3)), (np.float32(1), ()), (1.5, ()), (rt.ShapeOf(a), (2, 3)),
                     (rt.ShapeOf(np.float64(2.0)), ()), ([1.0, 2.0], (2,))):
        assert rt.shape_of(v) == shape
    assert rt.ShapeOf(np.float64(2.0)).is_scalar and not rt.ShapeOf(a).is_scalar
    d = np.ones((4, 2, 3))
    np.testing.assert_allclose(rt.unbroadcast(d, rt.ShapeOf(a)), 4 * a)
    assert rt.unbroadcast(a, a) is a
    acc = np.zeros(3)
    rt.accumulate_at(acc, Ellipsis, np.ones(3))
    rt.accumulate_at(acc, 1, 2.0)
    rt.accumulate_at(acc, np.array([0, 0]), np.ones(2))
    np.testing.assert_allclose(acc, [3.0, 3.0, 1.0])


@pytest.mark.parametrize("x", [
    np.ones((2, 3), np.float32), np.arange(6.0).reshape(3, 2)[::2], np.zeros((0, 4)),
    np.array([1 + 1j, 2]), np.arange(5, dtype=np.int8), np.array([True, False]),
    np.float64(2.0), 3.0, np.array(1.5)], ids=lambda x: "%s%s" % (type(x).__name__,
                                                                  np.shape(x)))
def test_sum_seed_is_ones_of_the_sums_dtype(x):
    got = rt.sum_seed(x)
    want = np.broadcast_to(np.ones_like(np.sum(x)), np.shape(x))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert not got.flags.writeable or got.ndim == 0     # a 0-d seed is a fresh array


@pytest.mark.parametrize("ashape, shape", [
    ((1,), (5,)), ((3, 1), (3, 4)), ((1, 1), (2, 3)), ((1, 3), (4, 3)), ((3,), (2, 3)),
    ((), (2,)), ((0, 1), (0, 3)), ((1, 0), (2, 0)), ((2, 1, 1), (2, 3, 4))])
def test_broadcast_like_is_numpys_broadcast_view(ashape, shape):
    a = np.random.default_rng(9).standard_normal(ashape).astype(np.float32)
    for source in (a, np.asfortranarray(a), np.repeat(a, 2, axis=-1)[..., ::2] if a.ndim else a):
        got, want = rt.broadcast_like(source, np.empty(shape)), np.broadcast_to(source, shape)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert not got.flags.writeable and not got.flags.owndata


def test_broadcast_like_of_a_large_strided_source_copies_nothing():
    base = np.arange(10000.0).reshape(5000, 2)
    got = rt.broadcast_like(base[:, :1], np.empty((5000, 3)))
    np.testing.assert_array_equal(got, np.broadcast_to(base[:, :1], (5000, 3)))
    assert np.shares_memory(got, base) and not got.flags.writeable


def test_broadcast_like_raises_numpys_error_for_incompatible_shapes():
    with pytest.raises(ValueError, match="broadcast"):
        rt.broadcast_like(np.ones((2, 3)), np.empty((2, 4)))


@pytest.mark.parametrize("dshape, axis, xshape", [
    ((4,), 1, (4, 5)), ((5,), 0, (4, 5)), ((), (), (4, 5)), ((4,), (1,), (4, 5)),
    ((3,), (0, 2), (2, 3, 4)), ((2,), -1, (2, 3)), ((2,), (-1, 0), (4, 2, 3)), ((), None, ())])
def test_expand_reduced_inverts_the_reduction(dshape, axis, xshape):
    x = np.random.default_rng(10).standard_normal(xshape)
    reduced = np.sum(x, axis=rt.reduce_axes(axis))
    assert reduced.shape == dshape
    back = rt.expand_reduced(reduced, x, axis, False)
    np.testing.assert_array_equal(back, np.sum(x, axis=rt.reduce_axes(axis), keepdims=True))
    assert rt.reduced_count(x, axis) * back.size == x.size
    assert np.shape(rt.expand_reduced(2.0, x, (), False)) == (1,) * len(xshape)


def test_unbroadcast_sums_the_same_axes_on_every_call():
    d = np.arange(24.0).reshape(2, 3, 4)
    for _ in range(2):      # the second call reads the remembered axes
        np.testing.assert_array_equal(rt.unbroadcast(d, np.empty((3, 1))),
                                      d.sum(axis=(0, 2)).reshape(3, 1))
        np.testing.assert_array_equal(rt.unbroadcast(d, np.empty((1, 4))),
                                      d.sum(axis=(0, 1)).reshape(1, 4))
    assert type(rt.unbroadcast(d, np.float64(1.0))) is np.float64
