"""The SSA intermediate representation, its printer and verifier."""
from .nodes import Var, Const, Op, Func, Region, is_var, leaves, map_structure, walk_ops
from .printer import format_func
from .verify import verify
