"""The driver: from a callable and its arguments' structure to cached, compiled code.

``specs`` describes arguments, ``tracing`` builds a function's forward IR,
``compile`` runs AD, the pipeline and codegen on it, ``caches`` keeps the
results, ``nested`` stages a gradient function met inside differentiated
code.  The API layer reads the driver through this package's names
(``G.arg_spec``, ``G.cache``, ``G.compile_grad``...), looked up at call time,
so a test or a benchmark may wrap a compile function here for every caller.
"""
from .specs import (Mutable, mutable, ARRAY_SPEC, arg_spec,  # noqa: F401
                    has_runtime_leaves, flatten_runtime, is_complex_spec)
from .compile import compile_grad, compile_nested, compile_jvp, compile_forward  # noqa: F401
from .caches import GradCache, RecompileWarning, cache, clear_caches, register_cache  # noqa: F401
# the API reads the options in force through the driver's names (``G.current_options``)
from ..opt.options import current as current_options  # noqa: F401
