"""Shared fixtures, and the import path every test directory shares.

Tests live one directory per subsystem under ``tests/``, without
``__init__.py`` files (pytest's default import mode, so test file names are
unique across directories).  The helpers of ``tests/support/``
(``gradcheck``, ``program_gen``...) and the test modules themselves are
imported by name from any directory: this file puts ``support/`` and every
test directory on ``sys.path`` before any test module is collected.

The ``progress`` fixture: see ``support/progress.py``.
"""
import os
import sys

import pytest

# the IR is verified between passes, not only once per compile: a pass that breaks it is named
os.environ.setdefault("S2SAD_VERIFY_IR", "all")

HERE = os.path.dirname(os.path.abspath(__file__))


def _put_test_directories_on_path():
    """``support/`` first, then each test directory, so modules import one another by name."""
    support = os.path.join(HERE, "support")
    folders = sorted(d for d in os.listdir(HERE) if d != "support" and not d.startswith((".", "_"))
                     and os.path.isdir(os.path.join(HERE, d)))
    for folder in reversed([support] + [os.path.join(HERE, d) for d in folders]):
        if folder not in sys.path:
            sys.path.insert(1, folder)


_put_test_directories_on_path()

from progress import Progress  # noqa: E402  (support/ is on the path now)


@pytest.fixture(scope="session")
def progress(pytestconfig):
    return Progress(pytestconfig)
