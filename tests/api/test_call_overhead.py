"""The prepared call path of a gradient function of plain arrays or Tensors.

After a first call through the general path, ``GradOperation()(fn)`` keeps
the compiled entry and calls it directly while the arguments keep their
exact types (NumPy arrays or Tensors).  Its results must equal the general
path's, every other kind of call must still take the general path, and
clearing the cache or changing the flags must not leave a stale entry in
use.  Gradients are checked against central finite differences or closed
forms.
"""
import numpy as np
import pytest

import s2sad
from s2sad import ops, Tensor, Parameter
from s2sad import driver as G

from gradcheck import numeric_grad


def d2l(a):
    b = a * 2
    while np.linalg.norm(b) < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return np.sum(c)


def two(x, y):
    return np.sum(np.sin(x) * y + x * x)


def vector(x):
    return np.sin(x) * 2.0


def scaled(x, k=3.0):
    return np.sum(x * k)


RNG = np.random.default_rng(11)
A = RNG.standard_normal(20)
B = RNG.standard_normal(20)


def _fd(fn, args, i):
    return numeric_grad(fn, args, i)


def _general(make, args):
    """The result of a first call, which always takes the general path."""
    g = make()
    out = g(*args)
    return g, out


def test_fast_path_equals_general_path_and_finite_differences():
    g, first = _general(lambda: ops.GradOperation()(d2l), (A,))
    assert g._fast is not None
    second = g(A)
    np.testing.assert_array_equal(second, first)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(second, _fd(d2l, (A,), 0), rtol=1e-6, atol=1e-6)
    assert g.last is g.compiled(A)


def test_get_all_two_arrays():
    g, first = _general(lambda: ops.GradOperation(get_all=True)(two), (A, B))
    second = g(A, B)
    assert isinstance(second, tuple) and len(second) == 2
    for i in range(2):
        np.testing.assert_array_equal(second[i], first[i])
        # central differences in float64 (step 1e-6): ~1e-9 relative error at most
        np.testing.assert_allclose(second[i], _fd(two, (A, B), i), rtol=1e-6, atol=1e-6)


def test_sens_param():
    sens = RNG.standard_normal(20)
    g, first = _general(lambda: ops.GradOperation(sens_param=True)(vector), (A, sens))
    second = g(A, sens)
    np.testing.assert_array_equal(second, first)
    # a closed form in float64, the same values by other ops: rounding only (both lines)
    np.testing.assert_allclose(second, 2.0 * np.cos(A) * sens, rtol=1e-12)
    other = RNG.standard_normal(20)
    np.testing.assert_allclose(g(A, other), 2.0 * np.cos(A) * other, rtol=1e-12)


def test_sens_param_with_only_a_sens_returns_empty():
    def const(*xs):
        return np.ones(3)
    g = ops.GradOperation(sens_param=True)(const)
    assert g(np.ones(3)) == ()
    assert g(np.ones(3)) == ()


def test_other_argument_kinds_take_the_general_path():
    g = ops.GradOperation()(two)
    g(A, B)
    assert g._fast is not None
    # a Tensor, a Python scalar, a float32 array, a tuple: each still right
    t = g(Tensor(A), B)
    assert isinstance(t, Tensor)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(t.asnumpy(), _fd(two, (A, B), 0), rtol=1e-6, atol=1e-6)
    x32 = A.astype(np.float32)
    g32 = g(x32, B)
    assert g32.dtype == np.float32
    s = g(A, 2.0)
    # a closed form in float64, the same values by other ops: rounding only
    np.testing.assert_allclose(s, np.cos(A) * 2.0 + 2 * A, rtol=1e-12)
    np.testing.assert_array_equal(g(A, B), ops.GradOperation()(two)(A, B))

    def pair(xy):
        x, y = xy
        return np.sum(x * y)
    gp = ops.GradOperation()(pair)
    for _ in range(2):
        dx, dy = gp((A, B))
        np.testing.assert_allclose(dx, B)
        np.testing.assert_allclose(dy, A)


def test_keyword_default_and_changed_arity():
    g = ops.GradOperation()(scaled)
    for _ in range(2):
        np.testing.assert_allclose(g(A), np.full_like(A, 3.0))
    with pytest.raises(TypeError):
        g(A, 2.0, 1.0)


def test_cache_clear_is_seen():
    g = ops.GradOperation()(d2l)
    g(A)
    before = g.last
    G.cache.clear()
    out = g(A)
    assert g.last is not before            # compiled again, as the general path would
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(out, _fd(d2l, (A,), 0), rtol=1e-6, atol=1e-6)


def test_changed_flags_are_seen():
    op = ops.GradOperation()
    g = op(two)
    g(A, B)
    op.get_all = True
    out = g(A, B)
    assert isinstance(out, tuple) and len(out) == 2
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(out[1], _fd(two, (A, B), 1), rtol=1e-6, atol=1e-6)


