"""The pass lists and compile options (``s2sad/opt/pipeline.py``) and rule inlining (``ad/inline.py``).

Code compiled under some options must never serve a call made under others:
the cache key holds the options, and changing them drops the prepared call
paths.  Values are checked against NumPy's eager function and central
differences in float64.
"""
import os
import sys

import numpy as np
import pytest

import s2sad
from s2sad import ops
from s2sad import driver as G
from s2sad.opt import pipeline
from s2sad.ir.verify import verify
from s2sad.frontend.build import Builder

from gradcheck import numeric_grad

X = np.linspace(-1.0, 1.0, 5)


def f(x):
    return np.sum(-np.sin(x) * x)


def two_sums(x):
    # the seed of a full sum folds (ones_to_shape), negations fold (fold_negations)
    return np.sum(-np.exp(x)) - np.sum(x * x)


OFF = {"ones_to_shape", "fold_negations", "seed_without_reduction"}


def _fd(fn):
    return numeric_grad(fn, (X,), 0)


def test_disabled_passes_never_serve_a_default_call():
    """The same gradient function, called before, inside and after ``options``: each
    call runs the code of the options in force, whichever path the call takes."""
    G.cache.clear()
    g = ops.GradOperation()(two_sums)
    for _ in range(3):          # the third call takes the prepared fast path
        g(X)
    optimised = g.last.source
    with pipeline.options(disabled_passes=OFF):
        for _ in range(3):
            got = g(X)
        plain = g.last.source
    assert plain != optimised
    assert "rt.broadcast_like(" in plain and "rt.broadcast_like(" not in optimised
    np.testing.assert_allclose(got, _fd(two_sums), rtol=1e-7, atol=1e-9)
    g(X)
    assert g.last.source == optimised
    # a new gradient function of the same function: served from the cache, by options
    h = ops.GradOperation()(two_sums)
    h(X)
    assert h.last.source == optimised
    with pipeline.options(disabled_passes=OFF):
        h(X)
        assert h.last.source == plain


