"""Where things are: the repository root, for tests that run its scripts and read its files.

Test files sit one directory below ``tests/``, so ``ROOT`` is computed once
here rather than by counting ``dirname`` calls in each file.
"""
import os

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)
