"""The second-order cases of the math and array primitives: small float64
functions, each filed under the primitive it stages (``test_second_order.py``).
"""
import numpy as np

from s2sad import dtype as mstype
from s2sad.ops import operations as P


# ------------------------------------------------------------------- inputs
def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def uniform(shape, seed, lo, hi):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def positive(shape, seed):
    return uniform(shape, seed, 0.5, 2.0)


def unit(shape, seed):
    """In (-0.8, 0.8): inside the domains of asin, acos, atanh and away from tan's poles."""
    return uniform(shape, seed, -0.8, 0.8)


def away_from(shape, seed, points=(0.0,), gap=0.15, scale=2.0):
    """Normals (times ``scale``) at least ``gap`` away from every point in ``points``."""
    x = scale * normal(shape, seed)
    for p in points:
        close = np.abs(x - p) < gap
        x = np.where(close, p + np.where(x >= p, 2 * gap, -2 * gap), x)
    return x


def off_integers(shape, seed):
    """k + f with f in [0.2, 0.8]: at least 0.2 from the jumps of floor and ceil."""
    rng = np.random.default_rng(seed)
    return rng.integers(-3, 3, shape) + rng.uniform(0.2, 0.8, shape)


def off_half_integers(shape, seed):
    """k + f with |f| <= 0.3: at least 0.2 from the jumps of round."""
    rng = np.random.default_rng(seed)
    return rng.integers(-3, 3, shape) + rng.uniform(-0.3, 0.3, shape)


def nonzero(shape, seed):
    """Magnitudes in [0.5, 1.5] with either sign (divisors)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, shape) * np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def distinct(shape, seed):
    """A permutation of values 0.1 apart: no ties for max/min/pooling."""
    n = int(np.prod(shape)) if shape else 1
    vals = np.random.default_rng(seed).permutation(n) * 0.1 - 0.05 * n + 0.025
    return vals.reshape(shape)


def well_conditioned(shape, seed):
    return 0.5 * normal(shape, seed) + 3.0 * np.eye(shape[-1])


def probabilities(shape, seed):
    p = uniform(shape, seed, 0.1, 1.0)
    return p / p.sum(axis=-1, keepdims=True)


def quotient_pair(xshape, yshape, seed):
    """(x, y) with x / y = k + f, f in [0.2, 0.8]: clear of Mod's and FloorDiv's jumps."""
    y = nonzero(yshape, seed)
    shape = np.broadcast_shapes(xshape, yshape)
    q = off_integers(shape, seed + 1)
    x = q * y
    assert x.shape == tuple(xshape)
    return x, y


def untied(x, y):
    """(x, y + shift) with every broadcast pair at least 0.025 apart (no ties for max/min)."""
    for shift in (0.0, 0.05):
        if np.min(np.abs(x - (y + shift))) >= 0.025:
            return x, y + shift
    raise AssertionError("no untied shift")


class Case:
    """``check_grads(fn, args, order=2)`` for a function filed under primitive ``prim``."""

    def __init__(self, prim, fn, args, variant=""):
        self.prim = prim
        self.fn = fn
        self.args = tuple(args)
        self.id = prim + ("-" + variant if variant else "")

    def __repr__(self):
        return self.id


sin = P.Sin()
cos = P.Cos()
tanh = P.Tanh()


def wiggle(q):
    """A smooth nonlinearity with a non-zero second derivative: q * sin(q)."""
    return q * sin(q)


# =================================================================== math
def unary(prim):
    """``x -> prim(x) * sin(x)``: f'' = prim'' sin + 2 prim' cos - prim sin."""
    def f_unary(x):
        return prim(x) * sin(x)
    return f_unary


def binary(prim):
    """``(x, y) -> prim(x, y) * sin(x) * cos(y)`` (broadcasting)."""
    def f_binary(x, y):
        return prim(x, y) * sin(x) * cos(y)
    return f_binary


def bilinear(prim):
    """``(x, y) -> wiggle(prim(x, y))`` for products."""
    def f_product(x, y):
        return wiggle(prim(x, y))
    return f_product


# MatMulGradA(d, x, y) reads only x's shape, MatMulGradB(d, x, y) only y's
_GA_X, _GA_XV = np.zeros((2, 3)), np.zeros(3)
_GB_Y, _GB_YB = np.zeros((3, 4)), np.zeros((3, 4))


def grad_a_with(x_shape_source):
    def f_grad_a(d, y):
        return wiggle(P.MatMulGradA()(d, x_shape_source, y))
    return f_grad_a


def grad_b_with(y_shape_source):
    def f_grad_b(d, x):
        return wiggle(P.MatMulGradB()(d, x, y_shape_source))
    return f_grad_b


