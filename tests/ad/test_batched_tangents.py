"""The batched tangent program of ``jacfwd``/``hessian`` (``ad/batching.py``).

Each batched helper of ``runtime/rt_batch.py`` is compared with its one-example
operation applied to every example in turn, over operands of many ranks: it
must give the same values or refuse (``Unbatchable``), never other values.
Programs whose batched form refuses at run time or does not exist must give
the per-basis-vector loop's Jacobian.
"""
import itertools

import numpy as np
import pytest

import s2sad
from s2sad import runtime as rt

N = 3       # basis vectors


def per_example(fn, args, flags):
    """``fn`` on each example (the batched arguments' rows), stacked."""
    return np.stack([fn(*[a[j] if f else a for a, f in zip(args, flags)]) for j in range(N)])


def agrees(batched, fn, args, flags):
    """True when the batched helper gives ``fn``'s values; False when it refuses."""
    try:
        got = batched()
    except rt.Unbatchable:
        return False
    want = per_example(fn, args, flags)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    return True


SHAPES = [(), (4,), (1,), (2, 4), (2, 1), (1, 4), (3, 2, 4)]
rng = np.random.default_rng(0)


def _value(shape, batched):
    return rng.normal(size=((N,) + shape) if batched else shape)


def _compatible(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


@pytest.mark.parametrize("sa, sb", [(a, b) for a in SHAPES for b in SHAPES if _compatible(a, b)])
def test_elementwise_ops_against_each_example(sa, sb):
    for flags in [(1, 0), (0, 1), (1, 1)]:
        a, b = _value(sa, flags[0]), _value(sb, flags[1])
        assert agrees(lambda: np.multiply(*rt.batch_aligned(flags, a, b)), np.multiply,
                      (a, b), flags)


@pytest.mark.parametrize("sa, sx", [(a, x) for a in SHAPES for x in SHAPES
                                    if _compatible(a, x) and np.broadcast_shapes(a, x) == x])
def test_broadcast_like_and_unbroadcast_against_each_example(sa, sx):
    for flags in [(1, 0), (0, 1), (1, 1)]:
        a, x = _value(sa, flags[0]), _value(sx, flags[1])
        assert agrees(lambda: rt.batch_broadcast_like(a, x, flags), rt.broadcast_like, (a, x),
                      flags)
    d, x = _value(sx, True), _value(sa, False)
    assert agrees(lambda: rt.batch_unbroadcast(d, x), rt.unbroadcast, (d, x), (1, 0))


MATMUL = [((4,), (4,)), ((2, 4), (4,)), ((4,), (4, 5)), ((2, 4), (4, 5)), ((3, 2, 4), (4, 5)),
          ((2, 4), (3, 4, 5)), ((3, 2, 4), (3, 4, 5)), ((4,), (3, 4, 5))]


@pytest.mark.parametrize("sx, sy", MATMUL)
def test_matmul_and_its_gradients_against_each_example(sx, sy):
    refused = 0
    for flags in [(1, 0), (0, 1)]:
        x, y = _value(sx, flags[0]), _value(sy, flags[1])
        refused += not agrees(lambda: rt.batch_matmul(x, y, flags), np.matmul, (x, y), flags)
    out = np.shape(np.ones(sx) @ np.ones(sy))
    for flags in [(1, 0, 0), (0, 1, 0), (0, 0, 1)]:
        d, x, y = _value(out, flags[0]), _value(sx, flags[1]), _value(sy, flags[2])
        if flags != (0, 0, 1):
            refused += not agrees(lambda: rt.batch_matmul_grad_b(d, x, y, flags),
                                  rt.math_matmul_grad_b, (d, x, y), flags)
        if flags != (0, 1, 0):
            refused += not agrees(lambda: rt.batch_matmul_grad_a(d, x, y, flags),
                                  rt.math_matmul_grad_a, (d, x, y), flags)
    if len(sx) == 2 and len(sy) <= 2:
        assert refused <= 2     # the matrix cases a dense layer meets are batched


@pytest.mark.parametrize("shape, axis", [(s, a) for s in [(4,), (2, 4), (3, 2, 4)]
                                         for a in [(), 0, -1, (0,), (0, -1)]
                                         if not isinstance(a, tuple) or len(a) <= len(s)])
def test_sums_against_each_example(shape, axis):
    x = _value(shape, True)
    np_axis = None if axis == () else axis
    assert agrees(lambda: rt.batch_sum(x, axis), lambda v: np.sum(v, axis=np_axis), (x,), (1,))
    assert agrees(lambda: rt.batch_sum_keepdims(x, axis),
                  lambda v: np.sum(v, axis=np_axis, keepdims=True), (x,), (1,))


# ------------------------------------------------------------------ programs
def jvp_loop(f, args, i):
    x = np.asarray(args[i])
    cols = []
    for k in range(x.size):
        tangents = [np.zeros_like(np.asarray(a)) for a in args]
        tangents[i] = np.eye(x.size)[k].reshape(x.shape)
        cols.append(np.asarray(s2sad.jvp(f, tuple(args), tuple(tangents))[1]))
    return np.stack(cols, axis=-1).reshape(np.shape(cols[0]) + x.shape)


def stacked_layers(w, A):
    return np.sum(np.tanh(A @ w) ** 2)


def with_cumsum(x, y):
    return np.sum(np.cumsum(x) ** 2 * y)


def mixed(x, M):
    h = np.tanh(M @ x)
    return np.sum(h * h, axis=0, keepdims=True).sum() + np.sum(x ** 3) / 3


@pytest.mark.parametrize("fn, args, batched", [
    # the operand of rank 3 makes ``rt.batch_matmul`` refuse at run time: the loop runs
    (stacked_layers, (np.linspace(-1, 1, 4), rng.normal(size=(2, 3, 4))), True),
    # no batched form of cumsum: one program per basis vector
    (with_cumsum, (np.linspace(-1, 1, 5), np.linspace(0.5, 2, 5)), False),
    (mixed, (np.linspace(-1, 1, 4), rng.normal(size=(3, 4))), True),
])
def test_hessians_batched_refused_or_not(fn, args, batched):
    h = s2sad.hessian(fn)
    H = h(*args)
    assert ("_batched(" in s2sad.get_source(h)) == batched
    g = s2sad.grad(fn)
    np.testing.assert_allclose(H, jvp_loop(g, args, 0), rtol=1e-12, atol=1e-14)
    eps = 1e-6
    fd = np.stack([(g(args[0] + eps * e, *args[1:]) - g(args[0] - eps * e, *args[1:])) / (2 * eps)
                   for e in np.eye(args[0].size)], axis=-1)
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-8)


