"""Which Parameters ``weights`` names, and where each lives inside the Cell.

The compiled program reads a weight by its attribute path from the Cell it
is called with, so a Cell holding other Parameters of the same shapes gets
its own values; a weight found nowhere is read by identity.
"""
from ..frontend import resolve


def weights_list(weights):
    """The Parameters to differentiate and how to shape their gradients."""
    from ..tensor import Parameter
    if weights is None:
        return [], "empty"
    if isinstance(weights, Parameter):
        return [weights], "single"
    if isinstance(weights, (tuple, list)):
        for w in weights:
            if not isinstance(w, Parameter):
                raise TypeError("For 'GradOperation', every item of 'weights' must be a "
                                "Parameter, but got %s" % type(w).__name__)
        return list(weights), "tuple"
    raise TypeError("For 'GradOperation', 'weights' must be a Parameter, a ParameterTuple "
                    "or a list of Parameters, but got %s" % type(weights).__name__)


def weight_paths(root, weights):
    """Attribute paths of ``weights`` inside ``root`` (``None`` when not found)."""
    if root is None:
        return [None] * len(weights)
    found = {}
    for name, p in root.parameters_and_names():
        found.setdefault(id(p), _path_of(root, name, p))
    return [found.get(id(w)) for w in weights]


def _path_of(root, dotted, param):
    path = tuple(int(s) if s.isdigit() else s for s in dotted.split("."))
    try:
        if resolve.read_path(root, path) is param:
            return path
    except (AttributeError, IndexError, KeyError, TypeError):
        pass
    # registered under a name that is not its attribute path: search attributes
    return _search(root, param, (), set())


def _search(obj, param, path, seen):
    from ..nn.cell import Cell
    if id(obj) in seen:
        return None
    seen.add(id(obj))
    for name, value in vars(obj).items():
        if value is param:
            return path + (name,)
        if isinstance(value, Cell):
            hit = _search(value, param, path + (name,), seen)
            if hit:
                return hit
    return None
