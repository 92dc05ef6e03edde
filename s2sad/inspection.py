"""Read what s2sad generated: ``get_source`` and ``get_ir``."""
from .ir import format_func


def _compiled(grad_fn, args):
    from .ops.composite import GradFunction
    if not isinstance(grad_fn, GradFunction):
        raise TypeError("expected a gradient function made by GradOperation, got %s"
                        % type(grad_fn).__name__)
    if args:
        return grad_fn.compiled(*args)
    if grad_fn.last is None:
        raise ValueError("this gradient function has not been called yet: call it once, or "
                         "pass example arguments: get_source(grad_fn, x, y)")
    return grad_fn.last


def get_source(grad_fn, *args):
    """The generated adjoint of ``grad_fn`` as Python source.

    Uses the code compiled by the last call, or compiles for ``args``.
    """
    return _compiled(grad_fn, args).source


def get_ir(grad_fn, *args, stage="grad"):
    """The SSA IR (``stage='forward'`` or ``'grad'``) as text."""
    c = _compiled(grad_fn, args)
    return format_func(c.forward if stage == "forward" else c.grad_ir)