# DotGradA/B, as MatMulGradA/B, with np.dot's contractions: a 0-D x, a 3-D y
_DA_X, _DA_X0 = np.zeros((2, 3)), np.zeros(())
_DB_Y, _DB_YV = np.zeros((2, 3, 4)), np.zeros(3)


def dot_grad_a_with(x_shape_source):
    def f_dot_grad_a(d, y):
        return wiggle(P.DotGradA()(d, x_shape_source, y))
    return f_dot_grad_a


def dot_grad_b_with(y_shape_source):
    def f_dot_grad_b(d, x):
        return wiggle(P.DotGradB()(d, x, y_shape_source))
    return f_dot_grad_b


UNARY = [
    ("Neg", normal), ("Sin", normal), ("Cos", normal), ("Tan", unit), ("Exp", normal),
    ("Expm1", normal), ("Log", positive), ("Log1p", positive), ("Tanh", normal),
    ("Sinh", normal), ("Cosh", normal), ("Asin", unit), ("Acos", unit), ("Atan", normal),
    ("Asinh", normal), ("Acosh", lambda s, k: uniform(s, k, 1.2, 3.0)), ("Atanh", unit),
    ("Sqrt", positive), ("Rsqrt", positive), ("Reciprocal", nonzero), ("Square", normal),
    ("Abs", away_from), ("Erf", normal), ("Erfc", normal), ("Floor", off_integers),
    ("Ceil", off_integers), ("Round", off_half_integers),
]

MATH = [Case(name, unary(getattr(P, name)()), [gen((2, 3), i)])
        for i, (name, gen) in enumerate(UNARY)]

MATH += [
    Case("Add", binary(P.Add()), [normal((2, 3), 40), normal((3,), 41)], "broadcast"),
    Case("Sub", binary(P.Sub()), [normal((2, 1), 42), normal((1, 3), 43)], "broadcast"),
    Case("Mul", binary(P.Mul()), [normal((2, 3), 44), normal((2, 3), 45)]),
    Case("Mul", binary(P.Mul()), [normal((), 44), normal((2, 3), 45)], "scalar"),
    Case("RealDiv", binary(P.RealDiv()), [normal((2, 3), 46), nonzero((3,), 47)], "broadcast"),
    Case("Pow", binary(P.Pow()), [positive((2, 3), 48), 0.7 * normal((2, 3), 49)]),
    Case("Pow", binary(P.Pow()), [positive((2, 3), 48), 0.7 * normal((1, 3), 49)],
         "broadcast"),
    Case("FloorDiv", binary(P.FloorDiv()), quotient_pair((2, 3), (2, 3), 50)),
    Case("Mod", binary(P.Mod()), quotient_pair((2, 3), (3,), 51), "broadcast"),
    Case("Atan2", binary(P.Atan2()), [away_from((2, 3), 52), away_from((2, 3), 53)]),
    Case("Maximum", binary(P.Maximum()), untied(distinct((2, 3), 54), distinct((3,), 55)),
         "broadcast"),
    Case("Minimum", binary(P.Minimum()), untied(distinct((2, 3), 56), distinct((2, 3), 57))),
    Case("LogAddExp", binary(P.LogAddExp()), [normal((2, 3), 58), normal((3,), 59)],
         "broadcast"),
    Case("LogAddExp2", binary(P.LogAddExp2()), [normal((2, 3), 60), normal((2, 3), 61)]),
]