def test_taylor_option_is_part_of_the_key():
    G.cache.clear()
    g = ops.GradOperation()(ops.GradOperation()(f))
    for _ in range(3):
        taylor = g(X)
    assert g.last.source.startswith("# s2sad: order-2 gradient")
    with pipeline.options(taylor=False):
        for _ in range(3):
            nested = g(X)
        assert not g.last.source.startswith("# s2sad: order-2 gradient")
    g(X)
    assert g.last.source.startswith("# s2sad: order-2 gradient")
    # d2/dx2 sum(-x sin x) = -2 cos x + x sin x, closed form, float64 rounding only
    want = -2 * np.cos(X) + X * np.sin(X)
    np.testing.assert_allclose(taylor, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(nested, want, rtol=1e-12, atol=1e-12)


def test_forward_mode_cache_holds_the_options():
    G.cache.clear()
    compiled = s2sad.api.vjp_jvp.jvp_compiled
    first, _, _ = compiled(two_sums, (X,))
    with pipeline.options(release=False):
        other, _, _ = compiled(two_sums, (X,))
    assert other is not first
    assert compiled(two_sums, (X,))[0] is first
    _, tangent = s2sad.jvp(two_sums, (X,), (np.ones_like(X),))
    np.testing.assert_allclose(tangent, np.sum(_fd(two_sums)), rtol=1e-7)


def test_release_option_keeps_every_temporary():
    G.cache.clear()
    g = ops.GradOperation()(f)
    g(X)
    assert "del " in g.last.source
    with pipeline.options(release=False):
        got = g(X)
        assert "del " not in g.last.source
    np.testing.assert_allclose(got, _fd(f), rtol=1e-7, atol=1e-9)


def test_public_options_switch_taylor_mode_and_are_typed():
    """``s2sad.options`` is the pipeline's ``options``: it changes what compiles, restores
    the defaults after the block, and its hints resolve (it is public API)."""
    import typing
    assert s2sad.options is pipeline.options
    G.cache.clear()
    g = ops.GradOperation()(ops.GradOperation()(f))
    with s2sad.options(taylor=False) as now:
        assert now == pipeline.CompileOptions(taylor=False) and pipeline.current() is now
        nested = g(X)
        assert not g.last.source.startswith("# s2sad: order-2 gradient")
    assert pipeline.current() is pipeline.DEFAULT
    np.testing.assert_allclose(nested, -2 * np.cos(X) + X * np.sin(X), rtol=1e-12, atol=1e-12)
    hints = typing.get_type_hints(s2sad.options)
    assert hints["return"] == typing.Iterator[pipeline.CompileOptions]

def test_options_nest_and_are_restored_after_an_error():
    assert pipeline.current() is pipeline.DEFAULT
    with pytest.raises(RuntimeError):
        with pipeline.options(taylor=False):
            with pipeline.options(disabled_passes={"dce"}) as inner:
                assert inner == pipeline.CompileOptions(taylor=False, disabled_passes={"dce"})
                assert pipeline.current() is inner
            assert pipeline.current().disabled_passes == frozenset()
            raise RuntimeError
    assert pipeline.current() is pipeline.DEFAULT


def test_unknown_pass_names_are_refused():
    with pytest.raises(ValueError, match="'disabled_passes' names no pass: 'fold_negation'"):
        pipeline.CompileOptions(disabled_passes={"fold_negation"})
    with pytest.raises(TypeError, match="collection of pass names"):
        pipeline.CompileOptions(disabled_passes="dce")
    with pytest.raises(TypeError):
        with pipeline.options(taylr=False):
            pass


def test_every_pass_has_a_name_and_disabling_one_skips_it():
    calls = []

    def first(func):
        calls.append("first")
        return func

    def second(func):
        calls.append("second")
        return func
    assert all(p.__name__ in pipeline.PASS_NAMES for p in pipeline.FINAL)
    marker = object()
    assert pipeline.run((first, second), marker) is marker
    assert calls == ["first", "second"]
    with pipeline.options(disabled_passes={"dce"}):
        assert pipeline.run((first,), marker) is marker


def test_attribution_is_restored_when_a_rule_fails():
    b = Builder()
    b.loc_override, b.origin = "outer loc", "outer"
    with pytest.raises(KeyError):
        with b.attributed("op loc", "rule"):
            assert (b.loc_override, b.origin) == ("op loc", "rule")
            raise KeyError
    assert (b.loc_override, b.origin) == ("outer loc", "outer")


def _verifications(monkeypatch):
    """A list that grows by one each time the IR verifier checks a program."""
    verify_module = sys.modules[verify.__module__]
    seen, check = [], verify_module._block

    def counted(ops, *rest):
        if sys._getframe(1).f_code is verify.__code__:     # not a region's recursive call
            seen.append(ops)
        return check(ops, *rest)
    monkeypatch.setattr(verify_module, "_block", counted)
    return seen


def test_the_test_suite_verifies_the_ir_between_passes(monkeypatch):
    from s2sad.ir.nodes import Func, Var
    from s2sad.ir.verify import IRError
    assert os.environ.get(pipeline.VERIFY_ENV) == "all"     # set by tests/conftest.py
    with pytest.raises(IRError):
        pipeline.verify_step(Func("broken", [], [], Var()))  # reads a value nothing defines
    seen = _verifications(monkeypatch)

    def g(x):   # compiled by this test only
        return np.sum(np.sin(x) * x)
    s2sad.grad(g)(X)
    # the traced program; the derivative before the final passes, in their middle, after them
    assert len(seen) == 4


def test_a_compile_outside_the_tests_verifies_the_finished_program_once(monkeypatch):
    from s2sad.ir.nodes import Func, Var
    from s2sad.ir.verify import IRError
    monkeypatch.delenv(pipeline.VERIFY_ENV)
    broken = Func("broken", [], [], Var())
    assert pipeline.verify_step(broken) is broken
    assert pipeline.FINAL[-1] is verify
    with pytest.raises(IRError):
        pipeline.run(pipeline.FINAL[-1:], broken)
    seen = _verifications(monkeypatch)

    def g(x):   # compiled by this test only
        return np.sum(np.tanh(x) * x)
    x = X.copy()
    np.testing.assert_allclose(s2sad.grad(g)(x), np.tanh(x) + x * (1 - np.tanh(x) ** 2))
    assert len(seen) == 1
