"""Random programs: reverse mode vs forward mode vs finite differences.

``program_gen`` writes random, well-typed Cells and functions (control flow,
closures, sub-Cells, helpers, tuples, lists, broadcasting, indexing); each is
written to a real ``.py`` file, imported, and checked by
``program_gen.check_program``: ``s2sad.check_grads`` (reverse, forward and
central differences in float64), every ``GradOperation`` flag combination on
Cells against element-wise finite differences of inputs and Parameters, and
second derivatives.

The campaign runs 520 programs with fixed seeds (so every run checks the
same programs): 400 from a seeded loop, 120 from a derandomized hypothesis
strategy.  The ``order=2`` check runs on every other program of the seeded
loop and on every hypothesis example.  Those tests are marked ``long``
(``python -m pytest -m long``, about 15 minutes on two cores); the default
run checks a slice through the same code: the first ``SLICE_PROGRAMS`` seeds
of the loop and ``SLICE_EXAMPLES`` hypothesis examples.  ``tools/fuzz.py``
runs as many as you like.

The regression tests at the end are the defects random programs found, each
minimised by hand; all of them are fixed, and no test here is expected to
fail (the defects the constructs of docs/semantics.md found are still open:
``program_gen.KNOWN_BUGS``, with their tests in test_random_semantics.py).  The way to record a new defect
until it is fixed: its minimised program here, marked as a strict expected
failure whose reason names its ``KNOWN_BUGS`` entry (that entry keeps the
generator from building the construct meanwhile).
"""
import functools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import s2sad
from s2sad import ops
from s2sad.errors import CompileError

import program_gen as pg
from campaign import scaled
from sources import load_source
from gradcheck import numeric_grad

SEEDED_CHUNKS = 16          # x 25 programs
PER_CHUNK = 25
HYPOTHESIS_EXAMPLES = 120
FIRST_SEED = 100_000        # CI's programs: seeds FIRST_SEED ...
SLICE_PROGRAMS = 8          # the default run's share of the seeded loop
SLICE_EXAMPLES = 8          # ... and of the hypothesis examples


@pytest.fixture(scope="module")
def gen_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("random_programs")


def _report(outcomes):
    lines = []
    for o in outcomes:
        lines.append("seed %d (%s at %s):\n%s\n--- program ---\n%s"
                     % (o.program.seed, o.status, o.stage, o.message.strip()[-3000:],
                        o.program.source))
    return "\n\n".join(lines)