MATH += [
    Case("MatMul", bilinear(P.MatMul()), [normal((2, 3), 60), normal((3, 4), 61)]),
    Case("MatMul", bilinear(P.MatMul(True, False)), [normal((3, 2), 60), normal((3, 4), 61)],
         "ta"),
    Case("MatMul", bilinear(P.MatMul(False, True)), [normal((2, 3), 60), normal((4, 3), 61)],
         "tb"),
    Case("MatMul", bilinear(P.MatMul(True, True)), [normal((3, 2), 60), normal((4, 3), 61)],
         "ta-tb"),
    Case("MatMulExt", bilinear(P.MatMulExt()), [normal((3,), 62), normal((3, 2), 63)],
         "vector"),
    Case("MatMulExt", bilinear(P.MatMulExt()), [normal((2, 2, 3), 62), normal((3, 4), 63)],
         "batch"),
    Case("BatchMatMul", bilinear(P.BatchMatMul()), [normal((2, 2, 3), 64),
                                                    normal((2, 3, 2), 65)]),
    Case("BatchMatMul", bilinear(P.BatchMatMul(True, True)),
         [normal((2, 3, 2), 64), normal((1, 2, 3), 65)], "ta-tb-broadcast"),
    Case("Dot", bilinear(P.Dot()), [normal((3,), 66), normal((3,), 67)], "vectors"),
    Case("Dot", bilinear(P.Dot()), [normal((2, 3), 66), normal((3,), 67)], "matrix-vector"),
    Case("Dot", bilinear(P.Dot()), [np.array(0.7), normal((2, 3), 67)], "0-d"),
    Case("Dot", bilinear(P.Dot()), [normal((2, 3), 66), normal((2, 3, 4), 67)], "3-d"),
    Case("DotGradA", dot_grad_a_with(_DA_X), [normal((2, 2, 4), 95), normal((2, 3, 4), 96)]),
    Case("DotGradA", dot_grad_a_with(_DA_X0), [normal((3,), 95), normal((3,), 96)], "0-d"),
    Case("DotGradB", dot_grad_b_with(_DB_Y), [normal((2, 2, 4), 97), normal((2, 3), 98)]),
    Case("DotGradB", dot_grad_b_with(_DB_YV), [normal((2,), 97), normal((2, 3), 98)],
         "vector"),
    Case("Outer", bilinear(P.Outer()), [normal((3,), 68), normal((2, 2), 69)]),
    Case("Tensordot", bilinear(P.Tensordot(1)), [normal((2, 3), 70), normal((3, 4), 71)]),
    Case("Tensordot", bilinear(P.Tensordot(((0, 2), (1, 0)))),
         [normal((2, 3, 2), 70), normal((2, 2, 3), 71)], "pairs"),
    Case("TensordotGradA", bilinear(P.TensordotGradA(1)),
         [normal((2, 4), 72), normal((3, 4), 73)]),
    Case("TensordotGradB", bilinear(P.TensordotGradB(1)),
         [normal((2, 3), 74), normal((2, 4), 75)]),
    Case("MatMulGradA", grad_a_with(_GA_X), [normal((2, 4), 91), normal((3, 4), 92)]),
    Case("MatMulGradA", grad_a_with(_GA_XV), [normal((4,), 91), normal((3, 4), 92)], "vector"),
    Case("MatMulGradB", grad_b_with(_GB_Y), [normal((2, 4), 93), normal((2, 3), 94)]),
    Case("MatMulGradB", grad_b_with(_GB_YB), [normal((2, 2, 4), 93), normal((2, 3), 94)],
         "batch"),
    Case("MatrixInverse", unary(P.MatrixInverse()), [well_conditioned((3, 3), 76)]),
    Case("MatrixInverse", unary(P.MatrixInverse(True)), [well_conditioned((2, 3, 3), 77)],
         "adjoint-batch"),
    Case("MatrixDeterminant", unary(P.MatrixDeterminant()), [well_conditioned((3, 3), 78)]),
]


def reduction(prim, axis):
    def f_reduce(x):
        return wiggle(prim(x, axis))
    return f_reduce


def arg_value(prim):
    def f_arg_value(x):
        return wiggle(prim(x)[1])
    return f_arg_value


def cumsum(prim, axis):
    def f_cumsum(x):
        return wiggle(prim(x, axis))
    return f_cumsum


ONE_ZERO = normal((3, 4), 89)
ONE_ZERO[1, 2] = 0.0

MATH += [
    Case("ReduceSum", reduction(P.ReduceSum(), ()), [normal((2, 3), 80)], "all"),
    Case("ReduceSum", reduction(P.ReduceSum(True), 1), [normal((2, 3), 80)], "keep"),
    Case("ReduceMean", reduction(P.ReduceMean(), 0), [normal((2, 3), 81)]),
    Case("ReduceMean", reduction(P.ReduceMean(True), (0, 2)), [normal((2, 3, 2), 81)],
         "keep-pair"),
    Case("ReduceMax", reduction(P.ReduceMax(), 1), [distinct((3, 4), 82)]),
    Case("ReduceMax", reduction(P.ReduceMax(True), ()), [distinct((3, 4), 82)], "keep-all"),
    Case("ReduceMin", reduction(P.ReduceMin(), -1), [distinct((3, 4), 83)]),
    Case("ReduceProd", reduction(P.ReduceProd(), 1), [normal((3, 4), 84)]),
    Case("ReduceProd", reduction(P.ReduceProd(True), ()), [positive((2, 3), 84)], "keep-all"),
    # exactly one zero: the product is a polynomial there, so finite differences
    # are exact and the rule must not divide by the zero
    Case("ReduceProd", reduction(P.ReduceProd(), 1), [ONE_ZERO], "one-zero"),
    Case("CumSum", cumsum(P.CumSum(), 1), [normal((2, 4), 85)]),
    Case("CumSum", cumsum(P.CumSum(True, True), 0), [normal((3, 2), 85)],
         "exclusive-reverse"),
    Case("LogSumExp", reduction(P.LogSumExp(), 1), [normal((3, 4), 86)]),
    Case("SumSquares", unary(P.SumSquares()), [normal((2, 3), 90)]),
    Case("LogSumExp", reduction(P.LogSumExp(True), ()), [normal((3, 4), 86)], "keep-all"),
    Case("ArgMaxWithValue", arg_value(P.ArgMaxWithValue(1)), [distinct((3, 4), 87)]),
    Case("ArgMaxWithValue", arg_value(P.ArgMaxWithValue(0, True)), [distinct((3, 4), 87)],
         "keep"),
    Case("ArgMinWithValue", arg_value(P.ArgMinWithValue(-1)), [distinct((3, 4), 88)]),
]


