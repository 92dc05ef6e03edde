"""0-d values known while compiling, and the shape work they make unnecessary.

A NumPy-scalar input (spec ``npscalar``: ``np.float64(2.0)``) is 0-d at every
call its compiled code serves, and so is a Python number constant, a loop's
index, an item of a shape, an elementwise op of 0-d operands, a full
reduction, a scalar loss's seed and a zero or copy shaped like a 0-d value.  Scalar code (an ODE stepped in a loop) then needs
none of the shape bookkeeping reverse mode writes for arrays:
``unbroadcast(d, x)`` and ``broadcast_like(d, x)`` of two 0-d values are
``d``, and a loop's ``accumulate_at(acc, ..., d)`` into a 0-d accumulator is
``acc + d``.  With those gone, the ``rt.ShapeOf`` a loop pushed for them is
unread, and ``prune_stack_slots`` drops it from the push.

A real ``np.ndarray`` of shape ``()`` is 0-d too: its spec is
``("array", "0-d", dtype)``, compiled apart from arrays of other shapes.
"""
import numpy as np

from ..ir import control as C
from ..ir.nodes import Var, Const, substitute, walk_ops
from ..ops.operations import array_ops as A
from ..ops.operations import math_ops as M
from .shapes import _replace_block


def scalar_shapes(func):
    """Drop broadcasts between 0-d values and checks that a 0-d output is one element;
    accumulate 0-d gradients by addition."""
    known = known_scalars(func)
    if not known:
        return func

    def zero_d(a):
        return isinstance(a, Var) and a.id in known

    def replacement(op):
        """The value ``op`` computes again, or None."""
        if isinstance(op.prim, (A.Unbroadcast, A.BroadcastLike)) and \
                zero_d(op.args[0]) and zero_d(op.args[1]):
            return op.args[0]
        return None

    subst = {}
    _replace_block(func.body, subst, replacement)
    func.result = substitute(func.result, subst)
    _drop_scalar_checks(func, zero_d)
    for op in walk_ops(func.body):
        acc, index, d = op.args if isinstance(op.prim, C.AccumulateAt) else (None, None, None)
        if zero_d(acc) and zero_d(d) and isinstance(index, Const) and index.value is Ellipsis:
            op.prim, op.args = M.Add(), [acc, d]     # a new 0-d value, no array to add into
    return func


def _drop_scalar_checks(func, zero_d):
    """Drop the run-time checks that an output has one element where it is known 0-d
    (made at top level, in the forward sweep: ``driver/nested.py``)."""
    keep = [not (op.prim.name == "CheckScalarOutput" and zero_d(op.args[0]))
            for op in func.body]
    if all(keep):
        return
    if func.backward_start is not None:
        func.backward_start = sum(keep[:func.backward_start])
    func.body = [op for op, k in zip(func.body, keep) if k]


def known_scalars(func):
    """Ids of the Vars proven 0-d (values, and ``rt.ShapeOf`` of 0-d values).

    Starts from ``func.scalar_ids`` (the 0-d inputs) and follows
    the program in order.  A loop-carried value is 0-d when its initial value
    is and the loop body, assuming so, yields a 0-d value for it again; an
    ``if``'s result when both branches yield 0-d values.
    """
    known = set(func.scalar_ids)
    _scan(func.body, known, {})
    return known


def _scan(ops, known, pushed):
    """Add to ``known`` the 0-d values ``ops`` make; ``pushed``: stack id -> pushed values."""
    for op in ops:
        if isinstance(op.prim, (C.ForRange, C.While)):
            _loop(op, known, pushed)
        elif isinstance(op.prim, C.If):
            for r in op.regions:
                _scan(r.ops, known, pushed)
            if all(len(r.result) == len(op.outs) for r in op.regions):
                known.update(o.id for k, o in enumerate(op.outs)
                             if all(_zero_d(r.result[k], known) for r in op.regions))
        elif isinstance(op.prim, C.StackPush):
            pushed[op.args[0].id] = op.args[1:]
        elif isinstance(op.prim, C.StackPop):
            values = pushed.get(op.args[0].id, ())
            if len(values) == len(op.outs):
                known.update(o.id for o, v in zip(op.outs, values) if _zero_d(v, known))
        elif len(op.outs) == 1 and not op.regions and _makes_0d(op, known):
            known.add(op.outs[0].id)
        elif len(op.outs) == 1 and op.prim.name == "Shape":
            known.add(("shape", op.outs[0].id))     # a tuple: its int items are 0-d


def _loop(op, known, pushed):
    """A loop's 0-d values, assuming fewer carried values 0-d until the body agrees."""
    body = op.regions[-1]
    init = op.args[3:] if isinstance(op.prim, C.ForRange) else op.args
    if len(body.result) != len(init) or len(op.outs) != len(init):
        return      # not the shape of loop this reasons about: assume nothing
    assumed = [k for k, a in enumerate(init) if _zero_d(a, known)]
    while True:
        trial, trial_pushed = set(known), dict(pushed)
        for r in op.regions:
            carried = r.params[len(r.params) - len(init):]
            trial.update(carried[k].id for k in assumed)
            if isinstance(op.prim, C.ForRange):
                trial.add(r.params[0].id)       # the index, a Python int
            _scan(r.ops, trial, trial_pushed)
        held = [k for k in assumed if _zero_d(body.result[k], trial)]
        if held == assumed:
            break
        assumed = held
    known |= trial
    pushed.update(trial_pushed)
    known.update(op.outs[k].id for k in assumed)


def _makes_0d(op, known):
    """Whether the single-output, region-free ``op`` makes a 0-d value from what is known."""
    p, args = op.prim, op.args
    k = p.output_shape_of
    if k is not None:
        return k < len(args) and _zero_d(args[k], known)
    if isinstance(p, (C.HoistedShape, C.NewAccumulator, C.AccumulateAt)):
        return _zero_d(args[0], known)
    if p.name in ("ReductionSeed", "MeanSeed"):     # a scalar loss's seed
        return True
    if p.name == "GetItem" and isinstance(args[0], Var) and ("shape", args[0].id) in known:
        return isinstance(args[1], Const) and type(args[1].value) is int   # a Python int
    if isinstance(p, M._Reduce):      # a reduction over every axis, without keeping them
        axis = args[1] if len(args) > 1 else Const(())
        every = isinstance(axis, Const) and (axis.value is None or isinstance(axis.value, tuple) and not axis.value)
        return every and not p.keep_dims
    return p.elementwise and all(_zero_d(a, known) for a in args)


def _zero_d(a, known):
    """A Var proven 0-d, or a constant number."""
    if isinstance(a, Var):
        return a.id in known
    return isinstance(a, Const) and (type(a.value) in (int, float, bool, complex) or
                                     isinstance(a.value, (np.number, np.bool_)))
