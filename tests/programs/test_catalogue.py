"""Every program of ``catalogue.py`` in every mode.

* reverse: ``GradOperation(get_all=True, sens_param=True)`` against float64
  central differences of the program run eagerly, element by element
  (``gradcheck.check_vjp``);
* forward: ``s2sad.jvp`` against central differences along the tangent, and
  against reverse mode (``<grad(u), v> == <u, jvp(v)>``);
* second order: ``s2sad.check_grads(order=2)``, reverse over reverse and
  forward over reverse against finite differences of the first derivative;
* the standalone dump: ``s2sad.get_source(..., standalone=True)`` imported as
  a module of its own gives the gradient computed in process.
"""
import re

import numpy as np
import pytest

import s2sad
from s2sad import nn, ops

from catalogue import ENTRIES, args_of
from gradcheck import as_array, check_jvp, check_vjp, random_like_output, weighted_sum
from test_dump_standalone import assert_values, import_dumped, main_function

IDS = [e.name for e in ENTRIES]
FUNCTIONS = [e for e in ENTRIES if not isinstance(e.fn, nn.Cell)]


def test_catalogue_is_varied():
    """25 to 40 programs, each name once, and each runs eagerly to finite values."""
    assert 25 <= len(ENTRIES) <= 40 and len(set(IDS)) == len(IDS)
    for entry in ENTRIES:
        out = entry.fn(*args_of(entry))
        for leaf in out if isinstance(out, tuple) else (out,):
            assert np.all(np.isfinite(as_array(leaf))), entry.name


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_reverse_against_finite_differences(entry):
    check_vjp(entry.fn, args_of(entry))


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_forward_against_finite_differences_and_reverse(entry):
    args = args_of(entry)
    rng = np.random.default_rng(1)
    tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
    check_jvp(entry.fn, args, tangents)
    # <grad(u), v> == <u, J v>: the two modes agree on one number
    _, jv = s2sad.jvp(entry.fn, args, tangents)
    u = random_like_output(entry.fn(*args), rng)
    grads = ops.GradOperation(get_all=True, sens_param=True)(entry.fn)(*args, u)
    reverse = sum(float(np.sum(as_array(g) * t)) for g, t in zip(grads, tangents))
    assert reverse == pytest.approx(weighted_sum(jv, u), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_second_order(entry):
    s2sad.check_grads(entry.fn, args_of(entry), order=2, modes=("rev", "fwd"))


@pytest.mark.parametrize("entry", FUNCTIONS, ids=[e.name for e in FUNCTIONS])
def test_standalone_dump_gives_the_same_gradient(entry, tmp_path):
    args = args_of(entry)
    grad_fn = ops.GradOperation(get_all=True)(entry.fn)
    want = grad_fn(*args)
    text = s2sad.get_source(grad_fn, *args, standalone=True)
    dumped = main_function(import_dumped(tmp_path, text), text)
    assert_values(dumped(*args, *inputs_after_the_functions_own(text)), want)


def inputs_after_the_functions_own(text):
    """The values the dump's header lists after the function's inputs (constants it made while compiling)."""
    header = text.split("\nimport ", 1)[0]
    if "# inputs after the function's own:" not in header:
        return []
    listed = re.findall(r"^#   (\w+): (.*)$", header, re.M)
    made = re.findall(r"^#   \w+: computed while compiling: (.*)$", header, re.M)
    assert len(made) == len(listed), "an input the test cannot make: %s" % header
    return [eval(expr, {"xp": np}) for expr in made]