# ================================================================== array
def structural(prim, *consts):
    """``x -> wiggle(prim(x, *consts))``."""
    def f_structural(x):
        return wiggle(prim(x, *consts))
    return f_structural


def with_shape_input(prim, *consts):
    """``(d, like) -> wiggle(prim(d, like, *consts))``: ``like`` only lends its shape or
    dtype, so its gradient must be zero (and is checked to be)."""
    def f_with_shape_input(d, like):
        return wiggle(prim(d, like, *consts))
    return f_with_shape_input


def f_fill(x):
    """``np.full`` with a traced fill value broadcast along a new axis."""
    return wiggle(P.Fill()(mstype.float64, (2, 3), x))


GATHER_IDX = np.array([[0, 2], [3, 3]])        # a repeated index: adjoints add up
ND_IDX = np.array([[0, 1], [2, 3], [0, 1]])
ROW_IDX = np.array([[2], [0]])
UNIQUE_IDX = np.array([[0, 1], [2, 3], [1, 0]])
INT_IDX = np.array([2, 0])
REPEAT_IDX = np.array([2, 0, -1])      # -1 and 2 name one row: the last write wins
MASK = np.array([[True, False, True, False], [False, False, True, True],
                 [True, True, False, False]])
COND = np.array([[True, False, True], [False, True, True]])
ONE_HOT_IDX = np.array([[0, 2], [1, 1]])
ONE_HOT_WEIGHT = np.arange(1.0, 13.0).reshape(2, 2, 3) / 6.0
LIKE_23 = np.zeros((2, 3))

concat1 = P.Concat(1)
hstack = P.Concat("hstack")
stack = P.Stack(-1)
unstack = P.Unstack(1, 3)
split = P.Split(0, 2)
split_like = P.SplitLike(1, 2)
setitem = P.SetItem()
setitem_value_grad = P.SetItemValueGrad()
gather = P.Gather()
gather_nd = P.GatherNd()
scatter_nd = P.ScatterNd()
tensor_scatter_add = P.TensorScatterAdd()
tensor_scatter_update = P.TensorScatterUpdate()
select = P.Select()
one_hot = P.OneHot()
cast = P.Cast()
depend = P.Depend()
check_sens = P.CheckSens()


def f_concat(x, y):
    return wiggle(concat1((x, y)))


def f_hstack(x, y):
    return wiggle(hstack((x, y)))


def f_stack(x, y):
    return wiggle(stack((x, y * y)))


def f_unstack(x):
    a, b, c = unstack(x)
    return a * sin(b) + c * c


def f_split(x):
    a, b = split(x)
    return a * cos(b)


def f_split_like(x, a, b):
    p, q = split_like(x, (a, b))
    return wiggle(p).sum() * q


def f_setitem_slice(x, v):
    return wiggle(setitem(x, (slice(None), 1), v))


def f_setitem_mask(x, v):
    return wiggle(setitem(x, MASK, v))


def f_setitem_repeat(x, v):
    return wiggle(setitem(x, (REPEAT_IDX, slice(1, 3)), v))


def f_setitem_value_grad(d):
    return wiggle(setitem_value_grad(d, REPEAT_IDX))


def f_gather(p):
    return wiggle(gather(p, GATHER_IDX, 0))


def f_gather_axis1(p):
    return wiggle(gather(p, INT_IDX, 1))


def f_gather_nd(x):
    return wiggle(gather_nd(x, ND_IDX))


def f_gather_nd_rows(x):
    return wiggle(gather_nd(x, ROW_IDX))


def f_scatter_nd(u):
    return wiggle(scatter_nd(ND_IDX, u, (3, 4)))


def f_tensor_scatter_add(x, u):
    return wiggle(tensor_scatter_add(x, ND_IDX, u))


def f_tensor_scatter_update(x, u):
    return wiggle(tensor_scatter_update(x, UNIQUE_IDX, u))


