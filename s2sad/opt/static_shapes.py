"""Shapes known while compiling: a program specialised to its first call's shapes.

Compiled code serves every shape its argument specs allow, so what a shape
decides is decided per call: ``rt.unbroadcast(d, x)`` compares two shapes on
every backward step of a loop, and a loop pushes ``rt.ShapeOf`` objects only
for that comparison.  When the driver knows the shapes of the arrays a
program is called with (``func.input_shapes``: the first call's arguments
and the arrays it reads), ``known_shapes`` follows them through the program
with a shape rule per primitive (NumPy's broadcasting, matrix products,
reductions, constant indexing, shape queries and the small integers read
from them), and ``static_shapes`` drops the shape adjustments between values
it proves to have one shape, and passes a constant ``rt.ShapeOf`` where only
a known shape is read.  What no rule covers stays unknown and keeps
its run-time helper.

The program is then only right for those input shapes: the pass records
``func.specialised`` (the parameters' positions and their shapes), codegen
writes a check of them at the top of the function, and a call with other
shapes runs the general program, compiled on its first use
(``driver/compile.py``).  Nothing is specialised when nothing goes.
"""
import operator

import numpy as np

from ..ir import control as C
from ..ir.nodes import (AdjointOf, Var, Const, leaves, non_shape_uses, substitute, use_counts,
                        walk_ops)
from ..ops.operations import array_ops as A
from ..ops.operations import math_ops as M
from ..runtime import ShapeOf
from .shapes import _replace_block

#: what ``_known`` gives for a value not known while compiling (None is a value: ``x[None]``)
UNKNOWN = object()
#: a Python int whose value is not known while compiling (a loop's index)
INT = object()

# small Python integers computed from shapes (``2 * H``): enough to know a slice
_INT_OPS = {"Add": operator.add, "Sub": operator.sub, "Mul": operator.mul,
            "FloorDiv": operator.floordiv}


def static_shapes(func):
    """Drop ``Unbroadcast``/``BroadcastLike`` between values of one known shape, and
    pass a constant ``rt.ShapeOf`` where only a known shape is read."""
    given = func.input_shapes
    if not given:
        return func
    shapes = known_shapes(func, given)
    # ops an earlier pass left unread (``same_shape``'s) change nothing: not specialised for
    read = use_counts(func)

    def replacement(op):
        if isinstance(op.prim, (A.Unbroadcast, A.BroadcastLike)) and read.get(op.outs[0].id):
            d, x = _shape(op.args[0], shapes), _shape(op.args[1], shapes)
            if d is not None and d == x:
                kept, hint = op.args[0], op.outs[0].hint
                if isinstance(kept, Var) and kept.hint is None and isinstance(hint, AdjointOf) \
                        and isinstance(hint.var.hint, str):
                    kept.hint = hint        # ``d_b`` rather than ``mul``, as before
                return kept
        return None

    subst = {}
    _replace_block(func.body, subst, replacement)
    func.result = substitute(func.result, subst)
    constants = _shapes_as_constants(func, shapes, read)
    if subst or constants:
        _assumed(func)
        func.known_shapes = shapes      # ``shape_classes`` reads them from now on
    return func


def _shapes_as_constants(func, shapes, read):
    """Give the ops that read only the shape of a value (``shape_only_inputs``) a
    constant ``rt.ShapeOf`` instead, where that value has a known shape and nothing
    reads more of it: the value, or what a loop pushes for it, then goes.

    Only arrays of at least one dimension: a 0-d value may be a NumPy scalar,
    which ``rt.ShapeOf`` tells apart.  One constant per shape, so passes that
    group reads by what they read (``opt/slices.py``) still group them.
    """
    whole = non_shape_uses(func.body, pushes=False)
    whole.update(v.id for v in leaves(func.result) if isinstance(v, Var))
    made = {}
    for op in walk_ops(func.body):
        if op.outs and not any(read.get(o.id) for o in op.outs):
            continue
        for k in op.prim.shape_only_inputs:
            a = op.args[k] if k < len(op.args) else None
            s = shapes.get(a.id) if isinstance(a, Var) and a.id not in whole else None
            if s:
                c = made.get(s)
                if c is None:
                    c = made[s] = Const(ShapeOf.known(s))
                op.args[k] = c
    return bool(made)


