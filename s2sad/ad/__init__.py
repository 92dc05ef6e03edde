"""Automatic differentiation transforms on the IR."""
