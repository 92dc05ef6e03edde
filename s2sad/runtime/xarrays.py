"""Arrays of another library than NumPy: which library, which device, its namespace.

Generated code, eager primitives and Tensors holding a ``torch.Tensor`` (or
a ``jax.Array``) all reach that library through one namespace ``xp`` (its
array-API form from ``array-api-compat``) and the helpers ``rt`` of
``rt_neutral``; this module makes them once per library, low enough in the
package that ``Tensor`` and ``Primitive`` can use them too.
"""
import re
import types

import numpy as np

#: the module an array type comes from -> the library s2sad knows it as
_LIBRARIES = {"torch": "torch", "jax": "jax", "jaxlib": "jax", "cupy": "cupy",
              "tensorflow": "tensorflow", "mlx": "mlx", "dask": "dask"}
#: libraries whose generated code is tested (``tests/backends``)
SUPPORTED = ("torch", "jax", "cupy")
#: what to install for each supported library (messages)
EXTRAS = {"torch": "s2sad[torch]", "jax": "s2sad[jax]", "cupy": "s2sad[cupy]"}


def library_of(value):
    """The name of the array library ``value`` belongs to (not NumPy), or None."""
    library = library_of_type(type(value))
    if library is None or not hasattr(value, "shape"):
        return None
    return library


def library_of_type(tp):
    """The library (not NumPy) whose module defines the type ``tp``, or None."""
    return _LIBRARIES.get(tp.__module__.partition(".")[0])


#: ndarray subclasses whose operators and NumPy's functions behave as on an ndarray
_PLAIN_SUBCLASSES = (np.memmap,)


def subclass_problem(value):
    """What keeps the ndarray subclass ``value`` from being differentiated, or None
    (a plain ndarray, a memmap, not an ndarray).

    Generated code is written for ndarrays: on a subclass whose operators or
    ``__array_ufunc__`` do something else, it would compute another function
    than the user's and its gradient would be silently wrong (``np.matrix``'s
    ``*`` is a matrix product; a masked array's sums skip masked elements).
    """
    if type(value) is np.ndarray or not isinstance(value, np.ndarray) \
            or isinstance(value, _PLAIN_SUBCLASSES):
        return None
    if isinstance(value, np.matrix):
        return ("a np.matrix, whose * and ** are matrix products and whose reductions keep "
                "two dimensions: pass np.asarray(m) and write @ for matrix products")
    return ("a %s.%s, a subclass of np.ndarray whose operations may differ from an "
            "ndarray's: pass np.asarray(x)" % (type(value).__module__, type(value).__qualname__))


def device_of(value):
    """The device an array of another library is on, as a string (``"cpu"``)."""
    device = getattr(value, "device", None)
    if hasattr(device, "id") and library_of(value) == "cupy":
        return "cuda:%d" % device.id    # CuPy's own repr is ``<CUDA Device 0>``
    if callable(device):            # older JAX: a method
        device = device()
    return str(device)


_NAMESPACES = {}


def namespaces(library):
    """``(xp, rt)`` for arrays of ``library`` (made once; raises if unsupported)."""
    found = _NAMESPACES.get(library)
    if found is None:
        found = _NAMESPACES[library] = _make(library)
    return found


def _make(library):
    if library not in SUPPORTED:
        raise TypeError(
            "s2sad cannot run generated code on %s arrays yet (supported: NumPy, %s); "
            "pass NumPy arrays or arrays of a supported library"
            % (library, ", ".join(SUPPORTED)))
    try:
        import array_api_compat
    except ImportError:
        raise ImportError("running on %s arrays needs the package 'array-api-compat': "
                          "pip install %s" % (library, EXTRAS[library])) from None
    from .rt_neutral import extend_namespace, runtime_for
    if library == "torch":
        import array_api_compat.torch as compat
    elif library == "cupy":
        import array_api_compat.cupy as compat
    else:
        import jax.numpy as compat      # JAX's own namespace follows the array API
    xp = types.ModuleType("s2sad_xp_" + library)
    xp.__dict__.update((k, v) for k, v in vars(compat).items() if not k.startswith("__"))
    extend_namespace(xp)
    xp.__array_api_compat__ = array_api_compat
    return xp, runtime_for(xp, library)


def xp_of(value):
    """The namespace of ``value``, an array of another library."""
    return namespaces(library_of(value))[0]


def to_numpy(value):
    """A NumPy copy of ``value``, an array of another library (from any device)."""
    if library_of(value) == "torch":
        return value.detach().cpu().numpy().copy()
    if library_of(value) == "cupy":
        return value.get()
    return np.array(value, copy=True)


def numpy_dtype(value):
    """The NumPy dtype matching the dtype of ``value`` (an array of any library)."""
    dtype = value.dtype
    if isinstance(dtype, np.dtype):
        return dtype
    return np.dtype(str(dtype).rpartition(".")[2])


def from_numpy(arr, library, device):
    """The NumPy array ``arr`` as an array of ``library`` on ``device`` (its dtype kept)."""
    xp = namespaces(library)[0]
    if library == "torch":
        return xp.asarray(arr, device=device)
    return xp.asarray(arr)


_CALLED = re.compile(r"\b(xp|rt)\.(\w+)")


def missing_names(source, xp, rt):
    """The ``xp.<name>`` / ``rt.<name>`` calls of ``source`` that ``xp`` or ``rt`` lacks."""
    spaces = {"xp": xp, "rt": rt}
    return ["%s.%s" % (space, name) for space, name in sorted(set(_CALLED.findall(source)))
            if not hasattr(spaces[space], name)]


def operand(value, like):
    """``value`` as an operand of an operation on ``like`` (an array of another
    library): an array of that library and device, or a Python number."""
    if isinstance(value, (bool, int, float, complex)):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return value.item()         # a NumPy scalar stays weak, as a Python number
    library = library_of(value)
    if library == library_of(like) and (value is like or device_of(value) == device_of(like)):
        return value
    what = ("%s data on %s" % (library, device_of(value)) if library is not None
            else "a NumPy array" if isinstance(value, np.ndarray) else type(value).__name__)
    raise TypeError(
        "an operation mixes %s data on %s with %s; s2sad does not convert between libraries "
        "or devices behind your back: make both Tensors under the same "
        "set_context(device_target=..., array_library=...), or convert one explicitly "
        "(Tensor(x.asnumpy()) makes a Tensor of the current array_library)"
        % (library_of(like), device_of(like), what))


def binary(name, a, b):
    """``xp.<name>(a, b)`` where ``a`` or ``b`` is an array of another library."""
    like = a if library_of(a) is not None else b
    a, b = operand(a, like), operand(b, like)
    return getattr(xp_of(like), name)(a, b)


def namespace_of(arr):
    """The namespace to compute on ``arr`` with: NumPy for an ndarray (or a number),
    else its library's array-API namespace."""
    if type(arr) is np.ndarray or library_of(arr) is None:
        return np
    return xp_of(arr)


def full_like(arr, fill):
    """An array of ``arr``'s shape, dtype, library and device, every element ``fill``."""
    if type(arr) is np.ndarray:
        return np.full(arr.shape, fill, dtype=arr.dtype)
    return xp_of(arr).full(tuple(arr.shape), fill, dtype=arr.dtype, device=arr.device)
