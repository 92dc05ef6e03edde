"""Plain NumPy programs differentiated with ``GradOperation(get_all=True)``.

Each program is ordinary NumPy code (it also runs without s2sad) and every
gradient is compared with float64 central finite differences of the program
itself (``gradcheck.numeric_grad``), and where there is one, with the closed
form.  NumPy is spelled three ways below -- ``np.``, ``numpy.`` (imported
without an alias) and ``jnp.`` (``import numpy as jnp``) -- because s2sad maps
NumPy functions by object, not by the name they were imported under.
"""
import importlib.util
import textwrap

import numpy
import numpy as np
import numpy as jnp
import pytest

import s2sad
from s2sad.ops import GradOperation

from gradcheck import numeric_grad

RTOL = 1e-6
ATOL = 1e-8


def check_all_inputs(fn, args):
    """``GradOperation(get_all=True)`` of scalar ``fn`` against finite differences."""
    grads = GradOperation(get_all=True)(fn)(*args)
    assert isinstance(grads, tuple) and len(grads) == len(args)
    for i, (g, a) in enumerate(zip(grads, args)):
        # an ndarray gets an ndarray, a NumPy scalar a NumPy scalar
        assert type(g) is type(a), (i, type(g), type(a))
        assert g.shape == np.shape(a) and g.dtype == np.float64, (i, g.shape, g.dtype)
        np.testing.assert_allclose(g, numeric_grad(fn, args, i), rtol=RTOL, atol=ATOL,
                                   err_msg="gradient of argument %d" % i)
    return grads


# ----------------------------------------------------- logistic regression
def logistic_loss(w, b, X, y):
    z = np.dot(X, w) + b
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def logistic_loss_numpy(w, b, X, y):
    z = numpy.dot(X, w) + b
    p = 1.0 / (1.0 + numpy.exp(-z))
    return -numpy.mean(y * numpy.log(p) + (1.0 - y) * numpy.log(1.0 - p))


def logistic_data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((6, 3))
    w = rng.standard_normal(3) * 0.5
    b = np.float64(0.2)
    y = (rng.random(6) < 0.5).astype(np.float64)
    return w, b, X, y


@pytest.mark.parametrize("fn", [logistic_loss, logistic_loss_numpy], ids=lambda f: f.__name__)
def test_logistic_regression(fn):
    w, b, X, y = logistic_data()
    gw, gb, gX, gy = check_all_inputs(fn, (w, b, X, y))
    # closed form: d/dw = X^T (p - y) / n, d/db = mean(p - y)
    p = 1.0 / (1.0 + np.exp(-(X @ w + b)))
    np.testing.assert_allclose(gw, X.T @ (p - y) / 6, rtol=1e-12)
    np.testing.assert_allclose(gb, np.mean(p - y), rtol=1e-12)
    assert np.shape(gb) == ()


# ------------------------------------------------- softmax cross entropy
LABELS = np.array([2, 0, 1, 2, 1])


def softmax_xent(logits, labels):
    m = np.max(logits, axis=1, keepdims=True)
    e = np.exp(logits - m)
    p = e / np.sum(e, axis=1, keepdims=True)
    n = logits.shape[0]
    return -np.mean(np.log(p[np.arange(n), labels]))


def softmax_xent_fixed_rows(logits, labels):
    """The same loss with the row index written as a literal ``np.arange(5)``."""
    m = numpy.max(logits, axis=1, keepdims=True)
    e = numpy.exp(logits - m)
    p = e / numpy.sum(e, axis=1, keepdims=True)
    return -numpy.mean(numpy.log(p[numpy.arange(5), labels]))


