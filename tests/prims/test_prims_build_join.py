"""Building arrays from traced values, and NumPy's stack/split family.

Each case runs in reverse mode (``check_vjp``) and forward mode
(``check_jvp``) against float64 central finite differences of the function
run eagerly by NumPy, and its compiled value and dtype are compared with
NumPy's own result.
"""
import numpy as np
import pytest

import s2sad
from s2sad.errors import CompileError
from gradcheck import check_jvp, check_vjp, numeric_grad
from valuecheck import check_value_and_dtype

X3 = np.array([0.3, -1.2, 2.5])
ROW_STACK = np.__dict__.get("row_stack", np.vstack)   # gone from NumPy's namespace in 2.x
# NumPy's eager row_stack (the reference) warns that it is deprecated
pytestmark = pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated")
M = np.arange(1.0, 13.0).reshape(3, 4) * 0.37 - 1.0
T = np.arange(1.0, 25.0).reshape(2, 3, 4) * 0.21 - 2.0


def array_mixed(x):
    return np.array([x[0], x[1] * 2.0, 1.0])


def array_rows(x):
    return np.array([x, 2.0 * x])


def array_dtype(x):
    return np.array([x[0], x[2], 1], dtype=float) * x[1]


def array_nested_constant_first(x):
    return np.array([[x[0], 0.0], [0.0, x[1]]])


def stack_constant_first(x):
    return np.stack([np.ones(3), x])


def asarray_array(x):
    return np.asarray(x) * 2.0


def asarray_list(x):
    return np.asarray([x[0], x[2]]) * x[1]


def copy_function(x):
    return np.copy(x) * x


def copy_method(x):
    return x.copy() * x


def stack_mixed(x):
    return np.stack([x, np.ones(3), x * 2.0])


def concatenate_mixed(x):
    return np.concatenate([x, [1.0, 2.0], x])


def hstack_mixed(x):
    return np.hstack([x[0], 1.0, x])


def fill_by_index(x):
    out = np.zeros(3)
    for i in range(3):
        out[i] = np.sin(x[i])
    return out


def zeros_like_plus(x):
    return np.zeros_like(x) + x


def full_like_times(x):
    return np.full_like(x, 2.0) * x


def full_like_traced_value(x):
    return np.full_like(x, x[1])


def vstack_array(x):
    return np.vstack(x)


def vstack_list(x):
    return np.vstack([x, x * 2.0])


def vstack_dtype(x):
    return np.vstack([x, x * 2.0], dtype=np.float32).astype(np.float64) * x


def row_stack_list(x):
    return ROW_STACK([x, x * 2.0])


def hstack_array(x):
    return np.hstack(x)


def dstack_list(x):
    return np.dstack([x, x * 2.0])


def dstack_array(x):
    return np.dstack(x)


def column_stack_vectors(x):
    return np.column_stack([x, x * 2.0])


def column_stack_mixed_ranks(x):
    return np.column_stack([x[:, 0], x])


def column_stack_array(x):
    return np.column_stack(x)


def array_split_uneven(x):
    return np.array_split(x, 2, axis=1)[1] * 2.0


def array_split_all(x):
    a, b, c = np.array_split(x, 3, axis=-1)
    return np.sum(a) * b + c


def array_split_points(x):
    return np.array_split(x, [1, 3], axis=1)[1]


def split_points(x):
    return np.split(x, [1, 3], axis=1)[1]


def vsplit_sections(x):
    return np.vsplit(x, 3)[1]


def hsplit_sections(x):
    return np.hsplit(x, 2)[0] * np.hsplit(x, 2)[1]


def hsplit_vector(x):
    return np.hsplit(x, [1])[1]


def dsplit_sections(x):
    return np.dsplit(x, 2)[1]


def r_pieces(x):
    return np.r_[x, 1.0, x[:2]]


def r_with_range(x):
    return np.r_[x[0], 0:3, x]


def r_matrices(x):
    return np.r_[x, 2.0 * x]


def c_columns(x):
    return np.c_[x, x * 2.0]


def c_matrix_and_column(x):
    return np.c_[x, x[:, 0] ** 2]


