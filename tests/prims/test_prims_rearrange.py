"""Rearranging arrays: sort, partition, roll, rot90, flips, rollaxis, repeat, pad
modes, take_along_axis, select, linspace and sliding_window_view.

Each case runs in reverse mode (``check_vjp``) and forward mode
(``check_jvp``) against float64 central finite differences of the function
run eagerly by NumPy, and its compiled value and dtype are compared with
NumPy's own result; a few are differentiated twice against closed forms.
"""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import s2sad
from s2sad.errors import CompileError
from s2sad.ops import GradOperation
from gradcheck import check_jvp, check_vjp
from valuecheck import check_value_and_dtype

X3 = np.array([0.3, -1.2, 2.5])
X5 = np.array([0.3, -1.2, 2.5, 0.9, -0.4])
M = np.array([[0.7, -1.9, 0.2, 1.3], [-0.5, 2.2, -2.4, 0.1], [1.6, -0.8, 0.4, -1.1]])
T = np.arange(1.0, 25.0).reshape(2, 3, 4) * 0.21 - 2.0
IDX = np.array([[0, 2, 1, 1], [1, 1, 0, 2]])
W = np.arange(10.0)


def sort_last(x):
    return np.sort(x)


def sort_axis0(x):
    return np.sort(x * 1.5, axis=0)


def sort_flat(x):
    return np.sort(x, axis=None)


def partition_values(x):
    return np.partition(x, 2)


def roll_tuple(x):
    return np.roll(x, (1, -2), axis=(0, 1))


def roll_flat(x):
    return np.roll(x, 5)


def rot90_once(x):
    return np.rot90(x)


def rot90_axes(x):
    return np.rot90(x, 3, axes=(1, 2))


def rot90_twice(x):
    return np.rot90(x, 2)


def flipud_(x):
    return np.flipud(x)


def fliplr_(x):
    return np.fliplr(x)


def rollaxis_(x):
    return np.rollaxis(x, 2)


def rollaxis_start(x):
    return np.rollaxis(x, 0, 3)


def repeat_per_element(x):
    return np.repeat(x, [0, 2, 1])


def repeat_zero(x):
    return np.concatenate([np.repeat(x, 0), x])


def repeat_axis(x):
    return np.repeat(x, [2, 0, 1], axis=0)


def repeat_method(x):
    return x.repeat(2)


def pad_constant(x):
    return np.pad(x, 1, constant_values=3.0)


def pad_edge(x):
    return np.pad(x, (1, 2), mode="edge")


def pad_reflect(x):
    return np.pad(x, ((1, 2), (2, 1)), mode="reflect")


def pad_symmetric(x):
    return np.pad(x, 2, mode="symmetric")


def pad_wrap(x):
    return np.pad(x, ((0, 1), (3, 2)), mode="wrap")


def take_along(x):
    return np.take_along_axis(x, IDX, axis=0)


def take_along_sorted(x):
    return np.take_along_axis(x, np.argsort(x, axis=1), axis=1)


def select_(x):
    return np.select([x < 0, x > 1], [x * 2.0, x ** 2], default=0.5)


def linspace_ends(x):
    return np.linspace(x[0], x[1], 5)


def linspace_open(x):
    return np.linspace(x[0], 4.0, 4, endpoint=False)


def linspace_array_ends(x):
    return np.linspace(x[0], x[1], 3, axis=1)


def windows(x):
    return sliding_window_view(x, 2)


def windows_2d(x):
    return sliding_window_view(x, (2, 2))


def windows_axis(x):
    return sliding_window_view(x, 3, axis=1)


def windows_of_constant(x):
    return np.sum(sliding_window_view(W, 3) * x, axis=1)


CASES = [
    (sort_last, M), (sort_axis0, M), (sort_flat, M), (partition_values, X5),
    (roll_tuple, M), (roll_flat, M), (rot90_once, M), (rot90_axes, T), (rot90_twice, M),
    (flipud_, M), (fliplr_, M), (rollaxis_, T), (rollaxis_start, T),
    (repeat_per_element, X3), (repeat_zero, X3), (repeat_axis, M), (repeat_method, M),
    (pad_constant, M), (pad_edge, X3), (pad_reflect, M), (pad_symmetric, M), (pad_wrap, M),
    (take_along, M), (take_along_sorted, M), (select_, X5), (linspace_ends, X3),
    (linspace_open, X3), (linspace_array_ends, M), (windows, X5), (windows_2d, M),
    (windows_axis, M), (windows_of_constant, X3),
]
IDS = [f.__name__ for f, _ in CASES]


@pytest.mark.parametrize("fn,x", CASES, ids=IDS)
def test_reverse(fn, x):
    check_vjp(fn, (x,))


@pytest.mark.parametrize("fn,x", CASES, ids=IDS)
def test_forward(fn, x):
    check_jvp(fn, (x,))


@pytest.mark.parametrize("fn,x", CASES, ids=IDS)
def test_value_and_dtype_as_numpy(fn, x):
    check_value_and_dtype(fn, x)


def test_sort_ties_follow_the_stable_order():
    # tied values: each gets the cotangent of the position a stable sort puts it in
    x = np.array([2.0, 1.0, 2.0, 1.0])
    g = s2sad.grad(lambda v: np.sum(np.sort(v) * np.array([1.0, 2.0, 3.0, 4.0])))(x)
    np.testing.assert_array_equal(g, [3.0, 1.0, 4.0, 2.0])


