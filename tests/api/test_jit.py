"""``s2sad.jit`` (``ms_function``): compiled forward execution.

Every value a jitted call returns is compared with the eager call of the
same function (exactly: the compiled code applies the same NumPy operations),
its type too (Tensor in, Tensor out); gradients through a jitted function
with central finite differences.
"""
import numpy as np
import pytest

import s2sad
from s2sad import driver as G
from s2sad import context, nn, ops, Parameter, Tensor
from s2sad.errors import CompileError

from gradcheck import numeric_grad


def same(got, want):
    """Equal values of the same kinds, element by element, through tuples."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    elif isinstance(want, Tensor):
        assert got.shape == want.shape and np.array_equal(got.asnumpy(), want.asnumpy())
    else:
        assert np.array_equal(got, want)


@pytest.fixture
def compiles(monkeypatch):
    """The list of functions ``compile_forward`` compiled during the test."""
    done = []
    real = G.compile_forward

    def counting(fn, *rest):
        done.append(fn)
        return real(fn, *rest)
    monkeypatch.setattr(G, "compile_forward", counting)
    return done


def branchy(x, n):
    """if, while and for over runtime values; a Python int loop bound."""
    y = x * 1.5
    if (x.sum() > 0):
        y = np.sin(y)
    else:
        y = np.cos(y) - 1.0
    i = 0
    while y.sum() < 10.0 and i < 50:
        y = y * 1.25 + 0.5
        i += 1
    for k in range(n):
        y = y + x * k
    total = 0.0
    for row in y:
        total = total + row * row
    return y, total


def test_values_and_types_match_the_eager_call(compiles):
    jf = s2sad.jit(branchy)
    for x in (np.array([0.5, -0.25, 1.0]), np.array([-2.0, -1.0, 0.5]),
              Tensor(np.array([0.1, 0.2, 0.3])), Tensor(np.array([-3.0, 1.0, 0.5]))):
        same(jf(x, 3), branchy(x, 3))
    # one compile per argument kind: arrays, then Tensors
    assert compiles == [branchy, branchy]


def test_decorator_forms_and_mindspore_keywords(compiles):
    from mindspore.common.api import jit, ms_function, jit_class, ms_class

    def f(x):
        return x * 2.0 + 1.0
    x = np.arange(3.0)
    for wrapped in (s2sad.jit(f), jit(f), jit()(f), jit(mode="PSJit", input_signature=None,
                                                      hash_args=None, jit_config=None)(f),
                    jit(capture_mode="ast", jit_level="O1", dynamic=0, fullgraph=True,
                        backend="ms_backend")(f),
                    ms_function(f), ms_function(fn=f, input_signature=None)):
        same(wrapped(x), f(x))
        assert wrapped.__wrapped__ is f and wrapped.__name__ == "f"
    assert len(compiles) == 1       # the wrappers share the function's cache entry
    assert s2sad.jit is jit is s2sad.common.api.jit and s2sad.ms_function is ms_function

    class Plain:
        pass
    assert jit_class(Plain) is Plain and ms_class(Plain) is Plain


def test_keyword_arguments_are_passed_by_position():
    @s2sad.jit
    def f(x, y, scale=2.0):
        return x * scale - y
    x, y = np.arange(3.0), np.ones(3)
    same(f(x, y=y), x * 2.0 - y)
    same(f(y=y, x=x, scale=3.0), x * 3.0 - y)
    with pytest.raises(TypeError, match="f\\(\\).*argument"):
        f(x, z=y)


def test_a_rebound_global_is_seen(compiles):
    global SCALE
    SCALE = 2.0

    @s2sad.jit
    def f(x):
        return x * SCALE
    x = np.arange(3.0)
    same(f(x), x * 2.0)
    SCALE = 5.0
    same(f(x), x * 5.0)
    same(f(x), x * 5.0)
    assert len(compiles) == 2       # rebinding recompiled once, never a stale value


def test_closures_see_what_each_captured():
    def make(k):
        @s2sad.jit
        def f(x):
            return np.tanh(x) * k
        return f
    x = np.array([0.3, -0.7])
    same(make(2.0)(x), np.tanh(x) * 2.0)
    same(make(np.float64(3.0))(x), np.tanh(x) * np.float64(3.0))
    same(make(np.array([1.0, 4.0]))(x), np.tanh(x) * np.array([1.0, 4.0]))


class Dense(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]])), name="w")
        self.b = Parameter(Tensor(np.array([0.1, -0.1])), name="b")

    def construct(self, x):
        h = ops.matmul(x, self.w) + self.b
        if h.sum() > 0:
            h = ops.tanh(h)
        return h * 2.0


class JitDense(Dense):
    @s2sad.jit
    def construct(self, x):
        h = ops.matmul(x, self.w) + self.b
        if h.sum() > 0:
            h = ops.tanh(h)
        return h * 2.0


def test_jitted_construct_matches_eager_and_reads_parameters_each_call(compiles):
    eager, net = Dense(), JitDense()
    assert JitDense.construct.__name__ == "construct" and not hasattr(
        JitDense.construct, "__wrapped__")      # gradients read the user's function
    x = Tensor(np.array([[0.5, -1.0, 2.0], [1.0, 1.0, -3.0]]))
    same(net(x), eager(x))
    for cell in (eager, net):
        cell.w.set_data(Tensor(cell.w.asnumpy() * -0.5))
        cell.b = Parameter(Tensor(np.array([2.0, 3.0])), name="b")
    same(net(x), eager(x))
    assert compiles == [JitDense.construct]

    class Overriding(JitDense):
        def construct(self, x):      # not jitted: runs eagerly
            return x
    assert Overriding()(x) is x


def test_jit_of_a_cell_instance_and_of_a_method():
    class WithHelper(Dense):
        @s2sad.jit
        def helper(self, x, k):
            return ops.matmul(x, self.w) * k
    net = WithHelper()
    x = Tensor(np.array([[0.5, -1.0, 2.0]]))
    same(s2sad.jit(net)(x), Dense.construct(net, x))
    same(net.helper(x, 3.0), WithHelper.helper.__wrapped__(net, x, 3.0))
    net.w.set_data(Tensor(np.ones((3, 2))))
    same(net.helper(x, 3.0), WithHelper.helper.__wrapped__(net, x, 3.0))


def test_get_source_shows_the_compiled_forward():
    @s2sad.jit
    def poly(x):
        return x * x + 3.0 * x
    x = np.arange(3.0)
    src = s2sad.get_source(poly, x)
    assert src.startswith("# s2sad: compiled forward of ")
    assert "poly (" in src.splitlines()[0] and "test_jit.py)" in src.splitlines()[0]
    line = poly.__wrapped__.__code__.co_firstlineno + 2
    assert "# line %d: return x * x + 3.0 * x" % line in src
    assert s2sad.get_source(poly) == src        # the last call's entry
    standalone = s2sad.get_source(poly, x, standalone=True)
    namespace = {}
    exec(compile(standalone, "<standalone>", "exec"), namespace)
    same(namespace[poly.last.grad_ir.name](x), poly(x))


def test_gradients_flow_through_a_jitted_function():
    @s2sad.jit
    def inner(x, y):
        return np.sin(x) * y + x * x

    def outer(x, y):
        return (inner(x, y) * 2.0).sum()
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -2.0])
    want = numeric_grad(outer, (x, y), 0)
    np.testing.assert_allclose(s2sad.grad(outer)(x, y), want, rtol=1e-7, atol=1e-8)
    # the jitted function differentiated directly
    np.testing.assert_allclose(ops.GradOperation()(inner)(x, y),
                               numeric_grad(lambda a, b: inner(a, b).sum(), (x, y), 0),
                               rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(s2sad.grad(inner, grad_position=1)(x, y), np.sin(x),
                               rtol=1e-15)


def test_gradients_of_a_jitted_cell_match_finite_differences():
    net = JitDense()
    x = np.array([[0.5, -1.0, 2.0], [1.0, 1.0, -3.0]])
    g = ops.GradOperation()(net)(Tensor(x))

    def loss(a):
        return net(Tensor(a)).asnumpy().sum()
    np.testing.assert_allclose(g.asnumpy(), numeric_grad(loss, (x,), 0), rtol=1e-7,
                               atol=1e-8)


def test_unsupported_syntax_raises_at_the_users_line():
    @s2sad.jit
    def f(x):
        with open(__file__):
            pass
        return x
    with pytest.raises(CompileError) as info:
        f(np.ones(2))
    assert info.value.loc.lineno == f.__wrapped__.__code__.co_firstlineno + 2
    assert "test_jit.py" in str(info.value)


def test_graph_mode_is_recorded_and_cells_keep_eager_semantics():
    class Counting(nn.Cell):
        calls = 0

        def construct(self, x):
            Counting.calls += 1          # a Python side effect compiled code would not repeat
            return x * 2.0
    context.set_context(mode=context.GRAPH_MODE)
    try:
        net = Counting()
        x = Tensor(np.ones(2))
        net(x)
        net(x)
        assert Counting.calls == 2
        assert context.get_context("mode") == context.GRAPH_MODE
    finally:
        context._reset()


class Effects(nn.Cell):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(3)
        self.drop = nn.Dropout(p=0.5)

    def construct(self, x):
        print("step")
        return self.drop(self.bn(x))


class JitEffects(Effects):
    @s2sad.jit
    def construct(self, x):
        print("step")
        return self.drop(self.bn(x))


def test_cells_with_eager_effects_keep_them(capsys):
    """BatchNorm's running statistics move (the call runs eagerly, with a warning); Dropout
    draws what the eager call draws; ``print`` prints on every call."""
    x = Tensor(np.random.RandomState(0).randn(4, 3))
    results = []
    for cls in (Effects, JitEffects):
        s2sad.set_seed(7)
        net = cls()
        net.set_train(True)
        if cls is JitEffects:
            with pytest.warns(s2sad.JitEagerWarning, match="BatchNorm1d.*self.bn"):
                outs = (net(x), net(x))
        else:
            outs = (net(x), net(x))
        results.append((outs, net.bn.moving_mean.asnumpy().copy()))
    same(results[1][0], results[0][0])
    assert np.array_equal(results[1][1], results[0][1]) and results[0][1].any()
    assert capsys.readouterr().out == "step\n" * 4


def test_dropout_and_print_run_compiled_with_eager_draws(capsys):
    class Drop(nn.Cell):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(p=0.5)

        @s2sad.jit
        def construct(self, x):
            print("call")
            return self.drop(x) * 2.0
    x = Tensor(np.arange(1.0, 9.0))
    net = Drop()
    net.set_train(True)
    s2sad.set_seed(3)
    got = (net(x), net(x))
    s2sad.set_seed(3)
    want = tuple(Drop.construct(net, x) for _ in range(2))
    same(got, want)
    assert not np.array_equal(got[0].asnumpy(), got[1].asnumpy())      # fresh draws per call
    assert capsys.readouterr().out == "call\n" * 4
    assert not net.__s2sad_jit__.last.eager_only


class Helped(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([1.0, -2.0, 0.5])), name="w")
        self.scale = 2.0

    @s2sad.jit
    def helper(self, x):
        return x * self.w * self.scale

    def construct(self, x):
        return np.sin(self.helper(x)).sum()


def test_a_jitted_method_inside_a_differentiated_construct():
    net = Helped()
    x = Tensor(np.array([0.3, 0.2, -1.0]))
    (gx,), (gw,) = ops.GradOperation(get_all=True, get_by_list=True)(
        net, s2sad.ParameterTuple(net.trainable_params()))(x)
    a, w = x.asnumpy(), net.w.asnumpy()
    np.testing.assert_allclose(gx.asnumpy(), np.cos(a * w * 2.0) * w * 2.0, rtol=1e-15)
    np.testing.assert_allclose(gw.asnumpy(), np.cos(a * w * 2.0) * a * 2.0, rtol=1e-15)


def test_a_changed_attribute_recompiles_and_jit_inside_jit_is_inlined(compiles):
    net = Helped()
    x = Tensor(np.array([0.3, 0.2, -1.0]))
    same(net.helper(x), x * net.w * 2.0)
    net.scale = 3.0
    same(net.helper(x), x * net.w * 3.0)
    assert len(compiles) == 2

    @s2sad.jit
    def inner(x):
        return x * 2.0

    @s2sad.jit
    def outer(x):
        return inner(x) + 1.0
    same(outer(np.ones(2)), np.ones(2) * 2.0 + 1.0)
    assert compiles[2:] == [outer.__wrapped__]      # inner compiled into outer, not apart


def cubes(beta):
    return np.sum(beta ** 3)


JIT_VMAP = s2sad.jit(s2sad.vmap(cubes))
JIT_GRAD = s2sad.jit(s2sad.grad(cubes))


def test_jit_of_a_transform_inside_a_gradient_is_what_the_transform_stages():
    """``jit(vmap(f))`` (JAX's batched log-probabilities) called inside a gradient:
    vmap's own staging, not a walk of its Python loop (which raised at the user's
    call that 'raise' is not supported)."""
    x = np.linspace(0.5, 2.0, 6).reshape(3, 2)
    np.testing.assert_allclose(s2sad.grad(lambda v: np.sum(JIT_VMAP(v)))(x), 3 * x ** 2,
                               rtol=1e-14)
    # d/dv sum((3 v^2)^2) = 36 v^3
    np.testing.assert_allclose(s2sad.grad(lambda v: np.sum(JIT_GRAD(v) ** 2))(x[0]),
                               36 * x[0] ** 3, rtol=1e-14)
