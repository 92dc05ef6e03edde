"""``rt.einsum_pair``: two-operand einsums as one matrix product, against NumPy's einsum.

The generated code of every two-operand ``np.einsum`` (forward and gradient)
calls it, so its values must be NumPy's up to rounding for any layout of the
operands, and whatever the plan does not cover must still be NumPy's einsum.
"""
import numpy as np
import pytest

import s2sad
from s2sad import runtime as rt
from s2sad.ops import GradOperation
from s2sad.runtime.rt_contract import _pair_plan

from gradcheck import check_vjp

#: explicit subscripts and operand shapes: products, batches, private sums, outputs in any order
PAIRS = [
    ("ij,jk->ik", (3, 4), (4, 2)),
    ("ij,jk->ki", (3, 4), (4, 2)),
    ("ik,jk->ij", (3, 4), (2, 4)),
    ("ik,ij->jk", (3, 4), (3, 2)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    ("bij,bkj->bki", (2, 3, 4), (2, 5, 4)),
    ("ajb,bjc->jca", (2, 3, 4), (4, 3, 5)),
    ("i,j->ij", (3,), (4,)),
    ("i,i->", (4,), (4,)),
    ("ab,cd->", (2, 3), (3, 2)),
    ("ij,ij->ji", (2, 3), (2, 3)),
    ("ijk,jl->lik", (2, 3, 4), (3, 5)),
    ("abc,cba->", (2, 3, 4), (4, 3, 2)),
    ("ij,->ij", (2, 3), ()),
    ("ij,jk->ik", (0, 3), (3, 2)),
    ("ij,jk->ik", (2, 0), (0, 2)),
    ("nhwkc,kco->nhwo", (2, 3, 3, 4, 2), (4, 2, 5)),
    ("nhwo,kco->nhwkc", (2, 3, 3, 5), (4, 2, 5)),
    ("nhwo,nhwkc->kco", (2, 3, 3, 5), (2, 3, 3, 4, 2)),
    # not a plain product: NumPy's einsum does these
    ("ij,ij->ij", (1, 3), (2, 3)),
    ("ii,i->i", (3, 3), (3,)),
    ("...ij,jk->...ik", (2, 3, 4), (4, 2)),
]


def _operand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("subscripts,sa,sb", PAIRS, ids=[p[0] for p in PAIRS])
def test_einsum_pair_is_numpys_einsum(subscripts, sa, sb, dtype):
    a, b = _operand(sa, dtype, 1), _operand(sb, dtype, 2)
    layouts = [(subscripts, a, b)]
    if a.ndim > 1:      # a transposed (non-contiguous) first operand, its term reversed
        ta, rest = subscripts.split(",", 1)
        layouts.append((ta[::-1] + "," + rest, a.T, b))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for spec, x, y in layouts:
        got, want = rt.einsum_pair(spec, x, y), np.einsum(spec, x, y)
        assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_einsum_pair_leaves_other_dtypes_and_mixed_precision_to_numpy():
    a, b = np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(rt.einsum_pair("ij,jk->ik", a, b), a @ b)
    f, d = _operand((2, 3), np.float32, 3), _operand((3, 4), np.float64, 4)
    got = rt.einsum_pair("ij,jk->ik", f, d)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.einsum("ij,jk->ik", f, d), rtol=1e-12)
    with pytest.raises(ValueError):
        rt.einsum_pair("ij,jk->ik", f, _operand((4, 4), np.float32, 5))


def test_im2col_einsums_need_no_copy_of_their_operands():
    # the convolution's forward and both gradients are reshapes of C-ordered operands
    shapes = {"n": 32, "h": 10, "w": 10, "k": 25, "c": 6, "o": 16}
    for spec in ["nhwkc,kco->nhwo", "nhwo,kco->nhwkc", "nhwo,nhwkc->kco"]:
        ta, tb = spec.split("->")[0].split(",")
        plan = _pair_plan(spec, tuple(shapes[c] for c in ta), tuple(shapes[c] for c in tb))
        side_a, side_b, _, _, perm = plan
        assert side_a.perm is None and side_b.perm is None and perm is None, spec


def test_einsum_convolution_gradient_matches_finite_differences():
    def conv(x, w):
        oh = x.shape[1] - 2
        cols = np.stack([x[:, i:i + oh, j:j + oh, :] for i in range(3) for j in range(3)],
                        axis=3)
        y = np.tanh(np.einsum("nhwkc,kco->nhwo", cols, w.reshape(9, w.shape[2], w.shape[3])))
        return np.sum(y * y)
    x, w = _operand((2, 5, 5, 2), np.float64, 6), _operand((3, 3, 2, 3), np.float64, 7)
    check_vjp(conv, (x, w))
    src = s2sad.get_source(GradOperation(get_all=True)(conv), x, w)
    assert "xp.einsum" not in src and src.count("rt.einsum_pair(") == 3


@pytest.mark.parametrize("subscripts,sa,sb", [PAIRS[i] for i in (1, 5, 6, 16)],
                         ids=[PAIRS[i][0] for i in (1, 5, 6, 16)])
def test_einsum_pair_second_order(subscripts, sa, sb):
    def f(a, b):
        q = np.einsum(subscripts, a, b)
        return q * np.sin(q)
    args = (_operand(sa, np.float64, 8), _operand(sb, np.float64, 9))
    s2sad.check_grads(f, args, order=2, modes=("rev", "fwd"))
