"""Hessian-vector products on the prepared ``jvp`` path, and the cse that serves them.

``jvp`` of a new lambda each call takes, from the second call on, a path
prepared by the first (``api/jvpfast.py``).  Its results are compared with
the general path's (the prepared paths forgotten), the R-operator and
central differences; and the path must not be taken when what the general
path checks changed: a global the function reads, the closure's functions,
the argument types, the cache.
"""
import re

import numpy as np
import pytest

import s2sad
from s2sad.api import vjp_jvp

from gradcheck import fd_directional
from mlp_second_order import mlp_loss, mlp_hvp_hand

RNG = np.random.default_rng(2930)


def mlp_data(rng, n=7, din=5, hid=4, k=3):
    Y = np.eye(k)[rng.integers(0, k, n)]
    return (rng.standard_normal((din, hid)), 0.1 * rng.standard_normal(hid),
            rng.standard_normal((hid, k)), 0.1 * rng.standard_normal(k),
            rng.standard_normal((n, din)), Y, rng.standard_normal((din, hid)))


G_MLP = s2sad.grad(mlp_loss)


def w1_gradient(b1, W2, b2, x, Y):
    """A new lambda each call, as a training loop writes it."""
    return lambda w: G_MLP(w, b1, W2, b2, x, Y)


def prepared(fn, inputs, v):
    return vjp_jvp._prepared[False].lookup(fn, inputs, v)


def test_repeated_hvp_takes_the_prepared_path_and_matches():
    rng = np.random.default_rng(0)
    first = mlp_data(rng)
    s2sad.jvp(w1_gradient(*first[1:6]), first[0], first[6])
    for _ in range(3):
        args = mlp_data(rng)
        W1, b1, W2, b2, x, Y, V = args
        fn = w1_gradient(b1, W2, b2, x, Y)
        assert prepared(fn, (W1,), (V,)) is not None
        g, hv = s2sad.jvp(fn, W1, V)
        np.testing.assert_allclose(hv, mlp_hvp_hand(*args), rtol=1e-9, atol=1e-11)
        fd = fd_directional(fn, W1, V)
        np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)
        vjp_jvp._prepared[False].paths.clear()            # the general path, for comparison
        g0, hv0 = s2sad.jvp(fn, W1, V)
        np.testing.assert_array_equal(hv, hv0)
        np.testing.assert_array_equal(g, g0)


SCALE = 2.0


def scaled_cube(x):
    return SCALE * np.sum(x ** 3)


def test_a_rebound_global_is_not_served_by_the_prepared_path():
    global SCALE
    x, v = RNG.standard_normal(4), RNG.standard_normal(4)
    s2sad.jvp(scaled_cube, x, v)
    assert prepared(scaled_cube, (x,), (v,)) is not None
    try:
        SCALE = 5.0
        assert prepared(scaled_cube, (x,), (v,)) is None
        out, t = s2sad.jvp(scaled_cube, x, v)
        np.testing.assert_allclose(out, 5.0 * np.sum(x ** 3))
        np.testing.assert_allclose(t, 15.0 * np.sum(x ** 2 * v))
    finally:
        SCALE = 2.0


def _square(x):
    return x * x


def _sine(x):
    return np.sin(x)


def _apply(f):
    return lambda x: np.sum(f(x))


def test_a_closure_holding_another_function_is_not_served():
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    s2sad.jvp(_apply(_square), x, v)
    s2sad.jvp(_apply(_square), x, v)
    np.testing.assert_allclose(s2sad.jvp(_apply(_sine), x, v)[1], np.sum(np.cos(x) * v))
    np.testing.assert_allclose(s2sad.jvp(_apply(_square), x, v)[1], np.sum(2 * x * v))


def cube_sum(x):
    return np.sum(x ** 3)


