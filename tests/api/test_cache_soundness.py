"""The compiled-code cache is sound: whatever compiling read is guarded or read at run time.

For each kind of thing the compiler can read while compiling -- a global
scalar, a global array, a helper function, another module's attribute, a
closure cell, a ``nonlocal`` variable, a Cell attribute of each kind, the
contents of a dict or list, a Parameter, a default argument -- the test
changes it between two calls of one gradient function and compares the
gradient with central differences of the function run eagerly at that
moment.  Also: floats count by meaning as constant arguments (-0.0, NaN),
closures made anew share one compile, recompiles are visible, the cache is
bounded and can be emptied, and dropping closures frees what they captured.
"""
import gc
import importlib
import os
import subprocess
import sys
import textwrap
import tracemalloc
import warnings

import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Parameter, Tensor
from s2sad import driver as G
from s2sad.driver import caches

from campaign import scaled
from gradcheck import numeric_grad

X = np.array([0.3, -0.7, 1.1])

PROGRAMS = '''
import numpy as np
import s2sad
from s2sad import nn, ops, Parameter, Tensor
import {other} as other

SCALE = 2.0
W = np.array([1.0, 2.0, 3.0])
MODE = "sin"
TABLE = {{"a": 2.0}}
ITEMS = [1.0, 3.0]


def helper(x):
    return x * 2.0


def global_scalar(x):
    return np.sum(np.sin(x) * SCALE)


def global_array(x):
    return np.sum(np.sin(x) * W)


def global_string(x):
    if MODE == "sin":
        return np.sum(np.sin(x))
    return np.sum(np.cos(x))


def calls_helper(x):
    return np.sum(np.sin(helper(x)))


def module_attribute(x):
    return np.sum(np.sin(x) * other.FACTOR)


def dict_item(x):
    return np.sum(np.sin(x) * TABLE["a"])


def list_items(x):
    total = 0.0
    for c in ITEMS:
        total = total + np.sum(np.sin(x * c))
    return total


def with_default(x, k=2.0):
    return np.sum(np.sin(x) * k)


def with_keyword_default(x, *, k=2.0):
    return np.sum(x ** k)


def make_scaled(k):
    def scaled(x):
        return np.sum(np.sin(x) * k)
    return scaled


def make_counter():
    k = 1.0

    def f(x):
        return np.sum(np.sin(x) * k)

    def bump(v):
        nonlocal k
        k = v
    return f, bump


def tanh_of(x):
    return np.tanh(x)


def arctan_of(x, c):
    return np.sum(np.arctan2(c, -1.0) * x)


class Double(nn.Cell):
    def construct(self, x):
        return x * 2.0


class Square(nn.Cell):
    def construct(self, x):
        return x * x


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.sub = Double()
        self.scale = 2.0
        self.act = ops.Sin()
        self.cfg = {{"a": 2.0}}
        self.coefs = [1.0, 2.0]
        self.fn = np.sin
        self.w = Parameter(Tensor(np.array([1.0, 2.0, 3.0])), name="w")

    def construct(self, x):
        y = self.act(self.sub(x) * self.scale) * self.cfg["a"] * self.coefs[1]
        return (self.fn(y) * self.w).sum()
'''


_made = []


@pytest.fixture
def mod(tmp_path, monkeypatch):
    """A fresh module of the programs above (its globals are changed by the tests)."""
    _made.append(None)
    other = "cache_other_%d" % len(_made)
    (tmp_path / (other + ".py")).write_text("FACTOR = 2.0\n")
    name = "cache_programs_%d" % len(_made)
    (tmp_path / (name + ".py")).write_text(PROGRAMS.format(other=other))
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def _check(g, f, *args):
    """``g(*args)`` (the gradient of the first argument) against central differences now."""
    np.testing.assert_allclose(np.asarray(g(*args)), numeric_grad(f, args, 0),
                               rtol=1e-6, atol=1e-8)


def _twice(mod, name, change):
    """The gradient before and after ``change()``, each against the eager function."""
    f = getattr(mod, name)
    g = s2sad.grad(f)
    _check(g, f, X)
    change()
    _check(g, lambda x: getattr(mod, name)(x), X)


def _counting_compiles(monkeypatch):
    calls = []
    for name in ("compile_grad", "compile_nested"):
        real = getattr(G, name)

        def counted(*args, _real=real, **kwargs):
            calls.append(1)
            return _real(*args, **kwargs)
        monkeypatch.setattr(G, name, counted)
    return calls