def f_select(x, y):
    return wiggle(select(COND, x, y))


def f_select_broadcast(x, y):
    return wiggle(select(COND, x, y)) * x


def f_one_hot(on, off):
    return wiggle(one_hot(ONE_HOT_IDX, 3, on, off) * ONE_HOT_WEIGHT)


def f_cast(x):
    return wiggle(cast(x, mstype.float64))


def f_cast_np(x):
    return wiggle(cast(x * 2.0, np.float64))


def f_depend(a, b):
    return depend(wiggle(a), b * b)


def f_check_sens(s, out):
    return wiggle(check_sens(s, out, "output"))


ARRAY = [
    Case("Reshape", structural(P.Reshape(), (3, -1)), [normal((2, 3, 2), 100)]),
    Case("Transpose", structural(P.Transpose(), (2, 0, 1)), [normal((2, 3, 4), 101)]),
    Case("TransposeT", structural(P.TransposeT()), [normal((2, 3), 102)]),
    Case("ExpandDims", structural(P.ExpandDims(), -1), [normal((2, 3), 103)]),
    Case("Squeeze", structural(P.Squeeze(1)), [normal((2, 1, 3), 104)]),
    Case("Squeeze", structural(P.Squeeze()), [normal((1, 3, 1), 104)], "all"),
    Case("Flatten", structural(P.Flatten()), [normal((2, 3, 2), 105)]),
    Case("Flatten", structural(P.Flatten(1, 2)), [normal((2, 3, 2, 2), 105)], "middle"),
    Case("SwapAxes", structural(P.SwapAxes(0, 2)), [normal((2, 3, 4), 106)]),
    Case("MoveAxis", structural(P.MoveAxis(0, -1)), [normal((2, 3, 4), 107)]),
    Case("ReverseV2", structural(P.ReverseV2((0, 2))), [normal((2, 3, 2), 108)]),
    Case("BroadcastTo", structural(P.BroadcastTo((2, 3, 4))), [normal((3, 1), 109)]),
    Case("Fill", f_fill, [normal((3,), 133)]),
    Case("Tile", structural(P.Tile(), (2, 1)), [normal((2, 3), 110)]),
    Case("Tile", structural(P.Tile(), (2, 2)), [normal((3,), 110)], "grow"),
    Case("TileGrad", with_shape_input(P.TileGrad(), (2, 1)),
         [normal((4, 3), 111), normal((2, 3), 112)]),
    Case("Repeat", structural(P.Repeat(2, 1)), [normal((2, 3), 113)]),
    Case("Repeat", structural(P.Repeat(3)), [normal((2, 2), 113)], "flat"),
    Case("RepeatGrad", with_shape_input(P.RepeatGrad(2, 1)),
         [normal((2, 6), 114), normal((2, 3), 115)]),
    Case("Concat", f_concat, [normal((2, 3), 116), normal((2, 1), 117)]),
    Case("Concat", f_hstack, [normal((2,), 116), normal((3,), 117)], "hstack"),
    Case("SplitLike", f_split_like, [normal((2, 5), 118), normal((2, 3), 119),
                                     normal((2, 2), 120)]),
    Case("Stack", f_stack, [normal((2, 3), 121), normal((2, 3), 122)]),
    Case("Unstack", f_unstack, [normal((2, 3), 123)]),
    Case("Split", f_split, [normal((4, 3), 124)]),
    Case("Slice", structural(P.Slice(), (1, 0), (2, -1)), [normal((3, 4), 125)]),
    Case("StridedSlice", structural(P.StridedSlice(), (0, 1), (4, 5), (2, 2)),
         [normal((4, 5), 126)]),
    Case("StridedSlice", structural(P.StridedSlice(shrink_axis_mask=1), (1, 0), (2, 5),
                                    (1, 1)), [normal((4, 5), 126)], "shrink"),
    Case("StridedSlice", structural(P.StridedSlice(), (3, 0), (0, 5), (-1, 2)),
         [normal((4, 5), 126)], "negative-stride"),
    Case("GetItem", structural(P.GetItem(), (slice(None), 1)), [normal((3, 4), 127)]),
    Case("GetItem", structural(P.GetItem(), INT_IDX), [normal((3, 4), 127)], "int-array"),
    Case("GetItemGrad", with_shape_input(P.GetItemGrad(), (slice(None), slice(1, 3))),
         [normal((2, 2), 128), normal((2, 3), 129)]),
    Case("SetItem", f_setitem_slice, [normal((3, 4), 130), normal((3,), 131)], "slice"),
    Case("SetItem", f_setitem_mask, [normal((3, 4), 130), normal((6,), 131)], "mask"),
    Case("SetItem", f_setitem_repeat, [normal((3, 4), 130), normal((3, 2), 131)], "repeat"),
    Case("SetItemValueGrad", f_setitem_value_grad, [normal((3, 4), 130)]),
    Case("Gather", f_gather, [normal((4, 3), 132)]),
    Case("Gather", f_gather_axis1, [normal((4, 3), 132)], "axis1"),
    Case("GatherGrad", with_shape_input(P.GatherGrad(), GATHER_IDX, 0),
         [normal((2, 2, 3), 133), normal((4, 3), 134)]),
    Case("GatherNd", f_gather_nd, [normal((3, 4), 135)]),
    Case("GatherNd", f_gather_nd_rows, [normal((3, 4), 135)], "rows"),
    Case("ScatterNd", f_scatter_nd, [normal((3,), 136)]),
    Case("TensorScatterAdd", f_tensor_scatter_add, [normal((3, 4), 137), normal((3,), 138)]),
    Case("TensorScatterUpdate", f_tensor_scatter_update,
         [normal((3, 4), 139), normal((3,), 140)]),
    Case("Select", f_select, [normal((2, 3), 141), normal((2, 3), 142)]),
    Case("Select", f_select_broadcast, [normal((2, 3), 141), normal((), 142)], "broadcast"),
    Case("Pad", structural(P.Pad(((1, 0), (2, 1)))), [normal((2, 3), 143)]),
    Case("Pad", structural(P.Pad(((1, 2),), 1.5)), [normal((2, 3), 143)], "value"),
    Case("Pad", structural(P.Pad(((1, 1),), 0, True)), [normal((2, 3), 143)], "broadcast"),
    Case("PadCrop", structural(P.PadCrop(((1, 0), (2, 1)))), [normal((3, 6), 144)]),
    Case("OneHot", f_one_hot, [np.float64(0.7), np.float64(-0.3)]),
    Case("Cast", f_cast, [normal((2, 3), 145)], "mstype"),
    Case("Cast", f_cast_np, [normal((2, 3), 145)], "numpy-dtype"),
    Case("CastLike", with_shape_input(P.CastLike()), [normal((2, 3), 146),
                                                       normal((2, 3), 147)]),
    Case("Identity", structural(P.Identity()), [normal((2, 3), 148)]),
    Case("Depend", f_depend, [normal((2, 3), 149), normal((4,), 150)]),
    Case("Unbroadcast", with_shape_input(P.Unbroadcast()), [normal((2, 3), 151),
                                                             normal((2, 1), 152)]),
    Case("BroadcastLike", with_shape_input(P.BroadcastLike()), [normal((2, 1), 153),
                                                                 normal((2, 3), 154)]),
    Case("ExpandReduced", with_shape_input(P.ExpandReduced(False), 1),
         [normal((2, 4), 155), normal((2, 3, 4), 156)]),
    Case("CheckSens", f_check_sens, [normal((2, 3), 157), normal((2, 3), 158)]),
]


