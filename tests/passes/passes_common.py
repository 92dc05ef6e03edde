"""Programs and comparisons shared by the tests of the optimisation passes.

Each optimisation is compared with the same pipeline without it
(``unoptimised``) on random inputs, and on random programs from
``program_gen``: ``both`` compiles a gradient both ways and ``assert_same``
compares the results.  ``load_programs`` imports ``SOURCE`` as a module
(the ``mod`` fixture of ``conftest.py``).
"""
import re

import numpy as np

import s2sad
from s2sad import driver as G
from s2sad.opt import pipeline

from sources import load_source


SOURCE = """
def seeded(x):
    return np.sum(np.cos(np.sin(x)) * np.exp(-x * x))


def seeded_matmul(W, x):
    return np.sum(W @ x)


def seeded_loop(x, steps):
    for t in range(steps.shape[0]):
        x = np.sin(x) * 0.9
    return np.sum(x)


def returns_sum(x):
    y = np.sin(x) * x
    return np.sum(y), y


def mean_loss(W, x):
    h = np.tanh(x @ W)
    return np.mean(h * h)


def rnn(W, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h)


def negations(x, y):
    a = -np.sin(x)
    b = y - (-x * y)
    c = np.cos(y) * -a
    return np.sum(a + b * c - (-c))


def chain(x):
    a = np.sin(x)
    b = np.exp(a) * x
    c = np.cos(b) + a
    return np.sum(c * c)


def row_logsumexp(z):
    return np.sum(np.log(np.sum(np.exp(z), axis=1)))


def scaled_rows(z, w):
    return np.sum(np.sum(z * w, axis=1) * np.sum(z, axis=1))


def negated_mean(W, x):
    return -np.mean(np.sum(np.tanh(x @ W), axis=1))


def mean_of_sums_of_sums(z):
    return np.mean(np.sum(np.sum(z * z, axis=2), axis=1))


def mean_of_kept_row_sums(z):
    return np.mean(np.sum(np.exp(z), axis=1, keepdims=True))


def mean_of_scaled_row_sums(z, w):
    return np.mean(np.sum(np.exp(z) * w, axis=1))


def batched_rnn(W, U, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t] @ U)
    return np.sum(h * h)


def rnn_columns(W, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t]) + 0.5 * W[:, :1]
    return np.sum(h)


def ms_rnn(W, xs, h):
    matmul = ops.MatMul(transpose_b=True)
    for t in range(xs.shape[0]):
        h = ops.tanh(matmul(h, W) + xs[t])
    return h.sum()


def nested_rnn(W, xs, h):
    for s in range(2):
        for t in range(xs.shape[0]):
            h = np.sin(W @ h + xs[t] * s)
    return np.sum(h)


def running_statistic(x, w):
    h = x
    total = x * 0
    for t in range(w.shape[0]):
        h = np.tanh(h * w[t])
        total = total + h * h
    return np.sum(h), np.sum(total)


def feeds_back(x, w):
    h = x
    a = x * 0
    for t in range(w.shape[0]):
        a = a + h * w[t]
        h = np.tanh(h + 0.5 * a)
    return np.sum(h)


def loop_of_sums(x):
    v = np.sum(x)
    i = 0
    while i < 3:
        i = i + 1
        v = np.cos(v - np.sum(np.exp(np.cos(np.sum(x, axis=1))), axis=0))
    return x + 0.25 * np.sin(v)
"""


def load_programs(tmp_path_factory):
    """The module of ``SOURCE``, imported from a file (s2sad reads source with ``inspect``)."""
    return load_source(tmp_path_factory.mktemp("perf"), SOURCE, "perf_passes_src")


#: the passes the tests of this directory are about
PASSES = {"ones_to_shape", "fold_negations", "prune_stack_slots", "read_broadcasts_unexpanded",
          "seed_without_reduction", "seed_each_of_mean", "sum_matmul_grads",
          "scale_recurrences", "hoist_invariants", "batch_popped", "sum_slice_grads",
          "recompute_popped"}


def unoptimised():
    """The pipeline without the passes of this file and without ``del`` lines."""
    return pipeline.options(disabled_passes=PASSES, release=False)


def both(make, args):
    """(optimised result, its source, unoptimised result, its source)."""
    G.cache.clear()
    g = make()
    got = g(*args)
    src = _source(g)
    with unoptimised():
        g0 = make()
        want = g0(*args)
        src0 = _source(g0)
    return got, src, want, src0


def _source(g):
    try:
        return s2sad.get_source(g)
    except TypeError:           # a function from s2sad.grad / value_and_grad
        return None


def assert_same(got, want):
    got, want = G_leaves(got), G_leaves(want)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)


def G_leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in G_leaves(e)]
    return [getattr(x, "_data", x)]


def reads_name(line, name):
    """Whether ``line`` of generated code reads ``name`` (left of `` = `` is a write)."""
    text = line.split(" = ", 1)[1] if " = " in line else line
    return re.search(r"(?<![\w.])%s(?!\w)" % re.escape(name), text) is not None
