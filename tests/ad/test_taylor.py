"""Taylor mode (``s2sad/ad/taylor.py``) against nested reverse mode and closed forms.

``GradOperation()`` applied n >= 2 times to a plain function is compiled by
propagating derivatives along ``ones_like(x)`` and one reverse sweep.  With
``s2sad.options(taylor=False)`` the same chain is compiled the other way,
by differentiating each order's whole program again: the path that
``test_second_order.py`` checks against finite differences for every
primitive.
"""
import math
import re

import numpy as np

import s2sad
from s2sad import Tensor
from s2sad.opt import pipeline
from s2sad.ops import GradOperation
from s2sad.ops import operations as P
from s2sad.ops._grad import taylor_rules
from s2sad.ops.primitive import Primitive

from gradcheck import numeric_grad
from second_order_cases import normal, positive
from test_second_order import CASES, _IR_OP


def chain(fn, n):
    g = fn
    for _ in range(n):
        g = GradOperation()(g)
    return g


def run(fn, args, n, use_taylor):
    """``(result, whether Taylor mode compiled it, generated source)``."""
    g = chain(fn, n)
    with pipeline.options(taylor=use_taylor):
        result = g(*args)
    source = g.last.source
    return np.asarray(result), ("order-%d gradient" % n) in source.splitlines()[0], source


def rule_classes():
    """The primitives Taylor mode propagates itself (the others take nested mode)."""
    classes = [getattr(P, n) for n in dir(P)]
    return {c for c in classes if isinstance(c, type) and issubclass(c, Primitive)
            and (c.linearity is not None or taylor_rules.lookup_class(c) is not None)}


def staged_prims(case):
    ir = s2sad.get_ir(GradOperation()(case.fn), *case.args, stage="forward")
    return set(_IR_OP.findall(ir))


def test_taylor_matches_nested_reverse_for_every_rule():
    """Orders 2 and 3 of every second-order case Taylor mode takes agree with
    nested reverse mode; every rule in the table is exercised by some case."""
    covered = set()
    taken = 0
    failures = []
    for case in CASES:
        for n in (2, 3):
            got, used, _ = run(case.fn, case.args, n, True)
            if not used:
                break
            want, used_nested, _ = run(case.fn, case.args, n, False)
            assert not used_nested
            # the same float64 derivative summed in another order: agreement to
            # rounding, scaled by the size of the result
            scale = max(1.0, float(np.max(np.abs(want))))
            if not np.allclose(got, want, rtol=1e-9, atol=1e-11 * scale):
                failures.append("%s order %d: max error %.3g" % (
                    case.id, n, float(np.max(np.abs(got - want)))))
            taken += n == 2
        else:
            covered |= staged_prims(case)
    assert not failures, failures
    # a primitive making complex values compiles its programs in complex mode, whose
    # higher orders take nested reverse mode: no case of it can be taken here
    names = {cls.__name__ for cls in rule_classes() if not cls.complex_result}
    with_case = {c.prim for c in CASES} & names
    assert with_case - covered == set(), sorted(with_case - covered)
    assert taken >= 100, taken     # 105 of the 187 cases when written


def derivatives(fn, x, orders):
    out = {}
    for n in orders:
        out[n], used, _ = run(fn, (x,), n, True)
        assert used, n
    return out


def f_exp(x):
    return np.exp(x)


def f_sin(x):
    return np.sin(x)


def f_cos(x):
    return np.cos(x)


def f_log(x):
    return np.log(x)


def f_recip(x):
    return 1.0 / x


def f_sqrt(x):
    return np.sqrt(x)


def f_sigmoid(x):
    return P.Sigmoid()(x)


def f_cube(x):
    return x * x * x