def test_not_prepared_for_cells_or_weights():
    class Net(s2sad.nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(np.array([1.5, -0.5]), name="w")

        def construct(self, x):
            return np.sum(self.w * x * x)

    net = Net()
    g = ops.GradOperation()(net)
    x = np.array([0.3, 0.7])
    for _ in range(2):
        np.testing.assert_allclose(g(x), 2 * net.w.asnumpy() * x)
    assert g._fast is None
    gw = ops.GradOperation(get_by_list=True)(net, net.trainable_params())
    for _ in range(2):
        (dw,) = gw(x)
        np.testing.assert_allclose(dw.asnumpy(), x * x)
    assert gw._fast is None


def _sum_sin(x):
    return np.sum(np.sin(x))


_INNER = ops.GradOperation()(_sum_sin)


def _sum_inner(x):
    return np.sum(_INNER(x))


def test_gradient_of_a_gradient():
    inner, outer = _INNER, ops.GradOperation()(_sum_inner)
    for _ in range(2):
        # a closed form in float64, the same values by other ops: rounding only (both lines)
        np.testing.assert_allclose(outer(A), -np.sin(A), rtol=1e-12)
        np.testing.assert_allclose(inner(A), np.cos(A), rtol=1e-12)


def test_s2sad_grad_positions_unaffected():
    g = s2sad.grad(two, grad_position=(0, 1))
    for _ in range(2):
        dx, dy = g(A, B)
        # dx: central differences in float64 (step 1e-6), ~1e-9 relative error at most;
        # dy: a closed form in float64, the same values by other ops: rounding only
        np.testing.assert_allclose(dx, _fd(two, (A, B), 0), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(dy, np.sin(A), rtol=1e-12)


def test_array_subclass_takes_the_general_path():
    """The prepared path never serves a subclass: the general path refuses it
    (docs/semantics.md, "Subclasses of np.ndarray")."""
    class Sub(np.ndarray):
        pass
    g = ops.GradOperation()(d2l)
    g(A)
    g(A)
    with pytest.raises(TypeError, match="subclass of np.ndarray"):
        g(A.view(Sub))


# ------------------------------------------- s2sad.grad's packed call path
def three(x, k, y):
    return np.sum(np.sin(x) * y * k)


def _selected(grad_fn):
    """The GradFunction behind an ``s2sad.grad`` function (its closure holds it)."""
    from s2sad.api.functional import _SelectedGrad
    return next(c.cell_contents for c in grad_fn.__closure__
                if isinstance(c.cell_contents, _SelectedGrad))


def _three_grads(x, k, y):
    # closed forms of d/dx and d/dy
    return np.cos(x) * y * k, np.sin(x) * k


def test_grad_positions_fast_path_equals_general_path_and_closed_form():
    K = RNG.standard_normal(20)
    g = s2sad.grad(three, grad_position=(0, 2))
    first = g(A, K, B)
    assert _selected(g)._fast_packed is not None
    second = g(A, K, B)
    for got, ref, want in zip(second, first, _three_grads(A, K, B)):
        np.testing.assert_array_equal(got, ref)
        # a closed form in float64, the same values by other ops: rounding only
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # new values on the prepared path
    C = RNG.standard_normal(20)
    for got, want in zip(g(C, K, A), _three_grads(C, K, A)):
        np.testing.assert_allclose(got, want, rtol=1e-12)   # closed form: rounding only


def test_grad_positions_other_argument_kinds_take_the_general_path():
    g = s2sad.grad(three, grad_position=(0, 2))
    g(A, B, B)
    assert _selected(g)._fast_packed is not None
    # a Python number among the others is a constant of the compiled code
    for k in (2.0, -1.5):
        for got, want in zip(g(A, k, B), _three_grads(A, k, B)):
            np.testing.assert_allclose(got, want, rtol=1e-12)   # closed form: rounding only
    # a Tensor selected comes back a Tensor; float32 keeps its dtype
    dx, dy = g(Tensor(A), B, B)
    assert isinstance(dx, Tensor) and isinstance(dy, np.ndarray)
    np.testing.assert_allclose(dx.asnumpy(), _three_grads(A, B, B)[0], rtol=1e-12)
    dx32, _ = g(A.astype(np.float32), B, B)
    assert dx32.dtype == np.float32
    # back to arrays: the right gradients again
    for got, want in zip(g(B, A, A), _three_grads(B, A, A)):
        np.testing.assert_allclose(got, want, rtol=1e-12)   # closed form: rounding only


def test_grad_positions_changed_arity_and_single_position():
    g = s2sad.grad(scaled)                  # one position, given bare
    np.testing.assert_allclose(g(A), np.full_like(A, 3.0))
    np.testing.assert_allclose(g(A), np.full_like(A, 3.0))
    assert _selected(g)._fast_packed is not None
    # a second argument changes the layout: k is an array now, and differentiated not
    np.testing.assert_allclose(g(A, B), B)
    np.testing.assert_allclose(g(A, B), B)
    np.testing.assert_allclose(g(A), np.full_like(A, 3.0))


def test_grad_positions_cache_clear_and_value_and_grad():
    g = s2sad.grad(d2l)
    g(A)
    before = _selected(g).last
    G.cache.clear()
    out = g(A)
    assert _selected(g).last is not before
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(out, _fd(d2l, (A,), 0), rtol=1e-6, atol=1e-6)
    vg = s2sad.value_and_grad(two, grad_position=1)
    for _ in range(2):
        value, dy = vg(A, B)
        assert value == two(A, B)
        np.testing.assert_allclose(dy, np.sin(A), rtol=1e-12)   # closed form: rounding only


def test_grad_positions_not_prepared_for_weights():
    w = Parameter(np.array([1.5, -0.5]), name="w")

    class Net(s2sad.nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = w

        def construct(self, x):
            return np.sum(self.w * x * x)

    x = np.array([0.3, 0.7])
    g = s2sad.grad(Net(), grad_position=0, weights=[w])
    for _ in range(2):
        dx, (dw,) = g(x)
        np.testing.assert_allclose(dx, 2 * w.asnumpy() * x)    # closed form
        np.testing.assert_allclose(dw.asnumpy(), x * x)
    assert _selected(g)._fast_packed is None


# ------------------------------------------------------------ Tensor arguments
def _same_tensors(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert type(a) is type(b) and a.dtype == b.dtype
        np.testing.assert_array_equal(a.asnumpy() if isinstance(a, Tensor) else a,
                                      b.asnumpy() if isinstance(b, Tensor) else b)


def test_tensor_arguments_take_the_prepared_path():
    make = lambda: ops.GradOperation(get_all=True)(two)     # noqa: E731
    for args in [(Tensor(A), Tensor(B)), (Tensor(A), B), (Tensor(A.astype(np.float32)), B)]:
        g, first = _general(make, args)
        assert g._fast is not None and g._fast.types == tuple(map(type, args))
        second = g(*args)
        _same_tensors(second, first)
        for k in range(2):
            assert type(second[k]) is type(args[k])
            raw = [getattr(a, "_data", a) for a in args]
            assert np.asarray(getattr(second[k], "_data", second[k])).dtype == raw[k].dtype
            # central differences in float64 (step 1e-6): ~1e-9 relative error at
            # most; a float32 x's gradient is rounded to float32 (eps 1.2e-7)
            tol = 1e-5 if raw[k].dtype == np.float32 else 1e-6
            np.testing.assert_allclose(getattr(second[k], "_data", second[k]),
                                       _fd(two, [r.astype(np.float64) for r in raw], k),
                                       rtol=tol, atol=tol)


def test_changing_between_arrays_and_tensors_takes_the_general_path():
    g = ops.GradOperation(get_all=True)(two)
    g(Tensor(A), Tensor(B))
    dx, dy = g(A, B)                    # arrays now: array gradients
    assert type(dx) is np.ndarray and type(dy) is np.ndarray
    # a closed form in float64, the same values by other ops: rounding only
    np.testing.assert_allclose(dy, np.sin(A), rtol=1e-12)
    assert g._fast.types == (np.ndarray, np.ndarray)
    p = Parameter(Tensor(A), name="p")  # a Parameter is not prepared for, but right
    dp, _ = g(p, Tensor(B))
    assert type(dp) is Tensor
    np.testing.assert_allclose(dp.asnumpy(), np.cos(A) * B + 2 * A, rtol=1e-12)
    assert g._fast is None
    dx, dy = g(Tensor(A), Tensor(B))
    assert type(dx) is Tensor and type(dy) is Tensor


def test_grad_positions_with_tensors():
    K = RNG.standard_normal(20)
    g = s2sad.grad(three, grad_position=(0, 2))
    args = (Tensor(A), Tensor(K), Tensor(B))
    first = g(*args)
    assert _selected(g)._fast_packed is not None
    second = g(*args)
    _same_tensors(second, first)
    for got, want in zip(second, _three_grads(A, K, B)):
        assert type(got) is Tensor
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)    # closed form
    labels = Tensor(np.arange(20))      # an integer Tensor among the others
    h = s2sad.grad(scaled_by, grad_position=0)
    for _ in range(2):
        dx = h(Tensor(A), labels)
        np.testing.assert_allclose(dx.asnumpy(), np.arange(20.0), rtol=1e-12)


def scaled_by(x, k):
    return np.sum(x * k)



def sine_sum(x):
    return np.sum(np.sin(x) * 2.0)


def test_prepared_path_follows_the_options_it_was_prepared_under():
    """A path prepared under some options serves calls made under equal options (a
    ``with`` block around each call, as a benchmark or a training loop writes it),
    never a call made under others."""
    g = ops.GradOperation()(sine_sum)
    with s2sad.options(release=False):
        first = g(A)
    fast = g._fast
    assert fast is not None and not fast.matches(g, (A,))   # default options now
    with s2sad.options(release=False):
        assert fast.matches(g, (A,))
        np.testing.assert_array_equal(g(A), first)
        assert g._fast is fast                                # served, not prepared again
        assert "del " not in g.last.executed_source           # compiled without release
    default = g(A)                                            # the general path: other code
    assert "del " in g.last.executed_source
    for got in (first, default):
        np.testing.assert_allclose(got, 2.0 * np.cos(A), rtol=1e-12)
