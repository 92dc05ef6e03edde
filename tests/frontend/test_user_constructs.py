"""Python constructs NumPy users write inside differentiated functions.

Each construct is differentiated in reverse mode (``s2sad.grad``) and in
forward mode (``s2sad.jvp``), and both are compared with float64 central
finite differences of the function run eagerly.
"""
import logging
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError
from gradcheck import check_jvp, fd_grad

X = np.array([0.5, -0.3, 0.7, 1.2])
M = np.array([[0.5, -0.3, 0.7], [1.2, 0.1, -0.8]])


def check(fn, x=X):
    """Reverse and forward mode of ``fn`` at ``x`` agree with finite differences."""
    x = np.array(x, dtype=np.float64)
    np.testing.assert_allclose(s2sad.grad(fn)(x), fd_grad(fn, x), rtol=1e-6, atol=1e-8)
    check_jvp(fn, (x,))


# ------------------------------------------------- loop variables after the loop
def index_after_break(x):
    for i in range(x.shape[0]):
        if x[i] > 0.6:
            break
    return x[i] * np.sin(x).sum()


def index_after_while(x):
    i = 0
    while i < x.shape[0] - 1:
        if x[i] > 0.6:
            break
        i += 1
    return x[i] * x[0]


def row_after_loop(x):
    for row in x:
        if row.sum() > 1.0:
            break
    return (row * row).sum()


def index_after_full_loop(x):
    total = 0.0
    for i in range(3):
        total = total + x[i]
    return total * x[i]


def enumerate_after_break(x):
    for i, row in enumerate(x):
        if row.sum() < 0.6:
            break
    return (row * i + row * row).sum()


def inner_index_in_outer_loop(x):
    total = 0.0
    for k in range(2):
        for j in range(x.shape[0]):
            if x[j] > 0.6 - k:
                break
        total = total + x[j] * (k + 1)
    return total


@pytest.mark.parametrize("fn", [index_after_break, index_after_while, index_after_full_loop,
                                inner_index_in_outer_loop])
def test_loop_variable_after_loop(fn):
    check(fn)


@pytest.mark.parametrize("fn", [row_after_loop, enumerate_after_break])
def test_row_after_loop(fn):
    check(fn, M)


def index_of_empty_loop(x, n):
    for i in range(n):
        pass
    return x[i]


def test_loop_variable_of_a_loop_that_did_not_run():
    np.testing.assert_allclose(s2sad.grad(index_of_empty_loop)(X, 2), [0.0, 1.0, 0.0, 0.0])
    with pytest.raises(NameError, match="variable 'i' is used"):
        s2sad.grad(index_of_empty_loop)(X, 0)


# ------------------------------------------------------- *args, **kwargs, kw-only
def scaled(x, **opts):
    return x * opts["scale"]


def summed(*args):
    total = 0.0
    for a in args:
        total = total + a
    return total


def shifted(x, *, shift=1.0, power=2):
    return (x + shift) ** power


def kwargs_helper(x):
    return scaled(np.sin(x), scale=3.0).sum()


def star_args_helper(x):
    return summed(x, np.cos(x), x * x).sum()


def kw_only_helper(x):
    return shifted(x).sum() + shifted(x, power=3, shift=0.5).sum()


OPTIONS = {"shift": 2.0, "power": 3}


def double_star_call(x):
    return shifted(x, **OPTIONS).sum()


def forwarded_kwargs(x, **kw):
    return scaled(x, **kw)


def forwarding_caller(x):
    return forwarded_kwargs(np.tanh(x), scale=0.5).sum()


@pytest.mark.parametrize("fn", [kwargs_helper, star_args_helper, kw_only_helper,
                                double_star_call, forwarding_caller])
def test_star_arguments(fn):
    check(fn)


# ------------------------------------------------------- print, logging, warnings
def prints(x):
    y = np.sin(x)
    print("y:", y, y.shape)
    print(f"shape {x.shape} sum={x.sum():.3f} {x.shape[0]!r}")
    return (y * x).sum()


LOG = logging.getLogger("s2sad.test.user_constructs")


def logs(x):
    y = np.sin(x)
    LOG.info("sum %.3f", y.sum())
    logging.getLogger("s2sad.test.user_constructs").info(f"mean {y.mean():.3f}")
    return (y * x).sum()


def warns(x):
    y = np.exp(x)
    if y.sum() > 1.0:
        warnings.warn("large sum")
    return y.sum()


def test_print_runs_with_run_time_values(capsys):
    check(prints)
    s2sad.grad(prints)(X * 2.0)     # the same compiled program, other values
    out = capsys.readouterr().out
    assert "y: [" in out and "shape (4,) sum=2.100 4" in out and "sum=4.200" in out


