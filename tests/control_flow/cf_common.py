"""Values and source-reading helpers shared by the control-flow tests.
"""
import inspect

import numpy as np

import s2sad
from s2sad import ops


V = np.array([0.3, 0.5, 0.4])
M = np.array([[0.3, 0.5], [0.4, 0.9], [1.1, 0.2], [0.7, 0.6], [0.5, 0.5]])


def grad_of(fn, **flags):
    return ops.GradOperation(**flags)(fn)


def forward_source(grad_fn, *args):
    """The forward half of the generated adjoint (before the backward sweep)."""
    src = s2sad.get_source(grad_fn, *args)
    assert "# -- backward sweep --" in src, src
    return src.split("# -- backward sweep --")[0]


def code_lines(src):
    return [line.strip() for line in src.splitlines() if not line.strip().startswith("#")]


def marked_line(fn, marker="# <- here"):
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, hits
    return hits[0]
