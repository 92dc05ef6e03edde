"""``jacfwd``/``hessian``: only the differentiated inputs have tangents, and the
values that do not depend on the tangent are computed once for all basis vectors.

Every Jacobian is compared with a loop of ``s2sad.jvp`` over the basis
vectors (the whole tangent program per vector, every input with a tangent),
with central differences in float64, and with closed forms where there is one.
"""
import re

import numpy as np
import pytest

import s2sad


def fd_jacobian(f, args, i, eps=1e-6):
    """Central differences of ``f(*args)`` (one array) w.r.t. ``args[i]``: out.shape + in.shape."""
    args = [np.array(a, dtype=np.float64) for a in args]
    x = args[i]
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        plus, minus = list(args), list(args)
        plus[i] = x + e.reshape(x.shape)
        minus[i] = x - e.reshape(x.shape)
        cols.append((np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * eps))
    out_shape = np.shape(f(*args))
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


def jvp_loop(f, args, i):
    """The Jacobian of ``f`` w.r.t. ``args[i]`` by one ``s2sad.jvp`` per basis vector."""
    x = np.asarray(args[i])
    cols = []
    for k in range(x.size):
        tangents = [np.zeros_like(np.asarray(a)) for a in args]
        e = np.zeros(x.size)
        e[k] = 1
        tangents[i] = e.reshape(x.shape)
        cols.append(np.asarray(s2sad.jvp(f, tuple(args), tuple(tangents))[1]))
    return np.stack(cols, axis=-1).reshape(np.shape(cols[0]) + x.shape)


def logreg(w, X, y):
    m = y * (X @ w)
    return np.mean(np.log(1 + np.exp(-m))) + 0.005 * np.sum(w * w)


def mlp_loss(W1, b1, W2, x, Y):
    h = np.tanh(x @ W1 + b1)
    z = h @ W2
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / x.shape[0]


def chain(a, x):
    return np.sin(x * a[0]) * np.exp(-x) + a[1] * x ** 3 / (1 + x * x)


def branchy(x, y):
    s = 0.0
    for i in range(3):
        s = s + np.sin(x * i) * y
    if np.sum(x) > 0:
        s = s * x
    return s


def _scaled(x):
    return np.cos(x) * 2


def calls_user(x, y):
    return np.sum(_scaled(x) * y) + np.sum(x ** 4)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=5), rng.normal(size=(20, 5)), np.sign(rng.normal(size=20))


def _mlp_data():
    rng = np.random.default_rng(1)
    Y = np.eye(3)[rng.integers(0, 3, size=6)]
    return (rng.normal(size=(4, 3)) / 2, rng.normal(size=3) / 10, rng.normal(size=(3, 3)) / 2,
            rng.normal(size=(6, 4)), Y)


def _tangent_params(source):
    """The tangent parameters (``t_...``) of each function defined in ``source``."""
    return [[p for p in params.split(", ") if p.startswith("t_")]
            for params in re.findall(r"^def \w+\((.*)\):", source, re.M)]


