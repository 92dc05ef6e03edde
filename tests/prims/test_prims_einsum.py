"""``np.einsum`` (the ``Einsum`` and ``EinsumExpand`` primitives): every subscript
form against float64 central finite differences in reverse and forward mode,
second order, and values and dtypes equal to NumPy's.
"""
import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError
from s2sad.ops import GradOperation
from s2sad.ops import operations as P

from gradcheck import check_jvp, check_vjp


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


#: (subscripts, operand shapes): each form NumPy's einsum accepts
FORMS = [
    ("ij,jk->ik", [(3, 4), (4, 2)]),                      # matmul
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),             # batched matmul
    ("ii", [(3, 3)]),                                     # trace (implicit output)
    ("ii->", [(3, 3)]),                                   # trace (explicit)
    ("ii->i", [(3, 3)]),                                  # diagonal
    ("iii->i", [(2, 2, 2)]),                              # a thrice repeated index
    ("iij->j", [(3, 3, 2)]),                              # diagonal summed, one kept
    ("ii,i->i", [(3, 3), (3,)]),                          # diagonal times a vector
    ("i,j->ij", [(3,), (4,)]),                            # outer product
    ("i,i->", [(4,), (4,)]),                              # dot product
    ("ij->", [(3, 4)]),                                   # sum of everything
    ("ij->ji", [(3, 4)]),                                 # transpose
    ("ijk->kj", [(2, 3, 4)]),                             # an index only one operand has
    ("ab,cd->", [(2, 3), (3, 2)]),                        # two independent sums
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 2)]),          # ellipsis, different ranks
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),    # ellipsis broadcasting 1 -> 5
    ("...ij,jk->...ik", [(2, 3, 4), (4, 2)]),             # one operand without ellipsis
    ("...ij,jk,...k->...i", [(2, 3, 4), (4, 2), (1, 2)]),  # its gradient sums the batch
    ("...ii->...i", [(2, 3, 3)]),                         # batched diagonal
    ("i...->...", [(3, 2, 2)]),                           # ellipsis after an index
    ("ij...,jk...->ik...", [(2, 3, 2), (3, 2, 1)]),       # trailing ellipsis broadcast
    ("ij,ij->ij", [(1, 3), (2, 3)]),                      # a labelled size-1 broadcast
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),           # three operands
    ("ij,jk", [(2, 3), (3, 4)]),                          # implicit output
    ("Ba,aC", [(2, 3), (3, 4)]),                          # implicit: capitals sort first
    ("i,ij,j->", [(3,), (3, 4), (4,)]),                   # a bilinear form
    ("...", [(2, 3)]),                                    # the identity
]


def einsum_fn(subscripts):
    def f_einsum(*operands):
        return np.einsum(subscripts, *operands)
    return f_einsum


def operands(shapes, seed=0):
    return tuple(normal(s, seed + i) for i, s in enumerate(shapes))


@pytest.mark.parametrize("subscripts,shapes", FORMS, ids=[f[0] for f in FORMS])
def test_einsum_reverse_and_forward_match_finite_differences(subscripts, shapes):
    args = operands(shapes)
    fn = einsum_fn(subscripts)
    grads = check_vjp(fn, args)
    assert [g.shape for g in grads] == [a.shape for a in args]
    check_jvp(fn, args)


@pytest.mark.parametrize("subscripts,shapes", FORMS, ids=[f[0] for f in FORMS])
def test_einsum_values_and_dtypes_are_numpys(subscripts, shapes):
    args = tuple(a.astype(np.float32) for a in operands(shapes))
    got = P.Einsum(subscripts)(*args)
    want = np.einsum(subscripts, *args)
    assert np.asarray(got).dtype == want.dtype == np.float32
    assert np.ndim(got) == np.ndim(want) and type(got) is type(want)
    if len(args) == 2:      # a BLAS product (rt.einsum_pair): NumPy's value up to rounding
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)
    grads = GradOperation(get_all=True)(lambda *a: np.sum(np.einsum(subscripts, *a)))(*args)
    assert all(np.asarray(g).dtype == np.float32 for g in grads)


SECOND_ORDER = ["ij,jk->ik", "ii->i", "iij->j", "...ij,...jk->...ik", "ij,jk,kl->il",
                "ij,ij->ij", "ijk->kj"]


@pytest.mark.parametrize("subscripts", SECOND_ORDER)
def test_einsum_second_order(subscripts):
    shapes = dict(FORMS)[subscripts] if subscripts != "...ij,...jk->...ik" \
        else [(2, 1, 3, 4), (5, 4, 2)]

    def f(*a):
        q = np.einsum(subscripts, *a)
        return q * np.sin(q)
    s2sad.check_grads(f, operands(shapes, 5), order=2, modes=("rev", "fwd"))


