"""A Python number passed to a parameter the function never reads compiles nothing new.

autograd's examples call ``grad(objective)(params, step)`` with a new ``step``
each iteration, and many objectives ignore it; a Python number is a constant
of the compiled code, so each step compiled again.  A parameter the function's
code never reads now gets one value (``packing.unread_positions``); every
other number still compiles apart, and every result is checked against its
closed form so that a value wrongly ignored would fail here.
"""
import sys

import numpy as np
import pytest

import s2sad


def ignores_step(w, step):
    return np.sum(np.sin(w) * w)


def ignores_step_with_aux(w, step, scale=1.0):
    return np.sum(np.sin(w) * w) * scale, np.sum(w)


def reads_step(w, step):
    return np.sum(np.sin(w) * w) * step


def step_in_a_closure(w, step):
    def inner():
        return step
    return np.sum(np.sin(w) * w) * inner()


def step_rebound(w, step):
    step = 2.0
    return np.sum(np.sin(w) * w) * step


def step_through_locals(w, step):     # locals() is refused in compiled code; read all the same
    return np.sum(np.sin(w) * w) * locals()["step"]


def d_sin_times(w):
    return np.sin(w) + w * np.cos(w)


W = np.array([0.3, -1.1, 2.0])


def test_an_unread_step_compiles_once(compiles):
    g = s2sad.grad(ignores_step)
    vg = s2sad.value_and_grad(ignores_step)
    ga = s2sad.grad(ignores_step_with_aux, has_aux=True)
    for step in range(5):
        np.testing.assert_allclose(g(W, step), d_sin_times(W), rtol=1e-13)
        value, grad = vg(W, step)
        np.testing.assert_allclose(value, np.sum(np.sin(W) * W), rtol=1e-13)
        np.testing.assert_allclose(grad, d_sin_times(W), rtol=1e-13)
        grad, aux = ga(W, step, 2.0)
        np.testing.assert_allclose(grad, 2.0 * d_sin_times(W), rtol=1e-13)
        np.testing.assert_allclose(aux, np.sum(W), rtol=1e-13)
    assert compiles[0] == 3, compiles[0]


@pytest.mark.parametrize("fn, factor", [
    (reads_step, lambda step: step), (step_in_a_closure, lambda step: step),
    (step_rebound, lambda step: 2.0)],
    ids=lambda v: getattr(v, "__name__", ""))
def test_a_step_read_in_any_way_is_its_own_constant(fn, factor, compiles):
    g = s2sad.grad(fn)
    for step in (1, 2, 3):
        np.testing.assert_allclose(g(W, step), factor(step) * d_sin_times(W), rtol=1e-13)


def test_which_positions_are_unread():
    from s2sad.api.packing import unread_positions
    assert unread_positions(ignores_step, ()) == (1,)
    assert unread_positions(ignores_step, (1,)) == ()
    assert unread_positions(ignores_step_with_aux, ()) == (1,)
    for fn in (reads_step, step_in_a_closure, step_rebound, step_through_locals):
        assert unread_positions(fn, ()) == (), fn.__name__
    assert unread_positions(np.sin, ()) == ()


def _read_by_dis(fn):
    """The parameter names ``fn``'s bytecode names, as ``dis`` decodes it."""
    import dis
    code = fn.__code__
    seen = set(code.co_cellvars)
    for ins in dis.get_instructions(code):
        if "FAST" in ins.opname:
            seen.update(ins.argval if isinstance(ins.argval, tuple) else (ins.argval,))
    return seen


def _plain_functions(*modules):
    import types
    for module in modules:
        for value in vars(module).values():
            if type(value) is types.FunctionType and value.__code__.co_argcount:
                yield value


def test_the_raw_bytecode_shortcut_agrees_with_dis():
    """``unread_positions`` answers "all read" from the raw bytes, without ``dis``,
    only where ``dis`` says every parameter is read; checked on every function of
    several modules (large ones, comprehensions, closures, many locals)."""
    import s2sad.api.packing as packing
    import s2sad.frontend.calls as calls
    import s2sad.ops.function.math_func as math_func
    import s2sad.ops.function.array_func as array_func
    import s2sad.ops._grad.grad_math_ops as grad_math_ops
    checked = 0
    for fn in _plain_functions(packing, calls, math_func, array_func, grad_math_ops,
                               sys.modules[__name__]):
        code = fn.__code__
        names = code.co_varnames[:code.co_argcount]
        by_dis = _read_by_dis(fn)
        loaded = packing._fast_indices(code)
        for i, n in enumerate(names):
            if i in loaded or n in code.co_cellvars:
                assert n in by_dis, (fn.__qualname__, n)
        expected = () if packing._READS_LOCALS & set(code.co_names) else \
            tuple(i for i, n in enumerate(names) if n not in by_dis)
        assert packing.unread_positions(fn, ()) == expected, fn.__qualname__
        checked += 1
    assert checked > 100
