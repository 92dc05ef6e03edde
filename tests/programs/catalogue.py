"""A catalogue of small user programs, each with an input generator.

Every entry is ordinary NumPy (or s2sad ``nn``) code a user could write: it
runs eagerly without s2sad, so finite differences of the eager run are an
independent reference.  ``test_catalogue.py`` differentiates each entry in
every mode (reverse, forward, second order, the standalone dump).

Inputs keep clear of kinks and branch boundaries by more than finite
differences move them: ``uniform`` draws magnitudes in [0.3, 1.0], and a
branch tests a sum whose sign the generator fixes.  An entry is
``Entry(name, fn, make_args)``; ``make_args(rng)`` returns the argument
tuple, float64 arrays only, so every argument is differentiated.
"""
from collections import namedtuple

import numpy as np

from s2sad import nn, ops, Parameter, Tensor

Entry = namedtuple("Entry", "name fn make_args")


def uniform(rng, *shape, low=0.3, high=1.0):
    """Values with magnitudes in [low, high] and random signs."""
    return rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)


def positive(rng, *shape):
    return rng.uniform(0.5, 1.5, shape)


# ------------------------------------------------------------ elementwise math
def smooth_chain(x):
    return np.sum(np.sin(x) * np.cos(x * 0.5) + np.tanh(x) ** 2)


def exp_log(x):
    return np.sum(np.log(1.0 + np.exp(x)) - np.sqrt(x * x + 1.0))


def rational(x, y):
    return np.sum((x * y + 1.0) / (1.0 + y * y))


def powers(x):
    return np.sum(x ** 3 - 2.0 * x ** 2 + np.abs(x) ** 1.5)


# --------------------------------------------------------------- broadcasting
def add_row(a, b):
    return np.sum(np.tanh(a + b) * a)


def column_scale(a, c):
    return np.sum(np.sin(a * c[:, None]))


def scalar_broadcast(x, s):
    return np.sum(np.exp(-x * x * s))


# ----------------------------------------------------------------- reductions
def softmax_cross_entropy(z, t):
    shifted = z - np.max(z, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(t * logp, axis=1))


def variance(x):
    m = np.mean(x, axis=0)
    return np.sum(np.mean((x - m) ** 2, axis=0))


def row_norms(x):
    return np.sum(np.sqrt(np.sum(x * x, axis=1)))


# --------------------------------------------------------------------- matmul
def mlp(W1, W2, x):
    h = np.tanh(x @ W1)
    return np.sum((h @ W2) ** 2)


def quadratic_form(A, v):
    return v @ (A @ v)


def batched_dot(a, b):
    return np.sum(np.matmul(a, b) * 0.5)


# ------------------------------------------------------------ indexing, slices
def slices(x):
    return np.sum(x[1:, :2] * x[:-1, 1:] + x[::2, -1:].sum())


def gather_rows(x):
    idx = np.array([2, 0, 2])
    return np.sum(np.sin(x[idx]) * x[0])


def item_assignment(x):
    y = np.zeros_like(x)
    y[0] = np.sin(x[1])
    y[1:] = x[1:] * x[:-1]
    return np.sum(y * y)


# ------------------------------------------------------------------ branches
def branch_on_sign(x):
    if np.sum(x) > 0:
        y = np.sin(x) * 2.0
    elif np.sum(x) > -100.0:
        y = np.cos(x)
    else:
        y = x
    return np.sum(y * x)


def ternary_and_boolops(x, y):
    big = np.sum(x) > 0 and np.sum(y) > 0
    z = x * y if big else x + y
    return np.sum(np.tanh(z))


# --------------------------------------------------------------------- loops
def while_loop(x):
    s = x
    i = 0
    while i < 4:
        s = np.sin(s) + 0.5 * x
        i = i + 1
    return np.sum(s)


def for_with_break_continue(x):
    s = x * 1.0
    for i in range(6):
        if i == 1:
            continue
        s = np.tanh(s * 1.2) + x
        if i == 4:
            break
    return np.sum(s * s)


def early_return_in_loop(x):
    s = x
    for i in range(5):
        s = s * 0.9 + np.sin(s)
        if np.sum(s * s) > 1e6:
            return np.sum(s)
    return np.sum(s * x)


def loop_over_rows(x, w):
    acc = w * 0.0
    for row in x:
        acc = acc + np.tanh(row * w)
    return np.sum(acc)


def rnn(W, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h)