# ============================================================== contraction
def contraction(prim):
    """``operands -> wiggle(prim(*operands))``: any number of operands."""
    def f_contraction(*xs):
        return wiggle(prim(*xs))
    return f_contraction


CONTRACT = [
    Case("Einsum", contraction(P.Einsum("ij,jk->ik")), [normal((2, 3), 170),
                                                         normal((3, 4), 171)], "matmul"),
    Case("Einsum", contraction(P.Einsum("ii,i")), [normal((3, 3), 172), normal((3,), 173)],
         "diagonal"),
    Case("Einsum", contraction(P.Einsum("...ij,jk,...k->...i")),
         [normal((2, 3, 4), 174), normal((4, 2), 175), normal((1, 2), 176)], "three"),
    Case("EinsumExpand", with_shape_input(P.EinsumExpand("j", "iij")),
         [normal((2,), 177), normal((3, 3, 2), 178)], "diagonal"),
    Case("EinsumExpand", with_shape_input(P.EinsumExpand("...i", "...ik")),
         [normal((2, 3), 179), normal((4, 1, 3, 2), 180)], "ellipsis"),
    Case("Diagonal", contraction(P.Diagonal(1, 0, 2)), [normal((3, 2, 4), 181)]),
    Case("DiagonalGrad", with_shape_input(P.DiagonalGrad(-1, 1, 2)),
         [normal((2, 2), 182), normal((2, 3, 2), 183)]),
    Case("Diag", contraction(P.Diag(1)), [normal((3,), 184)], "vector"),
    Case("Diag", contraction(P.Diag(-1)), [normal((3, 4), 185)], "matrix"),
    Case("DiagGrad", with_shape_input(P.DiagGrad(1)), [normal((4, 4), 186),
                                                         normal((3,), 187)], "vector"),
    Case("DiagGrad", with_shape_input(P.DiagGrad(-1)), [normal((2,), 188),
                                                          normal((3, 2), 189)], "matrix"),
    Case("Tri", contraction(P.Tri(-1, False)), [normal((2, 3, 3), 190)], "tril"),
    Case("Tri", contraction(P.Tri(1, True)), [normal((3, 4), 191)], "triu"),
]

