"""Every differentiable primitive has both rules, and both agree with finite differences."""
import inspect

import numpy as np
import pytest

import s2sad
from s2sad.ops import operations as P
from s2sad.ops._grad import bprop_getters, jvp_getters
from s2sad.ops.primitive import Primitive


def _primitive_classes():
    seen = []
    for name in sorted(dir(P)):
        cls = getattr(P, name)
        if inspect.isclass(cls) and issubclass(cls, Primitive) and cls is not Primitive \
                and cls not in seen:
            seen.append(cls)
    return seen


@pytest.mark.parametrize("cls", [c for c in _primitive_classes() if c.differentiable],
                         ids=lambda c: c.__name__)
def test_differentiable_primitive_has_bprop_and_jvp(cls):
    assert cls in bprop_getters or cls.__name__ in bprop_getters, \
        "%s has no bprop rule: register one with @bprop_getters.register" % cls.__name__
    assert cls in jvp_getters or cls.__name__ in jvp_getters, \
        "%s has no JVP rule: register one with @jvp_getters.register" % cls.__name__


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
