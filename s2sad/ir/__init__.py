"""The SSA intermediate representation, its printer and verifier, and the generic passes.

Only what holds for any primitive lives here (``passes.py``: ``dce``, ``cse``;
``stacks.py``: unread stack slots); passes that know particular primitives
are in ``s2sad/opt/``.
"""
from .nodes import Var, Const, Op, Func, Region, is_var, leaves, map_structure, walk_ops
from .printer import format_func
from .verify import verify
