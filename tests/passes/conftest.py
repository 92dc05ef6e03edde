"""Fixtures of the pass tests: ``mod``, the programs of ``passes_common.SOURCE`` as a
module, once per test file; ``answers``, how ``rt.stack_rows`` stacked each value."""
import numpy as np
import pytest

from s2sad import runtime
from passes_common import load_programs


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_programs(tmp_path_factory)


@pytest.fixture
def answers(monkeypatch):
    """What each ``rt.stack_rows`` call of the test returned: array, block-wise or row by row."""
    seen = []
    stack_rows = runtime.stack_rows

    def recording(*args):
        out = stack_rows(*args)
        for r in out if isinstance(out, tuple) else (out,):
            seen.append("array" if isinstance(r, np.ndarray)
                        else "blocks" if r.stacked else "rows")
        return out
    monkeypatch.setattr(runtime, "stack_rows", recording)
    return seen
