"""0-d float64 values as Python floats, where nothing can tell them apart.

A loop of scalar steps (an ODE integrator) spends most of its time in NumPy's
scalar arithmetic: ``np.float64(a) * np.float64(b)`` costs several times
``a * b`` on Python floats, which hold the same IEEE double and round each
of ``+ - *`` identically.  So a 0-d float64 input (``np.float64``, or an
array of shape ``()`` and dtype float64: specs make both known while
compiling) enters the generated code as ``float(x)``, and a zero or one
shaped like such a value (an accumulator, a seed) is the number itself --
when every op the value reaches behaves the same on a Python float:

- ``+``, ``-``, ``*`` and negation whose other operands are 0-d float64
  values too, or Python numbers.  NumPy 2 promotes ``np.float64 * x_f32``
  to float64 but ``float * x_f32`` to float32, so an operand of unknown
  dtype keeps the NumPy scalar; so does ``/`` (a Python float divided by
  zero raises where NumPy gives ``inf``) and ``**`` (a negative base gives
  a complex number);
- a unary ufunc written ``xp.<ufunc>(x)`` (``np.sin(1.0)`` is
  ``np.sin(np.float64(1.0))``, a NumPy scalar again);
- being pushed and popped, carried by a loop or an ``if``, returned.

Any other reader (a method call, a helper, an array operand) leaves that
input or zero as it was.  The results a call returns go through
``np.float64`` again, so what a caller sees keeps its type.
"""
import numpy as np

from ..ir.nodes import Const, Op, Var, leaves, substitute, walk_ops
from ..runtime import UNDEFINED
from .scalars import known_scalars
from .shapes import _replace_block

_NUMBERS = (int, float, np.float64)
_ARITHMETIC = ("Add", "Sub", "Mul", "Neg")
# zeros and ones shaped like a value (an adjoint's accumulator, a seed)
_FILLS = ("ZerosLike", "OnesLike", "NewAccumulator")


def python_floats(func):
    """Run the 0-d float64 inputs, zeros and ones that only meet such values as floats."""
    from ..ir.control import ToFloat64
    if not func.float64_ids:
        return func
    f64 = float64_values(func)
    flow = _Flow(func, f64)
    inputs = [p for p in func.params if p.id in func.float64_ids and flow.safe_from(p.id)]
    fills = {op.outs[0].id: 1.0 if op.prim.name == "OnesLike" else 0.0
             for op in walk_ops(func.body)
             if op.prim.name in _FILLS and op.outs[0].id in f64
             and flow.safe_from(op.outs[0].id)}
    if not inputs and not fills:
        return func
    if fills:
        subst = {}
        _replace_block(func.body, subst, lambda op: Const(fills[op.outs[0].id])
                       if op.outs and op.outs[0].id in fills else None)
        func.result = substitute(func.result, subst)
        _drop(func, set(fills))
    converted = []
    for p in inputs:
        raw = Var(p.hint)
        func.params[func.params.index(p)] = raw
        converted.append(Op(_py_float(), [raw], [p], func.loc))
    func.body = converted + func.body
    if func.backward_start is not None:
        func.backward_start += len(converted)
    reached = flow.reach([p.id for p in inputs] + list(fills))
    func.result = _as_float64(func, func.result, reached, ToFloat64)
    return func


def _drop(func, ids):
    """Remove the ops making ``ids`` (stateful accumulators, which ``dce`` keeps)."""
    def keep(ops):
        out = []
        for op in ops:
            if op.outs and op.outs[0].id in ids:
                continue
            for r in op.regions:
                r.ops = keep(r.ops)
            out.append(op)
        return out
    start = func.backward_start
    if start is not None:
        func.backward_start = len(keep(func.body[:start]))
    func.body = keep(func.body)


def _py_float():
    from ..ir.control import PyFloat
    return PyFloat()


def _as_float64(func, result, reached, prim):
    """``result`` with each leaf that may now be a Python float read through ``np.float64``."""
    if isinstance(result, tuple):
        return tuple(_as_float64(func, r, reached, prim) for r in result)
    if isinstance(result, Var) and result.id in reached:
        out = Var(result.hint)
        func.body.append(Op(prim(), [result], [out], func.loc))
        return out
    return result


