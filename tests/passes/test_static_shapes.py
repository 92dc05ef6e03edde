"""Programs specialised to their first call's shapes (``opt/static_shapes.py``).

The shape rules are checked against NumPy itself; the specialised gradients
against the same gradient compiled for any shapes (same operations: the
same floats) and against central differences of the function run eagerly;
a call with other shapes against central differences again, and it must
compile the general program once, under the cache entry it already has.
"""
import itertools

import numpy as np
import pytest

import s2sad
from s2sad import Tensor, ops
from s2sad import driver as G
from s2sad.driver.caches import GradCache
from s2sad.opt import static_shapes as S

from gradcheck import numeric_grad
from passes_common import assert_same
from sources import load_source
from test_dump_standalone import import_dumped, main_function
import test_lstm_loops

SOURCE = """
def grows(x, W):
    # h is (3,) on entry and (2, 3) after the first step: its shape is never assumed
    h = x
    for t in range(3):
        h = np.tanh(h * W)
    return np.sum(h)


def branches(x, y):
    if np.sum(x) > 0:
        z = x * y
    else:
        z = x + 0 * y[0]
    return np.sum(np.sin(z) * x)


def broadcast_rows(x, b):
    a = np.sin(x) * b
    return np.sum(a * x)


W = np.linspace(-1, 1, 6).reshape(2, 3)


def reads_a_global(x):
    return np.sum(np.tanh(W @ x) * (W @ x))


class Affine(nn.Cell):
    def __init__(self, n):
        super().__init__()
        self.w = Parameter(Tensor(np.linspace(0.5, 1.5, n)), name="w")

    def construct(self, x):
        return (np.sin(x * self.w) * x).sum()


def shape_tuples(x, w):
    # + and * of a shape tuple join and repeat it: (5, 2) and (5, 5), never broadcast
    joined = np.asarray(x.shape + w.shape, dtype=float) * np.sum(w, keepdims=True)
    repeated = np.sum(w, keepdims=True) * (x.shape * 2)
    return joined[0] + np.sum(repeated * np.arange(2.0)) + np.sum(np.sin(w[:1] * (x.shape + (1,))))


def reductions(x):
    m = np.max(x, axis=1, keepdims=True)
    s = np.sum(np.exp(x - m), axis=(0, 1))
    return s + np.sum(np.mean(x, axis=0) * x[1:, 0:1])


def joins(x, y, b):
    # stacked, split again and concatenated: every piece has a shape known from x's
    s = np.stack([x, y * x], axis=1)
    first, second = ops.unstack(np.tanh(s), 1, num=2)
    c = np.concatenate([first, second * b, x], axis=0)
    h = x
    for t in range(3):      # a carried value whose adjoint starts from an unstacked piece
        h = np.tanh(h * first + b)
    return np.sum(c * c) + np.sum(ops.unstack(np.stack([h, h * h]), 0, num=2)[1])
"""

NO_SHAPE_PASS = {"disabled_passes": {"static_shapes"}}


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    mod = load_source(tmp_path_factory.mktemp("static_shapes"), SOURCE, "static_shapes_src")
    # the LSTM of the gate-concatenation tests: gates by slicing, sizes from h0's shape
    mod.lstm = load_source(tmp_path_factory.mktemp("static_shapes_lstm"),
                           test_lstm_loops.SOURCE, "static_shapes_lstm").lstm
    return mod


@pytest.fixture
def compiles(monkeypatch):
    """How many gradients the cache took in (one per compile)."""
    count = [0]
    put = GradCache.put

    def counting(self, *args, **kwargs):
        count[0] += 1
        return put(self, *args, **kwargs)
    monkeypatch.setattr(GradCache, "put", counting)
    G.cache.clear()
    return count


def lstm_args(rng, steps, batch, inp, hid):
    s = 1 / np.sqrt(hid)
    return (rng.uniform(-s, s, (inp, 4 * hid)), rng.uniform(-s, s, (hid, 4 * hid)),
            rng.uniform(-s, s, 4 * hid), rng.standard_normal((steps, batch, inp)),
            0.1 * rng.standard_normal((batch, hid)), 0.1 * rng.standard_normal((batch, hid)))


def assert_numeric(fn, args, grads):
    for i, g in enumerate(grads):
        # central differences in float64, step 1e-6: about 1e-9 relative error
        np.testing.assert_allclose(g, numeric_grad(fn, args, i), rtol=1e-6, atol=1e-8)


# -------------------------------------------------------------- the shape rules
SHAPES = [(4,), (3,), (1,), (2, 4), (4, 3), (3, 4), (1, 4, 3), (5, 2, 4), (5, 1, 1), (2, 1, 4, 3)]