def test_jacfwd_of_a_vector_function_batched():
    def f(x, W):
        return np.tanh(W @ x) * x.sum() + x[::-1]
    x, W = np.linspace(-1, 1, 4), rng.normal(size=(4, 4))
    jf = s2sad.jacfwd(f, (1, 0))
    jW, jx = jf(x, W)
    np.testing.assert_allclose(jx, jvp_loop(f, (x, W), 0), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(jW, jvp_loop(f, (x, W), 1), rtol=1e-13, atol=1e-15)
    assert list(itertools.chain(jW.shape)) == [4, 4, 4]


def test_basis_vectors_in_blocks_give_the_same_jacobian(monkeypatch):
    """A cap on the batched values' size: the basis vectors go in blocks."""
    from s2sad.api import jacobians
    x, W = np.linspace(-1, 1, 7), rng.normal(size=(5, 7))

    def f(x, W):
        return np.sum(np.tanh(W @ x) ** 2) + np.sum(x ** 4)
    whole = s2sad.hessian(f)(x, W)
    monkeypatch.setattr(jacobians, "_BATCH_ELEMENTS", 2 * W.size)     # blocks of 2 vectors
    blocks = s2sad.hessian(f)(x, W)
    np.testing.assert_allclose(blocks, whole, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(blocks, jvp_loop(s2sad.grad(f), (x, W), 0), rtol=1e-12,
                               atol=1e-14)
