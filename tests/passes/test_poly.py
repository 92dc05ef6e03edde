"""Polynomial collection between derivative orders (``s2sad/opt/poly.py``).

Values are checked against closed forms (the derivatives of ``tanh`` are
polynomials in ``tanh``, those of ``(x - 1)**4`` are known), against central
finite differences of the previous order, and against the same programs with
the pass turned off.  The size checks are what the pass is for: the code of
the n-th derivative of ``tanh`` grows linearly in n.
"""
import numpy as np
import pytest

import s2sad
from s2sad.opt import pipeline
from s2sad.ir import Var, Const, Func
from s2sad.ir.nodes import Op
from s2sad.opt.poly import collect_polynomials
from s2sad.ops import GradOperation
from s2sad.ops.operations import math_ops as M


def f_tanh(x):
    return np.tanh(x)


def f_quartic(x):
    return (x - 1) ** 4


def f_sig(x):
    return 1 / (1 + np.exp(-x))


def f_tanh_tanh(x):
    return np.tanh(np.tanh(x))


def f_sin_exp(x):
    return np.sin(x) * np.exp(-x)


def f_x_tanh(x):
    return x * np.tanh(x)


def f_mixed(x, s):
    return np.tanh(x) * np.tanh(s)       # x[4], s[1]: two shape classes


@pytest.fixture(autouse=True)
def nested_reverse():
    """These are the programs of nested reverse mode, which Taylor mode
    (``test_taylor.py``) would otherwise take over for chains of gradients."""
    with pipeline.options(taylor=False):
        yield


def nested(fn, order):
    g = fn
    for _ in range(order):
        g = GradOperation()(g)
    return g


def tanh_derivative(x, order):
    """Closed form: d/dx P(t) = P'(t) (1 - t**2), starting from P(t) = t."""
    p = np.polynomial.Polynomial([0, 1])
    for _ in range(order):
        p = p.deriv() * np.polynomial.Polynomial([1, 0, -1])
    return p(np.tanh(x))


def code_lines(source):
    return sum(1 for line in source.splitlines()
               if line.strip() and not line.strip().startswith(("#", "del ")))


@pytest.mark.parametrize("order", range(1, 9))
def test_tanh_derivatives_match_the_closed_form(order):
    x = np.linspace(-3, 3, 41)
    # atol grows with the order as the polynomial's coefficients do (order 8: 2**16 scale),
    # so values near a zero of the derivative are compared to the terms' size, not to 0
    np.testing.assert_allclose(nested(f_tanh, order)(x), tanh_derivative(x, order),
                               rtol=1e-11, atol=1e-11 * 2.0 ** (2 * order))


def test_paddle_seed_values_still_hold():
    x = np.array([1.0])
    got = [float(nested(f_tanh, k)(x)[0]) for k in (1, 2, 3)]
    # the seed prints -0.6397 to four digits: rtol 1e-4 is what its values carry
    np.testing.assert_allclose(got, [0.41997433, -0.6397, 0.6216267], rtol=1e-4)


def test_tanh_code_grows_linearly_with_the_order():
    x = np.linspace(-1, 1, 5)
    lines = [code_lines(s2sad.get_source(nested(f_tanh, k), x)) for k in range(1, 11)]
    steps = np.diff(lines)
    # each order adds a Horner step (multiply, add) and its adjoint, whatever the order
    assert max(steps) <= 6, lines
    assert lines[-1] < 50, lines


def test_collection_makes_tanh_code_smaller():
    x = np.linspace(-1, 1, 5)
    with pipeline.options(disabled_passes={"collect_polynomials"}):
        plain = code_lines(s2sad.get_source(nested(f_tanh, 6), x))
    collected = code_lines(s2sad.get_source(nested(f_tanh, 6), x))
    assert collected * 3 < plain, (collected, plain)


def sigmoid_derivative(x, order):
    """Closed form: d/dx P(s) = P'(s) s (1 - s), starting from P(s) = s."""
    p = np.polynomial.Polynomial([0, 1])
    for _ in range(order):
        p = p.deriv() * np.polynomial.Polynomial([0, 1, -1])
    return p(1 / (1 + np.exp(-x)))


@pytest.mark.parametrize("order", range(1, 7))
def test_sigmoid_derivatives_match_the_closed_form(order):
    # quotients by 1 + exp(-x) share one reciprocal atom
    x = np.linspace(-4, 4, 33)
    np.testing.assert_allclose(nested(f_sig, order)(x), sigmoid_derivative(x, order),
                               rtol=1e-9, atol=1e-12)


