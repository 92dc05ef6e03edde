"""Second-order transforms of a closure made anew per call, over new data each time.

``s2sad.hvp(lambda w: loss(w, x), w, v)`` in a loop over batches, or
``jvp(grad(lambda ...))`` and ``hessian(lambda ...)``, make a new function per
call capturing a new ``x``.  The code compiled for the first call serves the
others (its arrays are read on every call, what else it captured is guarded),
and every value is checked against central differences of the closed-form
gradient, so a stale capture would fail here.
"""
import numpy as np
import pytest

import s2sad

from gradcheck import fd_directional

pytestmark = pytest.mark.filterwarnings("error::UserWarning")


def loss(w, x, k):
    return k * np.sum(np.tanh(x @ w) ** 2)


def loss_grad(w, x, k):
    """``loss``'s gradient in ``w``, by hand."""
    t = np.tanh(x @ w)
    return k * x.T @ (2 * t * (1 - t * t))


def fd_hessian(w, x, k, eps=1e-6):
    cols = [fd_directional(lambda u: loss_grad(u, x, k), w, e, eps) for e in np.eye(w.size)]
    return np.stack(cols, axis=1)


TRANSFORMS = {
    "hvp": (lambda f, w, v: s2sad.hvp(f, w, v),
            lambda w, v, x, k: fd_directional(lambda u: loss_grad(u, x, k), w, v)),
    "jvp of grad": (lambda f, w, v: s2sad.jvp(s2sad.grad(f), w, v)[1],
                    lambda w, v, x, k: fd_directional(lambda u: loss_grad(u, x, k), w, v)),
    "hessian": (lambda f, w, v: s2sad.hessian(f)(w),
                lambda w, v, x, k: fd_hessian(w, x, k)),
    "jacfwd of grad": (lambda f, w, v: s2sad.jacfwd(s2sad.grad(f))(w),
                       lambda w, v, x, k: fd_hessian(w, x, k)),
    "value_and_grad": (lambda f, w, v: s2sad.value_and_grad(f)(w)[1],
                       lambda w, v, x, k: loss_grad(w, x, k)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_a_new_closure_over_new_data_compiles_once_and_reads_its_data(name, compiles):
    transform, expected = TRANSFORMS[name]
    rng = np.random.default_rng(3)
    w, v = rng.normal(size=3), rng.normal(size=3)
    for step in range(4):
        x = rng.normal(size=(5, 3))
        k = 1.5

        got = transform(lambda u: loss(u, x, k), w, v)
        np.testing.assert_allclose(got, expected(w, v, x, k), rtol=1e-6, atol=1e-7)
    assert compiles[0] == 1, "%s compiled %d times for 4 calls" % (name, compiles[0])


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_a_captured_number_that_changes_is_seen(name, compiles):
    transform, expected = TRANSFORMS[name]
    rng = np.random.default_rng(4)
    w, v, x = rng.normal(size=3), rng.normal(size=3), rng.normal(size=(5, 3))
    for k in (1.0, -2.0, 0.5):
        got = transform(lambda u: loss(u, x, k), w, v)
        np.testing.assert_allclose(got, expected(w, v, x, k), rtol=1e-6, atol=1e-7)


def make_loss(k):
    def scaled_loss(w, x):
        return loss(w, x, k)
    return scaled_loss


LOSS = make_loss(2.0)


def grad_norm(w, x):
    """A gradient taken inside compiled code of a global function (read through its path)."""
    return np.sum(s2sad.grad(LOSS)(w, x) ** 2)


def grad_norm_by_hand(w, x, k):
    return np.sum(loss_grad(w, x, k) ** 2)


def test_a_global_function_rebound_to_another_capture_is_seen(compiles):
    global LOSS
    rng = np.random.default_rng(5)
    w, x = rng.normal(size=3), rng.normal(size=(5, 3))
    g = s2sad.grad(grad_norm)
    try:
        for k in (2.0, 3.0, -1.0):
            LOSS = make_loss(k)
            for _ in range(2):
                x = rng.normal(size=(5, 3))
                u = rng.normal(size=3)
                np.testing.assert_allclose(
                    s2sad.jvp(lambda w: grad_norm(w, x), w, u)[1],
                    fd_directional(lambda w: grad_norm_by_hand(w, x, k), w, u),
                    rtol=1e-6, atol=1e-7)
                np.testing.assert_allclose(
                    g(w, x), [fd_directional(lambda w: grad_norm_by_hand(w, x, k), w, e)
                              for e in np.eye(3)], rtol=1e-6, atol=1e-7)
    finally:
        LOSS = make_loss(2.0)
    # one program per captured number, each serving two batches, for each transform
    assert compiles[0] == 6, compiles[0]


def test_a_global_function_redefined_is_seen(compiles):
    global LOSS
    rng = np.random.default_rng(6)
    w, x = rng.normal(size=3), rng.normal(size=(5, 3))
    g = s2sad.grad(grad_norm)
    try:
        first = g(w, x)

        def LOSS(w, x):     # noqa: F811 (rebinding the global is the test)
            return np.sum(np.sin(x @ w))
        second = g(w, x)
    finally:
        LOSS = make_loss(2.0)
    np.testing.assert_allclose(first, [fd_directional(lambda w: grad_norm_by_hand(w, x, 2.0), w, e)
                                       for e in np.eye(3)], rtol=1e-6, atol=1e-7)
    c = np.cos(x @ w)
    s = np.sin(x @ w)
    # d/dw |x.T cos(xw)|^2 = -2 x.T (s * (x (x.T c)))
    np.testing.assert_allclose(second, -2 * x.T @ (s * (x @ (x.T @ c))), rtol=1e-10)


def make_tanh_loss(A):
    def tanh_loss(x):
        return np.sum(np.tanh(A @ x) ** 2)
    return tanh_loss


TANH_LOSS = make_tanh_loss(np.ones((2, 3)))

INSIDE = {
    "GradOperation": lambda x: np.sum(s2sad.ops.GradOperation()(TANH_LOSS)(x) ** 2),
    "grad": lambda x: np.sum(s2sad.grad(TANH_LOSS)(x) ** 2),
    "jacfwd": lambda x: np.sum(s2sad.jacfwd(TANH_LOSS)(x) ** 2),
    "jacrev": lambda x: np.sum(s2sad.jacrev(TANH_LOSS)(x) ** 2),
    "hessian": lambda x: np.sum(s2sad.hessian(TANH_LOSS)(x)),
    "vmap": lambda x: np.sum(s2sad.vmap(TANH_LOSS)(np.stack([x, 2.0 * x]))),
}


def tanh_loss_grad(A, x):
    t = np.tanh(A @ x)
    return A.T @ (2 * t * (1 - t * t))


@pytest.mark.parametrize("name", sorted(INSIDE))
def test_a_transform_inside_compiled_code_sees_a_rebound_closure(name):
    """The global is rebound to a closure over an array of another shape: the
    compiled code must read the new array (it was read from the first closure by
    ``GradOperation()(f)`` inside compiled code, silently)."""
    global TANH_LOSS
    rng = np.random.default_rng(8)
    x = rng.normal(size=3)
    outer = s2sad.grad(INSIDE[name])
    # by hand: the Jacobian of a scalar is its gradient; the Hessian's entries sum to
    # sum_i 2 (1 - t_i^2)(1 - 3 t_i^2) (sum_j A_ij)^2
    hessian_sum = lambda A, x: np.sum(2 * (1 - np.tanh(A @ x) ** 2)      # noqa: E731
                                      * (1 - 3 * np.tanh(A @ x) ** 2) * A.sum(axis=1) ** 2)
    loss = lambda A, x: np.sum(np.tanh(A @ x) ** 2)        # noqa: E731
    by_hand = {"hessian": hessian_sum, "vmap": lambda A, x: loss(A, x) + loss(A, 2.0 * x)}.get(
        name, lambda A, x: np.sum(tanh_loss_grad(A, x) ** 2))
    try:
        for rows in (2, 4, 4, 5):
            A = rng.normal(size=(rows, 3))
            TANH_LOSS = make_tanh_loss(A)
            want = np.array([(by_hand(A, x + 1e-6 * e) - by_hand(A, x - 1e-6 * e)) / 2e-6
                             for e in np.eye(3)])
            np.testing.assert_allclose(outer(x), want, rtol=1e-5, atol=1e-7)
    finally:
        TANH_LOSS = make_tanh_loss(np.ones((2, 3)))


class Scaled:
    def __init__(self, scale):
        self.scale = scale

    def logpdf(self, x):
        return -0.5 * (x / self.scale) ** 2


DIST = Scaled(1.0)


def mapped_method(x):
    return np.sum(s2sad.vmap(DIST.logpdf)(x))


def test_a_bound_method_inside_compiled_code_sees_its_object_change(compiles):
    """``vmap(dist.logpdf)`` (``scipy.stats.norm.logpdf`` in JAX's ADVI example)
    compiled again on every call: the bound method, made anew by every read, was
    guarded by identity.  Its object is read through its path now: a change of
    the object's attribute compiles again, nothing else does."""
    global DIST
    g = s2sad.grad(mapped_method)
    x = np.arange(1.0, 4.0)
    try:
        for scale in (1.0, 1.0, 2.0, 2.0, 0.5):
            DIST.scale = scale
            np.testing.assert_allclose(g(x), -x / scale ** 2, rtol=1e-13)
        assert compiles[0] == 3, compiles[0]
        DIST = Scaled(4.0)          # another object of the class
        np.testing.assert_allclose(g(x), -x / 16.0, rtol=1e-13)
    finally:
        DIST = Scaled(1.0)


SQUARES_F = SQUARES_G = None


def make_squares(k):
    def squares(x):
        return k * np.sum(x ** 2)
    return squares


def two_names_one_function(x):
    g_f = s2sad.grad(SQUARES_F)
    g_g = s2sad.grad(SQUARES_G)
    return np.sum(g_f(x)) + 10.0 * np.sum(g_g(x))


def test_one_function_read_through_two_names_sees_either_rebound():
    """Both globals name one closure while compiling; then one of them is rebound.
    A function handed to grad by two paths is read through the first and guarded
    whole through the second, so a change through either compiles again."""
    global SQUARES_F, SQUARES_G
    g = s2sad.grad(two_names_one_function)
    x = np.ones(2)
    SQUARES_F = SQUARES_G = make_squares(1.0)
    np.testing.assert_allclose(g(x), 2 * 1.0 + 20 * 1.0)
    SQUARES_F = make_squares(2.0)
    np.testing.assert_allclose(g(x), 2 * 2.0 + 20 * 1.0)
    SQUARES_G = make_squares(3.0)
    np.testing.assert_allclose(g(x), 2 * 2.0 + 20 * 3.0)


def make_cubes(k):
    def cubes(x):
        return k * np.sum(x ** 3)
    return cubes


MADE = None


def call_made(v):
    return np.sum(MADE(v))


@pytest.mark.parametrize("name, transform, x, d_by_hand", [
    ("vmap", s2sad.vmap, np.full((2, 2), 1.5), lambda k, x: 3 * k * x ** 2),
    ("jacfwd", s2sad.jacfwd, np.array([1.5, -0.5]), lambda k, x: 6 * k * x),
    ("jacrev", s2sad.jacrev, np.array([1.5, -0.5]), lambda k, x: 6 * k * x),
    ("hessian", s2sad.hessian, np.array([1.5, -0.5]), lambda k, x: 6 * k * np.ones_like(x))],
    ids=["vmap", "jacfwd", "jacrev", "hessian"])
def test_a_transformed_function_made_outside_and_rebound_is_seen(name, transform, x, d_by_hand,
                                                                compiles):
    """``B = vmap(f)`` made eagerly, called inside compiled code, then rebound to the
    transform of another closure: the compiled code staged the first closure, and
    its function was guarded by its code alone (the same for every ``vmap``)."""
    global MADE
    MADE = transform(make_cubes(1.0))
    g = s2sad.grad(call_made)
    try:
        for k in (1.0, 1.0, 3.0):
            if k != 1.0:
                MADE = transform(make_cubes(k))
            # d/dx sum(vmap(f)(X)) = 3k X^2, sum(J) = 3k sum(x^2), sum(H) = 6k sum(x)
            np.testing.assert_allclose(g(x), d_by_hand(k, x), rtol=1e-13)
        assert compiles[0] == 2, compiles[0]
    finally:
        MADE = None
