"""Outlining: each call of a user function is generated as a function of its own.

The generated code is checked for its layout (one ``<callee>_fwd`` /
``<callee>_bwd`` pair per callee, written once, in call order, calls at the
user's call sites), and against the same program written inline: outlining
only moves code, so both must give identical results.
"""
import re

import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, Parameter
from s2sad.backend.codegen import CodeGen
from s2sad.backend.compile import compile_source

import test_closures as programs
from test_exits import EXIT_CASES, MORE_CASES
from test_loops import LOOP_CASES


class Scale(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([0.5, -1.0])), name="w")

    def construct(self, x):
        return x * self.w


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a = Parameter(Tensor(np.array([0.3, 0.7])), name="a")
        self.scale = Scale()

    def construct(self, x):
        def shifted(t):
            return np.sin(t + self.a)
        h = shifted(x)
        return (self.scale(h) * h).sum()


def branchy(h):
    if h.sum() > 0:
        return h * 2.0
    return np.sin(h)


def twice(x):
    return (branchy(x) * branchy(-x)).sum()


def line_of(text):
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if line.strip() == text)


def defs(source):
    return re.findall(r"^def (\w+)\(", source, re.M)


def test_a_cell_calling_a_closure_and_a_sub_cell_reads_as_functions():
    net = Net()
    grad = ops.GradOperation(get_by_list=True)(net, s2sad.ParameterTuple(net.trainable_params()))
    grad(Tensor(np.array([0.1, 0.2])))
    source = s2sad.get_source(grad)
    assert defs(source) == ["shifted_fwd", "Scale_fwd", "Scale_bwd", "shifted_bwd",
                            "Net_construct_grad"], source
    main = source[source.index("def Net_construct_grad"):]
    # the calls stand at the user's call sites, named after the user's variables
    assert "# line %d: h = shifted(x)\n    h, add_x = shifted_fwd(x, self_a)" \
        % line_of("h = shifted(x)") in main, main
    assert "= Scale_fwd(h, self_scale_w)" in main and "= Scale_bwd(" in main
    assert "= shifted_bwd(" in main
    # inside, the comments point at the callee's lines
    assert "def Scale_fwd(x, self_scale_w):\n    # line %d: return x * self.w" \
        % line_of("return x * self.w") in source, source


def test_two_calls_of_one_callee_share_its_functions():
    g = ops.GradOperation()(twice)
    g(np.array([0.3, -0.2, 0.5]))
    source = s2sad.get_source(g)
    assert defs(source) == ["branchy_fwd", "branchy_bwd", "twice_grad"], source
    assert source.count("= branchy_fwd(") == 2 and source.count("= branchy_bwd(") == 2
    assert "def branchy_fwd(h):" in source       # the callee's parameter name


def test_forward_mode_outlines_each_call_as_a_jvp():
    compiled = s2sad.driver.compile_jvp(Net.construct, Net(), [None], (("tensor",),))
    assert defs(compiled.source) == ["shifted_jvp", "Scale_jvp", "Net_construct_jvp"]


def _inline(compiled):
    """The same gradient program, written without outlining."""
    gen = CodeGen()
    source = gen.function(compiled.grad_ir)
    return compile_source(source, compiled.grad_ir.name, gen.consts.namespace())


CASES = [(f.__name__, f, (programs.X, programs.Y)[:f.__code__.co_argcount])
         for f in programs.FUNCTIONS] + [("twice", twice, (np.array([0.3, -0.2, 0.5]),))] + [
    c for c in LOOP_CASES + EXIT_CASES + MORE_CASES
    if not any(isinstance(a, (int, float, Tensor)) for a in c[2])]


@pytest.mark.parametrize("fn,args", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_outlined_code_computes_what_inline_code_does(fn, args):
    g = ops.GradOperation(get_all=True)(fn)
    g(*args)
    compiled = g.last
    rng = np.random.default_rng(0)
    for _ in range(2):
        xs = [a + 0.1 * rng.standard_normal(np.shape(a)) for a in args]
        want = _inline(compiled)(*xs)
        got = compiled.fn(*xs)
        for w, v in zip(want, got):
            np.testing.assert_array_equal(v, w)


def tanh_of(x):
    return np.tanh(x)


def first_derivative(x):
    return ops.GradOperation()(tanh_of)(x)


def test_a_gradient_taken_inside_the_program_is_not_a_call():
    # the function a nested GradOperation differentiates is part of the
    # derivative's formula, not a call the user wrote: no tanh_of_fwd/_bwd
    g = ops.GradOperation()(first_derivative)
    x = np.array([0.3, -0.4])
    t = np.tanh(x)
    np.testing.assert_allclose(g(x), -2 * t * (1 - t * t), rtol=1e-12)
    assert defs(s2sad.get_source(g)) == ["first_derivative_grad"]