def test_sigmoid_code_grows_linearly_with_the_order():
    x = np.linspace(-1, 1, 5)
    lines = [code_lines(s2sad.get_source(nested(f_sig, k), x)) for k in range(1, 8)]
    assert max(np.diff(lines)) <= 15, lines     # was 26, 65, 175, 498, ... (x2.9 per order)


@pytest.mark.parametrize("order", range(1, 6))
def test_differences_of_exact_inputs_are_not_expanded(order):
    # expanding (x - 1)**2 into x*x - 2*x + 1 would lose every digit near x = 1
    x = 1 + np.logspace(-12, -2, 11)
    closed = {1: 4 * (x - 1) ** 3, 2: 12 * (x - 1) ** 2, 3: 24 * (x - 1),
              4: 24 + 0 * x, 5: 0 * x}[order]
    # exact atoms are never expanded, so float64 keeps every digit near x = 1
    np.testing.assert_allclose(nested(f_quartic, order)(x), closed, rtol=1e-13, atol=0)


@pytest.mark.parametrize("fn", [f_sig, f_tanh_tanh, f_sin_exp, f_x_tanh])
@pytest.mark.parametrize("order", [2, 3, 4])
def test_collected_and_uncollected_programs_agree(fn, order):
    x = np.linspace(-2.5, 2.5, 23)
    got = nested(fn, order)(x)
    with pipeline.options(disabled_passes={"collect_polynomials"}):
        plain = nested(fn, order)(x)
    # collection reorders float64 sums of up to a few dozen terms: rounding only
    # (atol for values that cancel to ~0)
    np.testing.assert_allclose(got, plain, rtol=1e-10, atol=1e-12 * np.abs(plain).max())


@pytest.mark.parametrize("fn", [f_sig, f_tanh_tanh, f_sin_exp])
def test_third_order_matches_finite_differences_of_the_second(fn):
    x = np.linspace(-2, 2, 9)
    eps = 1e-5
    second = nested(fn, 2)
    fd = (second(x + eps) - second(x - eps)) / (2 * eps)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(nested(fn, 3)(x), fd, rtol=1e-6, atol=1e-7)


def test_values_of_two_shapes_are_not_mixed():
    x = np.linspace(-1, 1, 4)
    s = np.array([0.3])
    g = nested(f_mixed, 2)
    got = g(x, s)
    eps = 1e-6
    first = GradOperation()(f_mixed)
    fd = (first(x + eps, s) - first(x - eps, s)) / (2 * eps)
    # central differences in float64 (step 1e-6): ~1e-9 relative error at most
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)
    assert got.shape == x.shape


def test_float32_stays_float32():
    x = np.linspace(-1, 1, 6).astype(np.float32)
    out = nested(f_tanh, 4)(x)
    assert out.dtype == np.float32
    # float32 (eps 6e-8) through a degree-5 polynomial whose coefficients sum to 80:
    # rounding is bounded by about 5e-6 (measured: 1.4e-7), against float64's closed form
    np.testing.assert_allclose(out, tanh_derivative(x.astype(np.float64), 4), rtol=1e-5,
                               atol=5e-6)


# ------------------------------------------------------------- the pass on IR
def _func(build_body):
    x = Var("x")
    ops, result = build_body(x)
    return Func("f", [x], ops, result), x


def _prims(func):
    return [type(op.prim).__name__ for op in func.body]


def test_horner_form_of_a_tanh_polynomial():
    # t = tanh(x); u = t*t; v = 1 - u; w = v * v; r = w * t  ->  t - 2t^3 + t^5
    def body(x):
        t, u, v, w, r = (Var(n) for n in "tuvwr")
        return [Op(M.Tanh(), [x], [t]), Op(M.Mul(), [t, t], [u]),
                Op(M.Sub(), [Const(1), u], [v]), Op(M.Mul(), [v, v], [w]),
                Op(M.Mul(), [w, t], [r])], r
    func, x = _func(body)
    collect_polynomials(func)
    assert func.body[-1].outs[0] is func.result      # the root keeps its Var
    assert func.body[0].prim.__class__ is M.Tanh
    env = {}
    xv = np.linspace(-2, 2, 7)
    env[x.id] = xv
    _run(func, env)
    t = np.tanh(xv)
    # a closed form in float64, the same values by other ops: rounding only
    np.testing.assert_allclose(env[func.result.id], t * (1 - t * t) ** 2, rtol=1e-13)


def test_multiplication_by_zero_is_left_alone():
    # 0 * t is NaN where t is infinite: the product must stay as written
    def body(x):
        e, z, r = Var("e"), Var("z"), Var("r")
        return [Op(M.Exp(), [x], [e]), Op(M.Mul(), [e, Const(0)], [z]),
                Op(M.Add(), [z, e], [r])], r
    r = _collected_at_overflow(body)
    assert np.isnan(r[0]) and r[1] == 1.0