CONTRACT += [
    Case("Kron", bilinear(P.Kron()), [normal((2, 3), 192), normal((3,), 193)]),
    Case("KronGradA", contraction(P.KronGradA()), [normal((1, 6), 194), np.zeros((3,)),
                                                   normal((1, 2), 195)]),
    Case("KronGradB", contraction(P.KronGradB()), [normal((4, 6), 196), normal((2, 3), 197),
                                                   np.zeros((2, 2))]),
]


# ============================================================ elementwise
def _scipy_special_cases():
    """Gammaln and Polygamma compute through SciPy at run time: cases only where it is."""
    try:
        import scipy.special  # noqa: F401 -- only whether it imports
    except ImportError:
        return []
    return [Case("Gammaln", unary(P.Gammaln()), [positive((2, 3), 208)]),
            Case("Polygamma", unary(P.Polygamma(1)), [positive((2, 3), 209)])]


ELEMENTWISE = [
    Case("Hypot", binary(P.Hypot()), [nonzero((2, 3), 200), nonzero((3,), 201)]),
    Case("Sinc", unary(P.Sinc()), [away_from((2, 3), 202)]),
    Case("SincSlope", unary(P.SincSlope()), [away_from((2, 3), 203)]),
    Case("Cbrt", unary(P.Cbrt()), [nonzero((2, 3), 204)]),
    Case("Copysign", binary(P.Copysign()), [nonzero((2, 3), 205), nonzero((2, 3), 206)]),
    Case("Heaviside", binary(P.Heaviside()), [nonzero((2, 3), 207), normal((2, 3), 210)]),
    Case("NanToNum", unary(P.NanToNum()), [normal((2, 3), 211)]),
    Case("CheckReal", unary(P.CheckReal("np.real")), [normal((2, 3), 212)]),
    Case("CumProd", structural(P.CumProd(1)), [nonzero((2, 3), 213)]),
    Case("Xlogy", binary(P.Xlogy()), [nonzero((2, 3), 214), positive((2, 3), 215)]),
    Case("Xdivy", binary(P.Xdivy()), [nonzero((2, 3), 216), nonzero((2, 3), 217)]),
] + _scipy_special_cases()
# ---------------------------------------------------------------- arrange
SORT_BY = P.SortIndex(1)
TAKE_ALONG_IDX = np.array([[0, 2, 2], [1, 0, 1]])


def f_array_split(x):
    a, b = P.Rearrange("array_split", 2, indices_or_sections=2, axis=1)(x)
    return wiggle(a), wiggle(b)


def f_sort_along(x):
    return wiggle(P.TakeAlongAxis(1)(x, SORT_BY(x)))


def f_take_along(x):
    return wiggle(P.TakeAlongAxis(1)(x, TAKE_ALONG_IDX))


def f_take_along_grad(d, like):
    return wiggle(P.TakeAlongAxisGrad(1)(d, like, TAKE_ALONG_IDX))


ARRAY += [
    Case("Rearrange", structural(P.Rearrange("roll", shift=1, axis=0)), [normal((3, 2), 160)]),
    Case("Rearrange", structural(P.Rearrange("pad", pad_width=((1, 2), (0, 1)),
                                             mode="reflect")), [normal((3, 3), 161)], "pad"),
    Case("Rearrange", f_array_split, [normal((2, 3), 162)], "split"),
    Case("RearrangeGrad", with_shape_input(P.RearrangeGrad("sliding_window_view",
                                                           window_shape=2, axis=None)),
         [normal((3, 2), 163), normal((4,), 164)]),
    Case("TakeAlongAxis", f_sort_along, [distinct((2, 3), 165)], "sort"),
    Case("TakeAlongAxis", f_take_along, [normal((2, 3), 166)]),
    Case("TakeAlongAxisGrad", f_take_along_grad, [normal((2, 3), 167), normal((2, 3), 168)]),
]


# ---------------------------------------------------------------- special
def f_gammainc(x):
    return P.Gammainc()(1.7, x) * sin(x)


def f_gammaincc(x):
    return P.Gammaincc()(0.8, x) * sin(x)


def f_betainc(x):
    return P.Betainc()(2.5, 1.5, x) * sin(x)


def f_stdtr(x):
    return P.Stdtr()(3.5, x) * sin(x)


