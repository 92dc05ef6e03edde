"""Variables defined on some paths only: the error names the variable and the line
where it is read undefined.

Every gradient is compared with an independent value: a float64 central
finite difference of the original function run eagerly (``gradcheck``), or a
closed form.  Nothing is compared with s2sad itself.
"""
import numpy as np
import pytest

import s2sad
from s2sad.runtime import UndefinedVariableError

from gradcheck import check_vjp
from cf_common import V, grad_of, marked_line


# ====================================================== undefined variables
def f_defined_in_one_branch(x):
    if x.sum() > 0:
        y = x * 2
    return y * x  # <- here


def f_defined_in_loop(x, n):
    for i in range(n):
        y = x * (i + 1)
    return y + x  # <- here


def f_maybe_undefined_read_on_safe_path(x):
    if x.sum() > 0:
        y = x * 2
    if x.sum() > 0:
        z = y * x
    else:
        z = np.sin(x)
    return z


def f_never_defined(x):
    if x.sum() > 0:
        z = x
    return w_never_assigned + x  # noqa: F821


def f_defined_after_use(x):
    y = x * later_name  # noqa: F821
    later_name = x
    return y


@pytest.mark.parametrize("fn,args", [(f_defined_in_one_branch, (-V,)),
                                     (f_defined_in_loop, (V, 0))], ids=["branch", "loop"])
def test_undefined_on_taken_path_raises_naming_variable_and_line(fn, args):
    with pytest.raises(UndefinedVariableError) as info:
        grad_of(fn)(*args)
    assert type(info.value) is UndefinedVariableError
    assert isinstance(info.value, NameError)
    msg = str(info.value)
    assert "'y'" in msg, msg
    assert "line %d" % marked_line(fn) in msg, msg
    assert __file__ in msg or "test_undefined_variables.py" in msg, msg


@pytest.mark.parametrize("fn,args", [(f_defined_in_one_branch, (V,)),
                                     (f_defined_in_loop, (V, 2)),
                                     (f_maybe_undefined_read_on_safe_path, (V,))],
                         ids=["branch", "loop", "guarded_read"])
def test_defined_on_taken_path_gradient(fn, args):
    check_vjp(fn, args)


def test_defined_on_taken_path_closed_form():
    # y = 2x on the path taken: d(y * x)/dx = 4x; the loop: y = n x, d(y + x)/dx = n + 1
    np.testing.assert_allclose(grad_of(f_defined_in_one_branch)(V), 4 * V, rtol=1e-14)
    np.testing.assert_allclose(grad_of(f_defined_in_loop)(V, 3), np.full(3, 4.0), rtol=1e-14)
    # the guarded read is on the branch not taken: z = sin(x)
    np.testing.assert_allclose(grad_of(f_maybe_undefined_read_on_safe_path)(-V), np.cos(-V),
                               rtol=1e-14)


@pytest.mark.parametrize("fn,name", [(f_never_defined, "w_never_assigned"),
                                     (f_defined_after_use, "later_name")])
def test_never_defined_is_compile_error(fn, name):
    g = grad_of(fn)
    # compiling alone (no run) already fails
    with pytest.raises(s2sad.CompileError) as info:
        s2sad.get_source(g, V)
    assert not isinstance(info.value, NameError)
    assert "'%s'" % name in str(info.value)
    with pytest.raises(s2sad.CompileError):
        g(V)


def f_for_else(x):
    for i in range(3):
        x = x * 2
    else:
        x = x + 1
    return x


def f_while_else(x):
    while x.sum() < 3:
        x = x * 2
    else:
        x = x + 1
    return x


@pytest.mark.parametrize("fn,msg", [
    (f_for_else, "The 'for...else...' statement is not supported now."),
    (f_while_else, "The 'while...else...' statement is not supported now.")])
def test_loop_else_rejected(fn, msg):
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        grad_of(fn)(V)
    assert info.value.message == msg
    assert str(info.value).splitlines()[-1] == msg