def float64_values(func):
    """Ids of the Vars proven 0-d float64 (a greatest fixed point over the whole program)."""
    zero_d = known_scalars(func)
    defs = {}                                   # var id -> list of (kind, op, args)
    for op in walk_ops(func.body):
        _definitions(op, defs)
    f64 = _Float64({i for i in zero_d if i in defs or i in func.float64_ids})
    from ..ir.control import ForRange
    f64.indices = {op.regions[-1].params[0].id for op in walk_ops(func.body)
                   if isinstance(op.prim, ForRange) and op.regions[-1].params}
    changed = True
    while changed:
        changed = False
        for i in list(f64):
            if i in func.float64_ids:
                continue
            if not all(_defines_f64(d, f64) for d in defs[i]):
                f64.discard(i)
                changed = True
    return f64


def _definitions(op, defs):
    """Record, for each value ``op`` binds, what it is computed from."""
    from ..ir import control as C
    if isinstance(op.prim, (C.ForRange, C.While)):
        init = op.args[3:] if isinstance(op.prim, C.ForRange) else op.args
        body = op.regions[-1]
        for k in range(len(init)):
            sources = [init[k], body.result[k]] if k < len(body.result) else [None]
            for r in op.regions:
                carried = r.params[len(r.params) - len(init):]
                if k < len(carried):
                    defs.setdefault(carried[k].id, []).append(("copy", sources))
            if k < len(op.outs):
                defs.setdefault(op.outs[k].id, []).append(("copy", sources))
    elif isinstance(op.prim, C.If):
        for k, o in enumerate(op.outs):
            defs.setdefault(o.id, []).append(
                ("copy", [r.result[k] if k < len(r.result) else None for r in op.regions]))
    elif isinstance(op.prim, C.StackPop):
        pass        # rebinds the pushed Vars: their own definitions hold
    elif len(op.outs) == 1 and not op.regions:
        defs.setdefault(op.outs[0].id, []).append(("op", op))
    else:
        for o in op.outs:
            defs.setdefault(o.id, []).append(("opaque", None))


def _defines_f64(d, f64):
    kind, what = d
    if kind == "copy":     # a loop's value first bound in its body starts UNDEFINED, never read
        return all(_is_f64(a, f64) or isinstance(a, Const) and a.value is UNDEFINED
                   for a in what)
    if kind == "op":
        return _f64_op(what, f64)
    return False


class _Float64(set):
    """Ids of 0-d float64 values; ``indices``: those of ``for`` loops' indices (Python
    ints, which a float64 value may meet: ``t0 + i * h``)."""
    indices = frozenset()


def _arithmetic(op, f64):
    """``op`` (``+ - *``, negation) computes a 0-d float64 value from 0-d float64 values,
    numbers and loop indices, at least one a float64 value."""
    ok = [_is_f64(a, f64) or isinstance(a, Var) and a.id in f64.indices for a in op.args]
    return all(ok) and any(isinstance(a, Var) and a.id in f64 for a in op.args)


def _is_f64(a, f64):
    if isinstance(a, Var):
        return a.id in f64
    return isinstance(a, Const) and type(a.value) in _NUMBERS


def _f64_op(op, f64):
    """Whether ``op`` (all operands 0-d float64 or numbers) yields a 0-d float64 value
    whether its Var operands are NumPy or Python floats."""
    name = op.prim.name
    if name in _ARITHMETIC:
        return _arithmetic(op, f64)
    if name in _FILLS:
        return _is_f64(op.args[0], f64)
    return _unary_ufunc(op) and _is_f64(op.args[0], f64)


def _unary_ufunc(op):
    """A one-argument ufunc call whose float64 result follows its float input (a
    differentiable one: no ``isnan``-like predicate, whose result is a bool)."""
    u = op.prim.ufunc
    return (u is not None and len(op.args) == 1 and op.prim.elementwise
            and op.prim.differentiable and op.prim.emit("a") == "xp.%s(a)" % u)


