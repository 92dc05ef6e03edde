"""``grad`` and ``value_and_grad`` of a function made inside compiled code.

A lambda or nested def made in the code being compiled is an abstract value
that may capture the program's runtime values (``lambda p: loss(p, x)``), so
its gradient cannot be made while compiling as a known function's is.  Its
gradient function is staged where it is called instead: the closure is
traced through the builder, differentiated with respect to the selected
inputs (``driver.nested.stage_closure_gradient``) and the ops are spliced in,
its captured runtime values staying free variables that an outer derivative
differentiates through (meta-learning inner steps, MAML).  ``vjp`` of such a
closure is staged in ``vjp_jvp``.
"""
from ..driver.nested import stage_closure_gradient
from ..errors import CompileError
from .args import check_has_aux
from .functional import grad, normalize_positions, value_and_grad
from .staged import closure_aware


def _refuse_options(api, weights, return_ids, holomorphic):
    """What the staged gradient of a closure does not take (a ``ValueError``, made a
    ``CompileError`` at the user's call by the stage hook)."""
    given = [name for name, value in (("weights", weights is not None),
                                      ("return_ids", return_ids), ("holomorphic", holomorphic))
             if value]
    if given:
        raise ValueError("inside compiled code, %s of a function made there (a lambda, a "
                         "closure) does not take %s; define the function outside the compiled "
                         "code, or call %s outside it" % (api, " or ".join(given), api))


def _of_closure(api, with_value):
    def make(fn, grad_position=0, weights=None, has_aux=False, return_ids=False,
             holomorphic=False):
        check_has_aux(has_aux)
        _refuse_options(api, weights, return_ids, holomorphic)
        if grad_position is None:
            raise ValueError("For '%s', 'grad_position' cannot be None without 'weights'"
                             % api)
        positions, single = normalize_positions(grad_position, api)

        def stage(builder, args, kwargs, loc):
            if kwargs:
                raise CompileError("the function %s(...) returns takes positional arguments "
                                   "only inside compiled code" % api, loc)
            value, grads = stage_closure_gradient(builder, fn, list(args), positions, loc,
                                                  return_value=with_value or has_aux,
                                                  head_only=has_aux)
            grads = grads[0] if single else tuple(grads)
            if with_value:
                return value, grads
            return (grads, tuple(value[1:])) if has_aux else grads
        return stage
    return make


grad.__s2sad_stage__ = closure_aware(grad, _of_closure("grad", False))
value_and_grad.__s2sad_stage__ = closure_aware(value_and_grad, _of_closure("value_and_grad",
                                                                            True))