def test_global_scalar(mod):
    _twice(mod, "global_scalar", lambda: setattr(mod, "SCALE", 5.0))


def test_global_array_rebound(mod):
    _twice(mod, "global_array", lambda: setattr(mod, "W", np.array([-1.0, 0.5, 4.0])))


def test_global_array_changed_in_place(mod):
    _twice(mod, "global_array", lambda: mod.W.__setitem__(0, 7.0))


def test_global_string_picks_the_branch(mod):
    _twice(mod, "global_string", lambda: setattr(mod, "MODE", "cos"))


def test_helper_function_redefined(mod):
    def helper(x):
        return x * 7.0
    _twice(mod, "calls_helper", lambda: setattr(mod, "helper", helper))


def test_another_modules_attribute(mod):
    _twice(mod, "module_attribute", lambda: setattr(mod.other, "FACTOR", -3.0))


def test_dict_contents(mod):
    _twice(mod, "dict_item", lambda: mod.TABLE.__setitem__("a", 4.5))


def test_list_contents_and_length(mod):
    _twice(mod, "list_items", lambda: mod.ITEMS.__setitem__(0, 2.5))
    _twice(mod, "list_items", lambda: mod.ITEMS.append(-1.5))


def test_default_argument(mod):
    _twice(mod, "with_default", lambda: setattr(mod.with_default, "__defaults__", (4.0,)))


def test_keyword_default_changed_in_place(mod):
    """``__kwdefaults__`` is a dict: changed in place, the same object holds a new
    default, which the next call binds (and compiles for)."""
    _twice(mod, "with_keyword_default",
           lambda: mod.with_keyword_default.__kwdefaults__.__setitem__("k", 3.0))


def test_closure_cell_of_a_new_closure(mod):
    """Each closure is differentiated with what it captured."""
    for k in (2.0, 3.0, -1.5, 2.0):
        f = mod.make_scaled(k)
        _check(s2sad.grad(f), f, X)


def test_closure_capturing_arrays_compiles_once(mod, monkeypatch):
    calls = _counting_compiles(monkeypatch)
    for k in range(4):
        f = mod.make_scaled(np.full(3, 1.0 + k))
        _check(s2sad.grad(f), f, X)
    assert len(calls) == 1


def test_nonlocal_variable(mod):
    f, bump = mod.make_counter()
    g = s2sad.grad(f)
    _check(g, f, X)
    bump(-4.0)
    _check(g, f, X)


def _cell_grad(net, x):
    return ops.GradOperation()(net)(Tensor(x)).asnumpy()


def _cell_fd(net, x):
    return numeric_grad(lambda v: net(Tensor(v)).asnumpy(), (x,), 0)


@pytest.mark.parametrize("change", [
    lambda n: setattr(n, "scale", 3.0),
    lambda n: setattr(n, "act", ops.Cos()),
    lambda n: n.cfg.__setitem__("a", -1.0),
    lambda n: n.coefs.__setitem__(1, 0.5),
    lambda n: setattr(n, "fn", np.cos),
    lambda n: setattr(n, "w", Parameter(Tensor(np.array([4.0, -1.0, 0.5])), name="w")),
    lambda n: setattr(n, "sub", sys.modules[type(n).__module__].Square()),
], ids=["scalar", "primitive", "dict", "list", "function", "parameter", "sub-Cell"])
def test_cell_attribute(mod, change):
    net = mod.Net()
    grad_fn = ops.GradOperation()(net)
    np.testing.assert_allclose(grad_fn(Tensor(X)).asnumpy(), _cell_fd(net, X), rtol=1e-6)
    change(net)
    np.testing.assert_allclose(grad_fn(Tensor(X)).asnumpy(), _cell_fd(net, X), rtol=1e-6)


def test_replaced_parameter_in_weights_is_an_error(mod):
    """The weights given are no longer the Cell's: their gradient would be zero, silently."""
    net = mod.Net()
    grad_fn = ops.GradOperation(get_by_list=True)(net, net.trainable_params())
    (dw,) = grad_fn(Tensor(X))
    assert np.any(dw.asnumpy() != 0)
    net.w = Parameter(Tensor(np.array([4.0, -1.0, 0.5])), name="w")
    with pytest.raises(ValueError, match="no longer held by Net"):
        grad_fn(Tensor(X))
    # a gradient function made for the new parameters works
    (dw,) = ops.GradOperation(get_by_list=True)(net, net.trainable_params())(Tensor(X))
    fd = numeric_grad(lambda w: mod.Net.construct(_with_w(net, w), Tensor(X)).asnumpy(),
                      (net.w.asnumpy(),), 0)
    np.testing.assert_allclose(dw.asnumpy(), fd, rtol=1e-6)


