"""Helpers imported by tests/test_closures.py: calls into another module."""
import numpy as np


def scaled_sin(x, scale=2.0):
    return np.sin(x) * scale


def apply(f, x):
    return f(x)


def make_affine(w):
    def affine(x):
        return x * w + 1.0
    return affine
