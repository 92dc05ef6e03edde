"""``jacfwd``, ``jacrev`` and ``hessian``: full Jacobians from jvp and vjp.

``jacfwd`` pushes one basis tangent per input element, ``jacrev`` pulls one
basis cotangent per output element, and ``hessian`` is ``jacfwd`` of the
gradient; results are shaped output-structure first, as JAX does.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from .. import driver as G
from .. import tracebacks
from ..errors import S2SADError
from ..backend.namespaces import library_of
from .args import (as_like, aux_bare, check_aux_output, check_has_aux, check_scalar,
                   is_tensor_like, leaves_of, raw, target_of, wrap_out)
from .functional import (Positions, grad, normalize_positions, scalar_grad,
                         selected_grad_function)
from .packing import arrangement, take_at
from . import trees as T
from .pytree import tree_structure
from .trees import has_trees
from ..frontend.trees import TreeOutput
from . import staged as S
from ..ir import Const
from .vjp_jvp import jvp_compiled, refuse_unfit_inputs
from ..tensor import Tensor
from .. import runtime as rt



def _raw_structure(x):
    return tuple(_raw_structure(e) for e in x) if isinstance(x, tuple) else raw(x)


def _rebuild(structure, it):
    if isinstance(structure, (tuple, list)):
        return tuple(_rebuild(s, it) for s in structure)
    return next(it)


def _check_jac_args(args, positions, api):
    n = len(args)
    for p in positions:
        if p >= n:
            raise IndexError("grad_position %d is out of range: the function was called "
                             "with %d input%s" % (p, n, "" if n == 1 else "s"))
        library = library_of(args[p])
        if library is not None:
            raise TypeError("For '%s', the input at grad_position %d is a %s array, but the "
                            "Jacobian functions take NumPy arrays and Tensors only; use grad, "
                            "vjp or jvp for %s arrays (docs/backends.md)"
                            % (api, p, library, library))
        if not is_tensor_like(args[p]):
            raise TypeError("For '%s', the input at grad_position %d must be a Tensor or an "
                            "array, but got %s" % (api, p, type(args[p]).__name__))


def _shape_jacobian(per_out, out_structure, single):
    """Nest as ``output structure`` of ``position structure`` (JAX/MindSpore order)."""
    rows = [per_p[0] if single else tuple(per_p) for per_p in per_out]
    return _rebuild(out_structure, iter(rows))


def _staged(mode, fn, positions, single, has_aux):
    """The stage hook of a Jacobian function: a run-time loop over basis vectors
    inlined where it is called in compiled code (``staged``)."""
    def stage(builder, args, kwargs, loc, path):
        return S.stage_jacobian(builder, mode, Const(fn), positions, single, has_aux, args,
                                kwargs, loc)
    return stage


def _named_after(api_fn, fn):
    """Generated code for ``api_fn`` (compiled as the target of another transform)
    is named after, and located in, the user's function."""
    if inspect.isfunction(fn):
        api_fn.__s2sad_named_after__ = lambda root: fn
        api_fn.__s2sad_params__ = getattr(fn, "__s2sad_params__", None) or list(
            inspect.signature(fn).parameters)


