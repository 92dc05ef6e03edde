"""Every differentiable primitive has its rules and a Taylor-mode decision, and
the rules agree with finite differences."""
import inspect

import numpy as np
import pytest

import s2sad
from s2sad.ir import control as C
from s2sad.ops import operations as P
from s2sad.ops._grad import bprop_getters, jvp_getters, taylor_rules
from s2sad.ops.operations import runtime_ops
from s2sad.ops.primitive import Primitive

#: differentiated by reverse and forward mode themselves, not through a rule
STRUCTURAL = {C.CustomBprop: "its rule is the Cell's own bprop, which reverse mode inlines"}


def _primitive_classes():
    """Every public primitive class of the operations, control and runtime modules."""
    seen = []
    for module in (P, C, runtime_ops):
        for name in sorted(dir(module)):
            cls = getattr(module, name)
            if inspect.isclass(cls) and issubclass(cls, Primitive) and cls is not Primitive \
                    and not name.startswith("_") and cls not in seen:
                seen.append(cls)
    return seen


DIFFERENTIABLE = [c for c in _primitive_classes() if c.differentiable]


def missing_rules(cls):
    """What ``cls`` lacks to be complete, one sentence each (empty when complete)."""
    name = cls.__name__
    missing = []
    if cls not in STRUCTURAL:
        if bprop_getters.lookup_class(cls) is None:
            missing.append("%s has no bprop rule: register one with "
                           "@bprop_getters.register(%s) in s2sad/ops/_grad" % (name, name))
        if jvp_getters.lookup_class(cls) is None:
            missing.append("%s has no JVP rule: register one with "
                           "@jvp_getters.register(%s) next to its bprop" % (name, name))
    decisions = [what for what, made in (
        ("linearity = %r" % (cls.linearity,), cls.linearity is not None),
        ("a Taylor rule", taylor_rules.lookup_class(cls) is not None),
        ("taylor = %r" % (cls.taylor,), cls.taylor is not None)) if made]
    if not decisions:
        missing.append("%s has no Taylor-mode decision: set linearity = 'linear' or "
                       "'bilinear', register a rule with @taylor_rules.register(%s), or set "
                       "taylor = 'nested' with the reason in a comment" % (name, name))
    elif len(decisions) > 1:
        missing.append("%s has %s: keep one Taylor-mode decision" % (name, " and ".join(decisions)))
    if cls.linearity not in (None, "linear", "bilinear"):
        missing.append("%s.linearity is %r: use 'linear', 'bilinear' or None"
                       % (name, cls.linearity))
    if cls.taylor not in (None, "nested"):
        missing.append("%s.taylor is %r: use 'nested' or None" % (name, cls.taylor))
    return missing


@pytest.mark.parametrize("cls", DIFFERENTIABLE, ids=lambda c: c.__name__)
def test_differentiable_primitive_is_complete(cls):
    assert missing_rules(cls) == []


def test_every_differentiable_primitive_is_checked():
    # 128 in s2sad.ops.operations and 5 in s2sad.ir.control when written
    assert len(DIFFERENTIABLE) >= 133, len(DIFFERENTIABLE)


def test_an_undecided_primitive_is_named_with_what_it_lacks():
    class Undecided(Primitive):
        def emit(self, x):
            return "%s ** 3" % x

    missing = missing_rules(Undecided)
    assert len(missing) == 3, missing
    assert all(m.startswith("Undecided has no ") for m in missing)
    assert [m.split(":")[0] for m in missing] == [
        "Undecided has no bprop rule", "Undecided has no JVP rule",
        "Undecided has no Taylor-mode decision"]


def test_two_taylor_decisions_are_refused():
    class Twice(P.Sin):
        linearity = "linear"

    assert missing_rules(Twice) == [
        "Twice has linearity = 'linear' and a Taylor rule: keep one Taylor-mode decision"]


@pytest.mark.parametrize("cls", [c for c in _primitive_classes() if c.ufunc is not None],
                         ids=lambda c: c.__name__)
def test_ufunc_fact_names_the_ufunc_the_primitive_computes(cls):
    """codegen rewrites ``y = <expr>`` into ``xp.<ufunc>(..., out=buf)``: the
    named ufunc must compute what the primitive's own expression computes."""
    ufunc = getattr(np, cls.ufunc)
    assert isinstance(ufunc, np.ufunc), cls.ufunc
    rng = np.random.default_rng(1)
    args = [rng.uniform(0.1, 0.9, (3, 4)) for _ in range(ufunc.nin)]
    got = cls().impl(*args)
    np.testing.assert_array_equal(ufunc(*args), got)
    assert got.dtype == args[0].dtype


def mlp_like(x, w, b):
    h = np.tanh(x @ w + b)
    return np.sum(h * h) / (1.0 + np.sum(np.exp(-x)))


def test_check_grads_agrees_on_a_composite_function():
    rng = np.random.default_rng(0)
    worst = s2sad.check_grads(mlp_like, (rng.standard_normal((4, 3)), rng.standard_normal((3, 2)),
                                         rng.standard_normal(2)))
    assert worst < 1e-5


def wrong_rule_fn(x):
    return cube(x)


class Cube(Primitive):
    def emit(self, x):
        return "%s ** 3" % x


cube = Cube()


def test_check_grads_reports_a_wrong_rule():
    @bprop_getters.register(Cube)
    def get_bprop_cube(self):
        def bprop(x, out, dout):
            return (dout * x * x * 2,)   # wrong on purpose: should be 3 x^2
        return bprop

    @jvp_getters.register(Cube)
    def get_jvp_cube(self):
        def jvp(x, out, tx):
            return tx * x * x * 3
        return jvp
    try:
        with pytest.raises(s2sad.GradCheckError, match="rev"):
            s2sad.check_grads(wrong_rule_fn, (np.linspace(0.5, 1.5, 5),))
    finally:
        del bprop_getters[Cube]
        del jvp_getters[Cube]


def squared_modulus(z):
    return np.abs(z) ** 2


def test_check_grads_refuses_complex_values_instead_of_checking_their_real_part():
    """Cast to float64, a complex argument would be checked as its real part only, and
    the check would pass whatever the rules do with the imaginary parts."""
    with pytest.raises(TypeError, match="an argument is complex"):
        s2sad.check_grads(squared_modulus, (np.array([1 + 2j, 0.5 - 1j]),))
