"""Array primitives that select, pad, one-hot, cast and clip; the AD helper
primitives; closed forms, dtypes and the non-differentiable primitives.

Checked like the rest of the family: ``check_vjp``, ``check_jvp`` and the
eager result against NumPy.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad import dtype as mstype
from s2sad.ops import operations as P
from s2sad.ops.primitive import Primitive

from gradcheck import check_vjp, check_jvp
from test_prims_array import (COND, COND_COL, COND_ROW, Case, GATHER_IDX, INDEXING, JOIN, LAYOUT,
                              TILE_X, broadcast_like, cast, cast_like, check_sens, depend,
                              distinct, gather, normal, select, setitem, unbroadcast)


# -------------------------------------------------- select, pad, one-hot, cast
def make_select(cond):
    def f_select(x, y):
        return select(cond, x, y)
    return f_select


# (cond, shape of x, shape of y): scalars, (3,1) with (1,4), batch dims (2,1,3) with (4,3)
SELECT_SHAPES = [
    (COND, (2, 3), (2, 3)),
    (COND, (), (2, 3)),
    (COND, (2, 3), ()),
    (np.ones((3, 4), bool) & (np.arange(4) % 2 == 0), (3, 1), (1, 4)),
    (COND_ROW, (2, 1, 3), (4, 3)),
    (COND_COL, (3, 1), (1, 4)),
]

SELECT = [Case("Select-%s-%s" % (sx, sy), make_select(c), [normal(sx, 60), normal(sy, 61)],
               (lambda c: lambda x, y: np.where(c, x, y))(c))
          for c, sx, sy in SELECT_SHAPES]

ONE_HOT_IDX = np.array([[0, 2], [1, 1]])


def f_one_hot(on, off):
    return P.OneHot()(ONE_HOT_IDX, 3, on, off)


def f_one_hot_axis0(on, off):
    return P.OneHot(0)(ONE_HOT_IDX, 3, on, off) * OH_WEIGHT


OH_WEIGHT = np.arange(12.0).reshape(3, 2, 2)


def one_hot_ref(axis):
    def ref(on, off):
        mask = ONE_HOT_IDX[..., None] == np.arange(3)
        if axis != -1:
            mask = np.moveaxis(mask, -1, axis)
        return np.where(mask, on, off)
    return ref


def f_one_hot_mixed(on):
    return P.OneHot()(ONE_HOT_IDX, 3, on, 0.0)


def f_pad(x):
    return P.Pad(((1, 0), (2, 1)))(x)


def f_pad_value(x):
    return P.Pad(((1, 2),), 1.5)(x)


def f_pad_broadcast(x):
    return P.Pad(((1, 1),), 0, True)(x)


def f_pad_crop(x):
    return P.PadCrop(((1, 0), (2, 1)))(x)


def f_cast(x):
    return cast(x, mstype.float64)


def f_cast_np(x):
    return cast(x, np.float64) * 2.0


def f_cast_like(a):
    return cast_like(a, TILE_X)


OTHER = SELECT + [
    Case("OneHot", f_one_hot, [np.float64(0.7), np.float64(-0.3)], one_hot_ref(-1)),
    Case("OneHot-axis0", f_one_hot_axis0, [np.float64(0.7), np.float64(-0.3)],
         lambda on, off: one_hot_ref(0)(on, off) * OH_WEIGHT),
    Case("OneHot-mixed", f_one_hot_mixed, [np.float64(1.3)],
         lambda on: one_hot_ref(-1)(on, 0.0)),
    Case("Pad", f_pad, [normal((2, 3), 62)], lambda x: np.pad(x, ((1, 0), (2, 1)))),
    Case("Pad-value", f_pad_value, [normal((2, 3), 62)],
         lambda x: np.pad(x, ((0, 0), (1, 2)), constant_values=1.5)),
    Case("Pad-broadcast", f_pad_broadcast, [normal((2, 3), 62)], lambda x: np.pad(x, 1)),
    Case("PadCrop", f_pad_crop, [normal((3, 6), 63)], lambda x: x[1:, 2:5]),
    Case("Cast", f_cast, [normal((2, 3), 64)], lambda x: x),
    Case("Cast-npdtype", f_cast_np, [normal((2, 3), 64)], lambda x: 2 * x),
    Case("CastLike", f_cast_like, [normal((2, 3), 65)], lambda a: a),
]


# ------------------------------------------------------------ AD helpers
def f_depend(a, b):
    return depend(a * 3.0, b)


def f_unbroadcast(dx):
    return unbroadcast(dx, TILE_X[:, :1])


def f_broadcast_like(a):
    return broadcast_like(a, TILE_X)


def f_expand_reduced(d):
    return P.ExpandReduced(False)(d, np.zeros((2, 3, 4)), 1)


def f_check_sens(s):
    return check_sens(s, TILE_X, "output")


HELPERS = [
    Case("Depend", f_depend, [normal((2, 3), 70), normal((4,), 71)], lambda a, b: 3 * a),
    Case("Unbroadcast", f_unbroadcast, [normal((2, 3), 72)],
         lambda d: d.sum(axis=1, keepdims=True)),
    Case("BroadcastLike", f_broadcast_like, [normal((2, 1), 73)],
         lambda a: np.broadcast_to(a, (2, 3))),
    Case("ExpandReduced", f_expand_reduced, [normal((2, 4), 74)], lambda d: d[:, None]),
    Case("CheckSens", f_check_sens, [normal((2, 3), 75)], lambda s: s),
]

CASES = LAYOUT + JOIN + INDEXING + OTHER + HELPERS


def _compare(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
        return
    got = got.asnumpy() if isinstance(got, s2sad.Tensor) else np.asarray(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_eager_matches_numpy(case):
    _compare(case.fn(*case.args), case.ref(*case.args))


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_eager_on_tensors(case):
    out = case.fn(*[s2sad.Tensor(a) for a in case.args])
    leaves = out if isinstance(out, tuple) else (out,)
    assert all(isinstance(t, s2sad.Tensor) for t in leaves)
    _compare(tuple(t.asnumpy() for t in leaves) if isinstance(out, tuple) else out.asnumpy(),
             case.ref(*case.args))


@pytest.mark.parametrize("case", [c for c in CASES if c.vjp], ids=repr)
def test_vjp(case):
    grads = check_vjp(case.fn, case.args)
    for g, a in zip(grads, case.args):
        assert np.shape(g) == np.shape(a)


@pytest.mark.parametrize("case", [c for c in CASES if c.jvp], ids=repr)
def test_jvp(case):
    check_jvp(case.fn, case.args)


# -------------------------------------------- closed forms and dtypes
def f_cast32(x):
    return cast(x, mstype.float32)


def f_cast_int(x, y):
    return cast(x, mstype.int32) * y


def test_cast_gradient_keeps_the_input_dtype():
    x = normal((2, 3), 80).astype(np.float32)
    sens = normal((2, 3), 81)
    (g,) = ops.GradOperation(get_all=True, sens_param=True)(lambda_free_cast64)(x, sens)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, sens.astype(np.float32), rtol=1e-6)
    out = f_cast32(normal((2, 3), 82))
    assert out.dtype == np.float32


def lambda_free_cast64(x):
    return cast(x, mstype.float64)


def test_cast_to_int_has_no_gradient():
    x = normal((2, 3), 83) * 5
    y = normal((2, 3), 84)
    gx, gy = ops.GradOperation(get_all=True)(f_cast_int)(x, y)
    np.testing.assert_array_equal(gx, np.zeros((2, 3)))
    np.testing.assert_array_equal(gy, x.astype(np.int32))
    _, t = s2sad.jvp(f_cast_int, (x, y), (np.ones((2, 3)), np.zeros((2, 3))))
    np.testing.assert_array_equal(t, np.zeros((2, 3)))


def f32_select(x, y):
    return select(COND, x, y * 2.0)


def f32_pad(x):
    return P.Pad(((1, 1), (0, 2)), 0.5)(x)


def f32_one_hot(on, off):
    return P.OneHot()(ONE_HOT_IDX, 3, on, off)


def f32_setitem(x, v):
    return setitem(x, (slice(None), 0), v)


def f32_clip(x):
    return ops.clip_by_value(x, -0.5, 0.5)


def f32_concat(x, y):
    return P.Concat(1)((x, y))


def f32_gather(p):
    return gather(p, GATHER_IDX, 0)


def f32_cast_roundtrip(x):
    return cast(cast(x, mstype.float64) * 2.0, mstype.float32)


def f32_pad_npvalue(x):
    return P.Pad(((1, 1),), np.float64(0.5))(x)


@pytest.mark.parametrize("fn,shapes", [
    (f32_cast_roundtrip, [(2, 3)]), (f32_pad_npvalue, [(2, 3)]),
    (f32_select, [(2, 3), (2, 3)]), (f32_pad, [(2, 3)]), (f32_one_hot, [(), ()]),
    (f32_setitem, [(2, 3), (2,)]), (f32_clip, [(2, 3)]), (f32_concat, [(2, 3), (2, 1)]),
    (f32_gather, [(4, 3)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_float32_stays_float32(fn, shapes):
    """Rules and templates never promote float32 (Python constants stay weak)."""
    args = tuple(normal(s, 85).astype(np.float32) for s in shapes)
    out, t = s2sad.jvp(fn, args, tuple(np.ones_like(a) for a in args))
    assert np.asarray(out).dtype == np.float32
    assert np.asarray(t).dtype == np.float32
    sens = np.ones(np.shape(out), np.float32)
    grads = ops.GradOperation(get_all=True, sens_param=True)(fn)(*args, sens)
    entry = ops.GradOperation(get_all=True, sens_param=True)(fn).compiled(*args, sens)
    raw = entry.fn(*args, *entry.inputs.read(None), sens)
    for g, r in zip(grads, raw):
        assert g.dtype == np.float32
        assert np.asarray(r).dtype == np.float32, fn.__name__


# ---------------------------------------------------- non-differentiable
def f_creation(x):
    z = P.Zeros()((2, 3), mstype.float64)
    o = P.Ones()((2, 3), mstype.float64)
    f = P.Fill()(mstype.float64, (2, 3), 2.5)
    e = P.Eye()(2, 3, mstype.float64)
    return x * (z + o + f + e)


def f_sizes(x):
    return x * P.Size()(x) + x * P.Rank()(x)


def f_zeros_runtime_shape(x):
    return x + P.Zeros()(ops.shape(x), mstype.float64)


def test_creation_primitives_are_constants():
    x = normal((2, 3), 90)
    g = ops.GradOperation()(f_creation)(x)
    np.testing.assert_allclose(g, 3.5 + np.eye(2, 3))
    check_vjp(f_creation, (x,))
    check_jvp(f_creation, (x,))
    np.testing.assert_allclose(ops.GradOperation()(f_zeros_runtime_shape)(x), np.ones((2, 3)))


def test_creation_results():
    for out, want in [(P.Zeros()((2, 3), mstype.float32), np.zeros((2, 3), np.float32)),
                      (P.Ones()(4, mstype.int32), np.ones(4, np.int32)),
                      (P.Fill()(mstype.float16, (2,), 1.5), np.full(2, 1.5, np.float16)),
                      (P.Eye(1)(3, 3, mstype.float64), np.eye(3, k=1)),
                      (ops.zeros((2, 2)), np.zeros((2, 2), np.float32)),
                      (ops.ones(3, mstype.float64), np.ones(3)),
                      (ops.fill(mstype.int64, (2,), 7), np.full(2, 7)),
                      (ops.eye(2), np.eye(2, dtype=np.float32))]:
        assert isinstance(out, s2sad.Tensor)
        assert out.asnumpy().dtype == want.dtype
        np.testing.assert_array_equal(out.asnumpy(), want)


def test_size_and_rank():
    x = normal((2, 3, 4), 91)
    assert P.Size()(x) == 24 and P.Rank()(x) == 3
    assert ops.size(s2sad.Tensor(x)) == 24 and ops.rank(s2sad.Tensor(x)) == 3
    g = ops.GradOperation()(f_sizes)(x)
    np.testing.assert_allclose(g, np.full((2, 3, 4), 27.0))


def test_non_differentiable_classes():
    for cls in (P.Zeros, P.Ones, P.Eye, P.Size, P.Rank, P.Shape, P.ZerosLike,
                P.OnesLike, P.SumSeed, P.ReductionSeed, P.StopGradient, P.ReducedCount):
        assert not cls.differentiable


def test_every_array_primitive_documents_itself():
    from s2sad.ops.operations import array_ops
    for name in array_ops.__all__:
        cls = getattr(array_ops, name)
        assert issubclass(cls, Primitive)
        assert cls.__doc__ and cls.__doc__.strip(), name
        assert isinstance(getattr(cls, "formula", None), str) and cls.formula, name


# ------------------------------------------------------------- clip_by_value
LO = np.array([-0.6, -0.2, -1.5])


def f_clip(x, hi):
    return ops.clip_by_value(x, LO, hi)


def f_clip_scalar(x):
    return ops.clip_by_value(x, -1.0, 1.2)


def f_clip_min_only(x):
    return ops.clip_by_value(x, clip_value_min=0.1)


def f_np_clip(x):
    return np.clip(x, -0.5, 0.9)


def f_method_clip(x):
    return x.clip(-0.4, 0.4)


@pytest.mark.parametrize("fn,args", [
    (f_clip, [distinct((2, 3), 92) * 0.6, np.array([0.25, 0.55, 1.15])]),
    (f_clip_scalar, [distinct((2, 3), 93)]),
    (f_clip_min_only, [distinct((3, 2), 94) * 0.3]),
    (f_np_clip, [distinct((2, 3), 95) * 0.6]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_clip(fn, args):
    check_vjp(fn, args)
    check_jvp(fn, args)


def test_clip_values():
    x = distinct((2, 3), 96)
    np.testing.assert_allclose(f_clip_scalar(x), np.clip(x, -1.0, 1.2))
    np.testing.assert_allclose(f_clip_min_only(x), np.maximum(x, 0.1))
    check_vjp(f_method_clip, (s2sad.Tensor(distinct((2, 3), 97) * 0.3),))