def jacfwd(fn: Callable[..., Any], grad_position: Positions = 0,
           has_aux: bool = False, holomorphic: bool = False) -> Callable[..., Any]:
    """The Jacobian function of ``fn`` by forward mode, one ``jvp`` per input element.

    Each Jacobian has shape ``out.shape + input.shape``; for several outputs
    or positions the result nests as outputs, then positions.  With
    ``has_aux`` only the first output is differentiated and the result is
    ``(jacobian, aux)``.  Cheaper than ``jacrev`` when inputs are smaller
    than outputs.  ``holomorphic``: complex inputs, and the Jacobian of
    complex derivatives of a holomorphic ``fn``.
    """
    check_has_aux(has_aux)
    positions, single = normalize_positions(grad_position, "jacfwd")
    last = [None]

    def jacfwd_fn(*args):
        if has_trees(args):
            return _tree_jacobian(jacfwd, fn, positions, single, has_aux, args, fn(*args))
        _check_jac_args(args, positions, "jacfwd")
        _check_complex(fn, args, positions, holomorphic, "jacfwd")
        try:
            entry, root, specs = jvp_compiled(fn, args, positions=positions, split=True)
        except TreeOutput:      # a dict output: its leaves through a flat function
            return _tree_jacobian(jacfwd, fn, positions, single, has_aux, args, fn(*args))
        except S2SADError as err:
            raise tracebacks.for_user(err)
        last[0] = entry
        flat = G.flatten_runtime(args, specs)
        extra = entry.inputs.read(root, target_of(fn)[0])
        # which flat leaf each selected argument is
        leaf_of, k = {}, 0
        for i, (a, s) in enumerate(zip(args, specs)):
            if i in positions:
                leaf_of[i] = k
            k += len(G.flatten_runtime([a], [s]))
        wrt = sorted(set(positions))      # the order of the program's tangent inputs
        out, columns = _forward_columns(entry, flat, extra, [flat[leaf_of[p]] for p in wrt],
                                        has_aux)
        if out is None:   # no input elements: no jvp ran
            out = _raw_structure(fn(*args))
        if has_aux:
            check_aux_output(out, "jacfwd")
        head = out[0] if has_aux else out
        out_leaves = [np.asarray(o) for o in leaves_of(head)]
        tensor_in = any(isinstance(a, Tensor) for a in args)
        per_out = []
        for li, o in enumerate(out_leaves):
            per_p = []
            for p in positions:
                shape_in = np.shape(np.asarray(flat[leaf_of[p]]))
                stacked = columns[wrt.index(p)]
                stacked = stacked[li] if stacked else np.zeros((0,) + o.shape, o.dtype)
                per_p.append(wrap_out(_jacobian_of(stacked, o.shape, shape_in), tensor_in))
            per_out.append(per_p)
        jac = _shape_jacobian(per_out, head, single)
        if has_aux:
            return jac, wrap_out(aux_bare(out), tensor_in)
        return jac
    def compiled(*args):    # get_source/get_ir: the forward-mode program(s)
        return jvp_compiled(fn, args, positions=positions, split=True)[0] if args else last[0]
    jacfwd_fn.__s2sad_compiled__ = compiled
    jacfwd_fn.__s2sad_stage__ = _staged("fwd", fn, positions, single, has_aux)
    _named_after(jacfwd_fn, fn)
    return jacfwd_fn


def _jacobian_of(stacked, out_shape, in_shape):
    """The Jacobian ``out_shape + in_shape`` from the tangents along each basis
    vector, stacked on a leading axis (each broadcastable to ``out_shape``)."""
    n = stacked.shape[0]
    missing = len(out_shape) - (stacked.ndim - 1)
    if missing > 0:
        stacked = stacked.reshape((n,) + (1,) * missing + stacked.shape[1:])
    stacked = np.broadcast_to(stacked, (n,) + tuple(out_shape))
    return np.moveaxis(stacked, 0, -1).reshape(tuple(out_shape) + tuple(in_shape))


