"""``hvp``: a Hessian-vector product that does not compute the gradient itself.

``jvp(grad(f), primals, tangents)`` returns the gradient with its tangent;
a Newton-CG step or a curvature estimate reads only the tangent, and the
gradient's last product (``x.T @ delta`` for a dense layer) is work thrown
away.  ``hvp`` compiles the same forward-over-reverse program with only the
tangent as its result, so that work is dropped with the rest of the code no
result needs.
"""
from typing import Any, Callable

from .. import tracebacks
from ..errors import S2SADError
from ..tensor import Tensor
from .args import as_tuple, wrap_out
from .functional import grad
from .jacobians import _named_after
from .jvpfast import MISS
from .trees import has_trees
from .vjp_jvp import _jvp_raw, _materialize_zeros, _prepared


def hvp(fn: Callable[..., Any], primals: Any, tangents: Any) -> Any:
    """``H @ v``: the Hessian of the scalar function ``fn`` at ``primals`` along ``tangents``.

    The same value as ``jvp(grad(fn, grad_position=all), primals,
    tangents)[1]`` (the ``hvp`` of JAX's autodiff cookbook), without
    computing the gradient.  ``primals`` is an array/Tensor or a tuple of
    them (``fn``'s arguments, all differentiated); ``tangents`` and the
    result mirror it.  Dicts and other pytrees are refused (a gradient of a
    function taking them cannot be differentiated again yet).
    """
    if not callable(fn):
        raise TypeError("For 'hvp', 'fn' must be a function or a Cell, but got %s"
                        % type(fn).__name__)
    bare = not isinstance(primals, (tuple, list))
    primals, tangents = as_tuple(primals), as_tuple(tangents)
    gradient = _gradient_of(fn, tuple(range(len(primals))))
    # filed under fn's code: two functions alternating keep a path each (what makes a
    # path valid is checked all the same, ``JvpFastPath.matches``)
    slot = getattr(fn, "__code__", None)
    done = _prepared[True].call(gradient, primals, tangents, slot)
    if done is not MISS:
        t_out = _materialize_zeros(primals, done[1])
    elif has_trees(primals) or has_trees(tangents):
        raise TypeError("For 'hvp', 'primals' and 'tangents' must be arrays or Tensors, or "
                        "tuples of them, but got a dict or another container: pass its arrays "
                        "as separate arguments")
    else:
        _named(gradient, fn)
        try:
            t_out = _jvp_raw(gradient, primals, tangents, True, slot)[1]
        except S2SADError as err:
            raise tracebacks.for_user(err)
        t_out = wrap_out(_materialize_zeros(primals, t_out),
                         any(isinstance(a, Tensor) for a in primals))
    return t_out[0] if bare else t_out


def _gradient_of(fn, positions):
    """``fn``'s gradient in all its arguments, as a tuple: one code for every ``fn``,
    so the compiled entry is filed under ``fn`` (``fn_key`` reads the closure)."""
    def gradient(*args):
        return grad(fn, grad_position=positions)(*args)
    return gradient


def _named(gradient, fn):
    """``gradient``, its generated code named after ``fn`` (only compiling reads it:
    the prepared path skips the signature)."""
    _named_after(gradient, fn)
    gradient.__s2sad_gradients__ = 1
    return gradient