def _assumed(func):
    """Record that ``func`` holds only for its inputs' given shapes: codegen checks them."""
    func.specialised = [(k, func.input_shapes[p.id]) for k, p in enumerate(func.params)
                        if isinstance(p, Var) and p.id in func.input_shapes]


def known_shapes(func, given):
    """Var id -> shape tuple, for the values whose shape follows from ``given``
    (input Var id -> shape) by the rules below."""
    shapes = dict(given)
    _scan(func.body, shapes, {}, {})
    return shapes


def _scan(ops, shapes, values, pushed):
    """Record the shapes (and small values) ``ops`` make; ``pushed``: stack id -> the
    shapes of its slots."""
    for op in ops:
        p = op.prim
        if isinstance(p, (C.ForRange, C.While)):
            _loop(op, shapes, values, pushed)
        elif isinstance(p, C.If):
            for r in op.regions:
                _scan(r.ops, shapes, values, pushed)
            if all(len(r.result) == len(op.outs) for r in op.regions):
                for k, o in enumerate(op.outs):
                    found = {_shape(r.result[k], shapes) for r in op.regions}
                    if len(found) == 1 and None not in found:
                        shapes[o.id] = found.pop()
        elif isinstance(p, C.StackPush):
            # a shape for each slot, None where not known (or where two pushes differ)
            slots = tuple(_shape(v, shapes) for v in op.args[1:])
            before = pushed.get(op.args[0].id, slots)
            pushed[op.args[0].id] = (None,) * len(slots) if len(before) != len(slots) else \
                tuple(a if a == b else None for a, b in zip(before, slots))
        elif isinstance(p, C.StackPop):
            got = pushed.get(op.args[0].id, ())
            if len(got) == len(op.outs):
                for o, s in zip(op.outs, got):
                    if s is not None:
                        shapes[o.id] = s
        elif op.regions:
            for r in op.regions:        # their values are the region's own; nothing flows out
                _scan(r.ops, shapes, values, pushed)
        elif p.name in _PIECES:
            found = _PIECES[p.name](op, shapes)
            if found is not None:
                for o, shape in zip(op.outs, found):
                    shapes[o.id] = shape
        elif len(op.outs) == 1:
            _single(op, shapes, values)


def _loop(op, shapes, values, pushed):
    """A loop's shapes: carried values keep their initial shapes when the body,
    assuming so, yields the same shapes again (fewer assumed until it does)."""
    body = op.regions[-1]
    init = op.args[3:] if isinstance(op.prim, C.ForRange) else op.args
    if len(body.result) != len(init) or len(op.outs) != len(init):
        return
    assumed = {k: s for k, s in ((k, _shape(a, shapes)) for k, a in enumerate(init))
               if s is not None}
    while True:
        trial, trial_values, trial_pushed = dict(shapes), dict(values), dict(pushed)
        for r in op.regions:
            carried = r.params[len(r.params) - len(init):]
            for k, s in assumed.items():
                trial[carried[k].id] = s
            if isinstance(op.prim, C.ForRange):
                trial[r.params[0].id] = ()      # the index, a Python int
                trial_values[r.params[0].id] = INT
            _scan(r.ops, trial, trial_values, trial_pushed)
        held = {k: s for k, s in assumed.items() if _shape(body.result[k], trial) == s}
        if held == assumed:
            break
        assumed = held
    shapes.update(trial)
    values.update(trial_values)
    pushed.update(trial_pushed)
    for k, s in assumed.items():
        shapes[op.outs[k].id] = s


def _single(op, shapes, values):
    """The shape (and value, for shape queries and their integers) of a plain op's output."""
    out = op.outs[0].id
    value = _value(op, values)
    if value is not None:
        values[out] = value
    shape = _rule(op, shapes, values)
    if shape is not None:
        shapes[out] = tuple(shape)