def test_second_order_sort_roll_pad():
    def f(x):
        y = np.roll(np.pad(np.sort(x), 1, mode="reflect"), 1)
        return np.sum(y ** 3 * np.arange(1.0, 6.0))
    x = X3
    # by hand: the padded sorted vector s = (-1.2, 0.3, 2.5) is (0.3, -1.2, 0.3, 2.5, 0.3)
    # rolled by one: (0.3, 0.3, -1.2, 0.3, 2.5) weighted 1..5: x0 gets 1+2+4, x1 3, x2 5
    weights = np.array([7.0, 3.0, 5.0])
    np.testing.assert_allclose(s2sad.hessian(f)(x), np.diag(6 * weights * x), rtol=1e-10)


def test_second_order_windows_and_linspace():
    def f(x):
        w = sliding_window_view(x, 2)
        return np.sum(np.prod(w, axis=1) ** 2) + np.sum(np.linspace(x[0], x[1], 3) ** 2)
    x = X3
    h = s2sad.hessian(f)(x)
    eps = 1e-5
    g = s2sad.grad(f)
    fd = np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)


def test_windows_of_a_constant_need_no_gradient():
    g = s2sad.grad(lambda x: np.sum(windows_of_constant(x)))
    np.testing.assert_allclose(g(X3), np.sum(sliding_window_view(W, 3), axis=0))
    assert "arrange_adjoint" not in s2sad.get_source(g, X3)


@pytest.mark.parametrize("mode", ["linear_ramp", "mean", "maximum"])
def test_pad_mode_without_adjoint_is_refused(mode):
    def f(x):
        return np.pad(x, 1, mode=mode)
    with pytest.raises(CompileError, match="mode=%r is not supported" % mode) as info:
        s2sad.grad(lambda x: np.sum(f(x)))(X3)
    # the user's line, not s2sad's nor the call of grad
    assert "return np.pad(x, 1, mode=mode)" in str(info.value)


def roll_by_runtime_shift(x, k):
    return np.sum(np.roll(x, k) * x)


def test_shift_known_only_at_run_time_is_refused_at_its_line():
    with pytest.raises(CompileError, match=r"primitive Rearrange \(shift, axis\) must be known "
                                           "while compiling") as info:
        s2sad.grad(roll_by_runtime_shift)(X3, np.int64(1))
    assert "return np.sum(np.roll(x, k) * x)" in str(info.value)


def test_pad_reflect_odd_is_refused():
    with pytest.raises(CompileError, match="reflect_type='odd'"):
        s2sad.grad(lambda x: np.sum(np.pad(x, 1, mode="reflect", reflect_type="odd")))(X3)


def test_third_order_through_sort_and_pad():
    # sum of the cubes of the edge-padded sorted vector: x_i^3 counted once per copy
    def f(x):
        return np.pad(np.sort(x), (2, 1), mode="edge") ** 3
    d3 = GradOperation()(GradOperation()(GradOperation()(f)))
    x = X3     # sorted: -1.2 (3 copies), 0.3 (1), 2.5 (2)
    np.testing.assert_allclose(d3(x), 6.0 * np.array([1.0, 3.0, 2.0]), rtol=1e-12)


# ------------------------------------------------------ views stay views
def write_flipud(x):
    y = np.flipud(x)
    y += 1.0
    return np.sum(y * x)


def write_rot90(x):
    y = np.rot90(x)
    y += 1.0
    return np.sum(y * x.T)


def write_rollaxis(x):
    y = np.rollaxis(x, 1)
    y += 1.0
    return np.sum(y * x.T)


@pytest.mark.parametrize("fn", [write_flipud, write_rot90, write_rollaxis],
                         ids=lambda f: f.__name__)
def test_writing_through_a_view_is_refused(fn):
    # NumPy writes these through to x, so the program's x would change under it
    with pytest.raises(CompileError, match="changes in place the array 'y' shares with 'x'"):
        s2sad.grad(fn)(M)


def strided_columns_of_constant(x):
    cols = np.lib.stride_tricks.as_strided(np.arange(10.0), shape=(8, 3), strides=(8, 8))
    return np.sum(cols * x, axis=1)


def test_as_strided_of_a_constant_needs_no_rule():
    # an im2col idiom on data known while compiling: evaluated then, a constant after
    g = s2sad.grad(lambda x: np.sum(strided_columns_of_constant(x)))
    np.testing.assert_allclose(g(X3), np.sum(sliding_window_view(W, 3), axis=0))
    assert "stride_tricks" not in s2sad.get_source(g, X3)


def test_as_strided_of_a_differentiated_input_is_refused():
    def f(x):
        return np.sum(np.lib.stride_tricks.as_strided(x, shape=(2, 2), strides=(8, 8)))
    with pytest.raises(CompileError, match="as_strided"):
        s2sad.grad(f)(X3)


def split_one_piece_squared(x):
    a, b = np.array_split(x, 2, axis=1)
    return np.sum(a * a) + np.sum(b)


def hsplit_middle_cubed(x):
    a, b, c = np.hsplit(x, [1, 3])
    return np.sum(b ** 3) + np.sum(a) * 2.0


@pytest.mark.parametrize("fn", [split_one_piece_squared, hsplit_middle_cubed])
def test_forward_over_reverse_through_a_split_with_constant_pieces(fn):
    # the pieces whose cotangent is constant get no tangent (None) in the
    # forward-over-reverse program; the adjoint must read them as zeros
    s2sad.check_grads(fn, (M,), order=2, modes=("rev", "fwd"))


def split_into_one(x):
    return np.array_split(x * 2.0, 1)


def hsplit_into_one(x):
    return np.hsplit(x * 2.0, 1)


@pytest.mark.parametrize("fn", [split_into_one, hsplit_into_one])
def test_a_split_into_one_piece_is_a_sequence_of_one(fn):
    check_value_and_dtype(fn, M)
    check_vjp(fn, (M,), sens=[np.arange(12.0).reshape(3, 4)])
