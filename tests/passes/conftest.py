"""The ``mod`` fixture: the programs of ``passes_common.SOURCE`` as a module, once per test file."""
import pytest

from passes_common import load_programs


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_programs(tmp_path_factory)