def _value(op, values):
    """A tuple, int or slice a shape query or integer arithmetic on one makes, ``INT``
    for an int of unknown value, or None."""
    p, args = op.prim, op.args
    name = p.name
    if name == "GetItem":
        seq, index = _known(args[0], values), _known(args[1], values)
        if type(seq) is tuple and index is INT:
            return INT
        if type(seq) is tuple and type(index) is int and -len(seq) <= index < len(seq):
            return seq[index]
        return None
    if name in _INT_OPS and len(args) == 2:
        a, b = _known(args[0], values), _known(args[1], values)
        if type(a) is int and type(b) is int and not (name == "FloorDiv" and b == 0):
            return _INT_OPS[name](a, b)
        if (a is INT or type(a) is int) and (b is INT or type(b) is int):
            return INT
        return None
    if name == "MakeSlice":
        bounds = [_known(a, values) for a in args]
        if all(b is None or type(b) is int for b in bounds):
            return slice(*bounds)
    return None


def _rule(op, shapes, values):
    """The output shape of a single-output, region-free op, or None."""
    p, args = op.prim, op.args
    k = p.output_shape_of
    if k is not None:
        return _shape(args[k], shapes) if k < len(args) else None
    if isinstance(p, (C.HoistedShape, C.NewAccumulator, C.AccumulateAt)):
        return _shape(args[0], shapes)
    name = p.name
    if name in ("ReductionSeed", "MeanSeed"):
        return ()
    if name in ("Cast", "CastLike"):
        return _shape(args[0], shapes)
    if name == "TransposeT":
        x = _shape(args[0], shapes)
        return None if x is None else x[::-1]
    if name == "Transpose":
        x, perm = _shape(args[0], shapes), _known(args[1], values)
        ok = x is not None and type(perm) is tuple and sorted(perm) == list(range(len(x)))
        return tuple(x[k] for k in perm) if ok else None
    if name == "Reshape":
        return _reshaped(_shape(args[0], shapes), _known(args[1], values))
    if name in ("Zeros", "Ones"):      # of a shape known while compiling
        dims = _known(args[0], values)
        dims = (dims,) if type(dims) is int else dims
        ok = type(dims) is tuple and all(type(d) is int and d >= 0 for d in dims)
        return dims if ok else None
    if name == "Shape":
        # a Python tuple, no array: ``+`` and ``*`` on it join and repeat, so it has no
        # shape that broadcasting could use (its value serves indexing and integers)
        x = _shape(args[0], shapes)
        if x is not None:
            values[op.outs[0].id] = x
        return None
    if name == "GetItem":
        if isinstance(args[0], Var) and args[0].id in values:
            return () if op.outs[0].id in values else None
        return _indexed(_shape(args[0], shapes), args[1], values)
    if isinstance(p, M.MatMulExt):
        return _matmul(_shape(args[0], shapes), _shape(args[1], shapes))
    if name in ("Stack", "Concat"):
        return _joined(name, p.axis, args[0], shapes)
    if isinstance(p, M._Reduce):
        return _reduced(_shape(args[0], shapes), args[1] if len(args) > 1 else Const(()),
                        p.keep_dims)
    if p.elementwise:
        found = [_shape(a, shapes) for a in args]
        if None in found:
            return None
        full = {f for f in found if f}
        if len(full) <= 1:      # one shape, and numbers (most ops): no broadcasting to work out
            return full.pop() if full else ()
        try:
            return np.broadcast_shapes(*found)
        except ValueError:
            return None
    return None


def _shape(a, shapes):
    """A Var's known shape, a constant's, or None."""
    if isinstance(a, Var):
        return shapes.get(a.id)
    if isinstance(a, Const):
        v = a.value
        if type(v) in (int, float, bool, complex) or isinstance(v, (np.ndarray, np.generic)):
            return np.shape(v)
    return None


def _known(a, values):
    """A constant's value or a Var's known small value (tuples of them too); ``UNKNOWN``
    when not known."""
    if isinstance(a, Const):
        return a.value
    if isinstance(a, Var):
        return values.get(a.id, UNKNOWN)
    if isinstance(a, tuple):
        parts = tuple(_known(x, values) for x in a)
        return UNKNOWN if any(x is UNKNOWN for x in parts) else parts
    return UNKNOWN