def _forward_columns(entry, flat, extra, xs, has_aux):
    """``(out, columns)``: the output and, per differentiated input ``x`` of
    ``xs``, one array per output leaf: its tangents along the basis vectors of
    ``x``, stacked on a leading axis (``[]`` when ``x`` is empty).

    The tangents of the inputs not differentiated are not inputs of the
    program (symbolic zeros); the values that do not depend on the tangent
    are computed once when the entry was split (``compile_jvp``).
    """
    xs = [np.asarray(x) for x in xs]
    zeros = [np.zeros_like(x) for x in xs]
    if entry.tangent is not None:
        value, saved = entry.fn(*flat, *extra)
        if has_aux:
            check_aux_output(value, "jacfwd")
        tangent_fn = entry.tangent.fn

        def run(tangents):
            return value, tangent_fn(*saved, *tangents)
    else:
        _refuse_draws(entry, sum(x.size for x in xs), "jacfwd' or 'hessian", "input")

        def run(tangents):
            return entry.fn(*flat, *extra, *tangents)
    out, columns = None, []
    for k, x in enumerate(xs):
        cols = None if entry.batched is None or has_aux else _batched_columns(entry, saved, xs, k)
        if cols is not None:
            columns.append(cols)
            out = value
            continue
        cols = []
        for j in range(x.size):
            e = np.zeros(x.size, dtype=x.dtype)
            e[j] = 1
            tangents = list(zeros)
            tangents[k] = e.reshape(x.shape)
            out, t_out = run(tangents)
            if has_aux:
                check_aux_output(out, "jacfwd")
                t_out = t_out[0]
            cols.append([np.asarray(t) for t in leaves_of(t_out)])
        columns.append([np.stack(leaf) for leaf in zip(*cols)])
    return out, columns


def _refuse_draws(entry, runs, api, what):
    """Refuse a Jacobian that would run ``entry`` ``runs`` times (once per ``what``
    element) when its program draws random numbers or writes a Parameter: each row
    would come from another draw, with nothing to say so."""
    if runs > 1 and entry.draws():
        raise ValueError(
            "For '%s', the function draws random numbers (or writes a Parameter), and this "
            "Jacobian runs it once per %s element: each row would come from another draw. "
            "Draw outside the function and pass the numbers in as an argument%s"
            % (api, what, "" if what == "output" else ", or keep the draw out of loops and "
                "branches (straight-line code is run once)"))


#: elements of one example's largest value times basis vectors pushed at once:
#: above it they go in blocks (about 32 MB of float64 per batched value)
_BATCH_ELEMENTS = 1 << 22


