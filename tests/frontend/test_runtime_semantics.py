"""Values read at run time: random draws, asserts, prints and conversions to
Python numbers inside differentiated code behave as the eager function does.

Gradients are compared with float64 central finite differences of the
function run eagerly with the same random draw (the seed set again before
each evaluation), or with a closed form.
"""
import functools
import random

import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.errors import CompileError
from s2sad.api.inspection import get_source

from gradcheck import numeric_grad

G = ops.GradOperation()
X = np.array([0.5, -1.25, 2.0, 0.75, -0.5, 1.5])


def seeded(fn, seed):
    """``fn`` with NumPy's global generator reseeded before each call."""
    def run(*args):
        np.random.seed(seed)
        return fn(*args)
    return run


# ------------------------------------------------------------- random draws
def noisy(x):
    noise = np.random.normal(0.0, 1.0, size=x.shape)
    return np.sum(x * noise)


def test_random_draw_happens_on_every_call():
    g = G(noisy)
    first, second = g(X), g(X)
    assert not np.allclose(first, second)
    np.random.seed(5)
    expected = np.random.normal(0.0, 1.0, size=X.shape)
    np.random.seed(5)
    np.testing.assert_allclose(g(X), expected, rtol=1e-12)


def test_random_draw_is_readable_in_generated_code():
    src = get_source(G(noisy), X)
    assert "noise = xp.random.normal(0.0, 1.0, size=shape_x)" in src


