"""Random programs drawing the constructs of docs/semantics.md.

``program_gen`` also draws, in a share of its programs: a 0-d input given as
``np.float64``; integer and bool array inputs; a complex first input (which
must be refused); ``functools.wraps`` decorators, a decorator without
``wraps`` and one with arguments, on the differentiated function, its
``construct`` or a helper; item assignment naming one element twice
(``v[[1, 1]] = ...``, ``v[[-1, 2]] += ...``); and module-level scalars, dict
entries, arrays and helpers that the check changes between two calls of one
gradient function.  ``program_gen.check_program`` checks them against central
differences of the program run eagerly in float64 (``check_input_types``,
``check_global_changes``); CI's programs are those of
``test_random_programs.py``.  This file checks that CI's seeds reach every
one of these constructs, that the checks can fail, and holds the minimised
programs of the defects they found.
"""
import functools

import numpy as np
import pytest

import s2sad
from s2sad import ops

import program_gen as pg
from test_random_programs import ci_programs

NEW_FEATURES = ["npscalar_input", "int_input", "int_input_linear", "bool_input", "bool_where",
                "complex_input", "decorator", "decorated_entry", "decorator_scaled",
                "decorator_halved", "decorator_scale_by", "repeated_index",
                "repeated_index_aug", "global_change", "global_scalar", "global_dict",
                "global_array", "global_helper"]


def feature_counts():
    counts = {}
    for program in ci_programs():
        for f in program.features:
            counts[f] = counts.get(f, 0) + 1
    return counts


def test_ci_seeds_draw_every_new_construct():
    counts = feature_counts()
    few = {f: counts.get(f, 0) for f in NEW_FEATURES if counts.get(f, 0) < 10}
    assert not few, (few, counts)


def test_typed_inputs_keep_their_values():
    """The float64 arguments the usual checks use are the typed inputs' values."""
    for p in ci_programs()[:200]:
        if not p.typed:
            continue
        for a, t, kind in zip(p.make_args(), p.make_args(typed=True), p.input_kinds):
            np.testing.assert_array_equal(pg._data(a), pg._data(t).astype(np.float64))
            want = {"int": np.integer, "bool": np.bool_, "npscalar": np.float64,
                    "float": np.float64}[kind]
            assert np.issubdtype(pg._data(t).dtype, want)
            if kind == "npscalar":
                assert type(a) is np.float64 and type(t) is np.float64


# ---------------------------------------------------------- the checks can fail
def _program(source, inputs, kinds, **kw):
    return pg.Program(0, source, "function", inputs, 1, set(), False, [False] * len(inputs),
                      kinds, **kw)


def test_integer_check_expects_the_error_and_the_exact_value(tmp_path):
    src = ("import numpy as np\n\n\ndef f(x, y, k):\n"
           "    return np.sin(x) * y + 2.0 * np.sum(k)\n")
    p = _program(src, [("x", (2,)), ("y", (2,)), ("k", (2,))], ["float", "int", "int"])
    out = pg.check_program(p, tmp_path, order2=False)
    assert out.status == "ok", out.message
    # y's gradient sin(x) is fractional: a TypeError naming y is expected
    m = pg.load(p, tmp_path)
    with pytest.raises(TypeError, match="position 1 \\('y'\\)"):
        ops.GradOperation(get_all=True)(m.f)(*p.make_args(typed=True))


def test_global_check_fails_on_a_stale_gradient(tmp_path, monkeypatch):
    """A gradient function that kept the code compiled before the change is caught."""
    src = "import numpy as np\n\nSCALE = 0.75\n\n\ndef f(x):\n    return SCALE * np.sin(x)\n"
    p = _program(src, [("x", (2, 2))], ["float"], global_changes=["SCALE = -1.25"])
    assert pg.check_program(p, tmp_path, order2=False).status == "ok"
    stale, real = {}, ops.GradOperation

    class Stale:
        """GradOperation whose gradient function answers the first result forever."""
        def __init__(self, **kw):
            self.op = real(**kw)

        def __call__(self, fn, *a):
            g = self.op(fn, *a)
            return lambda *args: stale.setdefault("g", g(*args))
    monkeypatch.setattr(ops, "GradOperation", Stale)
    out = pg.check_program(p, tmp_path, order2=False, flags=False)
    assert out.status == "mismatch" and "after SCALE = -1.25" in out.message


# ============================================================ known defects
# Found by the constructs above; program_gen.KNOWN_BUGS keeps the generator
# from drawing them until they are fixed (then these XPASS and fail).
def scaled(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return 1.5 * fn(*args)
    return wrapper


@scaled
def decorated(x):
    return np.sin(x)


def test_jvp_of_wraps_decorated_function():
    # seeds 100034, 100048 found it: the outlined call of the decorated function took
    # the name of the program itself (both 'decorated_jvp'), which then called itself
    x = np.array([0.3, -0.5])
    _, t = s2sad.jvp(decorated, (x,), (np.ones(2),))
    np.testing.assert_allclose(t, 1.5 * np.cos(x), rtol=1e-12)


def row_loop(x, z):
    v = x * 1.0
    for r in z:
        v = np.sin(v * r)
    return v


def sum_in_loop(x, z):
    v = x * 1.0
    for i in range(2):
        v = np.sin(v + np.sum(z))
    return v


@pytest.mark.parametrize("fn", [row_loop, sum_in_loop])
def test_integer_input_read_in_a_loop(fn):
    # seeds 100032, 100109 found it: the gradient of z (fractional) must be the documented
    # TypeError, not NumPy's casting error from the int64 accumulator in generated code
    x = np.array([0.3, -0.5])
    z = np.array([[1, -1], [1, 1]])
    with pytest.raises(TypeError, match="position 1 \\('z'\\) is not exact in its dtype"):
        ops.GradOperation(get_all=True)(fn)(x, z)


def test_known_bugs_have_their_tests():
    names = {n for n in globals() if n.startswith("test_known_bug_")}
    assert set(pg.KNOWN_BUGS.values()) <= names


def halved(fn):
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 0.5
    return wrapper


class HalvedNet(s2sad.nn.Cell):
    @halved
    def construct(self, x):
        return np.sin(x)


def test_cell_construct_decorated_without_wraps():
    # seed 100019 found it: GradOperation counted the wrapper's (*args, **kwargs) less
    # self, i.e. 0 parameters, and refused every call
    x = np.array([0.3, -0.5])
    np.testing.assert_allclose(ops.GradOperation()(HalvedNet())(x), 0.5 * np.cos(x),
                               rtol=1e-12)


@halved
def halved_product(x, y):
    return np.sin(x) * y


@pytest.mark.xfail(strict=True, reason=(
    "open defect KNOWN_BUGS['unwrapped_entry_names']: for a function decorated without "
    "functools.wraps the input-type error names the wrapper's 'args'/'kwargs'; the error "
    "is raised, only its wording is wrong"))
def test_known_bug_error_names_the_wrappers_parameters():
    # seeds 100034, 100048, 100063: "position 1 ('kwargs')", "position 0 ('args')"
    x = np.array([0.3, -0.5])
    with pytest.raises(TypeError, match="position 1 \\('y'\\) is not exact"):
        ops.GradOperation(get_all=True)(halved_product)(x, np.array([1, -1]))