def test_logging_runs_with_run_time_values(caplog):
    with caplog.at_level(logging.INFO, logger="s2sad.test.user_constructs"):
        check(logs)
        s2sad.grad(logs)(X * 2.0)
    messages = [r.getMessage() for r in caplog.records]
    assert "sum %.3f" % np.sin(X).sum() in messages
    assert "sum %.3f" % np.sin(X * 2.0).sum() in messages
    assert "mean %.3f" % np.sin(X * 2.0).mean() in messages


def test_warnings_follow_the_run_time_condition():
    with pytest.warns(UserWarning, match="large sum"):
        check(warns)
    with pytest.warns(UserWarning, match="large sum"):
        s2sad.grad(warns)(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no warning when the branch is not taken
        np.testing.assert_allclose(s2sad.grad(warns)(X - 5.0), np.exp(X - 5.0))


def formats(x):
    label = f"x has shape {x.shape} and {x.shape[0]} rows"
    n = x.shape[0]
    other = "%d items" % n
    third = "{} items, {total:.1f}".format(n, total=x.sum())
    fourth = "%s %s" % (x.shape, n)
    print(label, other, third, fourth)
    return (x * len(label)).sum() * n


def test_formatting_shapes_and_values(capsys):
    check(formats)
    out = capsys.readouterr().out
    assert "x has shape (4,) and 4 rows 4 items 4 items, 2.1 (4,) 4" in out


# ------------------------------------------------------------ module-level reads
WEIGHTS = np.array([1.0, 2.0, -1.0, 0.5])
SCALE = 2.0


def reads_globals(x):
    return (np.sin(x) * WEIGHTS).sum() * SCALE


CONFIG = {"w": np.array([0.5, 1.0, -2.0, 1.5]), "power": 2}


def reads_globals_declared(x):
    global WEIGHTS
    return (x ** CONFIG["power"] * CONFIG["w"]).sum() + (WEIGHTS * x).sum()


def assigns_global(x):
    global SCALE
    SCALE = 3.0
    return x * SCALE


def test_global_reads():
    check(reads_globals)
    check(reads_globals_declared)


def test_changed_globals_are_seen_after_compiling():
    global WEIGHTS, SCALE
    saved = WEIGHTS.copy(), SCALE, CONFIG["power"]
    try:
        grad = s2sad.grad(reads_globals_declared)
        grad(X)
        WEIGHTS[0] = 7.0            # in place
        CONFIG["power"] = 3         # a dict entry
        np.testing.assert_allclose(grad(X), fd_grad(reads_globals_declared, X), rtol=1e-6)
        check(reads_globals_declared)
        s2sad.grad(reads_globals)(X)
        WEIGHTS = np.array([1.0, 0.0, 0.0, -1.0])     # rebound
        SCALE = -1.0
        check(reads_globals)
    finally:
        WEIGHTS, SCALE, CONFIG["power"] = saved[0], saved[1], saved[2]


def test_assigning_a_global_refused():
    with pytest.raises(CompileError, match="assigning the global variable 'SCALE'") as err:
        s2sad.grad(lambda x: assigns_global(x).sum())(X)
    assert "global SCALE" in str(err.value)


# ------------------------------------------------- values known while compiling
def is_instance_checks(x):
    pair = (x, x * 2.0)
    d = {"a": x}
    total = 0.0
    if isinstance(pair, (list, tuple)):
        total = total + pair[1].sum()
    if isinstance(d, dict):
        total = total + d["a"].sum()
    if isinstance(x, np.ndarray):
        total = total + (x * x).sum()
    if isinstance(x, (list, tuple)):
        total = total + 100.0
    return total


def lengths(x):
    items = [x, np.sin(x), np.cos(x)]
    return len(items) * sum(items).sum() + len((x, x))


def dict_literal(x):
    d = {"s": np.sin(x), "c": np.cos(x)}
    return (d["s"] * d["c"]).sum()


def dict_comprehension(x):
    d = {k: x ** p for k, p in (("sq", 2), ("cube", 3))}
    return (d["sq"] + d["cube"]).sum()


def enumerate_rows(x):
    total = 0.0
    for i, row in enumerate(x):
        total = total + i * np.sin(row).sum()
    return total


def zip_rows(x):
    total = 0.0
    for a, b in zip(x, x[::-1]):
        total = total + (a * b).sum()
    return total


def enumerate_list(x):
    total = 0.0
    for i, v in enumerate([x, np.sin(x)]):
        total = total + (i + 1) * v.sum()
    return total


def zip_lists(x):
    return sum((a * b).sum() for a, b in zip([x, x * 2.0], [np.cos(x), x]))


def sum_generator(x):
    return sum(x[i] * x[i + 1] for i in range(3))


def max_of_scalars(x):
    return max([x[0] * x[1], x[2], np.sin(x[3])])


@pytest.mark.parametrize("fn", [is_instance_checks, lengths, dict_literal, dict_comprehension,
                                enumerate_list, zip_lists, sum_generator, max_of_scalars])
def test_known_values(fn):
    check(fn)


@pytest.mark.parametrize("fn", [enumerate_rows, zip_rows])
def test_rows(fn):
    check(fn, M)


# ------------------------------------------------------------ copies, not views
def write_into_copy(x):
    y = x.copy()
    y[0] = 5.0
    return (y * x).sum()


def write_into_np_copy(x):
    y = np.copy(x)
    y[1] = 0.0
    return (y * x).sum()


def write_into_flatten(x):
    y = x.flatten()
    y[0] = 1.0
    return (y * x.reshape(-1)).sum()


def write_into_fancy(x):
    y = x[[0, 1]]
    y[0] = 2.0
    return (y * x[:2]).sum()


def write_into_masked(x):
    y = x[x > 0]
    y[0] = 2.0
    return y.sum() * x.sum()


def augment_copy(x):
    y = x.copy()
    y += 1.0
    return (y * x).sum()


@pytest.mark.parametrize("fn", [write_into_copy, write_into_np_copy, write_into_fancy,
                                write_into_masked, augment_copy])
def test_writes_into_copies(fn):
    check(fn)


def test_write_into_flatten():
    check(write_into_flatten, M)


def write_into_slice(x):
    y = x[1:3]
    y[0] = 2.0
    return (y * x).sum()


def write_into_ravel(x):
    y = x.ravel()
    y[0] = 2.0
    return (y * x.reshape(-1)).sum()


@pytest.mark.parametrize("fn", [write_into_slice, write_into_ravel])
def test_writes_into_views_stay_refused(fn):
    with pytest.raises(CompileError, match="changes in place the array 'y' shares with 'x'"):
        s2sad.grad(fn)(M if fn is write_into_ravel else X)


# ------------------------------------------------------------------------- dicts
def dict_methods(x):
    d = {"a": x, "b": np.sin(x)}
    total = 0.0
    for k, v in d.items():
        total = total + v.sum()
    for k in d:
        total = total + d[k].sum() * len(k)
    merged = {**d, "c": x * x}
    return total + ("a" in d) * len(merged) + d.get("c", x).sum() + merged["c"].sum()


def dict_to_helper(x):
    params = {"w": np.cos(x), "b": x * 0.5}
    return affine(params, x).sum()


def affine(params, x):
    return params["w"] * x + params["b"]


@pytest.mark.parametrize("fn", [dict_methods, dict_to_helper])
def test_dicts(fn):
    check(fn)


def returns_dict(x):
    return {"a": x * 2.0}


def changes_dict(x):
    d = {"a": x}
    d["b"] = x * 2.0
    return d["b"].sum()


def test_dict_output_refused_by_grad_and_taken_apart_by_jvp():
    # its items would otherwise be taken for constants: a zero gradient
    with pytest.raises(CompileError, match="the function returns a dict") as err:
        s2sad.grad(returns_dict)(X)
    assert "def returns_dict" in str(err.value)
    out, t_out = s2sad.jvp(returns_dict, (X,), (X,))
    assert sorted(out) == sorted(t_out) == sorted(returns_dict(X))


def test_changing_a_dict_refused():
    with pytest.raises(CompileError, match="changing a dict inside") as err:
        s2sad.grad(changes_dict)(X)
    assert 'd["b"] = x * 2.0' in str(err.value)


def min_of_scalars(x):
    return min(x[0] * x[1], np.cos(x[2]), x[3]) * max(x[1], x[0])


def max_of_vector(x):
    return max(np.sin(x)) + min(x * x)


def test_min_of_scalars():
    check(min_of_scalars)


def test_max_of_vector():
    check(max_of_vector)


@pytest.mark.parametrize("fn", [index_after_break, kwargs_helper, dict_to_helper, max_of_scalars,
                                prints])
def test_second_order(fn):
    """The Hessian against central differences of the gradient (itself checked above)."""
    grad = s2sad.grad(fn)
    eps = 1e-6
    expected = np.stack([(grad(X + eps * e) - grad(X - eps * e)) / (2 * eps)
                         for e in np.eye(X.size)])
    np.testing.assert_allclose(s2sad.hessian(fn)(X), expected, rtol=1e-5, atol=1e-6)
