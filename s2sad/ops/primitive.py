"""``s2sad.ops.primitive``: where MindSpore code imports the Primitive base from.

The class lives with the IR (``s2sad/ir/primitive.py``), below every layer that
uses it; this module keeps the public import path.
"""
from ..ir.primitive import Primitive, constexpr  # noqa: F401