def _batched_columns(entry, saved, xs, k):
    """``_forward_columns``' arrays for ``xs[k]`` from runs of the batched tangent
    program (every basis vector at once, or in blocks so that no batched value
    is much larger than ``_BATCH_ELEMENTS``), or None where it does not apply."""
    x = xs[k]
    n = x.size
    if n == 0:
        return None
    largest = max([np.size(v) for v in saved] + [y.size for y in xs])
    block = max(1, _BATCH_ELEMENTS // max(largest, 1))
    eye = np.eye(n, dtype=x.dtype).reshape((n,) + x.shape)
    parts = []
    for start in range(0, n, block):
        rows = eye[start:start + block]
        m = rows.shape[0]
        tangents = [rows if i == k else np.zeros((m,) + y.shape, y.dtype)
                    for i, y in enumerate(xs)]
        try:
            t_out = entry.batched.fn(*saved, *tangents)
        except (rt.Unbatchable, ValueError):    # ranks it does not know: the loop decides
            return None
        parts.append([np.asarray(t) if is_batched else np.broadcast_to(t, (m,) + np.shape(t))
                      for t, is_batched in zip(leaves_of(t_out), entry.batched_out)])
    if len(parts) == 1:
        return parts[0]
    return [np.concatenate(leaf) for leaf in zip(*parts)]


def jacrev(fn: Callable[..., Any], grad_position: Positions = 0,
           has_aux: bool = False, holomorphic: bool = False) -> Callable[..., Any]:
    """The Jacobian function of ``fn`` by reverse mode, one ``vjp`` per output element.

    Each Jacobian has shape ``out.shape + input.shape``; for several outputs
    or positions the result nests as outputs, then positions.  With
    ``has_aux`` only the first output is differentiated and the result is
    ``(jacobian, aux)``.  Cheaper than ``jacfwd`` when outputs are smaller
    than inputs (one row per output element).  ``holomorphic`` as ``jacfwd``'s.
    """
    check_has_aux(has_aux)
    positions, single = normalize_positions(grad_position, "jacrev")
    gf = selected_grad_function(fn, has_aux, None, positions, "inputs", sens_param=True)

    def jacrev_fn(*args):
        if has_trees(args):
            return _tree_jacobian(jacrev, fn, positions, single, has_aux, args, fn(*args))
        _check_jac_args(args, positions, "jacrev")
        _check_complex(fn, args, positions, holomorphic, "jacrev")
        out = fn(*args)
        if has_aux:
            check_aux_output(out, "jacrev")
        head = out[0] if has_aux else out
        if has_trees((head,)):
            return _tree_jacobian(jacrev, fn, positions, single, has_aux, args, out)
        out_leaves = leaves_of(head)
        rest, layout = arrangement(positions, len(args))
        sel, rest_args = take_at(args, positions), take_at(args, rest)
        zero_leaves = [as_like(o, np.zeros_like(np.asarray(raw(o)))) for o in out_leaves]
        tensor_in = any(isinstance(a, Tensor) for a in args)
        per_out = []
        for li, o in enumerate(out_leaves):
            o_arr = np.asarray(raw(o))
            rows = []
            for j in range(o_arr.size):
                e = np.zeros(o_arr.size, dtype=o_arr.dtype)
                e[j] = 1
                leaves = list(zero_leaves)
                leaves[li] = as_like(o, e.reshape(o_arr.shape))
                sens = _rebuild(head, iter(leaves))
                g = gf(sel, rest_args, layout, sens)
                if not rows and not per_out:
                    _refuse_draws(gf.last, sum(np.size(raw(o)) for o in out_leaves), "jacrev",
                                  "output")
                rows.append([np.asarray(raw(x)) for x in g])
            per_p = []
            for k, p in enumerate(positions):
                shape_in = np.shape(raw(args[p]))
                if rows:
                    jac = np.stack([r[k] for r in rows], axis=0)
                else:
                    jac = np.zeros((0,) + shape_in, dtype=o_arr.dtype)
                per_p.append(wrap_out(jac.reshape(o_arr.shape + shape_in), tensor_in))
            per_out.append(per_p)
        jac = _shape_jacobian(per_out, head, single)
        if has_aux:
            return jac, aux_bare(out)
        return jac
    jacrev_fn.__s2sad_stage__ = _staged("rev", fn, positions, single, has_aux)
    _named_after(jacrev_fn, fn)
    return jacrev_fn


def _check_complex(fn, args, positions, holomorphic, api):
    """JAX's rule: a Jacobian of complex inputs is for holomorphic functions, said so.

    Without ``holomorphic`` a complex input is refused (a real-valued
    function's gradient is ``grad``'s; other functions of complex inputs have
    no complex Jacobian); with it each differentiated input must be complex.
    """
    refuse_unfit_inputs(fn, args, api, python_only=True)     # Tensors, mutables
    for p in positions:
        if p >= len(args):
            continue
        is_complex = np.iscomplexobj(raw(args[p]))
        if is_complex and not holomorphic:
            raise TypeError(
                "For '%s', the input at position %d is complex: pass holomorphic=True for the "
                "complex Jacobian of a holomorphic function, or use grad (a real-valued "
                "function) or vjp/jvp (any function) for complex inputs" % (api, p))
        if holomorphic and not is_complex:
            raise TypeError("For '%s', holomorphic=True needs complex inputs, but the input "
                            "at position %d is %s" % (api, p, np.asarray(raw(args[p])).dtype))


def hessian(fn: Callable[..., Any], grad_position: Positions = 0) -> Callable[..., Any]:
    """The Hessian function of a scalar-valued ``fn``: forward mode over reverse mode.

    ``jacfwd(grad(fn))``: one forward-mode pass over the compiled gradient per
    input element.  Shape ``input.shape + input.shape`` (nested
    ``H[i][j]`` for a tuple of positions).  A non-scalar output is an error:
    reduce it (``.sum()``) or use ``jacrev``/``jacfwd``.
    """
    positions, single = normalize_positions(grad_position, "hessian")
    inner = scalar_grad(fn, grad_position, "hessian")
    if inspect.isfunction(fn):      # generated code named after ``fn``, not grad's wrapper
        _named_after(inner, fn)
        inner.__s2sad_gradients__ = 1
    outer = jacfwd(inner, grad_position)

    def hessian_fn(*args):
        if has_trees(args):
            return _tree_hessian(fn, positions, single, args)
        _check_jac_args(args, positions, "hessian")
        refuse_unfit_inputs(fn, args, "hessian", python_only=True)
        return outer(*args)     # its code checks that fn's output is one element

    def stage(builder, args, kwargs, loc, path):
        return S.stage_hessian(builder, Const(fn), lambda i: grad(fn, i), positions, single, args,
                               kwargs, loc)
    hessian_fn.__s2sad_compiled__ = outer.__s2sad_compiled__
    hessian_fn.__s2sad_stage__ = stage
    _named_after(hessian_fn, fn)
    return hessian_fn


# ------------------------------------------------------------------ pytrees
def _tree_jacobian(jac_api, fn, positions, single, has_aux, args, out):
    """``jacfwd``/``jacrev`` of a function of pytrees: JAX's nesting, the output's
    structure outside and the arguments' inside, None at a Python-number leaf."""
    api = jac_api.__name__
    arrangement(positions, len(args))
    if has_aux:
        check_aux_output(out, api)
    head = out[0] if has_aux else out
    flat = T.FlatArgs(args)
    leaf_positions = _runtime_leaf_positions(flat, positions, api)
    flat_fn = T.flat_function(fn, flat.key, "head-leaves" if has_aux else "leaves")
    jac = jac_api(flat_fn, leaf_positions)(*flat.leaves)
    rows = [flat.rebuild_all(positions, single, dict(zip(leaf_positions, row))) for row in jac]
    result = tree_structure(head).unflatten(rows)
    return (result, aux_bare(out)) if has_aux else result


def _tree_hessian(fn, positions, single, args):
    """``hessian`` of a function of pytrees: the arguments' structure, twice nested."""
    arrangement(positions, len(args))
    check_scalar(fn(*args), "hessian", "jacrev")
    flat = T.FlatArgs(args)
    leaf_positions = _runtime_leaf_positions(flat, positions, "hessian")
    h = hessian(T.flat_function(fn, flat.key, "same"), leaf_positions)(*flat.leaves)
    rows = {i: flat.rebuild_all(positions, single, dict(zip(leaf_positions, row)))
            for i, row in zip(leaf_positions, h)}
    return flat.rebuild_all(positions, single, rows)


def _runtime_leaf_positions(flat, positions, api):
    leaf_positions = flat.runtime_leaves(positions)
    if not leaf_positions:
        raise TypeError("For '%s', the inputs at grad_position %s hold no Tensor or array "
                        "(Python numbers are constants)" % (api, positions))
    return leaf_positions


def _jacfwd_of_closure(fn, grad_position=0, has_aux=False):
    """``jacfwd`` of a function made in compiled code: its staged Jacobian function."""
    check_has_aux(has_aux)
    positions, single = normalize_positions(grad_position, "jacfwd")
    return lambda builder, args, kwargs, loc: S.stage_jacobian(
        builder, "fwd", fn, positions, single, has_aux, args, kwargs, loc)


def _jacrev_of_closure(fn, grad_position=0, has_aux=False):
    """``jacrev`` of a function made in compiled code: its staged Jacobian function."""
    check_has_aux(has_aux)
    positions, single = normalize_positions(grad_position, "jacrev")
    return lambda builder, args, kwargs, loc: S.stage_jacobian(
        builder, "rev", fn, positions, single, has_aux, args, kwargs, loc)


jacfwd.__s2sad_stage__ = S.evaluated_inside(jacfwd, _jacfwd_of_closure)
jacrev.__s2sad_stage__ = S.evaluated_inside(jacrev, _jacrev_of_closure)
hessian.__s2sad_stage__ = S.evaluated_inside(hessian)

