"""Errors reach the user located at their code, with s2sad's frames filtered out.

An error about the differentiated callable itself (no source, too many
arguments, a callable object) names the user's call, not the wrapper
``grad`` differentiates; a compile error's traceback starts at the user's
call, and ``S2SAD_TRACEBACK=full`` shows every frame.  Errors raised by the
user's computation inside generated code keep their frames.
"""
import inspect
import os
import traceback

import numpy as np
import pytest

import s2sad
from s2sad import nn, ops
from s2sad.errors import CompileError, NoGradientRuleError

PACKAGE = os.path.dirname(os.path.abspath(s2sad.__file__)) + os.sep


def one(x):
    return np.sum(x * x)


def chained(x):
    if 0 < x.sum() < 3:
        return x
    return x * 2


def matmul_sum(x, y):
    return np.sum(x @ y)


class Doubler:
    def __call__(self, x):
        return x * 2.0


class Net(nn.Cell):
    def construct(self, x):
        return (x * x).sum()


X = np.array([0.5, 1.5])


def s2sad_frames(err):
    return [f for f in traceback.extract_tb(err.__traceback__)
            if f.filename.startswith(PACKAGE)]


# ---------------------------------------------- errors about the callable
@pytest.mark.parametrize("call", [
    lambda: s2sad.grad(Doubler())(X),
    lambda: s2sad.grad(sorted)(X),
    lambda: s2sad.grad(one)(X, X),
    lambda: s2sad.grad(Net())(X, X),
    lambda: s2sad.jacrev(Doubler())(X),
    lambda: ops.GradOperation()(Doubler())(X),
    lambda: s2sad.jvp(Doubler(), (X,), (X,)),
    lambda: s2sad.jacfwd(Doubler())(X),
], ids=["object", "builtin", "too-many", "cell-too-many", "jacrev", "gradoperation", "jvp",
        "jacfwd"])
def test_errors_about_the_callable_name_the_users_call(call):
    line = inspect.getsourcelines(call)[1]
    with pytest.raises(CompileError) as info:
        call()
    err = info.value
    assert err.filename == __file__ and err.lineno == line, str(err)
    assert "api.py" not in str(err) and "packed" not in str(err)


def test_too_many_arguments_names_the_function():
    with pytest.raises(CompileError, match="calling '.*one': too many positional arguments"):
        s2sad.grad(one)(X, X)
    with pytest.raises(NoGradientRuleError, match="Doubler object"):
        s2sad.grad(Doubler())(X)


# ------------------------------------------------------ filtered tracebacks
def test_compile_error_traceback_starts_at_the_users_call(monkeypatch):
    monkeypatch.delenv("S2SAD_TRACEBACK", raising=False)
    with pytest.raises(CompileError) as info:
        s2sad.grad(chained)(X)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert frames[0].filename == __file__
    # what remains of s2sad: the gradient function and the call that re-raised
    assert len(s2sad_frames(info.value)) <= 2, frames
    assert info.value.lineno == chained.__code__.co_firstlineno + 1     # the user's line


def test_filtered_at_every_entry_point(monkeypatch):
    monkeypatch.delenv("S2SAD_TRACEBACK", raising=False)
    for call in (lambda: ops.GradOperation()(chained)(X),
                 lambda: s2sad.jvp(chained, (X,), (X,)),
                 lambda: s2sad.jacfwd(chained)(X),
                 lambda: s2sad.get_source(ops.GradOperation()(chained), X)):
        with pytest.raises(CompileError) as info:
            call()
        assert len(s2sad_frames(info.value)) <= 3, traceback.format_tb(info.value.__traceback__)


def test_full_tracebacks_on_request(monkeypatch):
    monkeypatch.setenv("S2SAD_TRACEBACK", "full")
    with pytest.raises(CompileError) as info:
        s2sad.grad(chained)(X)
    assert len(s2sad_frames(info.value)) > 5


def test_errors_of_the_users_computation_keep_generated_frames(monkeypatch):
    monkeypatch.delenv("S2SAD_TRACEBACK", raising=False)
    gf = ops.GradOperation()(matmul_sum)
    gf(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError) as info:
        gf(np.ones((2, 3)), np.ones((2, 2)))
    names = [f.filename for f in traceback.extract_tb(info.value.__traceback__)]
    assert any(n.startswith("<s2sad ") for n in names), names


def gradient_no_axis(x):
    return np.gradient(x)


def test_a_result_whose_count_follows_the_rank_is_refused_saying_to_name_the_axes():
    # NumPy returns one array per axis; compiled code, made for every rank, one array
    x = np.arange(12.0).reshape(3, 4) ** 2
    _, vjp_fn = s2sad.vjp(gradient_no_axis, x)
    with pytest.raises(ValueError, match=r"tuple of 2 items: .*np.gradient\(x, axis=\(0, 1\)\)"):
        vjp_fn(tuple(np.ones((3, 4)) for _ in range(2)))
    with pytest.raises(ValueError, match=r"axis=\(0, 1\) gives one result per axis"):
        s2sad.grad(lambda x: np.sum(gradient_no_axis(x)))(x)


def all_close(x):
    return np.allclose(x, (x * 3.0) / 3.0)


def positive(x):
    return x > 1.0


def counted(x):
    return np.sum(x).astype(np.int64)


@pytest.mark.parametrize("fn", [all_close, positive, counted])
def test_grad_of_a_boolean_or_integer_output_is_a_type_error(fn):
    # as JAX and autograd: such an output has no derivative (not a zero one)
    with pytest.raises(TypeError, match="grad needs a floating-point output"):
        s2sad.grad(fn)(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="grad needs a floating-point output"):
        s2sad.value_and_grad(fn)(np.array([1.0, 2.0, 3.0]))


def test_grad_of_a_float_output_no_gradient_reaches_is_zero():
    def constant_sign(x):
        return np.sign(x) * 2.0
    np.testing.assert_array_equal(s2sad.grad(lambda x: np.sum(constant_sign(x)))(
        np.array([1.0, -2.0])), np.zeros(2))


def test_jvp_says_which_tangent_does_not_fit_its_input():
    with pytest.raises(ValueError, match="input 0 is a float and its tangent a float64"):
        s2sad.jvp(lambda x, y: x * y, (2.0, np.float64(1.0)), (np.float64(1.0), np.float64(1.0)))
