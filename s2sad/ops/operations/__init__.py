"""Primitive classes (MindSpore's ``mindspore.ops.operations``, usually imported as P)."""
from ...ir.primitive import Primitive
from . import math_ops, array_ops, arrange_ops, nn_ops, effect_ops, contract_ops, linalg_ops
from . import fft_ops  # noqa: F401
from .math_ops import *  # noqa: F401,F403
from .array_ops import *  # noqa: F401,F403
from .arrange_ops import *  # noqa: F401,F403
from .nn_ops import *  # noqa: F401,F403
from .contract_ops import *  # noqa: F401,F403
from .linalg_ops import *  # noqa: F401,F403
from .fft_ops import *  # noqa: F401,F403
from .effect_ops import Assign, Print
from . import elementwise_ops
from .elementwise_ops import *  # noqa: F401,F403
from . import special_ops
from .special_ops import *  # noqa: F401,F403