def _run(seeds, directory, order2_every=1, on_done=lambda: None):
    """Check the programs of ``seeds``; return the failures (skipped ones are not).

    ``on_done()`` is called after each program (progress lines).
    """
    bad, skipped = [], []
    for k, seed in enumerate(seeds):
        program = pg.generate(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outcome = pg.check_program(program, directory,
                                       order2=k % order2_every == 0,
                                       timeout=120)
        pg.clear_caches()
        on_done()
        if not outcome.ok:
            bad.append(outcome)
        elif outcome.status == "skipped":
            skipped.append(outcome)
    # finite differences cannot check a program that is too steep where it is
    # evaluated; the generator keeps that rare
    if len(skipped) > max(1, len(seeds) // 10):
        bad += skipped
    return bad


# ------------------------------------------------------------- random programs
@pytest.mark.long
@pytest.mark.parametrize("chunk", range(SEEDED_CHUNKS))
def test_random_programs_seeded(chunk, gen_dir, progress):
    start = FIRST_SEED + chunk * PER_CHUNK
    count = scaled(PER_CHUNK)
    name = "test_random_programs_seeded[%d]" % chunk
    bad = _run(range(start, start + count), gen_dir, order2_every=2,
               on_done=lambda: progress.step(name, count, "programs"))
    assert not bad, _report(bad)


def test_random_programs_seeded_slice(gen_dir):
    """The default run's share of the seeded loop: its first programs, checked the same way."""
    bad = _run(range(FIRST_SEED, FIRST_SEED + SLICE_PROGRAMS), gen_dir, order2_every=2)
    assert not bad, _report(bad)


def _check_drawn_program(seed, tmp_path_factory, progress, name, total):
    bad = _run([seed], tmp_path_factory.getbasetemp())
    progress.step(name, total)
    assert not bad, _report(bad)


@pytest.mark.long
@settings(max_examples=scaled(HYPOTHESIS_EXAMPLES), derandomize=True, deadline=None,
          database=None, suppress_health_check=list(HealthCheck))
@given(seed=pg.seeds())
def test_random_programs_hypothesis(seed, tmp_path_factory, progress):
    _check_drawn_program(seed, tmp_path_factory, progress, "test_random_programs_hypothesis",
                         scaled(HYPOTHESIS_EXAMPLES))


@settings(max_examples=SLICE_EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=pg.seeds())
def test_random_programs_hypothesis_slice(seed, tmp_path_factory, progress):
    _check_drawn_program(seed, tmp_path_factory, progress,
                         "test_random_programs_hypothesis_slice", SLICE_EXAMPLES)


# ---------------------------------------------------------- the generator itself
@functools.lru_cache(maxsize=None)
def ci_programs():
    """The programs of the seeded loop, generated once for the tests that read their features."""
    return tuple(pg.generate(seed)
                 for seed in range(FIRST_SEED, FIRST_SEED + SEEDED_CHUNKS * PER_CHUNK))


def test_generation_is_deterministic():
    for seed in (0, 1, 12345):
        a, b = pg.generate(seed), pg.generate(seed)
        assert a.source == b.source and a.inputs == b.inputs
        np.testing.assert_array_equal(a.make_args()[0], b.make_args()[0])


def test_generator_covers_the_constructs():
    """Across CI's seeds, every construct the generator knows appears many times."""
    counts = {}
    for program in ci_programs():
        for f in program.features:
            counts[f] = counts.get(f, 0) + 1
    wanted = ["cell", "function", "unary", "broadcast", "matmul", "reduce_axis", "reduce_all",
              "keepdims", "newaxis", "tuple", "tensor_if", "elif", "const_if", "ternary",
              "boolop", "not", "while", "for_range", "for_tensor", "enumerate", "zip",
              "for_tuple", "cell_list", "runtime_index", "break", "continue", "early_return",
              "return_in_loop", "nested_def", "lambda", "subcell", "method", "helper", "call",
              "list_stack", "augassign", "straight", "softmax"]
    missing = [w for w in wanted if counts.get(w, 0) < 5]
    assert not missing, (missing, counts)


def test_generated_programs_are_valid_python_and_run(gen_dir):
    """The generator's own contract: every program imports and runs eagerly."""
    for seed in range(FIRST_SEED, FIRST_SEED + 100):
        program = pg.generate(seed, avoid=())
        module = pg.load(program, gen_dir)
        out = pg.target_of(program, module)(*program.make_args())
        for leaf in pg._leaves(out):
            assert np.all(np.isfinite(pg._raw(leaf)))


# ============================================================ regressions
# Each defect below was found by random programs and minimised by hand.
X = np.array([[0.5, -0.3], [0.8, 0.4], [-0.6, 0.7]])


def assert_grads_match_fd(fn, args):
    grads = ops.GradOperation(get_all=True)(fn)(*args)
    for i, g in enumerate(grads):
        want = numeric_grad(lambda *a: np.sum(fn(*a)), args, i)
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)


def test_regression_return_in_for_reading_loop_variable(tmp_path):
    m = load_source(tmp_path, """
        def f(x):
            s = x[0] * 1.0
            for i in range(2):
                s = np.sin(s) * x[i]
                if s.sum() > 10.0:
                    return s
            return s
        """, "reg_return_in_for")
    assert_grads_match_fd(m.f, (X,))


def test_regression_break_after_return_in_while(tmp_path):
    m = load_source(tmp_path, """
        def f(x):
            s = x * 1.0
            i = 0
            while i < 3:
                i = i + 1
                if s.sum() > 100.0:
                    return s
                s = np.sin(s)
                if s.sum() > 100.0:
                    break
            return s
        """, "reg_break_after_return")
    assert_grads_match_fd(m.f, (X,))


def test_regression_star_unpacking(tmp_path):
    m = load_source(tmp_path, """
        def f(x):
            a, *rest = (x, x * 2.0, x * 3.0)
            return a * rest[0] * rest[1]
        """, "reg_star_unpack")
    assert_grads_match_fd(m.f, (X,))


def test_regression_tuple_assigned_in_loop_body(tmp_path):
    m = load_source(tmp_path, """
        def f(x):
            s = x * 1.0
            for i in range(2):
                t = (s, x)
                s = np.sin(t[0]) * t[1]
            return s
        """, "reg_tuple_in_loop")
    assert_grads_match_fd(m.f, (X,))


def test_regression_list_append_after_conditional_return(tmp_path):
    m = load_source(tmp_path, """
        def f(x):
            if x.sum() > 100.0:
                return x
            acc = []
            for k in range(2):
                acc.append(x * (k + 1))
            return np.stack(acc)
        """, "reg_list_after_return")
    assert_grads_match_fd(m.f, (X,))


def test_regression_def_after_conditional_return(tmp_path):
    m = load_source(tmp_path, """
        def f(x):
            if x.sum() > 10.0:
                return x
            def g(a):
                return a * 2.0
            return g(x)
        """, "reg_def_after_return")
    assert_grads_match_fd(m.f, (X,))


def test_regression_lambda_bound_in_branch(tmp_path):
    m = load_source(tmp_path, """
        def f(x):
            if x.sum() > 0.0:
                g = lambda a: a * 2.0
                x = g(x)
            return x
        """, "reg_lambda_in_branch")
    assert_grads_match_fd(m.f, (X,))


def test_regression_cell_list_loop_in_branch(tmp_path):
    m = load_source(tmp_path, """
        class Scale(nn.Cell):
            def __init__(self):
                super().__init__()
                self.w = Parameter(Tensor(np.array([0.5, -0.3])), name="w")

            def construct(self, a):
                return a * self.w


        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.layers = nn.CellList([Scale(), Scale()])

            def construct(self, x):
                if x.sum() > 0:
                    for layer in self.layers:
                        x = layer(x)
                return x
        """, "reg_cell_list_in_branch")
    net = m.Net()
    x = np.array([0.5, 0.2])
    g = ops.GradOperation()(net)(x)
    np.testing.assert_allclose(g, np.array([0.25, 0.09]), rtol=1e-12)


# was: a None tangent in generated code (MatMulGradB's JVP rule with no tangent)
def test_regression_jvp_of_gradient_reading_a_constant_array(tmp_path):
    m = load_source(tmp_path, """
        W = np.array([[0.3, -0.3], [0.4, 0.9]])


        def f(y):
            return W @ y


        def g(y):
            return (ops.GradOperation()(f)(y) * y).sum()
        """, "reg_fwd_over_rev_const")
    y = np.array([[0.5, -0.2], [0.1, 0.7]])
    v = np.array([[1.0, 0.5], [-0.5, 2.0]])
    _, t = s2sad.jvp(m.g, (y,), (v,))
    # g(y) = sum(W.T @ ones * y): linear in y, so J v = g(v)
    np.testing.assert_allclose(t, m.g(v), rtol=1e-12)


def test_regression_second_derivative_through_if_branch_not_taken(tmp_path):
    """Was: the adjoint of an untaken branch yielded rt.UNDEFINED, added at second order."""
    m = load_source(tmp_path, """
        def f(x):
            y = x * 1.0
            if x.sum() > 0:
                y = x * x
            return y


        def df(x):
            return ops.GradOperation()(f)(x).sum()
        """, "reg_order2_if")
    for x, want in ((np.array([-0.5, -0.3]), [0.0, 0.0]), (np.array([0.5, 0.3]), [2.0, 2.0])):
        np.testing.assert_allclose(ops.GradOperation()(m.df)(x), want, rtol=1e-12)
        s2sad.check_grads(m.f, (x,), order=2)


def test_regression_maybe_undefined_read_in_short_circuit(tmp_path):
    m = load_source(tmp_path, """
        def f(x):
            if x[0] > 0:
                v = np.sin(x)
            if x[1] > 0 and v.sum() > 10.0:
                x = x * 2.0
            return v * x
        """, "reg_short_circuit")
    x = np.array([0.5, -0.3])
    np.testing.assert_allclose(ops.GradOperation()(m.f)(x),
                               numeric_grad(lambda a: np.sum(m.f(a)), (x,), 0), atol=1e-8)


def test_regression_maybe_undefined_read_in_ternary(tmp_path):
    m = load_source(tmp_path, """
        def f(x):
            if x[0] > 0:
                v = np.sin(x)
            w = v if x[1] > 0 else x
            return v * w
        """, "reg_ternary_undefined")
    x = np.array([0.5, -0.3])
    np.testing.assert_allclose(ops.GradOperation()(m.f)(x),
                               numeric_grad(lambda a: np.sum(m.f(a)), (x,), 0), atol=1e-8)


def test_regression_tuple_return_inside_while(tmp_path):
    m = load_source(tmp_path, """
        def f(x):
            i = 0
            while i < 3:
                i = i + 1
                if i == 2:
                    return x * 3.0, x * 2.0
            return x, x
        """, "reg_tuple_return_loop")
    g = ops.GradOperation()(m.f)(np.array([0.5, -0.3]))
    np.testing.assert_allclose(g, [5.0, 5.0])


def test_regression_augmented_assignment_on_an_alias(tmp_path):
    """Was: compiled as 'v = v - e' while NumPy also changes x, a different function.
    Now refused at compile time (docs/control-flow.md), naming both variables."""
    m = load_source(tmp_path, """
        def f(x):
            v = x
            v -= np.cos(x)
            return v * x
        """, "reg_augassign_alias")
    x = np.array([0.5, -0.3])
    with pytest.raises(CompileError, match=r"'v -= \.\.\.' changes in place the array 'v' "
                                           r"shares with 'x', which is read afterwards") as e:
        ops.GradOperation()(m.f)(x.copy())
    assert "reg_augassign_alias.py" in str(e.value) and "v -= np.cos(x)" in str(e.value)
    # what it says to write instead compiles to the intended function (x unchanged)
    m = load_source(tmp_path, """
        def f(x):
            v = x
            v = v - np.cos(x)
            return v * x
        """, "reg_augassign_alias_fixed")
    np.testing.assert_allclose(ops.GradOperation()(m.f)(x), 2 * x - np.cos(x) + x * np.sin(x),
                               rtol=1e-12)


def test_regression_common_subexpression_in_loop_body(tmp_path):
    """Was: a value computed twice in a loop body (merged by CSE) was pushed under one
    name and read back under the other -- a silently wrong gradient ([1.875] * 3)."""
    m = load_source(tmp_path, """
        def f(x):
            v = x
            for i in range(2):
                v = v.sum() - v.sum() * x
            return v
        """, "reg_loop_cse")
    x = np.array([0.3, -0.5, 0.7])
    np.testing.assert_allclose(ops.GradOperation()(m.f)(x),
                               numeric_grad(lambda a: np.sum(m.f(a)), (x,), 0), rtol=1e-6)


def test_regression_augmented_assignment_through_a_view(tmp_path):
    """Was: 't = v[::-1]; v *= 2' changes the view t in NumPy; s2sad compiled 'v = v * 2'
    and t kept the old values.  Now refused at compile time."""
    m = load_source(tmp_path, """
        def f(x):
            v = np.cos(x)
            t = v[::-1]
            v *= 2.0
            return t * x
        """, "reg_augassign_view")
    x = np.array([0.5, -0.3, 0.2])
    with pytest.raises(CompileError, match="'v \\*= ...' changes in place the array 'v' shares "
                                           "with 't'"):
        ops.GradOperation()(m.f)(x)


# ------------------------------------------------------------- second order
ORDER2 = """
    def f_loop(x):
        v = x
        for i in range(1):
            v = x + v.sum()
        return np.sin((v * v).sum())


    def df_loop(x):
        return ops.GradOperation()(f_loop)(x).sum()


    def f_return_in_loop(x):
        i = 0
        while i < 3:
            i = i + 1
            if i == 2:
                return np.sin(x)
        return x


    def helper(a, w):
        if w[0] > 0:
            v = w
        else:
            v = np.cos(a)
        return v


    def f_call_in_branch(z, a):
        if z[0, 1] <= 0:
            y = helper(z[1], a)
        return y


    def f_shared_condition(x):
        if x.sum() > 0:
            if x[0] > 0.5:
                v = x * 2.0
            elif x.sum() > 0:
                v = np.sin(x @ x) * x
            else:
                v = x
        else:
            v = x * 3.0
        return v


    def f_nested_if(y):
        if y.sum() > -100.0:
            if np.sin(y).sum() > 0.25:
                v = np.sin(y) * 3.0
            else:
                v = np.sin(y) * np.sin(y)
        return v
    """


@pytest.fixture
def order2(tmp_path):
    return load_source(tmp_path, ORDER2, "reg_order2")


def test_regression_second_derivative_through_loop(order2):
    # reverse over reverse through this loop once gave a wrong value (the adjoint
    # of a popped value was mixed with that of the value pushed)
    x = np.array([0.5, -0.3])
    s2sad.check_grads(order2.f_loop, (x,), order=2, modes=("rev", "fwd"))
    h = 1e-6
    grad = ops.GradOperation()(order2.df_loop)
    fd = [(order2.df_loop(x + h * e) - order2.df_loop(x - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(grad(x), fd, rtol=1e-6)


def test_regression_second_derivative_return_inside_loop(order2):
    # this once failed in generated code
    x = np.array([[0.5, -0.3, 0.2], [0.8, 0.4, -0.5]])
    s2sad.check_grads(order2.f_return_in_loop, (x,), order=2, modes=("rev", "fwd"))


def test_regression_second_derivative_nested_if(order2):
    # was: rt.UNDEFINED used as a value (the inner backward branch did not know the
    # forward branch on the same condition had defined what it reads)
    s2sad.check_grads(order2.f_nested_if, (np.array([0.5, 0.3]),), order=2,
                      modes=("rev", "fwd"))


def test_regression_second_derivative_if_and_elif_on_one_condition(order2):
    # seed 40341: the outer 'if' and an inner 'elif' test the same expression,
    # merged into one value; a value the elif branch defines was taken as
    # defined on the outer branch's path (generated code: UnboundLocalError)
    for x in (np.array([0.7, 0.2]), np.array([0.2, 0.3]), np.array([-0.5, -0.2])):
        s2sad.check_grads(order2.f_shared_condition, (x,), order=2, modes=("rev", "fwd"))


def test_regression_second_derivative_call_in_branch(order2):
    z = np.array([[0.5, -0.3], [0.8, 0.4]])
    a = np.array([0.3, 0.2])
    s2sad.check_grads(order2.f_call_in_branch, (z, a), order=2, modes=("rev", "fwd"))