CASES = [
    (array_mixed, X3), (array_rows, X3), (array_dtype, X3), (asarray_array, X3),
    (asarray_list, X3), (copy_function, X3), (copy_method, X3), (stack_mixed, X3),
    (concatenate_mixed, X3), (hstack_mixed, X3), (fill_by_index, X3), (zeros_like_plus, X3),
    (full_like_times, X3), (full_like_traced_value, X3), (vstack_array, X3),
    (vstack_array, T), (vstack_list, X3), (row_stack_list, X3), (hstack_array, M), (hstack_array, T),
    (dstack_list, M), (dstack_array, M), (column_stack_vectors, X3),
    (column_stack_mixed_ranks, M), (column_stack_array, X3), (array_split_uneven, T),
    (array_split_all, M), (array_split_points, M), (split_points, M), (vsplit_sections, M),
    (hsplit_sections, M), (hsplit_vector, X3), (dsplit_sections, T),
    (array_nested_constant_first, X3), (stack_constant_first, X3), (r_pieces, X3),
    (r_with_range, X3), (r_matrices, M), (c_columns, X3), (c_matrix_and_column, M),
]
IDS = ["%s-%dd" % (f.__name__, np.ndim(a)) for f, a in CASES]


@pytest.mark.parametrize("fn,x", CASES, ids=IDS)
def test_reverse(fn, x):
    check_vjp(fn, (x,))


@pytest.mark.parametrize("fn,x", CASES, ids=IDS)
def test_forward(fn, x):
    check_jvp(fn, (x,))


def test_stacking_dtype_is_numpy_s():
    got, _ = s2sad.jvp(vstack_dtype, (X3,), (np.ones(3),))
    np.testing.assert_array_equal(got, vstack_dtype(X3))   # float32 rounding, as NumPy
    assert not np.array_equal(got, np.vstack([X3, X3 * 2.0]) * X3)


@pytest.mark.parametrize("fn,x", CASES, ids=IDS)
def test_value_and_dtype_as_numpy(fn, x):
    check_value_and_dtype(fn, x)


def test_array_of_constants_stays_a_constant():
    def f(x):
        return x * np.array([1.0, 2.0, 3.0])
    g = s2sad.grad(lambda x: np.sum(f(x)))
    np.testing.assert_allclose(g(X3), [1.0, 2.0, 3.0])
    assert "stack" not in s2sad.get_source(g, X3)


def test_second_order_through_array_and_split():
    def f(x):
        a, b = np.array_split(np.array([x[0] ** 2, x[1], x[0] * x[2]]), 2)
        return np.sum(a ** 3) + np.sum(b ** 2)
    x = X3
    h = s2sad.hessian(f)(x)
    # closed form: f = x0^6 + x1^3 + x0^2 x2^2
    want = np.array([[30 * x[0] ** 4 + 2 * x[2] ** 2, 0.0, 4 * x[0] * x[2]],
                     [0.0, 6 * x[1], 0.0],
                     [4 * x[0] * x[2], 0.0, 2 * x[0] ** 2]])
    np.testing.assert_allclose(h, want, rtol=1e-10)


def r_directive(x):
    return np.r_["0,2", x, x]


def test_index_trick_directive_is_refused():
    with pytest.raises(CompileError, match="directive '0,2' is not supported"):
        s2sad.grad(lambda x: np.sum(r_directive(x)))(X3)


# ------------------------------------------------- copies may be written to
MASK = np.array([True, False, True])


def write_np_copy(x):
    y = np.copy(x)
    y += 1.0
    return np.sum(y * x)


def write_method_copy(x):
    y = x.copy()
    y *= x
    return np.sum(y * x)


def write_np_array(x):
    y = np.array(x)
    y += 1.0
    return np.sum(y * x)


def write_flatten(x):
    y = x.flatten()
    y *= 2.0
    return np.sum(y * np.ravel(x))


def write_fancy(x):
    y = x[[0, 1]]
    y += 1.0
    return np.sum(y * x[:2])


def write_constant_mask(x):
    y = x[np.array([True, False, True])]
    y += 1.0
    return np.sum(y * x[1:])


@pytest.mark.parametrize("fn,x", [(write_np_copy, X3), (write_method_copy, X3),
                                  (write_np_array, X3), (write_flatten, M),
                                  (write_fancy, X3), (write_constant_mask, X3)],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_copies_may_be_written_to(fn, x):
    # NumPy copies here, so writing to the copy leaves x as it was
    np.testing.assert_allclose(s2sad.grad(fn)(x), numeric_grad(fn, (x.copy(),), 0),
                               rtol=1e-6, atol=1e-6)


def write_asarray(x):
    y = np.asarray(x)
    y += 1.0
    return np.sum(y * x)


def test_asarray_is_the_array_itself():
    with pytest.raises(CompileError, match="changes in place the array 'y' shares with 'x'"):
        s2sad.grad(write_asarray)(X3)