def _indexed(shape, index, values):
    """The shape of ``x[index]`` for a basic index (ints, slices, None, ``...``)."""
    if shape is None:
        return None
    index = _known(index, values)
    if index is INT:
        index = 0       # x[i] has the shape of x[0] for every valid int i
    elif type(index) is tuple:
        index = tuple(0 if p is INT else p for p in index)
    parts = index if type(index) is tuple else (index,)
    if not all(p is None or p is Ellipsis or type(p) in (int, slice) for p in parts):
        return None
    if any(type(p) is slice and not all(b is None or type(b) is int
                                        for b in (p.start, p.stop, p.step)) for p in parts):
        return None
    try:
        return np.broadcast_to(np.empty((), np.int8), shape)[index].shape
    except (IndexError, ValueError, TypeError):
        return None


def _reshaped(shape, dims):
    """The shape ``x.reshape(dims)`` has (one -1 at most), or None."""
    dims = (dims,) if type(dims) is int else dims
    if shape is None or type(dims) is not tuple or not all(type(d) is int for d in dims):
        return None
    size = int(np.prod(shape, dtype=np.int64))
    free = [k for k, d in enumerate(dims) if d == -1]
    rest = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
    if len(free) > 1 or any(d < -1 for d in dims):
        return None
    if free:
        if rest == 0 or size % rest:
            return None
        return tuple(size // rest if d == -1 else d for d in dims)
    return dims if rest == size else None


def _matmul(a, b):
    """``a @ b``'s shape under NumPy's matmul rules, or None."""
    if a is None or b is None or not a or not b:
        return None
    a2 = a if len(a) > 1 else (1,) + a
    b2 = b if len(b) > 1 else b + (1,)
    if a2[-1] != b2[-2]:
        return None
    try:
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        return None
    out = batch + (a2[-2], b2[-1])
    if len(b) == 1:
        out = out[:-1]
    if len(a) == 1:
        out = out[:-2] + out[-1:] if len(b) > 1 else out[:-1]
    return out


def _unstacked(op, shapes):
    """The shapes of ``Unstack``'s outputs: ``x`` without ``axis``, ``num`` of them."""
    x, axis = _shape(op.args[0], shapes), op.prim.axis
    if not x or not -len(x) <= axis < len(x) or x[axis] != len(op.outs):
        return None
    k = axis % len(x)
    return [x[:k] + x[k + 1:]] * len(op.outs)


def _split(op, shapes):
    """The shapes of ``SplitLike``'s outputs (a concatenation's adjoint): those of
    ``likes``, when they join to ``x``'s shape."""
    x, likes, axis = _shape(op.args[0], shapes), op.args[1], op.prim.axis
    if x is None or type(likes) is not tuple or len(likes) != len(op.outs) \
            or _joined("Concat", axis, likes, shapes) != x:
        return None
    return [_shape(a, shapes) for a in likes]


#: ops of several outputs (one, too, for some counts), by name: their outputs' shapes
_PIECES = {"Unstack": _unstacked, "SplitLike": _split}


def _joined(name, axis, parts, shapes):
    """The shape of ``np.stack(parts, axis)`` or ``np.concatenate(parts, axis)``
    (``parts`` a tuple of values of known shapes), or None."""
    if type(parts) is not tuple or not parts or type(axis) is not int:
        return None
    found = [_shape(a, shapes) for a in parts]
    if any(f is None for f in found) or len({len(f) for f in found}) != 1:
        return None
    n = len(found[0])
    if name == "Stack":
        if len(set(found)) != 1 or not -(n + 1) <= axis <= n:
            return None
        k = axis % (n + 1)
        return found[0][:k] + (len(found),) + found[0][k:]
    if not n or not -n <= axis < n:
        return None
    k = axis % n
    if len({f[:k] + f[k + 1:] for f in found}) != 1:
        return None
    return found[0][:k] + (sum(f[k] for f in found),) + found[0][k + 1:]


def _reduced(shape, axis, keep_dims):
    """The shape of a reduction of ``shape`` over the constant ``axis`` (``()``: all)."""
    if shape is None or not isinstance(axis, Const):
        return None
    ax = axis.value
    n = len(shape)
    if ax is None or ax == ():
        axes = set(range(n))
    else:
        items = ax if isinstance(ax, (tuple, list)) else (ax,)
        if not all(type(i) is int and -n <= i < n for i in items):
            return None
        axes = {i % n for i in items}
        if len(axes) != len(items):     # an axis twice: NumPy refuses
            return None
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)