def test_closed_forms_to_order_six():
    """n-th derivatives of elementwise functions, in closed form."""
    x = np.linspace(-1.5, 1.5, 7)
    p = positive((7,), 3)
    orders = range(2, 7)
    # float64 recurrences over at most six terms: a few ulps per term
    close = dict(rtol=1e-12, atol=1e-12)
    for n, v in derivatives(f_exp, x, orders).items():
        np.testing.assert_allclose(v, np.exp(x), **close)
    for n, v in derivatives(f_sin, x, orders).items():
        np.testing.assert_allclose(v, np.sin(x + n * np.pi / 2), **close)
    for n, v in derivatives(f_cos, x, orders).items():
        np.testing.assert_allclose(v, np.cos(x + n * np.pi / 2), **close)
    for n, v in derivatives(f_log, p, orders).items():
        np.testing.assert_allclose(v, (-1) ** (n - 1) * math.factorial(n - 1) / p ** n, **close)
    for n, v in derivatives(f_recip, p, orders).items():
        np.testing.assert_allclose(v, (-1) ** n * math.factorial(n) / p ** (n + 1), **close)
    for n, v in derivatives(f_sqrt, p, orders).items():
        # d^n sqrt = prod_{i<n} (1/2 - i) * p^(1/2 - n)
        c = np.prod([0.5 - i for i in range(n)])
        np.testing.assert_allclose(v, c * p ** (0.5 - n), **close)
    cube = derivatives(f_cube, x, (2, 3, 4))
    np.testing.assert_allclose(cube[2], 6 * x, **close)
    np.testing.assert_array_equal(cube[3], np.full_like(x, 6.0))
    np.testing.assert_array_equal(cube[4], np.zeros_like(x))
    s = 1 / (1 + np.exp(-x))
    sig = derivatives(f_sigmoid, x, (2, 3))
    np.testing.assert_allclose(sig[2], s * (1 - s) * (1 - 2 * s), **close)
    np.testing.assert_allclose(sig[3], s * (1 - s) * (1 - 6 * s + 6 * s * s), **close)


def f_tanh(x):
    return np.tanh(x)


def test_tanh_matches_the_paddle_seed():
    """Orders 2 and 3 of tanh at 1.0 print -0.6397 and 0.6216267 in Paddle's guide."""
    x = np.array([1.0], np.float32)
    d = derivatives(f_tanh, x, (2, 3))
    # the guide prints 4 and 7 significant digits of float32 results
    np.testing.assert_allclose(d[2], [-0.6397], rtol=1e-4)
    np.testing.assert_allclose(d[3], [0.6216267], rtol=1e-5)
    assert d[2].dtype == np.float32 and d[3].dtype == np.float32


NCLASSES = 4


def mlp_loss(W1, b1, W2, x, labels):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    onehot = labels[:, None] == np.arange(NCLASSES)
    return -np.mean(np.sum(logp * onehot, axis=1))


def mlp_args():
    return (normal((5, 3), 1) * 0.5, normal((3,), 2), normal((3, NCLASSES), 3), normal((6, 5), 4),
            np.array([0, 3, 1, 2, 3, 0]))


def gradient_of_sum(fn, args, eps):
    """Central differences of ``sum(fn(x, *rest))`` w.r.t. the first argument."""
    x, rest = args[0], args[1:]
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        fd[i] = (np.sum(fn(x + e, *rest)) - np.sum(fn(x - e, *rest))) / (2 * eps)
    return fd


def test_mlp_third_order_against_finite_differences():
    """The order-3 gradient is the gradient of sum(order 2): central differences
    of the nested order-2 program, in float64."""
    args = mlp_args()
    third, used, src3 = run(mlp_loss, args, 3, True)
    assert used
    _, used_nested, src3_nested = run(mlp_loss, args, 3, False)
    assert not used_nested
    with pipeline.options(taylor=False):     # of the nested order-2 program
        fd = gradient_of_sum(chain(mlp_loss, 2), args, 1e-5)
    # central differences: O(eps^2) truncation plus rounding/eps, about 1e-9 here
    np.testing.assert_allclose(third, fd, rtol=1e-6, atol=1e-7)


def test_mlp_code_grows_slower_than_nested():
    args = mlp_args()
    sizes = {}
    for n in (4, 5):
        for use in (True, False):
            _, used, src = run(mlp_loss, args, n, use)
            assert used == use
            sizes[n, use] = len(src.splitlines())
    assert sizes[5, True] < sizes[5, False] / 2, sizes
    assert sizes[5, True] / sizes[4, True] < sizes[5, False] / sizes[4, False], sizes


def test_tensor_inputs_and_other_arguments():
    """A Tensor first input gets a Tensor back; later inputs are constants of the chain."""
    def f(x, y):
        return np.sum(np.exp(x) * y)
    x, y = normal((3,), 5), normal((3,), 6)
    got, used, _ = run(f, (Tensor(x), Tensor(y)), 3, True)
    assert used
    # exp(x) * y computed by a few float64 ops: rounding only
    np.testing.assert_allclose(got, np.exp(x) * y, rtol=1e-12)


def loop_sin(x):
    s = x
    for _ in range(3):
        s = np.sin(s)
    return s


def f_affine(x):
    return 3 * x + 1


