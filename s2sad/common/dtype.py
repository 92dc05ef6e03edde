"""``mindspore.common.dtype`` (``from mindspore.common import dtype as mstype``).

The same objects as ``s2sad.dtype``: ``mstype.float32 is s2sad.float32``.
"""
from ..dtype import *  # noqa: F401,F403
from ..dtype import __all__  # noqa: F401
