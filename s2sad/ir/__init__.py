"""The SSA intermediate representation, its printer and verifier."""
from .nodes import Var, Const, Op, Func, is_var, leaves, map_structure
from .printer import format_func
from .verify import verify
