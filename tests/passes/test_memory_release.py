"""Peak memory of generated code: op order and results written into dead temporaries.

Codegen reorders runs of elementwise ops so fewer large values are alive at
once (``opt/liveness.py`` ``schedule``) and lets an elementwise op write its
result into an operand that dies there when ``rt.spare`` finds that nothing
else can see it.  Results must equal the code without either (bit for bit:
the same operations run), gradients must match finite differences or a
closed form, and no user array, returned value or alias may be written.
"""
import gc
import tracemalloc

import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad.opt import pipeline
from s2sad import runtime as rt

from gradcheck import numeric_grad
from sources import load_source

SOURCE = """
def bench_b(x):
    return np.sum(np.cos(np.sin(x)) * np.exp(-x * x))


def alias(x):
    b = np.sin(x)
    if np.sum(x) > 0:
        c = b
    else:
        c = b * 3.0
    d = np.exp(b)
    return np.sum(c * d)


def vector(x):
    return np.exp(x) + 0.0


def broadcast(x, y):
    a = np.sin(x)
    b = a * y
    return np.sum(np.cos(b) * b)


def returns_value(x):
    y = np.sin(x) * x
    z = np.exp(y)
    return np.sum(z * y), y


def chain(x):
    a = np.sin(x)
    b = np.exp(a) * x
    c = np.cos(b) + a
    d = c * c - b
    e = np.tanh(d) * a
    return np.sum(e * c + d / (1.0 + a * a))
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_source(tmp_path_factory.mktemp("memrel"), SOURCE, "memory_release_src")


def plain(make, args):
    """The result of the same gradient with code that neither reorders nor releases."""
    with pipeline.options(release=False):
        return make()(*args)


def leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in leaves(e)]
    return [np.asarray(getattr(x, "_data", x))]


def assert_identical(got, want):
    got, want = leaves(got), leaves(want)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def peak_of(fn, args):
    fn(*args)
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ------------------------------------------------------------------- (b)
def test_elementwise_benchmark_peak_is_four_arrays(mod):
    x = np.random.default_rng(0).standard_normal(200000)
    keep = x.copy()
    g = ops.GradOperation()(mod.bench_b)
    got = g(x)
    np.testing.assert_array_equal(x, keep)
    s = np.sin(x)
    closed = (-np.sin(s) * np.cos(x) - 2.0 * x * np.cos(s)) * np.exp(-x * x)
    # a closed form in float64, the same values by other ops: rounding only
    # (atol for the elements that are ~0)
    np.testing.assert_allclose(got, closed, rtol=1e-12, atol=1e-15)
    assert_identical(got, plain(lambda: ops.GradOperation()(mod.bench_b), (x,)))
    # the hand-written gradient needs four arrays of x's size at once; so does this
    g = ops.GradOperation()(mod.bench_b)
    assert peak_of(g, (x,)) <= 4 * x.nbytes + 64 * 1024
    # the compiled code writes in place; the printed source shows the plain lines
    src = g.last.executed_source
    assert "out=" in src and "rt.spare(" in src
    assert "rt.spare(" not in s2sad.get_source(g)


def test_small_float32_and_scalar_inputs(mod):
    x32 = np.random.default_rng(1).standard_normal(33).astype(np.float32)
    for arg in (x32, np.float64(0.3), np.array(0.7), np.array([0.2])):
        make = lambda: ops.GradOperation()(mod.chain)      # noqa: E731
        got = make()(arg)
        assert_identical(got, plain(make, (arg,)))
        assert type(got) is type(arg)
    x = np.linspace(-1, 1, 9)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(ops.GradOperation()(mod.chain)(x),
                               numeric_grad(mod.chain, (x,), 0), rtol=1e-6, atol=1e-8)


# ------------------------------------------------------- nothing else is written
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_name_shared_by_a_branch_is_not_written(mod, sign):
    x = sign * np.linspace(0.1, 1.0, 7)
    make = lambda: ops.GradOperation()(mod.alias)          # noqa: E731
    got = make()(x)
    assert_identical(got, plain(make, (x,)))
    np.testing.assert_allclose(got, numeric_grad(mod.alias, (x,), 0), rtol=1e-6, atol=1e-8)


def test_user_sens_and_inputs_are_not_written(mod):
    x = np.linspace(-1, 1, 50)
    sens = np.linspace(2, 3, 50)
    kx, ks = x.copy(), sens.copy()
    g = ops.GradOperation(sens_param=True)(mod.vector)
    for _ in range(2):
        # a closed form in float64, the same values by other ops: rounding only
        np.testing.assert_allclose(g(x, sens), np.exp(x) * ks, rtol=1e-12)
    np.testing.assert_array_equal(x, kx)
    np.testing.assert_array_equal(sens, ks)


def test_broadcast_operands(mod):
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((5, 1)), rng.standard_normal(4)
    make = lambda: ops.GradOperation(get_all=True)(mod.broadcast)      # noqa: E731
    got = make()(x, y)
    assert_identical(got, plain(make, (x, y)))
    for i in range(2):
        # central differences in float64 (step 1e-6): ~1e-9 relative error at most
        np.testing.assert_allclose(got[i], numeric_grad(mod.broadcast, (x, y), i),
                                   rtol=1e-6, atol=1e-8)


def test_returned_forward_value_is_not_written(mod):
    x = np.linspace(-0.8, 0.9, 11)
    make = lambda: s2sad.value_and_grad(mod.returns_value)     # noqa: E731
    (value, y), dx = make()(x)
    np.testing.assert_allclose(y, np.sin(x) * x, rtol=1e-15)
    assert_identical(((value, y), dx), plain(make, (x,)))


def test_reordered_chain_matches(mod):
    x = np.random.default_rng(3).standard_normal(40)
    make = lambda: ops.GradOperation()(mod.chain)          # noqa: E731
    got = make()(x)
    assert_identical(got, plain(make, (x,)))
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(got, numeric_grad(mod.chain, (x,), 0), rtol=1e-6, atol=1e-8)


def test_long_straight_line_program(tmp_path):
    # longer than a scheduling window: the run is taken in pieces
    body = ["    v0 = x"]
    for i in range(1, 130):
        fn = ("np.sin", "np.cos", "np.tanh")[i % 3]
        body.append("    v%d = %s(v%d) * x + v%d" % (i, fn, i - 1, max(i - 3, 0)))
    src = "def long(x):\n%s\n    return np.sum(v129)\n" % "\n".join(body)
    m = load_source(tmp_path, src, "memory_release_long")
    x = np.linspace(-0.5, 0.5, 6)
    make = lambda: ops.GradOperation()(m.long)             # noqa: E731
    got = make()(x)
    assert_identical(got, plain(make, (x,)))
    np.testing.assert_allclose(got, numeric_grad(m.long, (x,), 0), rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------ rt.spare
def test_spare_accepts_only_a_lone_owned_float_array():
    def run():
        a = np.ones(4)
        b = np.ones(4)
        yes = [rt.spare(a, b), rt.spare(a, 2.0), rt.spare(a, 2), rt.spare(a),
               rt.spare(a, np.float64(2.0))]
        alias = a
        no = [rt.spare(a, b),                           # another name holds it
              rt.spare(b[1:], 2.0),                     # a view
              rt.spare(b, np.ones(4, np.float32)),      # the result would be float32->64
              rt.spare(b, np.float32(2.0)),
              rt.spare(b, np.ones((2, 4))),             # broadcast to another shape
              rt.spare(b, 1j), rt.spare(b, True)]
        i = np.ones(4, dtype=np.int64)
        z = np.array(1.0)
        no += [rt.spare(i, 2), rt.spare(z, 2.0), rt.spare(3.0, 2.0)]
        ro = np.ones(4)
        ro.flags.writeable = False
        no.append(rt.spare(ro))
        del alias
        return yes, no
    yes, no = run()
    assert all(yes), yes
    assert not any(no), no
