"""ndarray subclasses whose operations differ from an ndarray's are refused, never
differentiated as plain arrays (``np.matrix`` multiplied elementwise gave a
wrong gradient before); ``np.memmap`` and Tensors made from subclasses work."""
import warnings

import numpy as np
import numpy.ma as ma
import pytest

import s2sad
from s2sad.errors import CompileError

from gradcheck import numeric_grad

# NumPy itself discourages np.matrix, with a warning each time one is made
pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")

with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)
    A = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    B = np.matrix([[0.0, 1.0], [5.0, 2.0]])
    G = np.matrix([[1.0, 0.0], [0.0, 2.0]])


def products(a, b):
    return np.sum(np.asarray(a * b + b * a))


def reads_a_global_matrix(x):
    y = x * 2.0
    return np.sum(G * y)


class Tagged(np.ndarray):
    """A subclass that changes nothing visible, still refused: s2sad cannot tell."""


def square_sum(x):
    return np.sum(x * x)


@pytest.mark.parametrize("value,kind", [
    (A, "np.matrix"),
    (ma.masked_array([1.0, 2.0], mask=[0, 1]), "numpy.ma.MaskedArray"),
    (np.ones(3).view(Tagged), "Tagged"),
])
def test_an_argument_of_a_subclass_is_a_type_error_naming_it(value, kind):
    with pytest.raises(TypeError, match=r"position 0 \('x'\) is a .*%s" % kind):
        s2sad.grad(square_sum)(value)


def test_a_matrix_argument_is_refused_where_it_gave_a_wrong_gradient():
    # the gradient of sum(a @ b + b @ a) (np.matrix's *), which the elementwise
    # reading got wrong: this is what a result would have to be
    want = numeric_grad(lambda a, b: products(np.matrix(a), np.matrix(b)),
                        [np.asarray(A), np.asarray(B)], 0)
    np.testing.assert_allclose(want, np.ones((2, 2)) @ np.asarray(B).T
                               + np.asarray(B).T @ np.ones((2, 2)), rtol=1e-6)
    with pytest.raises(TypeError, match=r"position 0 \('a'\) is a np.matrix.*np.asarray"):
        s2sad.grad(products, grad_position=(0, 1))(A, B)


@pytest.mark.parametrize("api,call", [
    ("jvp", lambda: s2sad.jvp(square_sum, (A,), (A,))),
    ("vjp", lambda: s2sad.vjp(square_sum, A)),
    ("jacfwd", lambda: s2sad.jacfwd(square_sum)(A)),
    ("jacrev", lambda: s2sad.jacrev(square_sum)(A)),
    ("hessian", lambda: s2sad.hessian(square_sum)(A)),
    ("jit", lambda: s2sad.jit(square_sum)(A)),
])
def test_every_api_refuses_a_matrix_and_names_itself(api, call):
    with pytest.raises(TypeError, match=r"np\.matrix"):
        call()


def test_a_subclass_tangent_or_sens_is_refused_too():
    x = np.ones((2, 2))
    with pytest.raises(TypeError, match="tangent.*np.matrix"):
        s2sad.jvp(square_sum, (x,), (A,))
    _, f_vjp = s2sad.vjp(lambda v: v * 2.0, x)
    with pytest.raises(TypeError, match="sens.*np.matrix"):
        f_vjp(A)


def test_a_matrix_read_while_compiling_is_an_error_at_the_line_reading_it():
    with pytest.raises(CompileError) as info:
        s2sad.grad(reads_a_global_matrix)(np.ones((2, 2)))
    err = info.value
    assert err.filename == __file__ and "return np.sum(G * y)" in str(err)
    assert "np.matrix" in str(err) and "^" in str(err)


def test_memmap_arguments_are_plain_arrays(tmp_path):
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=(3,))
    mm[:] = [1.0, 2.0, 3.0]
    np.testing.assert_allclose(s2sad.grad(square_sum)(mm), 2 * np.asarray(mm))


def test_a_tensor_of_a_subclass_holds_a_plain_array():
    t = s2sad.Tensor(A)
    assert type(t.asnumpy()) is np.ndarray
    np.testing.assert_allclose(np.asarray(s2sad.grad(square_sum)(t).asnumpy()),
                               2 * np.asarray(A))
    p = s2sad.Parameter(s2sad.Tensor(np.zeros((2, 2))), name="p")
    p.set_data(s2sad.Tensor(B))
    assert type(p.asnumpy()) is np.ndarray