@pytest.mark.parametrize("other", [
    lambda x: s2sad.Tensor(x),                      # a Tensor: a Tensor comes back
    lambda x: np.asarray(x[0]),                     # a 0-d array: compiled apart
    lambda x: x.astype(np.complex128),              # complex: compiled apart
])
def test_other_argument_types_take_the_general_path(other):
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    s2sad.jvp(cube_sum, x, v)
    assert prepared(cube_sum, (x,), (v,)) is not None
    a, t = other(x), other(v)
    assert prepared(cube_sum, (a,), (t,)) is None
    expect_out, expect_t = s2sad.jvp(cube_sum, a, t)   # the general path, then compare
    if isinstance(a, s2sad.Tensor):
        assert isinstance(expect_t, s2sad.Tensor)
    np.testing.assert_allclose(np.asarray(expect_t), 3 * np.sum(np.asarray(a) ** 2 *
                                                               np.asarray(t)))


def test_a_tangent_of_another_shape_is_still_refused():
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    s2sad.jvp(cube_sum, x, v)
    with pytest.raises(ValueError, match="shape"):
        s2sad.jvp(cube_sum, x, RNG.standard_normal(4))


def test_clearing_the_caches_or_changing_options_drops_the_path():
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    s2sad.jvp(cube_sum, x, v)
    assert prepared(cube_sum, (x,), (v,)) is not None
    s2sad.clear_caches()
    assert prepared(cube_sum, (x,), (v,)) is None
    s2sad.jvp(cube_sum, x, v)
    from s2sad.opt import pipeline
    with pipeline.options(disabled_passes={"cse"}):
        assert prepared(cube_sum, (x,), (v,)) is None
        np.testing.assert_allclose(s2sad.jvp(cube_sum, x, v)[1], 3 * np.sum(x * x * v))


# ------------------------------------------------- cse of swapped operands
def swapped(x, y):
    return np.sum(np.sin(x * y) * np.cos(y * x) + np.exp(1.0 + x) * np.tanh(x + 1.0))


def test_cse_merges_swapped_products_and_number_sums():
    x, y = RNG.standard_normal(5), RNG.standard_normal(5)
    gf = s2sad.grad(swapped, grad_position=(0, 1))
    src = s2sad.get_source(gf, x, y)
    assert len(re.findall(r"= (x \* y|y \* x)$", src, re.M)) == 1, src
    assert len(re.findall(r"= (1\.0 \+ x|x \+ 1\.0)$", src, re.M)) == 1, src
    from s2sad.opt import pipeline
    got = gf(x, y)
    with pipeline.options(disabled_passes={"cse"}):
        plain = s2sad.grad(swapped, grad_position=(0, 1))(x, y)
    for a, b in zip(got, plain):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)
    eps = 1e-6
    for i, g in enumerate(got):
        for k in range(5):
            e = np.zeros(5)
            e[k] = eps
            plus = [x, y]
            minus = [x, y]
            plus[i], minus[i] = plus[i] + e, minus[i] - e
            fd = (swapped(*plus) - swapped(*minus)) / (2 * eps)
            np.testing.assert_allclose(g[k], fd, rtol=1e-6, atol=1e-8)


def test_sums_of_two_runtime_values_keep_their_order():
    """``+`` also joins tuples and strings: only a number's sum is reordered."""
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    src = s2sad.get_source(s2sad.grad(lambda a, b: np.sum(np.sin(a + b) * (b + a))), x, y)
    assert re.search(r"= a \+ b$", src, re.M) and re.search(r"= b \+ a$", src, re.M), src


def test_the_hvp_program_squares_its_tangent_once():
    rng = np.random.default_rng(5)
    W1, b1, W2, b2, x, Y, V = mlp_data(rng)
    fn = w1_gradient(b1, W2, b2, x, Y)
    entry = vjp_jvp.jvp_compiled(fn, (W1,), (V,))[0]
    assert len(re.findall(r"= (t_h \* h|h \* t_h)$", entry.source, re.M)) == 1, entry.source