def softmax_xent_reference(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return -np.mean(np.log(p[np.arange(len(labels)), labels])), p


def check_softmax_xent(fn):
    logits = np.random.default_rng(1).standard_normal((5, 3)) * 2
    loss, p = softmax_xent_reference(logits, LABELS)
    assert fn(logits, LABELS) == pytest.approx(loss, rel=1e-14)
    g_logits, g_labels = GradOperation(get_all=True)(fn)(logits, LABELS)

    def loss_of_logits(x):
        return fn(x, LABELS)
    np.testing.assert_allclose(g_logits, numeric_grad(loss_of_logits, (logits,), 0),
                               rtol=RTOL, atol=ATOL)
    # closed form: (softmax - one_hot(labels)) / n
    np.testing.assert_allclose(g_logits, (p - np.eye(3)[LABELS]) / 5, rtol=1e-12, atol=1e-15)
    # integer labels: an integer-typed zero gradient (nothing flows into an index)
    assert g_labels.dtype == LABELS.dtype and g_labels.shape == LABELS.shape
    np.testing.assert_array_equal(g_labels, np.zeros_like(LABELS))


def test_softmax_cross_entropy_fixed_rows():
    check_softmax_xent(softmax_xent_fixed_rows)


def test_softmax_cross_entropy_arange_of_runtime_shape():
    check_softmax_xent(softmax_xent)


# -------------------------------------------------------------- 2-layer MLP
def mlp_loss(W1, b1, W2, b2, X, Y):
    h = jnp.maximum(jnp.dot(X, W1) + b1, 0.0)
    out = jnp.tanh(jnp.dot(h, W2) + b2)
    return jnp.mean((out - Y) ** 2)


def mlp_data(seed=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((4, 3))
    W1 = rng.standard_normal((3, 5))
    b1 = rng.standard_normal(5) * 0.1
    W2 = rng.standard_normal((5, 2)) * 0.5
    b2 = rng.standard_normal(2) * 0.1
    Y = rng.standard_normal((4, 2)) * 0.5
    return W1, b1, W2, b2, X, Y


def test_two_layer_mlp():
    W1, b1, W2, b2, X, Y = args = mlp_data()
    pre = X @ W1 + b1
    # the ReLU's kink stays far from every pre-activation (finite differences move them
    # by about 1e-6)
    assert np.min(np.abs(pre)) > 1e-3
    gW1, gb1, gW2, gb2, gX, gY = check_all_inputs(mlp_loss, args)
    # closed form of the last layer
    h = np.maximum(pre, 0)
    out = np.tanh(h @ W2 + b2)
    d_z2 = 2 * (out - Y) / Y.size * (1 - out ** 2)
    np.testing.assert_allclose(gW2, h.T @ d_z2, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gb2, d_z2.sum(0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gY, -2 * (out - Y) / Y.size, rtol=1e-12)


# -------------------------------------------------------------------- norms
def vector_norm_np(v):
    return np.linalg.norm(v)


def vector_norm_numpy(v):
    return numpy.linalg.norm(v)


def vector_norm_jnp(v):
    return jnp.linalg.norm(v) * 1.0


def frobenius_np(M):
    return np.linalg.norm(M)


def frobenius_fro_numpy(M):
    return numpy.linalg.norm(M, "fro")


def frobenius_ord_jnp(M):
    return jnp.linalg.norm(M, ord="fro")


def normalised_distance(a, b):
    d = a - b
    return np.linalg.norm(d) / (1.0 + np.linalg.norm(a))


@pytest.mark.parametrize("fn", [vector_norm_np, vector_norm_numpy, vector_norm_jnp],
                         ids=lambda f: f.__name__)
def test_vector_norm(fn):
    v = np.random.default_rng(3).standard_normal(5)
    assert fn(v) == pytest.approx(np.sqrt(np.sum(v * v)), rel=1e-14)
    (g,) = check_all_inputs(fn, (v,))
    np.testing.assert_allclose(g, v / np.sqrt(np.sum(v * v)), rtol=1e-12)   # closed form


@pytest.mark.parametrize("fn", [frobenius_np, frobenius_fro_numpy, frobenius_ord_jnp],
                         ids=lambda f: f.__name__)
def test_frobenius_norm(fn):
    M = np.random.default_rng(4).standard_normal((3, 4))
    assert fn(M) == pytest.approx(np.sqrt(np.sum(M * M)), rel=1e-14)
    (g,) = check_all_inputs(fn, (M,))
    np.testing.assert_allclose(g, M / np.sqrt(np.sum(M * M)), rtol=1e-12)   # closed form


def test_norms_in_a_larger_expression():
    rng = np.random.default_rng(5)
    check_all_inputs(normalised_distance, (rng.standard_normal((2, 3)),
                                           rng.standard_normal((2, 3))))


# ------------------------------------------------ NumPy in a helper module
HELPER_MODULE = textwrap.dedent('''
    import numpy as jnp
    from numpy import dot, maximum, tanh
    from numpy.linalg import norm


    def mlp_jnp(W1, W2, X):
        h = jnp.maximum(jnp.dot(X, W1), 0.0)
        return jnp.mean(jnp.tanh(jnp.dot(h, W2)) ** 2) + jnp.linalg.norm(W2)


    def mlp_imported_names(W1, W2, X):
        h = maximum(dot(X, W1), 0.0)
        return norm(tanh(dot(h, W2))) + norm(W1, "fro")
''')


@pytest.fixture(scope="module")
def helper_module(tmp_path_factory):
    """A separate .py module importing NumPy as ``jnp`` and by bare function names."""
    path = tmp_path_factory.mktemp("numpy_helper") / "numpy_helper_module.py"
    path.write_text(HELPER_MODULE)
    spec = importlib.util.spec_from_file_location("numpy_helper_module", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["mlp_jnp", "mlp_imported_names"])
def test_numpy_program_in_a_helper_module(helper_module, name):
    W1, _, W2, _, X, _ = mlp_data(seed=6)
    assert np.min(np.abs(X @ W1)) > 1e-3        # clear of the ReLU's kink
    check_all_inputs(getattr(helper_module, name), (W1, W2, X))


# ---------------------------------------------- unmapped NumPy function
def uses_ldexp(x):
    return np.sum(np.ldexp(x, 2) * x)


def uses_ldexp_numpy(x):
    return numpy.sum(numpy.ldexp(x, 2))


@pytest.mark.parametrize("fn", [uses_ldexp, uses_ldexp_numpy], ids=lambda f: f.__name__)
def test_unmapped_numpy_function_is_a_clear_error(fn):
    x = np.array([1.0, 8.0, 27.0])
    with pytest.raises(s2sad.NoGradientRuleError) as info:
        GradOperation(get_all=True)(fn)(x)
    message = str(info.value)
    assert "numpy.ldexp" in message
    assert "ldexp(x, 2)" in message               # the offending source line is shown
    assert "test_numpy_programs.py" in message  # and where it is


def reduces_a_scalar_over_axis_0(x):
    s = np.exp(-x[0] @ x[0])        # 0-d: NumPy sums it (not averages it) over axis 0 too
    t = np.sum(x, axis=1) * np.sum(s, axis=0)
    return np.sum(np.tanh(t)) + np.sin(np.sum(s))


def test_reductions_of_a_0d_value_over_axis_0():
    check_all_inputs(reduces_a_scalar_over_axis_0,
                     (np.random.default_rng(31).standard_normal((3, 3)) * 0.3,))