def test_what_taylor_mode_leaves_to_nested_reverse():
    """Control flow, a derivative that is zero while compiling, options other than the
    defaults: nested reverse mode compiles them, with the same results."""
    x = normal((4,), 7)
    got, used, _ = run(loop_sin, (x,), 2, True)
    assert not used
    # sin(sin(sin(x)))'' by the chain rule, in closed form
    a, b, c = x, np.sin(x), np.sin(np.sin(x))
    d2 = (-np.sin(c) * np.cos(b) ** 2 * np.cos(a) ** 2
          - np.cos(c) * np.sin(b) * np.cos(a) ** 2 - np.cos(c) * np.cos(b) * np.sin(a))
    # the same float64 terms summed in another order: rounding only
    np.testing.assert_allclose(got, d2, rtol=1e-12)
    got, used, _ = run(f_affine, (x,), 3, True)
    assert not used
    np.testing.assert_array_equal(got, np.zeros(4))
    g = GradOperation(get_all=True)(GradOperation()(f_exp))
    (res,) = g(x)
    assert "order-2" not in g.last.source.splitlines()[0]
    # exp(x) times ones, float64: rounding only
    np.testing.assert_allclose(res, np.exp(x), rtol=1e-12)


def test_nested_third_order_through_boolean_masks():
    """ReLU6's rule multiplies two comparison masks; differentiated twice, the
    default seed of ones must not fold into them (``mask + mask`` is ``or``).
    Central differences of the order-2 program, in float64."""
    x = np.array([[-0.7, 0.4, 2.1], [5.2, 6.9, 1.3]])

    def f(x):
        q = P.ReLU6()(x)
        return q * np.sin(q)
    third, used, _ = run(f, (x,), 3, False)
    assert not used
    with pipeline.options(taylor=False):     # of the nested order-2 program
        fd = gradient_of_sum(chain(f, 2), (x,), 1e-6)
    # central differences of a smooth function away from the kinks: ~1e-9
    np.testing.assert_allclose(third, fd, rtol=1e-6, atol=1e-7)
    taylor_third, used, _ = run(f, (x,), 3, True)
    assert used
    np.testing.assert_allclose(taylor_third, fd, rtol=1e-6, atol=1e-7)     # as above


def f_two(x, y):
    return np.sum(np.sin(x) * y + np.exp(x))


def test_grad_of_grad_is_a_taylor_chain():
    """``s2sad.grad(s2sad.grad(f))``, first input each time: Taylor mode, like the chain
    of ``GradOperation``; other positions and options keep the nested functions."""
    x, y = normal((5,), 8), normal((5,), 9)
    g3 = s2sad.grad(s2sad.grad(s2sad.grad(f_two)))
    got = g3(x, y)
    assert s2sad.get_source(g3, x, y).startswith("# s2sad: order-3 gradient of f_two")
    # d^3/dx^3 (sin(x) y + exp(x)) in closed form, float64 rounding only
    np.testing.assert_allclose(got, -np.cos(x) * y + np.exp(x), rtol=1e-12, atol=1e-12)
    assert s2sad.grad(s2sad.grad(f_two)) is s2sad.grad(s2sad.grad(f_two))     # memoized
    got_t = s2sad.grad(s2sad.grad(f_two))(Tensor(x), Tensor(y))
    assert isinstance(got_t, Tensor)
    # exp and sin in float64 times y: rounding only
    np.testing.assert_allclose(got_t.asnumpy(), -np.sin(x) * y + np.exp(x), rtol=1e-12)
    # the second input, or weights/aux anywhere: the nested functions, same values
    d2y = s2sad.grad(s2sad.grad(f_two), 1)
    # a closed form in float64, the same values by other ops: rounding only
    np.testing.assert_allclose(d2y(x, y), np.cos(x), rtol=1e-12)
    assert not s2sad.get_source(d2y, x, y).startswith("# s2sad: order-")
    try:
        s2sad.grad(s2sad.grad(f_two))(1.5, y)
    except TypeError as e:
        assert "grad_position 0 refers to a float" in str(e)
    else:
        raise AssertionError("a constant first input must be refused")




def log_softmax_square(z, t):
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return np.sum(logp * logp * t)


def _log_softmax_square_grad(z, t):
    """The first derivative by hand: 2 logp t - softmax * rowsum(2 logp t)."""
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    u = 2 * logp * t
    return u - np.exp(logp) * np.sum(u, axis=1, keepdims=True)


def test_tangents_of_unnamed_values_are_named_after_their_primitive():
    rng = np.random.default_rng(31)
    z, t = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    gg = GradOperation()(GradOperation()(log_softmax_square))
    # central differences in float64 of the hand-written first derivative's sum
    want = numeric_grad(lambda a: np.sum(_log_softmax_square_grad(a, t)), (z,), 0)
    np.testing.assert_allclose(gg(z, t), want, rtol=1e-6, atol=1e-8)
    src = gg.last.source
    # log(...) itself is never computed at order 2, only its tangent: t_log, not t_v
    assert re.search(r"\bt_log = ", src) and not re.search(r"\bt\d?_v(_\d+)?\b", src), src