# --------------------------------------------------------------- s2sad.hvp
def test_hvp_is_the_r_op_and_computes_no_gradient():
    rng = np.random.default_rng(7)
    for _ in range(3):
        args = mlp_data(rng)
        W1, b1, W2, b2, x, Y, V = args
        loss = lambda w: mlp_loss(w, b1, W2, b2, x, Y)     # noqa: E731
        hv = s2sad.hvp(loss, W1, V)
        np.testing.assert_allclose(hv, mlp_hvp_hand(*args), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(hv, fd_directional(w1_gradient(b1, W2, b2, x, Y), W1, V),
                                   rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(hv, s2sad.jvp(w1_gradient(b1, W2, b2, x, Y), W1, V)[1],
                                   rtol=1e-13, atol=1e-15)
    from s2sad.api.hessvec import _gradient_of
    entry = vjp_jvp.jvp_compiled(_gradient_of(loss, (0,)), (W1,), (V,), tangent_only=True)[0]
    assert entry.source.count("rt.math_matmul_grad_b(") == 1, entry.source   # x.T @ t only
    assert vjp_jvp._prepared[True].lookup(_gradient_of(loss, (0,)), (W1,), (V,),
                                          loss.__code__) is not None


def two_inputs(a, b):
    return np.sum(np.sin(a) * b ** 2) + np.sum(a * a) * np.sum(b)


def test_hvp_of_several_inputs_mirrors_them():
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    va, vb = RNG.standard_normal(3), RNG.standard_normal(3)
    ha, hb = s2sad.hvp(two_inputs, (a, b), (va, vb))
    # the Hessian blocks, written out
    haa = np.diag(-np.sin(a) * b ** 2) + 2 * np.sum(b) * np.eye(3)
    hab = np.diag(2 * np.cos(a) * b) + 2 * np.outer(a, np.ones(3))
    hbb = np.diag(2 * np.sin(a))
    np.testing.assert_allclose(ha, haa @ va + hab @ vb, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hb, hab.T @ va + hbb @ vb, rtol=1e-12, atol=1e-12)
    again = s2sad.hvp(two_inputs, [a, b], [va, vb])
    assert isinstance(again, tuple) and len(again) == 2


def test_hvp_of_tensors_and_of_a_zero_hessian():
    x, v = RNG.standard_normal(4), RNG.standard_normal(4)
    got = s2sad.hvp(lambda t: np.sum(t ** 3), s2sad.Tensor(x), s2sad.Tensor(v))
    assert isinstance(got, s2sad.Tensor)
    np.testing.assert_allclose(got.asnumpy(), 6 * x * v, rtol=1e-12)
    for _ in range(2):      # the general path, then the prepared one
        zero = s2sad.hvp(lambda t: np.sum(3.0 * t), x, v)
        assert isinstance(zero, np.ndarray) and zero.shape == (4,) and not zero.any()


def test_hvp_refuses_what_is_not_a_function():
    with pytest.raises(TypeError, match="'fn' must be a function"):
        s2sad.hvp(3.0, np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="'primals' and 'tangents' must be arrays"):
        s2sad.hvp(lambda d: np.sum(d["a"] ** 3), {"a": np.ones(2)}, {"a": np.ones(2)})


def test_two_functions_alternating_keep_a_prepared_hvp_each():
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    from s2sad.api.hessvec import _gradient_of
    cubes = lambda t: np.sum(t ** 3)       # noqa: E731
    sines = lambda t: np.sum(np.sin(t))    # noqa: E731
    for _ in range(2):
        np.testing.assert_allclose(s2sad.hvp(cubes, x, v), 6 * x * v, rtol=1e-12)
        np.testing.assert_allclose(s2sad.hvp(sines, x, v), -np.sin(x) * v, rtol=1e-12)
    for f in (cubes, sines):
        assert vjp_jvp._prepared[True].lookup(_gradient_of(f, (0,)), (x,), (v,),
                                              f.__code__) is not None
