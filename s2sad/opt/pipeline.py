"""The simplification pipeline as data, and the options that switch parts of it off.

Each list below is a sequence of passes, functions from an IR ``Func`` to
the ``Func`` (most rewrite it in place); ``run`` applies one list.  What a
pass leaves for a later one travels on the ``Func`` (``backward_start``,
``shape_pairs``, ``unfolded_seeds``).  A pass is named by its function's
name: that is the name ``CompileOptions.disabled_passes`` takes, so a test
compiles the same program with and without a pass without patching modules.

The options in force are process-wide (``options()`` changes them for a
``with`` block, for every thread).  They are part of every cache key, and a
prepared call path serves only calls made under the options it was prepared
under (one object per value: ``options.current() is`` compares them), so code
compiled under some options is never run for a call made under others.
"""
import os

from . import options as _options
from .options import CompileOptions, DEFAULT, current, exactly, options, on_change  # noqa: F401
from ..ir.verify import verify
from ..ir.passes import dce, cse, drop_stop_gradients
from ..ir.stacks import prune_stack_slots, recompute_popped
from .shapes import same_shape, read_broadcasts_unexpanded
from .scalars import scalar_shapes
from .static_shapes import static_shapes
from .seed import ones_to_shape, restore_unfolded, seed_each_of_mean, seed_without_reduction
from .products import sum_matmul_grads
from .layout import contiguous_transposes
from .slices import sum_slice_grads, concat_slice_grads
from .recurrences import scale_recurrences
from .hoist import hoist_invariants
from .carried import drop_dead_carried
from .batch import batch_popped
from .algebra import fold_negations
from .poly import collect_polynomials
from .floats import python_floats

#: the environment variable that, set to ``all``, verifies the IR between passes too
VERIFY_ENV = "S2SAD_VERIFY_IR"


def verify_step(func):
    """The verifier between two passes, when ``S2SAD_VERIFY_IR=all`` (the test suite
    sets it): it names the pass that broke the IR, but verifying three times made
    a tenth of the final passes' time of every compile; users get the one
    ``verify`` of the finished program."""
    return verify(func) if os.environ.get(VERIFY_ENV) == "all" else func


#: the forward program, as traced
TRACE = (hoist_invariants, verify_step)

#: a gradient inlined into a program to be differentiated again: simplified
#: between orders, so the next derivative differentiates less
SIMPLIFY = (same_shape, cse, dce, collect_polynomials, cse, dce)

#: the Taylor-mode objective, before reverse mode differentiates it
OBJECTIVE = SIMPLIFY + (fold_negations,)

#: a derivative program, before code generation: differentiated no further, so
#: ``stop_gradient`` is read as its operand (the passes meet the ops they
#: met before ``SIMPLIFY`` kept it).  ``ones_to_shape`` first so
#: that simplification folds the seeds' ones; ``restore_unfolded`` after it,
#: for the ones still read
FINAL = (verify_step, drop_stop_gradients, ones_to_shape, seed_without_reduction,
         same_shape, scalar_shapes, static_shapes, cse, dce, fold_negations,
         prune_stack_slots, recompute_popped, drop_dead_carried, dce, scale_recurrences, hoist_invariants, dce,
         batch_popped,
         restore_unfolded, verify_step,
         read_broadcasts_unexpanded, dce, sum_slice_grads, concat_slice_grads,
         seed_each_of_mean,
         sum_matmul_grads, contiguous_transposes, python_floats, dce, verify)

#: passes that write calls of helpers only NumPy has (stacked loop rows, matmul
#: gradients summed per batch, gate adjoints joined), rely on NumPy's scalars
#: (Python floats) or choose NumPy's memory layout (row-major copies of
#: transposed weights): ``FINAL`` without them serves other array libraries
NUMPY_ONLY = (batch_popped, sum_matmul_grads, concat_slice_grads, contiguous_transposes,
              python_floats)
FINAL_ANY_LIBRARY = tuple(p for p in FINAL if p not in NUMPY_ONLY)

#: optimisations made while differentiating rather than by a pass: reverse
#: mode skipping the adjoint of a value only shifted by a constant
#: (``ad.shift.constant_shifts``)
#: and, for ``jacfwd``/``hessian``, chains of tangent scalings folded into one
#: product (``ad.chains.fold_tangent_chains``)
IN_AD = ("constant_shifts", "fold_tangent_chains")

PASS_NAMES = frozenset(p.__name__ for p in TRACE + SIMPLIFY + OBJECTIVE + FINAL) | set(IN_AD)
_options.PASS_NAMES.update(PASS_NAMES)


def run(passes, func):
    """``func`` through each of ``passes`` the current options leave on."""
    disabled = current().disabled_passes
    for p in passes:
        if p.__name__ not in disabled:
            func = p(func)
    return func