def _with_w(net, w):
    net.w.set_data(Tensor(w))
    return net


def test_signed_zero_is_not_shared(mod):
    g = s2sad.grad(mod.arctan_of)
    x = np.ones(1)
    assert g(x, 0.0)[0] == pytest.approx(np.pi)
    assert g(x, -0.0)[0] == pytest.approx(-np.pi)
    assert g(x, 0.0)[0] == pytest.approx(np.pi)


def test_nan_constant_does_not_recompile(mod, monkeypatch):
    g = s2sad.grad(mod.arctan_of)
    g(np.ones(1), float("nan"))
    calls = _counting_compiles(monkeypatch)
    g(np.ones(1), float("nan"))
    assert not calls


def test_numpy_scalar_arguments_do_not_recompile(mod, monkeypatch):
    """The third derivative at NumPy scalars: compiled once, not on every call."""
    g = s2sad.grad(s2sad.grad(s2sad.grad(mod.tanh_of)))
    g(np.float64(0.2))
    calls = _counting_compiles(monkeypatch)
    for v in (0.5, 1.0, -2.0):
        assert float(g(np.float64(v))) == pytest.approx(
            -2 * (1 - np.tanh(v) ** 2) * (1 - 3 * np.tanh(v) ** 2), rel=1e-9)
    assert not calls


def test_recompiles_warn_once_naming_the_argument(mod):
    g = s2sad.grad(mod.arctan_of)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(caches.RECOMPILE_WARNING + 3):
            g(np.ones(1), 0.1 * i)
    found = [w for w in caught if issubclass(w.category, G.RecompileWarning)]
    assert len(found) == 1
    assert "'c'" in str(found[0].message) and "s2sad.mutable" in str(found[0].message)
    assert found[0].filename == __file__


def test_recompile_log(tmp_path):
    script = tmp_path / "logged.py"
    script.write_text(textwrap.dedent('''
        import numpy as np, s2sad
        def f(x, c):
            return np.sum(x * c)
        g = s2sad.grad(f)
        g(np.ones(2), 1.0); g(np.ones(2), 2.0); g(np.ones(2), 2.0)
    '''))
    env = dict(os.environ, S2SAD_LOG_COMPILES="1")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stderr.splitlines() if l.startswith("s2sad: compiling")]
    assert len(lines) == 2
    assert "first compile" in lines[0] and "'c' changed" in lines[1]


def test_cache_is_bounded(mod, monkeypatch):
    monkeypatch.setattr(caches, "MAX_ENTRIES", 3)
    g = s2sad.grad(mod.arctan_of)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", G.RecompileWarning)
        for i in range(6):
            g(np.ones(1), 0.25 * i)
    assert len(G.cache) <= 3
    # an entry dropped is compiled again when needed, correctly
    assert g(np.ones(1), 0.0)[0] == pytest.approx(np.pi)


def test_clear_caches_frees_parsed_sources_and_sources(mod):
    import linecache
    from s2sad.frontend import parse
    s2sad.grad(mod.global_scalar)(X)
    assert len(G.cache) > 0 and parse._cache
    s2sad.clear_caches()
    assert len(G.cache) == 0 and not parse._cache
    assert not [k for k in linecache.cache if str(k).startswith("<s2sad ")]
    _check(s2sad.grad(mod.global_scalar), mod.global_scalar, X)


def _memory_grown_by_dropped_closures(mod, count):
    """Bytes still allocated after ``count`` loss closures, each capturing an 80 kB
    batch, were differentiated and dropped."""
    batch = 10_000

    def step(i):
        data = np.full(batch, 1.0 + i % 7)
        f = mod.make_scaled(data)
        return s2sad.grad(f)(np.zeros(batch))[0]
    step(0)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(count):
            step(i)
            if i % 500 == 0:
                print("closure %d of %d" % (i, count), flush=True)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


@pytest.mark.long
def test_dropped_closures_free_what_they_captured(mod):
    """2,000 closures (at least 200 under S2SAD_LONG_SCALE): 160 MB if each were kept."""
    grown = _memory_grown_by_dropped_closures(mod, max(200, scaled(2000)))
    assert grown < 4 * 2**20, grown