def dropout_like(x):
    mask = np.random.rand(*x.shape) > 0.5
    return np.sum(x * x * mask)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_backward_uses_the_mask_its_forward_drew(seed):
    np.random.seed(seed)
    got = G(dropout_like)(X)
    want = numeric_grad(seeded(dropout_like, seed), [X], 0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert 0 < np.count_nonzero(got) < X.size or seed != 0


def test_draws_in_a_loop_differ_per_iteration():
    def f(x):
        acc = x * 0.0
        for _ in range(3):
            acc = acc + x * np.random.rand(*x.shape)
        return np.sum(acc)
    for seed in (2, 3):
        np.random.seed(seed)
        got = G(f)(X)
        np.random.seed(seed)
        want = sum(np.random.rand(X.size) for _ in range(3))
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_generator_made_in_the_function_restarts_each_call():
    def f(x):
        rng = np.random.default_rng(0)
        return np.sum(x * rng.normal(size=x.shape))
    want = np.random.default_rng(0).normal(size=X.shape)
    g = G(f)
    np.testing.assert_allclose(g(X), want, rtol=1e-12)
    np.testing.assert_allclose(g(X), want, rtol=1e-12)


def test_module_generator_and_python_random_advance():
    rng = np.random.default_rng(11)

    def f(x):
        return np.sum(x * rng.random(x.shape)) + random.random() * np.sum(x)
    g = G(f)
    rng_copy = np.random.default_rng(11)
    for _ in range(2):
        random.seed(4)
        got = g(X)
        random.seed(4)
        want = rng_copy.random(X.shape) + random.random()
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_randn_with_known_shape_is_not_folded():
    def f(x):
        return np.sum(x * np.random.randn(6))
    g = G(f)
    assert not np.allclose(g(X), g(X))


# ------------------------------------------------------------------ asserts
def positive_only(x):
    assert np.all(x > 0), "x must be positive"
    return np.sum(x * x)


def test_runtime_assert_is_kept():
    np.testing.assert_allclose(G(positive_only)(np.abs(X)), 2 * np.abs(X))
    with pytest.raises(AssertionError, match="x must be positive") as info:
        G(positive_only)(X)
    notes = "".join(getattr(info.value, "__notes__", []))
    if hasattr(BaseException, "add_note"):
        assert "assert np.all(x > 0)" in notes


def test_runtime_assert_is_readable():
    src = get_source(G(positive_only), np.abs(X))
    assert "rt.check_assert(" in src and "'x must be positive')" in src


def test_runtime_assert_inside_branch():
    def f(x, flag):
        if flag:
            assert np.sum(x) < 100.0
        return np.sum(x * x)
    with pytest.raises(AssertionError):
        G(f)(X + 100.0, True)
    np.testing.assert_allclose(G(f)(X + 100.0, False), 2 * (X + 100.0))


# ---------------------------------------------------------- python numbers
@pytest.mark.parametrize("expr", ["float(np.sum(x))", "int(np.sum(x))", "bool(np.sum(x))",
                                  "x.item()", "x.tolist()"])
def test_conversion_of_differentiable_value_is_refused(expr, tmp_path):
    path = tmp_path / "conv_mod.py"
    path.write_text("import numpy as np\n\ndef f(x):\n    y = %s\n    return np.sum(x) * 2.0\n"
                    % expr)
    import importlib.util
    spec = importlib.util.spec_from_file_location("conv_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(CompileError) as info:
        G(mod.f)(X[:1])
    text = str(info.value)
    assert "line 4" in text and "Python number" in text and "stop_gradient" in text


def test_conversion_without_gradient_is_allowed():
    def f(x, w):
        n = float(x.shape[0])
        k = int(np.sum(x > 0))
        big = bool(np.max(w) > 0)
        return np.sum(x * x) / n * (2.0 if big else 1.0) + x[k]
    w = np.array([1.0, -1.0])
    want = numeric_grad(lambda v: f(v, w), [X], 0)
    np.testing.assert_allclose(G(f)(X, w), want, rtol=1e-6, atol=1e-6)


def test_conversion_of_stopped_value_is_allowed():
    def f(x):
        return np.sum(x) * float(ops.stop_gradient(np.sum(x * x)))
    np.testing.assert_allclose(G(f)(X), np.full(X.shape, np.sum(X * X)))


def test_item_without_gradient_runs_at_run_time():
    def f(x):
        m = np.sum(x > 1.0).item()
        return x[m] * 3.0
    got = G(f)(X)
    want = np.zeros_like(X)
    want[np.sum(X > 1.0)] = 3.0
    np.testing.assert_allclose(got, want)


def test_print_runs_at_run_time(capsys):
    def f(x):
        print("x is", x)
        return np.sum(x * x)
    g = G(f)
    g(X)
    g(2 * X)
    out = capsys.readouterr().out
    assert out.count("x is") == 2 and str(2 * X) in out


# --------------------------------------------------------------- decorators
def double(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return 2.0 * fn(*args)
    return wrapper


def triple_unwrapped(fn):
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 3.0
    return wrapper


def scale(k):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return k * fn(*args, **kwargs)
        return wrapper
    return deco


@double
def doubled(x):
    return np.sum(x * x)


@triple_unwrapped
def tripled(x, power=2.0):
    return np.sum(x ** power)


@scale(5.0)
@double
def stacked(x):
    return np.sum(x * x)


class DoubledNet(s2sad.nn.Cell):
    @double
    def construct(self, x):
        return np.sum(x * x)


class ScaledNet(s2sad.nn.Cell):
    @scale(4.0)
    def construct(self, x):
        return np.sum(np.sin(x))


@pytest.mark.parametrize("fn", [doubled, tripled, stacked, DoubledNet(), ScaledNet()],
                         ids=["wraps", "no-wraps", "stacked", "cell", "cell-with-arguments"])
def test_decorated_function_is_differentiated_as_called(fn):
    want = numeric_grad(fn, [X], 0)
    np.testing.assert_allclose(G(fn)(X), want, rtol=1e-6, atol=1e-6)


def test_decorated_with_keyword_arguments():
    def f(x):
        return tripled(x, power=3.0)
    np.testing.assert_allclose(G(f)(X), 9.0 * X ** 2, rtol=1e-12)


def test_double_star_of_a_runtime_value_is_refused():
    def f(x, opts):
        return tripled(x, **opts)
    with pytest.raises(CompileError, match=r"\*\*opts"):
        G(f)(X, s2sad.mutable((1.0,)))


# -------------------------------------------------------------- type checks
A = np.array([1.0, 2.0])
B = np.array([3.0, -4.0])


def branch_on_list(xs):
    if isinstance(xs, list):
        return 2.0 * np.sum(xs[0] * xs[1])
    return np.sum(xs[0] * xs[1])


@pytest.mark.parametrize("container", [list, tuple])
def test_isinstance_list_of_a_list_argument(container):
    got = G(branch_on_list)(container([A, B]))
    k = 2.0 if container is list else 1.0
    np.testing.assert_allclose(got[0], k * B)
    np.testing.assert_allclose(got[1], k * A)


def test_type_of_a_list_argument():
    def f(xs):
        if type(xs) is list and isinstance(xs, (list, tuple)):
            return 3.0 * np.sum(xs[0])
        return np.sum(xs[0])
    np.testing.assert_allclose(G(f)([A])[0], 3.0 * np.ones(2))
    np.testing.assert_allclose(G(f)((A,))[0], np.ones(2))


def array_or_tensor(x):
    if isinstance(x, s2sad.Tensor):
        return np.sum(x * x)
    if isinstance(x, np.ndarray):
        return 3.0 * np.sum(x)
    return np.sum(x)


def test_isinstance_of_array_and_tensor_arguments():
    np.testing.assert_allclose(G(array_or_tensor)(A), 3.0 * np.ones(2))
    got = G(array_or_tensor)(s2sad.Tensor(A))
    np.testing.assert_allclose(getattr(got, "asnumpy", lambda: got)(), 2 * A)


def test_type_check_of_a_computed_value_is_refused():
    def f(x):
        y = x * 2.0
        if isinstance(y, np.ndarray):
            return np.sum(y)
        return np.sum(x)
    with pytest.raises(CompileError, match="cannot be answered while compiling") as info:
        G(f)(A)
    assert "isinstance(y, np.ndarray)" in str(info.value)


def test_type_check_answered_the_same_for_every_kind():
    def f(x):
        y = x * 2.0
        if isinstance(y, (list, tuple, dict, str)):
            return np.sum(x)
        return np.sum(y * y)
    np.testing.assert_allclose(G(f)(A), 8.0 * A)


def test_list_returned_by_a_helper_is_still_a_list():
    def pair(x):
        return [x, 2.0 * x]

    def f(x):
        ys = pair(x)
        if isinstance(ys, list):
            return np.sum(ys[0] * ys[1])
        return np.sum(ys[0])
    np.testing.assert_allclose(G(f)(A), 4.0 * A)


def test_isinstance_of_a_parameter_attribute():
    class Net(s2sad.nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = s2sad.Parameter(np.array([2.0, 3.0]), name="w")

        def construct(self, x):
            if isinstance(self.w, s2sad.Parameter) and not isinstance(self.w, np.ndarray):
                return np.sum(self.w * x)
            return np.sum(x)
    got = G(Net())(A)
    np.testing.assert_allclose(getattr(got, "asnumpy", lambda: got)(), [2.0, 3.0])