def numpy_says(fn):
    try:
        return fn().shape
    except (ValueError, IndexError, TypeError):
        return None


def test_matmul_shapes_are_numpys():
    for a, b in itertools.product(SHAPES, SHAPES):
        want = numpy_says(lambda: np.matmul(np.ones(a), np.ones(b)))
        assert S._matmul(a, b) == want, (a, b)


def test_reduction_shapes_are_numpys():
    from s2sad.ir import Const
    for shape in SHAPES:
        for axis in [(), None, 0, -1, 1, (0, 1), (0, -1), 3]:
            for keep in (False, True):
                np_axis = None if axis == () else axis
                want = numpy_says(lambda: np.sum(np.ones(shape), axis=np_axis, keepdims=keep))
                assert S._reduced(shape, Const(axis), keep) == want, (shape, axis, keep)


def test_reshape_shapes_are_numpys():
    for shape in SHAPES:
        for dims in [(-1,), (2, -1), (-1, 3), (4, 3), (1, -1, 1), (0, -1), (12,), (-1, -1), 4]:
            want = numpy_says(lambda: np.ones(shape).reshape(dims))
            assert S._reshaped(shape, dims) == want, (shape, dims)


def test_index_shapes_are_numpys():
    from s2sad.ir import Const
    indices = [0, -1, 3, slice(None, 2), slice(1, None, 2), (slice(None), 0), (0, slice(1, 3)),
               (None, 0), (Ellipsis, 0), (0, Ellipsis, None), (slice(None), None, slice(2, -1)),
               (0, 0, 0, 0, 0)]
    for shape in SHAPES:
        for index in indices:
            want = numpy_says(lambda: np.ones(shape)[index])
            assert S._indexed(shape, Const(index), {}) == want, (shape, index)
    # an index NumPy reads as advanced, or one not known while compiling: no shape
    assert S._indexed((4, 3), Const([0, 1]), {}) is None
    assert S._indexed((4, 3), Const((True,)), {}) is None


def test_stack_and_concatenate_shapes_are_numpys():
    from s2sad.ir import Const
    for parts in [[(4,)], [(4,), (4,)], [(2, 4), (2, 4), (2, 4)], [(2, 4), (3, 4)],
                  [(2, 4), (2, 3)], [(4, 3), (4,)], [(1, 4, 3), (1, 4, 3)], [()]]:
        for axis in (0, 1, -1, 2, -3, 3):
            args = tuple(Const(np.ones(p)) for p in parts)
            for name, fn in (("Stack", np.stack), ("Concat", np.concatenate)):
                want = numpy_says(lambda: fn([np.ones(p) for p in parts], axis=axis))
                assert S._joined(name, axis, args, {}) == want, (name, parts, axis)


# ---------------------------------------------------- specialised gradients
def test_lstm_drops_its_shape_work_and_keeps_its_gradient(src):
    rng = np.random.default_rng(3)
    args = lstm_args(rng, 4, 3, 5, 6)
    g = ops.GradOperation(get_all=True)(src.lstm)
    got = g(*args)
    code = s2sad.get_source(g, *args)
    assert "xs.shape != (4, 3, 5)" in code and "return _general(W, U, b, xs, h0, c0)" in code
    backward = code.split("# -- backward sweep --")[1]
    assert "rt.unbroadcast" not in backward and "ShapeOf" not in code, code
    with s2sad.options(**NO_SHAPE_PASS):
        general = ops.GradOperation(get_all=True)(src.lstm)
        want = general(*args)
        assert "rt.unbroadcast" in s2sad.get_source(general, *args)
    assert_same(got, want)
    assert_numeric(src.lstm, args, got[:3])


@pytest.mark.parametrize("name,args", [
    ("grows", (np.linspace(0.2, 0.9, 3), np.linspace(-1, 1, 6).reshape(2, 3))),
    ("branches", (np.linspace(0.2, 0.9, 3), np.linspace(-1, 1, 3))),
    ("branches", (-np.linspace(0.2, 0.9, 3), np.linspace(-1, 1, 3))),
    ("broadcast_rows", (np.linspace(0.2, 0.9, 6).reshape(2, 3), np.linspace(-1, 1, 3))),
    ("reductions", (np.linspace(-1, 1, 12).reshape(3, 4),)),
    ("shape_tuples", (np.ones(5), np.linspace(0.2, 0.9, 2))),
    ("joins", (np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(0.5, 2, 12).reshape(3, 4),
               np.linspace(-0.3, 0.4, 4))),
])
def test_specialised_gradients_are_the_general_ones(src, name, args):
    fn = getattr(src, name)
    got = ops.GradOperation(get_all=True)(fn)(*args)
    with s2sad.options(**NO_SHAPE_PASS):
        want = ops.GradOperation(get_all=True)(fn)(*args)
    assert_same(got, want)
    assert_numeric(fn, args, got)