def test_einsum_higher_derivatives_in_closed_form():
    # x_i^3 as einsum('i,i,i->i', x, x, x): third derivative 6, Hessian of the sum diag(6x)
    def cube(x):
        return np.einsum("i,i,i->i", x, x, x)

    def total(x):
        return np.einsum("i,i,i->", x, x, x)
    x = normal((4,), 9)
    d3 = GradOperation()(GradOperation()(GradOperation()(cube)))
    np.testing.assert_allclose(d3(x), np.full(4, 6.0), rtol=1e-13)
    np.testing.assert_allclose(s2sad.hessian(total)(x), np.diag(6 * x), rtol=1e-13)


def test_einsum_scalar_operands():
    def f(x, s):
        return np.einsum(",ij->ij", s, x) + np.einsum("ij,->", x, 2.0)
    x, s = normal((2, 3), 1), np.float64(1.5)
    check_vjp(f, (x, s))
    check_jvp(f, (x, s))
    np.testing.assert_allclose(f(x, s), s * x + 2.0 * x.sum())


@pytest.mark.parametrize("optimize", [True, False, "greedy", "optimal"])
def test_einsum_optimize_is_accepted_and_passed_on(optimize):
    def f(a, b, c):
        return np.einsum("ij,jk,kl->il", a, b, c, optimize=optimize)
    args = operands([(2, 3), (3, 4), (4, 2)], 3)
    check_vjp(f, args)
    np.testing.assert_allclose(f(*args), args[0] @ args[1] @ args[2], rtol=1e-13)
    src = s2sad.get_source(GradOperation(get_all=True)(f), *args)
    if optimize is False:
        assert "xp.einsum('ij,jk,kl->il', a, b, c)" in src
    else:
        assert "optimize=%r" % (optimize,) in src


def test_einsum_interleaved_form():
    def f(a, b):
        return np.einsum(a, [0, 1], b, [1, 2], [0, 2])

    def g(a):
        return np.einsum(a, [Ellipsis, 0, 0])     # implicit output: the batched diagonal
    a, b = normal((2, 3), 4), normal((3, 4), 5)
    check_vjp(f, (a, b))
    check_jvp(f, (a, b))
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-13)
    c = normal((2, 3, 3), 6)
    check_vjp(g, (c,))
    np.testing.assert_array_equal(g(c), np.einsum(c, [Ellipsis, 0, 0]))


def test_einsum_is_one_line_of_generated_code():
    def f(a, b):
        return np.sum(np.einsum("ij , jk", a, b))
    src = s2sad.get_source(GradOperation(get_all=True)(f), normal((2, 3), 1), normal((3, 4), 2))
    assert "= rt.einsum_pair('ij,jk->ik', a, b)\n" in src
    assert "rt.einsum_pair('ik,jk->ij'" in src and "rt.einsum_pair('ik,ij->jk'" in src


def test_einsum_repeated_index_gradient_is_on_the_diagonal_only():
    # d/dA sum_i A_ii w_i = diag(w): zero off the diagonal, whatever dout is
    w = normal((3,), 7)
    g = GradOperation()(lambda a: np.einsum("ii,i->", a, w))(normal((3, 3), 8))
    np.testing.assert_array_equal(g, np.diag(w))


def test_einsum_conv2d_over_im2col_patches():
    """A convolution written as an einsum over patches, against a direct loop."""
    kh = kw = 2

    def conv(x, w):
        oh, ow = x.shape[2] - kh + 1, x.shape[3] - kw + 1
        patches = np.stack([x[:, :, i:i + oh, j:j + ow] for i in range(kh)
                            for j in range(kw)], axis=2)
        return np.einsum("nckhw,ock->nohw", patches, w.reshape(w.shape[0], w.shape[1], -1))

    def direct(x, w):
        n, c, h, wd = x.shape
        out = np.zeros((n, w.shape[0], h - kh + 1, wd - kw + 1))
        for i in range(h - kh + 1):
            for j in range(wd - kw + 1):
                out[:, :, i, j] = np.einsum("ncab,ocab->no", x[:, :, i:i + kh, j:j + kw], w)
        return out
    x, w = normal((2, 2, 4, 5), 10), normal((3, 2, kh, kw), 11)
    np.testing.assert_allclose(conv(x, w), direct(x, w), rtol=1e-12)
    check_vjp(conv, (x, w))
    check_jvp(conv, (x, w))