def test_hessian_of_logistic_regression_against_closed_form_loop_and_fd():
    w, X, y = _data()
    H = s2sad.hessian(logreg)(w, X, y)
    s = 1 / (1 + np.exp(-y * (X @ w)))
    closed = (X.T * (s * (1 - s) / X.shape[0])) @ X + 0.01 * np.eye(w.size)
    np.testing.assert_allclose(H, closed, rtol=1e-12, atol=1e-14)
    g = s2sad.grad(logreg)
    np.testing.assert_allclose(H, jvp_loop(g, (w, X, y), 0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(H, fd_jacobian(g, (w, X, y), 0), rtol=1e-6, atol=1e-8)


def test_hessian_source_has_no_tangent_of_the_other_inputs():
    """Before: the program took ``t_X`` and ``t_y`` (zero arrays) and multiplied by them."""
    w, X, y = _data()
    h = s2sad.hessian(logreg)
    h(w, X, y)
    source = s2sad.get_source(h)
    # the values once; the tangents one basis vector at a time, or all at once
    assert _tangent_params(source) == [[], ["t_w"], ["t_w"]]
    assert not re.search(r"\bt_[Xy]\b", source)
    assert "X @ t_w" in source


def test_jacfwd_of_some_inputs_takes_only_their_tangents_where_not_split():
    x, y = np.array([0.3, -0.5, 0.9]), np.array([1.5, 0.2, -0.7])
    jf = s2sad.jacfwd(branchy, grad_position=1)
    jac = jf(x, y)
    assert _tangent_params(s2sad.get_source(jf)) == [["t_y"]]    # one program (a loop)
    np.testing.assert_allclose(jac, jvp_loop(branchy, (x, y), 1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(jac, fd_jacobian(branchy, (x, y), 1), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("position", [0, 1, 2])
def test_hessian_of_mlp_loss_per_weight(position):
    args = _mlp_data()
    H = s2sad.hessian(mlp_loss, position)(*args)
    g = s2sad.grad(mlp_loss, position)
    np.testing.assert_allclose(H, jvp_loop(g, args, position), rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(H, fd_jacobian(g, args, position), rtol=1e-5, atol=1e-7)
    shape = np.shape(args[position])
    flat = np.asarray(H).reshape(int(np.prod(shape)), -1)
    np.testing.assert_allclose(flat, flat.T, rtol=1e-10, atol=1e-13)


def test_hessian_of_two_weights_in_reverse_order():
    """The program's tangents are in argument order; the result in the order asked."""
    args = _mlp_data()
    H = s2sad.hessian(mlp_loss, (2, 0))(*args)
    for a, pa in enumerate((2, 0)):
        for b, pb in enumerate((2, 0)):
            g = s2sad.grad(mlp_loss, pa)
            np.testing.assert_allclose(H[a][b], fd_jacobian(g, args, pb), rtol=1e-5,
                                       atol=1e-7)
            np.testing.assert_allclose(H[a][b], jvp_loop(g, args, pb), rtol=1e-11,
                                       atol=1e-14)


def test_jacfwd_of_an_elementwise_chain_in_both_orders():
    a, x = np.array([0.7, -1.3]), np.linspace(-1, 2, 6)
    ja, jx = s2sad.jacfwd(chain, (0, 1))(a, x)
    jx2, ja2 = s2sad.jacfwd(chain, (1, 0))(a, x)
    for jac, ref in ((ja, fd_jacobian(chain, (a, x), 0)), (jx, fd_jacobian(chain, (a, x), 1))):
        np.testing.assert_allclose(jac, ref, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ja, jvp_loop(chain, (a, x), 0), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(ja, ja2)
    np.testing.assert_array_equal(jx, jx2)
    assert "run once" in s2sad.get_source(s2sad.jacfwd(chain, 1), a, x)


@pytest.mark.parametrize("fn, split", [(branchy, False), (calls_user, True)])
def test_hessian_of_programs_with_control_flow_or_calling_functions(fn, split):
    """A loop or a branch: the whole program per basis vector; a call: split, inline."""
    x, y = np.array([0.3, -0.5, 0.9]), np.array([1.5, 0.2, -0.7])
    f = (lambda x, y: np.sum(branchy(x, y))) if fn is branchy else fn
    h = s2sad.hessian(f, 0)
    H = h(x, y)
    assert ("run once" in s2sad.get_source(h)) == split
    g = s2sad.grad(f, 0)
    np.testing.assert_allclose(H, jvp_loop(g, (x, y), 0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(H, fd_jacobian(g, (x, y), 0), rtol=1e-6, atol=1e-8)


def test_jacfwd_has_aux_value_computed_once():
    def f(x, y):
        return np.sin(x) * y, np.sum(x * y)
    x, y = np.array([0.1, 0.2, 0.3]), np.array([2.0, -1.0, 0.5])
    jac, aux = s2sad.jacfwd(f, 0, has_aux=True)(x, y)
    np.testing.assert_allclose(jac, np.diag(np.cos(x) * y), rtol=1e-14)
    np.testing.assert_allclose(aux, np.sum(x * y))
