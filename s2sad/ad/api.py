"""The functional AD API (MindSpore 2.x names): ``jvp``."""
import numpy as np

from . import grad as G


def _target(fn):
    from ..nn.cell import Cell
    import inspect
    if isinstance(fn, Cell):
        return type(fn).construct, fn
    if inspect.ismethod(fn) and isinstance(fn.__self__, Cell):
        return fn.__func__, fn.__self__
    return fn, None


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _wrap_out(value, tensor_in):
    from ..tensor import Tensor
    if isinstance(value, tuple):
        return tuple(_wrap_out(v, tensor_in) for v in value)
    if tensor_in and isinstance(value, (np.ndarray, np.generic)):
        return Tensor(np.asarray(value))
    return value


_jvp_cache = G.GradCache()


def jvp(fn, inputs, v):
    """Forward-mode derivative: ``(fn(*inputs), J @ v)``.

    ``inputs`` and ``v`` are a Tensor/array or tuples of them with the same
    structure.  Computed by the forward-mode transformation, at about the
    cost of one more forward pass.
    """
    from ..tensor import Tensor
    py_fn, root = _target(fn)
    inputs = _as_tuple(inputs)
    v = _as_tuple(v)
    specs = tuple(G.arg_spec(a) for a in inputs)
    if len(v) != len(inputs) or tuple(G.arg_spec(t) for t in v) != specs:
        raise ValueError("For 'jvp', 'v' must have the same structure as 'inputs', but got "
                         "%d inputs and %d tangents" % (len(inputs), len(v)))
    key = (py_fn, type(root) if root is not None else None, specs)
    entry = _jvp_cache.get(key, root)
    if entry is None:
        with _jvp_cache.lock():
            entry = _jvp_cache.get(key, root)
            if entry is None:
                entry = G.compile_jvp(py_fn, root, inputs, specs)
                _jvp_cache.put(key, entry)
    flat = G.flatten_runtime(inputs, specs)
    tangents = G.flatten_runtime(v, specs)
    out, t_out = entry.fn(*flat, *entry.inputs.read(root), *tangents)
    tensor_in = any(isinstance(a, Tensor) for a in inputs)
    return _wrap_out(out, tensor_in), _wrap_out(t_out, tensor_in)