def test_a_value_whose_shape_changes_in_a_loop_keeps_its_unbroadcast(src):
    args = (np.linspace(0.2, 0.9, 3), np.linspace(-1, 1, 6).reshape(2, 3))
    g = ops.GradOperation(get_all=True)(src.grows)
    g(*args)
    # d of the (3,) input summed over the rows the first step broadcast it to
    assert "rt.unbroadcast" in s2sad.get_source(g, *args).split("# -- backward sweep --")[1]


# ------------------------------------------------------------- other shapes
def test_other_shapes_run_the_general_program_compiled_once(src, compiles):
    rng = np.random.default_rng(5)
    first, other = lstm_args(rng, 3, 2, 4, 5), lstm_args(rng, 5, 3, 4, 2)
    g = ops.GradOperation(get_all=True)(src.lstm)
    g(*first)
    (entry,) = [e for es in G.cache._entries.values() for e in es]
    assert entry.general is not None and entry.general.fn is None     # not compiled yet
    got = g(*other)
    assert_numeric(src.lstm, other, got[:3])
    built = entry.general.fn
    assert built is not None
    for args in (other, first, other):
        want = g(*args)
    assert entry.general.fn is built and compiles[0] == 1
    assert_numeric(src.lstm, other, want[:3])


def test_arrays_read_at_run_time_are_checked_too(src):
    x = np.linspace(0.2, 0.9, 3)
    g = ops.GradOperation()(src.reads_a_global)
    g(x)
    assert "W.shape != (2, 3)" in s2sad.get_source(g, x)
    src.W = np.linspace(-1, 1, 12).reshape(4, 3)        # the global, rebound to other shapes
    try:
        assert_numeric(src.reads_a_global, (x,), [g(x)])
    finally:
        src.W = np.linspace(-1, 1, 6).reshape(2, 3)
    net = src.Affine(3)
    grad = ops.GradOperation(get_by_list=True)(net, s2sad.ParameterTuple(net.trainable_params()))
    grad(Tensor(x))
    net.w.set_data(Tensor(np.linspace(0.5, 1.5, 1)))     # broadcast against x from now on
    (dw,) = grad(Tensor(x))
    # d/dw sum(sin(x w) x) = sum(x^2 cos(x w)), summed over x for the one w
    np.testing.assert_allclose(dw.asnumpy(), [np.sum(x * x * np.cos(x * 0.5))], rtol=1e-12)


def test_a_program_with_nothing_to_specialise_is_not(src):
    x = np.linspace(0.2, 0.9, 4)
    g = ops.GradOperation()(lambda v: np.sum(np.sin(v) * v))
    g(x)
    assert "_general" not in s2sad.get_source(g, x)


def test_an_error_at_other_shapes_names_the_users_line(src):
    g = ops.GradOperation(get_all=True)(src.broadcast_rows)
    g(np.ones((2, 3)), np.ones(3))
    with pytest.raises(ValueError, match="could not be broadcast") as info:
        g(np.ones((2, 3)), np.ones(4))
    # a note on Python 3.11+, the end of the message before
    said = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert "a = np.sin(x) * b" in said, said


def test_the_standalone_dump_says_which_shapes_it_holds_for(src, tmp_path):
    args = (np.linspace(0.2, 0.9, 6).reshape(2, 3), np.linspace(-1, 1, 3))
    g = ops.GradOperation(get_all=True)(src.broadcast_rows)
    want = g(*args)
    text = s2sad.get_source(g, *args, standalone=True)
    assert "return _general(" in text
    dumped = main_function(import_dumped(tmp_path, text), text)
    assert_same(dumped(*args), want)
    with pytest.raises(ValueError, match="compiled for the shapes"):
        dumped(np.ones((4, 3)), np.ones(3))


def test_the_general_compile_is_logged_when_compiles_are(src, monkeypatch, capsys):
    monkeypatch.setenv("S2SAD_LOG_COMPILES", "1")
    s2sad.clear_caches()
    g = ops.GradOperation(get_all=True)(src.broadcast_rows)
    g(np.ones((2, 3)), np.ones(3))
    g(np.ones((4, 3)), np.ones(3))
    g(np.ones((5, 3)), np.ones(3))
    err = capsys.readouterr().err
    assert err.count("for any shapes") == 1 and "gradient of broadcast_rows" in err, err
