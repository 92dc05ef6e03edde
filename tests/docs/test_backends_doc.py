"""docs/backends.md runs as printed, where PyTorch and JAX are installed.

The page's blocks use both libraries, so it is run here, skipped with a
visible reason when one is missing, rather than by ``test_docs.py``.
"""
import os

import pytest

from repo import ROOT
from test_docs import _run_page_text

PAGE = "docs/backends.md"


def test_backends_page_runs_and_prints_what_it_shows(tmp_path, monkeypatch):
    pytest.importorskip("torch", reason="PyTorch is not installed: %s is not run" % PAGE)
    pytest.importorskip("jax", reason="JAX is not installed: %s is not run" % PAGE)
    pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")
    text = open(os.path.join(ROOT, PAGE), encoding="utf-8").read()
    monkeypatch.chdir(ROOT)
    try:
        _run_page_text(text, tmp_path, "docs_backends")
    except AssertionError as exc:
        raise AssertionError("%s: %s" % (PAGE, exc)) from None
