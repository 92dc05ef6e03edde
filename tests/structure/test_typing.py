"""The public API is typed: its hints resolve on this Python and a type checker uses them.

``typing.get_type_hints`` evaluates every annotation (they are strings under
``from __future__ import annotations``), so a name missing at run time or a
3.10-only ``X | Y`` fails here on 3.9.  mypy, when installed (the ``dev``
extra), checks a small user program: a correct one passes, and misuses of
the API's arguments are reported on the lines expected.
"""
import inspect
import os
import subprocess
import sys
import textwrap
import typing

import pytest

import s2sad
from s2sad import Parameter, Tensor, ops
from s2sad import api
from s2sad.api.check import check_grads

from repo import ROOT

TENSOR_METHODS = ["__init__", "asnumpy", "item", "tolist", "sum", "mean", "max", "min",
                  "reshape", "transpose", "squeeze", "expand_dims", "flatten", "astype",
                  "abs", "exp", "log", "sqrt", "square", "copy", "__getitem__",
                  "__setitem__", "__len__", "__iter__", "__float__", "__int__", "__bool__"]
TYPED = ([api.grad, api.value_and_grad, api.vjp, api.jvp, api.jacfwd, api.jacrev,
          api.hessian, ops.GradOperation.__init__, ops.GradOperation.__call__,
          s2sad.get_source, s2sad.get_ir, check_grads, Parameter.__init__,
          Parameter.set_data, Parameter.data.fget]
         + [getattr(Tensor, name) for name in TENSOR_METHODS]
         + [getattr(Tensor, name).fget for name in ("shape", "dtype", "ndim", "size", "T")])


def _name(fn):
    return getattr(fn, "__qualname__", repr(fn))


@pytest.mark.parametrize("fn", TYPED, ids=_name)
def test_every_parameter_and_the_return_are_annotated_and_resolve(fn):
    hints = typing.get_type_hints(fn)
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.name not in ("self", "cls")]
    missing = [p.name for p in params if p.name not in hints]
    assert not missing and "return" in hints, (missing, hints)


def test_public_names_are_the_annotated_ones():
    assert s2sad.grad is api.grad and s2sad.value_and_grad is api.value_and_grad
    assert s2sad.Tensor is Tensor and ops.GradOperation.__call__ in TYPED


def test_the_package_says_it_is_typed():
    assert os.path.exists(os.path.join(os.path.dirname(s2sad.__file__), "py.typed"))
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        assert '"Typing :: Typed"' in f.read()


# ------------------------------------------------------------------ mypy
GOOD = '''
from typing import Any, Callable, Tuple

import numpy as np

import s2sad
from s2sad import Parameter, ParameterTuple, Tensor, nn, ops


def loss(x: Tensor, w: Tensor) -> Tensor:
    return (x * w).sum()


class Net(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.w = Parameter(np.ones(3, np.float32), name="w")

    def construct(self, x: Tensor) -> Tensor:
        return (x * self.w).sum()


x = Tensor(np.ones(3), s2sad.float32)
w = Parameter(Tensor([1.0, 2.0, 3.0]), name="w", requires_grad=True)
g: Callable[..., Any] = s2sad.grad(loss, grad_position=(0, 1))
gx, gw = g(x, w)
both = s2sad.value_and_grad(loss, grad_position=None, weights=[w])
net = Net()
by_list = ops.GradOperation(get_by_list=True)(net, ParameterTuple(net.trainable_params()))
out, vjp_fn = s2sad.vjp(loss, x, w)[:2]
j = s2sad.jacfwd(loss, 0)(x, w)
h = s2sad.hessian(loss, [0, 1])(x, w)
src: str = s2sad.get_source(g, x, w) + s2sad.get_ir(g, x, w, stage="forward")
worst: float = s2sad.check_grads(loss, (x, w), order=2)
shape: Tuple[int, ...] = x.reshape(3, 1).transpose(1, 0).shape
n: int = x.ndim + len(x) + x.size
total: float = float(x.sum(axis=0, keepdims=True).astype(np.float64).mean())
w.set_data(np.zeros(3)).name
'''

BAD = '''
import s2sad
from s2sad import Parameter, Tensor, ops


def loss(x: Tensor) -> Tensor:
    return x.sum()


s2sad.grad(loss, grad_position="0")
ops.GradOperation(get_all=1.5)
s2sad.get_source(loss, stage=2)
t: str = Tensor([1.0]).shape
Parameter([1.0], name=3)
s2sad.jacrev(loss, grad_position=None)
'''


def _mypy(tmp_path, source):
    path = tmp_path / "user_program.py"
    path.write_text(textwrap.dedent(source))
    env = dict(os.environ, MYPYPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent",
                        "--no-error-summary", "--cache-dir", str(tmp_path / "cache"),
                        str(path)],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300)
    return r.returncode, r.stdout + r.stderr


def test_mypy_accepts_a_typed_program_and_reports_misuse(tmp_path):
    pytest.importorskip("mypy")
    code, out = _mypy(tmp_path, GOOD)
    assert code == 0, out
    code, out = _mypy(tmp_path, BAD)
    lines = sorted({int(line.split(":")[1]) for line in out.splitlines()
                    if ": error:" in line})
    assert code == 1 and lines == [10, 11, 12, 13, 14, 15], out