def test_cancelling_terms_are_left_alone():
    # (e + t) - e is NaN where e is infinite, not t
    def body(x):
        e, t, a, d = Var("e"), Var("t"), Var("a"), Var("d")
        return [Op(M.Exp(), [x], [e]), Op(M.Tanh(), [x], [t]), Op(M.Add(), [e, t], [a]),
                Op(M.Sub(), [a, e], [d])], d
    d = _collected_at_overflow(body)
    assert np.isnan(d[0]) and d[1] == 0.0


def _collected_at_overflow(body):
    """The collected program's result at x = [1000, 0] (exp(1000) is infinite)."""
    func, x = _func(body)
    collect_polynomials(func)
    env = {x.id: np.array([1000.0, 0.0])}
    with np.errstate(over="ignore", invalid="ignore"):
        _run(func, env)
    return env[func.result.id]


def test_a_reciprocal_computed_later_is_not_read_before_it():
    # r = t / b is rewritten before the block's own 1 / b: it must write its own
    def body(x):
        t, b, r, u, inv = (Var(n) for n in ("t", "b", "r", "u", "inv"))
        ops = [Op(M.Tanh(), [x], [t]), Op(M.Exp(), [x], [b]), Op(M.RealDiv(), [t, b], [r])]
        s = r
        for _ in range(5):                  # s = 6 r, summed term by term
            ops.append(Op(M.Add(), [s, r], [Var("s")]))
            s = ops[-1].outs[0]
        return ops + [Op(M.Tanh(), [s], [u]), Op(M.RealDiv(), [Const(1), b], [inv]),
                      Op(M.Add(), [u, inv], [Var("out")])], None
    func, x = _func(body)
    func.result = func.body[-1].outs[0]
    collect_polynomials(func)
    _assert_defined_before_read(func, x)
    # rewritten: 6 * t * (1 / b), with a 1 / b of its own
    assert sum(type(op.prim) is M.RealDiv for op in func.body) == 3
    env = {x.id: np.linspace(-2, 2, 5)}
    _run(func, env)
    xv = env[x.id]
    # a closed form in float64, the same values by other ops: rounding only
    np.testing.assert_allclose(env[func.result.id],
                               np.tanh(6 * np.tanh(xv) / np.exp(xv)) + 1 / np.exp(xv),
                               rtol=1e-13)


def _assert_defined_before_read(func, x):
    defined = {x.id}
    for op in func.body:
        assert all(v.id in defined for v in op.arg_vars()), op
        defined.update(o.id for o in op.outs)


def _run(func, env):
    """Evaluate a straight-line Func of math ops with NumPy."""
    fns = {"Tanh": np.tanh, "Exp": np.exp, "Mul": np.multiply, "Add": np.add,
           "Sub": np.subtract, "Neg": np.negative, "Copy": lambda a: a,
           "RealDiv": np.true_divide}

    def val(a):
        return env[a.id] if isinstance(a, Var) else a.value
    for op in func.body:
        env[op.outs[0].id] = fns[type(op.prim).__name__](*[val(a) for a in op.args])


def test_a_value_that_is_a_new_reciprocal_keeps_it_for_other_readers():
    # q = (2 / b) * 0.5 is 1 / b, written for q; w = t / b must still find it
    def body(x):
        t, b, h, q, r, w = (Var(n) for n in ("t", "b", "h", "q", "r", "w"))
        ops = [Op(M.Tanh(), [x], [t]), Op(M.Exp(), [x], [b]), Op(M.RealDiv(), [Const(2), b], [h]),
               Op(M.Mul(), [h, Const(0.5)], [q]), Op(M.Tanh(), [q], [r])]
        s = t
        for _ in range(5):                  # w = 6 t / b, term by term
            ops.append(Op(M.Add(), [s, t], [Var("s")]))
            s = ops[-1].outs[0]
        ops.append(Op(M.RealDiv(), [s, b], [w]))
        return ops + [Op(M.Add(), [r, w], [Var("out")])], None
    func, x = _func(body)
    func.result = func.body[-1].outs[0]
    collect_polynomials(func)
    _assert_defined_before_read(func, x)
    env = {x.id: np.linspace(-2, 2, 5)}
    _run(func, env)
    xv = env[x.id]
    # a closed form in float64, the same values by other ops: rounding only
    np.testing.assert_allclose(env[func.result.id],
                               np.tanh(1 / np.exp(xv)) + 6 * np.tanh(xv) / np.exp(xv),
                               rtol=1e-13)
