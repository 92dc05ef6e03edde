"""Read what s2sad generated: ``get_source`` and ``get_ir``."""
from typing import Any, Callable

from ..backend.standalone import module_source
from ..ir import format_func
from .gradfunction import GradFunction


def _compiled(grad_fn, args):
    hook = getattr(grad_fn, "__s2sad_compiled__", None)     # s2sad.grad, value_and_grad
    if hook is None and not isinstance(grad_fn, GradFunction):
        raise TypeError("expected a gradient function made by GradOperation, s2sad.grad, "
                        "s2sad.value_and_grad, s2sad.jacfwd or s2sad.hessian, got %s"
                        % type(grad_fn).__name__)
    if args:
        return hook(*args) if hook is not None else grad_fn.compiled(*args)
    last = hook() if hook is not None else grad_fn.last
    if last is None:
        raise ValueError("this gradient function has not been called yet: call it once, or "
                         "pass example arguments: get_source(grad_fn, x, y)")
    return last


def get_source(grad_fn: Callable[..., Any], *args: Any, standalone: bool = False) -> str:
    """The generated adjoint of ``grad_fn`` as Python source.

    Uses the code compiled by the last call, or compiles for ``args``.  The
    function alone by default; ``standalone=True``: a module that can be
    saved and imported, with the imports and constants the function reads
    (what ``s2sad dump`` prints).  The result is a ``str`` that notebooks
    display highlighted.
    """
    from ..highlight import SourceText     # only here: ``import s2sad`` skips ``html``
    compiled = _compiled(grad_fn, args)
    if standalone:
        return SourceText(module_source(compiled))
    backend = getattr(compiled, "backend", None)
    if backend is not None:     # the library it runs on, and whether under a compiler
        return SourceText("# %s\n%s" % (backend.run_mode(compiled.fn), compiled.source))
    return SourceText(compiled.source)


def get_ir(grad_fn: Callable[..., Any], *args: Any, stage: str = "grad") -> str:
    """The SSA IR (``stage='forward'`` or ``'grad'``) as text."""
    c = _compiled(grad_fn, args)
    return format_func(c.forward if stage == "forward" else c.grad_ir)