def f_bessel_jv(x):
    return P.Bessel("jv")(1.5, x) * sin(x)


def f_bessel_yv(x):
    return P.Bessel("yv")(2, x) * sin(x)


def f_bessel_iv(x):
    return P.Bessel("iv")(0, x) * sin(x)


def f_bessel_ive(x):
    return P.Bessel("ive")(1, x) * sin(x)


def structural3(prim):
    """``(a, b, c) -> wiggle(prim(a, b, c))``."""
    def f_structural3(a, b, c):
        return wiggle(prim(a, b, c))
    return f_structural3


CONV_A = np.zeros((4, 3))      # lend their shapes only
CONV_B = np.zeros((2, 2))


def f_convolve_crop(g):
    return wiggle(P.ConvolveCrop("same")(g, CONV_A, CONV_B))


def f_convolve_pad(d):
    return wiggle(P.ConvolvePad("valid")(d, CONV_A, CONV_B))


def f_sqrtm(m):
    return wiggle(P.Sqrtm()(m @ m.T + 3.0 * np.eye(3)))


def _special_cases():
    """The primitives of special_ops compute through SciPy at run time: cases only
    where it is installed (``NoGradient`` refuses every derivative: no case)."""
    try:
        import scipy.special  # noqa: F401 -- only whether it imports
    except ImportError:
        return []
    return [Case("Gamma", unary(P.Gamma()), [positive((2, 3), 230)]),
            Case("Rgamma", unary(P.Rgamma()), [positive((2, 3), 231)]),
            Case("Erfinv", unary(P.Erfinv()), [unit((2, 3), 232)]),
            Case("Erfcinv", unary(P.Erfcinv()), [uniform((2, 3), 233, 0.2, 1.8)]),
            Case("LogNdtr", unary(P.LogNdtr()), [normal((2, 3), 234)]),
            Case("Gammainc", f_gammainc, [positive((2, 3), 235)]),
            Case("Gammaincc", f_gammaincc, [positive((2, 3), 236)]),
            Case("Betainc", f_betainc, [uniform((2, 3), 237, 0.2, 0.8)]),
            Case("Stdtr", f_stdtr, [normal((2, 3), 238)]),
            Case("Bessel", f_bessel_jv, [positive((2, 3), 239)], "jv"),
            Case("Bessel", f_bessel_yv, [positive((2, 3), 240)], "yv"),
            Case("Bessel", f_bessel_iv, [positive((2, 3), 241)], "iv"),
            Case("Bessel", f_bessel_ive, [nonzero((2, 3), 242)], "ive"),
            Case("Convolve", bilinear(P.Convolve("same")), [normal((4, 3), 243),
                                                             normal((2, 2), 244)], "same"),
            Case("Convolve", bilinear(P.Convolve("valid")), [normal((2, 3), 245),
                                                              normal((4, 4), 246)], "valid"),
            Case("ConvolveCrop", f_convolve_crop, [normal((5, 4), 247)]),
            Case("ConvolvePad", f_convolve_pad, [normal((3, 2), 248)]),
            Case("SolveSylvester", structural3(P.SolveSylvester()),
                 [normal((3, 3), 249), normal((3, 3), 250) + 4.0 * np.eye(3),
                  normal((3, 3), 251)]),
            Case("Sqrtm", f_sqrtm, [normal((3, 3), 252)])]


SPECIAL = _special_cases()


# ================================================================== fft
def spectrum(prim):
    """``x -> wiggle(re + im of prim(x))``: a real objective of a transform of real
    inputs (compiled in complex mode, as a program using np.fft is)."""
    real, imag = P.Real(), P.Imag()

    def f_spectrum(x):
        y = prim(x)
        return wiggle(real(y) + imag(y))
    return f_spectrum


FFT = [
    Case("FFT", spectrum(P.FFT("fftn", (-1,), (5,), "ortho")), [normal((2, 4), 400)], "pad"),
    Case("FFT", spectrum(P.FFT("ifftn", (0, 1), (2, 3))), [normal((3, 4), 401)], "crop"),
    Case("FFT", spectrum(P.FFT("rfftn", (-1,), (5,), "forward")), [normal((2, 4), 402)],
         "rfft"),
    Case("FFT", spectrum(P.FFT("irfftn", (0, 1), (3, 5))), [normal((3, 4), 403)], "irfft"),
    Case("FFTFit", with_shape_input(P.FFTFit((-1,))), [normal((2, 5), 404),
                                                       normal((2, 3), 405)]),
    Case("FFTShift", structural(P.FFTShift((0,))), [normal((3, 4), 406)]),
    Case("FFTShift", structural(P.FFTShift(None, True)), [normal((3, 5), 407)], "inverse"),
]
