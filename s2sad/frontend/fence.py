"""Reject unsupported syntax before any transformation.

The fence walks a function's tree once and raises ``UnsupportedSyntaxError``
at the first construct s2sad cannot differentiate, naming it and showing the
line with a caret, so no half-transformed program is ever produced.
"""
import gast

from ..errors import UnsupportedSyntaxError
from . import treecache

# node type -> what to tell the user
_REJECTED = {
    gast.SetComp: "set comprehensions are not supported",
    gast.Yield: "generators ('yield') cannot be differentiated",
    gast.YieldFrom: "generators ('yield from') cannot be differentiated",
    gast.Await: "'await' cannot be differentiated",
    gast.AsyncFunctionDef: "async functions cannot be differentiated",
    gast.AsyncFor: "'async for' cannot be differentiated",
    gast.AsyncWith: "'async with' cannot be differentiated",
    gast.With: "'with' statements are not supported",
    gast.Try: "'try' statements are not supported",
    gast.Raise: "'raise' is not supported inside a differentiated function",
    gast.Nonlocal: "'nonlocal' statements are not supported",
    gast.ClassDef: "class definitions are not supported inside a differentiated function",
    gast.Delete: "'del' is not supported",
    gast.Import: "imports are not supported inside a differentiated function; import at module level",
    gast.ImportFrom: "imports are not supported inside a differentiated function; import at module level",
    gast.NamedExpr: "assignment expressions (':=') are not supported",
    gast.Set: "set displays are not supported",
}


def fence(info):
    """Raise on the first unsupported construct in ``info.tree``'s body (once per function)."""
    if getattr(info, "fenced", False):
        return info
    root = info.tree
    for node in gast.walk(root):
        if node is root:
            continue
        msg = _REJECTED.get(type(node))
        if isinstance(node, gast.For) and node.orelse:
            msg = "The 'for...else...' statement is not supported now."
        elif isinstance(node, gast.While) and node.orelse:
            msg = "The 'while...else...' statement is not supported now."
        elif isinstance(node, gast.Global):
            msg = _global_assigned(root, node)
        if msg:
            raise UnsupportedSyntaxError(msg, info.loc(node))
    info.fenced = True
    if getattr(info, "kept", None) is not None:
        treecache.passed_fence(*info.kept)
    return info


def _global_assigned(root, node):
    """The message for a ``global`` declaration of a name the function assigns
    (compiled code never changes the world), else ``None``: a declaration of
    names only read changes nothing, as they are read from the globals anyway."""
    for n in gast.walk(root):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and n.id in node.names:
            return ("assigning the global variable '%s' is not supported inside a "
                    "differentiated function; return the new value instead" % n.id)
    return None