# ------------------------------------------------------------------ closures
def closure_scale(x, s):
    def inner(v):
        return np.sin(v) * s
    return np.sum(inner(x) + inner(x * 0.5))


def lambda_and_helper(x):
    square = lambda v: v * v          # noqa: E731
    return np.sum(_helper(square(x)))


def _helper(v):
    return np.exp(-v) * v


# ---------------------------------------------------------------- tuple outputs
def two_outputs(x, y):
    return np.sin(x) * y, np.sum(x * y)


def tuple_unpacking(x):
    a, b = np.sin(x), np.cos(x)
    b, a = a, b * a
    return a + b


# --------------------------------------------------------------------- a Cell
class SmallNet(nn.Cell):
    """A Cell with Parameters, a sub-Cell and a primitive attribute."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(7)
        self.w = Parameter(Tensor(rng.uniform(-0.8, 0.8, (3, 4))), name="w")
        self.b = Parameter(Tensor(rng.uniform(-0.3, 0.3, (4,))), name="b")
        self.act = nn.Tanh()
        self.matmul = ops.MatMul()

    def construct(self, x):
        h = self.act(self.matmul(x, self.w) + self.b)
        return (h * h).sum()


ENTRIES = [
    Entry("smooth_chain", smooth_chain, lambda r: (uniform(r, 5),)),
    Entry("exp_log", exp_log, lambda r: (uniform(r, 2, 3),)),
    Entry("rational", rational, lambda r: (uniform(r, 4), uniform(r, 4))),
    Entry("powers", powers, lambda r: (uniform(r, 4),)),
    Entry("add_row", add_row, lambda r: (uniform(r, 3, 4), uniform(r, 4))),
    Entry("column_scale", column_scale, lambda r: (uniform(r, 3, 2), uniform(r, 3))),
    Entry("scalar_broadcast", scalar_broadcast, lambda r: (uniform(r, 5), positive(r))),
    Entry("softmax_cross_entropy", softmax_cross_entropy,
          lambda r: (uniform(r, 3, 4), positive(r, 3, 4))),
    Entry("variance", variance, lambda r: (uniform(r, 4, 3),)),
    Entry("row_norms", row_norms, lambda r: (uniform(r, 3, 2),)),
    Entry("mlp", mlp, lambda r: (uniform(r, 3, 4), uniform(r, 4, 2), uniform(r, 5, 3))),
    Entry("quadratic_form", quadratic_form, lambda r: (uniform(r, 3, 3), uniform(r, 3))),
    Entry("batched_dot", batched_dot, lambda r: (uniform(r, 2, 3, 4), uniform(r, 2, 4, 2))),
    Entry("slices", slices, lambda r: (uniform(r, 4, 3),)),
    Entry("gather_rows", gather_rows, lambda r: (uniform(r, 3, 2),)),
    Entry("item_assignment", item_assignment, lambda r: (uniform(r, 4),)),
    Entry("branch_positive", branch_on_sign, lambda r: (positive(r, 3),)),
    Entry("branch_negative", branch_on_sign, lambda r: (-positive(r, 3),)),
    Entry("ternary_and_boolops", ternary_and_boolops, lambda r: (positive(r, 3), uniform(r, 3))),
    Entry("while_loop", while_loop, lambda r: (uniform(r, 3),)),
    Entry("for_with_break_continue", for_with_break_continue, lambda r: (uniform(r, 3) * 0.5,)),
    Entry("early_return_in_loop", early_return_in_loop, lambda r: (uniform(r, 3),)),
    Entry("loop_over_rows", loop_over_rows, lambda r: (uniform(r, 4, 3), uniform(r, 3))),
    Entry("rnn", rnn, lambda r: (uniform(r, 3, 3) * 0.5, uniform(r, 4, 3), uniform(r, 3))),
    Entry("closure_scale", closure_scale, lambda r: (uniform(r, 4), positive(r, 4))),
    Entry("lambda_and_helper", lambda_and_helper, lambda r: (uniform(r, 4),)),
    Entry("two_outputs", two_outputs, lambda r: (uniform(r, 3), uniform(r, 3))),
    Entry("tuple_unpacking", tuple_unpacking, lambda r: (uniform(r, 3),)),
    Entry("small_net", SmallNet(), lambda r: (uniform(r, 2, 3),)),
]


def args_of(entry, seed=0):
    """The arguments of ``entry``, drawn from a generator seeded by ``seed`` and its name."""
    return entry.make_args(np.random.default_rng([seed, sum(map(ord, entry.name))]))
