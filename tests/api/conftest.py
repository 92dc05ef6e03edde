"""Fixtures of the API tests."""
import pytest

import s2sad
from s2sad.driver import caches


@pytest.fixture
def compiles(monkeypatch):
    """How many entries the compile caches have taken since the test started (every
    compile ends in one ``GradCache.put``); the caches start empty."""
    count = [0]
    real = caches.GradCache.put

    def put(self, *args, **kwargs):
        count[0] += 1
        return real(self, *args, **kwargs)
    monkeypatch.setattr(caches.GradCache, "put", put)
    s2sad.clear_caches()
    return count
