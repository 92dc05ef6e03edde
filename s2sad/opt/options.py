"""The options compiles run under (``CompileOptions``), process-wide.

They live apart from the pipeline (``pipeline.py``, which knows every pass)
so that AD itself can ask whether an optimisation is on without importing the
passes; the pipeline registers the pass names options may switch off.
``options`` is public as ``s2sad.options``.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator

#: every name ``disabled_passes`` may hold (filled in by ``pipeline``)
PASS_NAMES = set()


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """How compiling goes; the defaults are what users get.

    ``taylor``: compile ``GradOperation()`` applied several times to a
    function in Taylor mode where it applies (``ad/taylor.py``), else
    differentiate the gradient program again, order by order.
    ``disabled_passes``: names (``PASS_NAMES``) of passes to skip.
    ``release``: generated code deletes each temporary after its last read.
    ``backend_jit``: code compiled for JAX arrays runs under ``jax.jit`` when
    its control flow allows (``docs/backends.md``); other code is unchanged.
    """

    taylor: bool = True
    disabled_passes: frozenset = frozenset()
    release: bool = True
    backend_jit: bool = False

    def __post_init__(self):
        names = self.disabled_passes
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise TypeError("'disabled_passes' must be a collection of pass names, got %r"
                            % (names,))
        unknown = sorted(set(names) - PASS_NAMES)
        if unknown:
            raise ValueError("'disabled_passes' names no pass: %s; the passes are %s"
                             % (", ".join(map(repr, unknown)), ", ".join(sorted(PASS_NAMES))))
        object.__setattr__(self, "disabled_passes", frozenset(names))

    def runs(self, name):
        """Whether the pass (or in-AD optimisation) ``name`` is on."""
        return name not in self.disabled_passes


DEFAULT = CompileOptions()
_current = DEFAULT
#: called with no arguments whenever the options change
_listeners = []
#: one object per value of the options, so prepared call paths compare them by
#: identity: ``with options(backend_jit=True)`` around each call finds the same one
_INTERNED = {DEFAULT: DEFAULT}


def current():
    """The options compiles use now."""
    return _current


@contextlib.contextmanager
def options(**changes: Any) -> Iterator[CompileOptions]:
    """Compile with ``changes`` to the current options inside the ``with`` block.

    ``with options(taylor=False): ...``; ``with options(disabled_passes={"dce"}): ...``.
    """
    saved = _current
    _set(dataclasses.replace(saved, **changes))
    try:
        yield _current
    finally:
        _set(saved)


@contextlib.contextmanager
def exactly(opts: CompileOptions) -> Iterator[CompileOptions]:
    """Compile under ``opts`` inside the ``with`` block (a compile finished later, as
    a specialised program's general one, runs under the options it began under)."""
    saved = _current
    _set(opts)
    try:
        yield _current
    finally:
        _set(saved)


def _set(new):
    global _current
    _current = _INTERNED.setdefault(new, new)
    for notify in _listeners:
        notify()


def on_change(fn):
    """Call ``fn()`` whenever the options change."""
    _listeners.append(fn)
    return fn