class _Flow:
    """Which values each value reaches, and whether every reader takes a Python float."""

    def __init__(self, func, f64):
        from ..ir import control as C
        self.f64 = f64
        self.readers = {}           # var id -> list of (op, ids the op binds from it)
        # pushed slots ``rt.stack_rows`` gathers into arrays: a Python float there
        # would meet the batched ops' other operands unseen
        self.rows = {}
        for op in walk_ops(func.body):
            if isinstance(op.prim, C.StackRows):
                slots = op.prim.slots
                self.rows.setdefault(op.args[0].id, set()).update(slots or (0,))
        for op in walk_ops(func.body):
            self._index(op, C)
        for v in leaves(func.result):
            if isinstance(v, Var):
                self.readers.setdefault(v.id, []).append((None, ()))

    def _index(self, op, C):
        if isinstance(op.prim, (C.ForRange, C.While)):
            init = op.args[3:] if isinstance(op.prim, C.ForRange) else op.args
            body = op.regions[-1]
            for k, a in enumerate(init):
                bound = [r.params[len(r.params) - len(init) + k].id for r in op.regions] \
                    + ([op.outs[k].id] if k < len(op.outs) else [])
                if isinstance(a, Var):
                    self.readers.setdefault(a.id, []).append((op, bound))
                if k < len(body.result) and isinstance(body.result[k], Var):
                    self.readers.setdefault(body.result[k].id, []).append((op, bound))
            for a in op.args[:len(op.args) - len(init)]:
                if isinstance(a, Var):
                    self.readers.setdefault(a.id, []).append((op, None))
            self._region_tests(op, C)
        elif isinstance(op.prim, C.If):
            if isinstance(op.args[0], Var):
                self.readers.setdefault(op.args[0].id, []).append((op, ()))
            for r in op.regions:
                for k, v in enumerate(r.result):
                    if isinstance(v, Var):
                        bound = [op.outs[k].id] if k < len(op.outs) else None
                        self.readers.setdefault(v.id, []).append((op, bound))
        elif isinstance(op.prim, C.StackPush):
            gathered = self.rows.get(op.args[0].id, ())
            for k, a in enumerate(op.args[1:]):
                if isinstance(a, Var):
                    self.readers.setdefault(a.id, []).append((op, None if k in gathered else ()))
        elif isinstance(op.prim, C.StackPop):
            pass
        else:
            takes = _takes_floats(op, self.f64)
            for v in op.arg_vars():
                self.readers.setdefault(v.id, []).append(
                    (op, [o.id for o in op.outs] if takes else None))

    def _region_tests(self, op, C):
        """A ``while``'s test reads its carried values as any op would (see ``_index``)."""
        if isinstance(op.prim, C.While):
            for v in leaves(op.regions[0].result):
                if isinstance(v, Var):
                    self.readers.setdefault(v.id, []).append((op, None))

    def reach(self, ids):
        """Every value computed from ``ids`` (themselves included)."""
        seen, todo = set(ids), list(ids)
        while todo:
            for _op, bound in self.readers.get(todo.pop(), ()):
                for b in bound or ():
                    if b not in seen:
                        seen.add(b)
                        todo.append(b)
        return seen

    def safe_from(self, start):
        """Whether every value computed from ``start`` is read only by readers that take
        a Python float (an op reading one computes a 0-d float64 value: ``_takes_floats``;
        a returned one is proven 0-d float64, so ``np.float64`` gives it back as it was)."""
        for i in self.reach([start]):
            for op, bound in self.readers.get(i, ()):
                if bound is None or op is None and i not in self.f64:
                    return False
        return True


def _takes_floats(op, f64):
    """Whether ``op`` gives the same value for Python-float operands as for NumPy ones."""
    if op.regions or len(op.outs) != 1 or op.outs[0].id not in f64:
        return False
    if op.prim.name in _ARITHMETIC:
        return _arithmetic(op, f64)
    if op.prim.name in _FILLS:
        return _is_f64(op.args[0], f64)
    return _unary_ufunc(op) and _is_f64(op.args[0], f64)