@pytest.mark.parametrize("subscripts", ["ij,jk->i.k", "i1,jk", "......i,jk"])
def test_einsum_bad_subscripts_are_refused_while_compiling(subscripts):
    def f(a, b):
        return np.einsum(subscripts, a, b)
    with pytest.raises(CompileError, match="einsum subscripts .* has characters other than"):
        GradOperation()(f)(normal((2, 3), 1), normal((3, 4), 2))


def test_einsum_rejects_unknown_optimize():
    with pytest.raises(ValueError, match="optimize"):
        P.Einsum("ij->", optimize="fast")


# =========================================== products: tensordot, dot, inner, ...
def _number_times(fn, number):
    def f(x):
        return fn(x, number)
    return f


#: (name, function, operand shapes): NumPy's spellings with all their forms
PRODUCTS = [
    ("tensordot-int", lambda a, b: np.tensordot(a, b, 1), [(2, 3), (3, 4)]),
    ("tensordot-int-2", lambda a, b: np.tensordot(a, b), [(2, 3, 4), (3, 4, 2)]),
    ("tensordot-int-0", lambda a, b: np.tensordot(a, b, 0), [(2,), (3,)]),
    ("tensordot-pair-of-ints", lambda a, b: np.tensordot(a, b, (0, 1)), [(3, 2), (4, 3)]),
    ("tensordot-pair-of-lists", lambda a, b: np.tensordot(a, b, ([1, 0], [0, 2])),
     [(3, 2, 4), (2, 5, 3)]),
    ("dot-vectors", lambda a, b: np.dot(a, b), [(3,), (3,)]),
    ("dot-matrices", lambda a, b: np.dot(a, b), [(2, 3), (3, 4)]),
    ("dot-nd-matrix", lambda a, b: np.dot(a, b), [(2, 2, 3), (3, 4)]),
    ("dot-nd-vector", lambda a, b: np.dot(a, b), [(2, 2, 3), (3,)]),
    ("dot-method", lambda a, b: a.dot(b), [(2, 3), (3,)]),
    ("inner-vectors", lambda a, b: np.inner(a, b), [(3,), (3,)]),
    ("inner-nd", lambda a, b: np.inner(a, b), [(2, 3), (4, 2, 3)]),
    ("outer-nd", lambda a, b: np.outer(a, b), [(2, 2), (3,)]),
    ("kron-matrices", lambda a, b: np.kron(a, b), [(2, 3), (3, 2)]),
    ("kron-ranks", lambda a, b: np.kron(a, b), [(3,), (2, 2)]),
    ("kron-3d", lambda a, b: np.kron(a, b), [(2, 1, 2), (1, 2, 3)]),
    ("cross", lambda a, b: np.cross(a, b), [(3,), (3,)]),
    ("cross-broadcast", lambda a, b: np.cross(a, b), [(4, 3), (3,)]),
    ("cross-axis", lambda a, b: np.cross(a, b, axis=0), [(3, 2), (3, 2)]),
    ("cross-axes", lambda a, b: np.cross(a, b, axisa=0, axisb=1, axisc=0), [(3, 2), (2, 3)]),
    ("vdot", lambda a, b: np.vdot(a, b), [(2, 3), (3, 2)]),
]
PRODUCT_IDS = [p[0] for p in PRODUCTS]


@pytest.mark.parametrize("name,fn,shapes", PRODUCTS, ids=PRODUCT_IDS)
def test_products_reverse_and_forward(name, fn, shapes):
    args = operands(shapes, 20)
    grads = check_vjp(fn, args)
    assert [g.shape for g in grads] == [a.shape for a in args]
    check_jvp(fn, args)


@pytest.mark.parametrize("name,fn,shapes", PRODUCTS, ids=PRODUCT_IDS)
def test_products_values_and_dtypes_are_numpys(name, fn, shapes):
    args = tuple(a.astype(np.float32) for a in operands(shapes, 21))

    def compiled(*a):
        return fn(*a)
    got, want = s2sad.jit(compiled)(*args), fn(*args)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["kron-ranks", "cross-axes", "dot-nd-matrix", "vdot",
                                  "tensordot-pair-of-lists"])
def test_products_second_order(name):
    _, fn, shapes = PRODUCTS[PRODUCT_IDS.index(name)]

    def f(*a):
        q = fn(*a)
        return q * np.sin(q)
    s2sad.check_grads(f, operands(shapes, 22), order=2, modes=("rev", "fwd"))


@pytest.mark.parametrize("fn", [np.dot, np.inner, np.outer], ids=lambda f: f.__name__)
def test_products_with_a_python_number(fn):
    x = normal((2, 3), 23)
    f = _number_times(fn, 2.5)
    (g,) = check_vjp(f, (x,))
    np.testing.assert_allclose(f(x), fn(x, 2.5), rtol=1e-14)
    check_jvp(f, (x,))