def test_dropped_closures_free_what_they_captured_slice(mod):
    """200 closures: one kept alive each time would leave 16 MB, four times the bound."""
    grown = _memory_grown_by_dropped_closures(mod, 200)
    assert grown < 4 * 2**20, grown


def test_gradient_of_constants_inside_a_program_reads_parameters_at_run_time():
    """A gradient function called on constants inside a differentiated function is
    not evaluated while compiling: the Parameter it reads is read on every call."""
    class Lin(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.array([0.5])), name="w")

        def construct(self, x):
            return (np.sin(self.w * x)).sum()

    net = Lin()
    gw = ops.GradOperation(get_by_list=True)(net, net.trainable_params())
    one = np.float64(1.0)     # a NumPy scalar: a constant while compiling

    def loss(x):
        return (gw(one)[0] * x).sum()
    g = s2sad.grad(loss)
    for w in (0.5, 1.5):
        net.w.set_data(Tensor(np.array([w])))
        np.testing.assert_allclose(g(np.array([2.0])), [np.cos(w)], rtol=1e-12)


def test_closure_of_a_function_differentiated_inside_a_program(mod):
    """``grad(f)`` called inside a differentiated program: what ``f`` captured is guarded."""
    f, bump = mod.make_counter()
    df = s2sad.grad(f)

    def outer(x):
        return np.sum(df(x) * x)
    g = s2sad.grad(outer)
    for k in (1.0, -2.5):
        bump(k)
        np.testing.assert_allclose(g(X), numeric_grad(outer, (X,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["global_scalar", "global_array", "global_string", "calls_helper",
                                  "module_attribute", "dict_item", "list_items", "with_default"])
def test_guards_hold_when_nothing_changed(mod, monkeypatch, name):
    """Guards are read back the way they were taken: an unchanged program never recompiles."""
    g = s2sad.grad(getattr(mod, name))
    g(X)
    calls = _counting_compiles(monkeypatch)
    g(X)
    s2sad.grad(getattr(mod, name))(X)
    assert not calls


def test_cell_guards_hold_when_nothing_changed(mod, monkeypatch):
    net = mod.Net()
    grad_fn = ops.GradOperation(get_all=True, get_by_list=True)(net, net.trainable_params())
    grad_fn(Tensor(X))
    calls = _counting_compiles(monkeypatch)
    grad_fn(Tensor(X))
    ops.GradOperation(get_all=True, get_by_list=True)(mod.Net(), net.trainable_params())
    assert not calls


def _scaled_sine(k):
    def f(x):
        return np.sum(np.sin(x) * k)
    return f


#: transforms applied inside compiled code to a function the code reads
INNER = {
    "grad": lambda f: lambda z: np.sum(s2sad.grad(f)(z)),
    "value_and_grad": lambda f: lambda z: np.sum(s2sad.value_and_grad(f)(z)[1]),
    "jvp": lambda f: lambda z: np.sum(s2sad.jvp(f, (z,), (np.ones(3),))[1]),
    "vjp": lambda f: lambda z: np.sum(s2sad.vjp(f, z)[1](np.ones(()))[0]),
    "jacrev": lambda f: lambda z: np.sum(s2sad.jacrev(f)(z)),
    "jacfwd": lambda f: lambda z: np.sum(s2sad.jacfwd(f)(z)),
    "hessian": lambda f: lambda z: np.sum(s2sad.hessian(f)(z)),
}


@pytest.mark.parametrize("transform", sorted(INNER))
def test_a_transform_inside_compiled_code_sees_what_its_function_captured(transform):
    """``grad(f)`` applied while compiling is specialised on what ``f`` captured:
    the same code with another captured value (a closure per call, or a global
    rebound to another closure) must not reuse it."""
    for k in (1.0, 2.0, np.full(3, 3.0)):
        f = _scaled_sine(k)

        def outer(z, f=f):
            return INNER[transform](f)(z)
        _check(s2sad.grad(outer), outer, X)


_INNER_F = _scaled_sine(1.0)


def _grad_of_global(z):
    return np.sum(s2sad.grad(_INNER_F)(z))


def test_a_global_function_rebound_to_another_closure_is_seen_by_nested_grad(monkeypatch):
    grad_outer = s2sad.grad(_grad_of_global)
    _check(grad_outer, _grad_of_global, X)
    monkeypatch.setitem(globals(), "_INNER_F", _scaled_sine(3.0))
    _check(grad_outer, _grad_of_global, X)
