"""Structured control-flow ops and the stack ops reverse mode records with.

These are not primitives of the user's program: they own regions (``If``,
``While``, ``ForRange``) or manage the per-iteration values a backward sweep
reads (``NewStack``, ``StackPush``, ``StackPop``).  Codegen writes each as the
Python statement it stands for, so control flow reads back as ``if``/``for``/
``while``.
"""
import types

from .primitive import Primitive
from .nodes import map_structure


class ControlOp(Primitive):
    """Base: not differentiated by a rule, written by codegen as a statement."""
    differentiable = False

    def emit(self, *args):
        raise TypeError("%s is written as a statement by codegen" % self.name)


class If(ControlOp):
    """``outs = then.result if args[0] else orelse.result``; regions ``(then, orelse)``."""


class While(ControlOp):
    """Loop-carried values: ``args`` initial, ``outs`` final; regions ``(cond, body)``.

    ``cond.params`` and ``body.params`` bind the carried values; ``cond.result``
    is ``(test,)``; ``body.result`` the next carried values.
    """


class ForRange(ControlOp):
    """``for i in range(start, stop, step)``: args ``(start, stop, step, *init)``.

    ``body.params`` is ``(i, *carried)``; ``reverse=True`` iterates the same
    range backwards (the backward sweep of a forward loop).
    """

    def __init__(self, reverse=False):
        super().__init__(reverse=bool(reverse))


class NewStack(ControlOp):
    """A fresh list that a loop's forward sweep pushes per-iteration values onto."""
    stateful = True


class StackPush(ControlOp):
    """``stack.append((values...))`` (no outputs)."""
    stateful = True
    num_outputs = 0


class StackPop(ControlOp):
    """``values... = stack.pop()``: rebinds the very Vars that were pushed."""
    stateful = True


class StackRows(ControlOp):
    """``rt.stack_rows(stack, slots, *operands)``: slots of every pushed entry, as rows.

    One output per slot (see ``opt/batch.py``); ``slots`` is ``None`` when the
    loop pushes a single value (not a tuple).  ``operands`` are the other
    values the batched ops read, whose rank decides whether rows may stack.
    """

    def __init__(self, slots):
        super().__init__(slots=None if slots is None else tuple(slots))

    def emit(self, stack, *operands):
        slots = self.slots
        if slots is not None and len(slots) == 1:
            slots = slots[0]
        return "rt.stack_rows(%s)" % ", ".join([stack, repr(slots)] + list(operands))


class RowGroup(ControlOp):
    """``group, pays = rt.row_group(*rows)``: the values' rows, read together
    (``RowsAt``) where ``pays``."""

    def emit(self, *rows):
        return "rt.row_group(%s)" % ", ".join(rows)


class RowsAt(ControlOp):
    """``group[len(stack)]``: right after a pop, the popped entry's row of each
    value of a ``RowGroup``, one output each (one value: its row)."""

    def emit(self, group, stack):
        return "%s[len(%s)]" % (group, stack)


class InBatch(ControlOp):
    """An op of a batched tangent program (``ad/batching.py``): its arguments
    flagged in ``flags`` carry a leading axis of basis vectors.

    Written as ``xp.<ufunc>(*rt.batch_aligned(flags, ...))`` for an
    elementwise op, else as the call ``call(..., flags)`` of a helper of
    ``runtime/rt_batch.py`` (``flags`` left out where the helper has one case).
    """

    def __init__(self, flags, ufunc=None, call=None, with_flags=True, of=None):
        super().__init__(flags=tuple(flags), ufunc_name=ufunc, call=call,
                         with_flags=with_flags)
        if of is not None:      # values are named after the op batched (``mul_y``)
            self.name = of

    def emit(self, *args):
        flags = repr(tuple(self.flags))
        if self.ufunc_name is not None:
            return "xp.%s(*rt.batch_aligned(%s))" % (self.ufunc_name,
                                                     ", ".join((flags,) + args))
        return "%s(%s)" % (self.call, ", ".join(args + ((flags,) if self.with_flags else ())))


class CheckDefined(Primitive):
    """Identity that raises a clear error if a maybe-undefined variable is unset."""
    linearity = "linear"   # an identity (Taylor mode passes its jets through)
    view = True
    output_shape_of = 0

    def __init__(self, name, lineno, filename):
        super().__init__(var_name=name, lineno=lineno, filename=filename)

    def emit(self, x):
        return "rt.check_defined(%s, %r, %r, %r)" % (x, self.var_name, self.lineno, self.filename)


class Not(Primitive):
    """Python ``not x`` on a runtime condition (no gradient)."""
    differentiable = False

    def emit(self, x):
        return "not %s" % x


class PyMin(Primitive):
    """Python ``min(a, b)`` of two loop bounds (no gradient)."""
    differentiable = False

    def emit(self, a, b):
        return "min(%s, %s)" % (a, b)


class MakeSlice(Primitive):
    """``slice(start, stop, step)`` whose bounds are runtime values (no gradient)."""
    differentiable = False

    def emit(self, start, stop, step):
        return "slice(%s, %s, %s)" % (start, stop, step)


class Copy(Primitive):
    """``y = x``: binds a function's parameter to its argument when a gradient is inlined."""
    linearity = "linear"
    view = True
    output_shape_of = 0

    def emit(self, x):
        return x


class CustomBprop(Primitive):
    """A Cell call whose gradient is the Cell's own ``bprop``.

    The op's one region holds the inlined ``construct`` (what runs forward);
    reverse mode calls ``cell.bprop(*inputs, out, dout)`` instead of
    differentiating the region.  Written by codegen as the region's code.

    ``structure`` is construct's return value with ``None`` leaves: the op's
    outputs are its flat leaves, and ``out``/``dout`` are rebuilt with it so
    the bprop sees them nested as construct returned them.  ``builder`` is
    the builder that inlined construct: the bprop is inlined later by
    another one, and the ``self`` attributes it reads (Tensors, Parameters)
    must become runtime inputs of the same program, with the same guards.
    """
    taylor = "nested"   # has a region: Taylor mode takes no control flow

    def __init__(self, cell, path, structure, builder):
        super().__init__(cell_class=type(cell).__name__)
        self.cell = cell
        self.path = path
        self.structure = structure
        self.inputs = builder.inputs
        self.guards = builder.guards

    def key(self):
        return (type(self), id(self.cell), self.structure)

    def nest(self, flat):
        """``flat`` (one item per output) in the nesting construct returned."""
        it = iter(flat)
        return map_structure(lambda _: next(it), self.structure)

    def emit(self, *args):
        raise TypeError("CustomBprop is written as a statement by codegen")


class InRange(Primitive):
    """Whether a ``range`` index ``i`` has not passed ``stop`` (step's sign known at run time)."""
    differentiable = False

    def emit(self, i, stop, step):
        return "(%s < %s if %s > 0 else %s > %s)" % (i, stop, step, i, stop)


class PyCast(Primitive):
    """``int(x)`` / ``float(x)`` / ``bool(x)`` of a runtime value (no gradient)."""
    differentiable = False

    def __init__(self, to):
        super().__init__(to=to)

    def emit(self, x):
        return "%s(%s)" % (self.to, x)


class NewAccumulator(Primitive):
    """A fresh zero array shaped like ``x`` that a backward loop adds into in place.

    Stateful, so no pass ever merges two of them into one shared array.
    """
    stateful = True
    differentiable = False

    def emit(self, x):
        return "xp.zeros_like(%s)" % x


class AccumulateAt(Primitive):
    """``acc[index] += d`` in place, returning ``acc``: a loop's gradient of ``x[i]``.

    Adding each iteration's slice gradient into the accumulator costs the
    slice's size, where materialising a full-size gradient per iteration
    would cost the whole array's.
    """
    taylor = "nested"   # stateful: Taylor mode takes no stateful op
    stateful = True

    def emit(self, acc, index, d):
        return "rt.accumulate_at(%s, %s, %s)" % (acc, index, d)


class HoistedShape(Primitive):
    """``rt.ShapeOf(x)``: what a loop pushes when the backward sweep reads only x's shape."""
    differentiable = False

    def emit(self, x):
        return "rt.ShapeOf(%s)" % x


class PyFloat(Primitive):
    """``float(x)``: a 0-d float64 input run as a Python float (``opt/floats.py``)."""
    differentiable = False

    def emit(self, x):
        return "float(%s)" % x


class ToFloat64(Primitive):
    """``np.float64(x)``: a result that may be a Python float, returned as NumPy's scalar."""
    differentiable = False

    def emit(self, x):
        return "xp.float64(%s)" % x


class CheckGradShape(Primitive):
    """Identity on a user rule's gradient that first checks it has its input's shape."""
    taylor = "nested"   # a user bprop's output, not classified for Taylor mode
    output_shape_of = 1
    shape_only_inputs = (1,)

    def __init__(self, rule, position):
        super().__init__(rule=rule, position=int(position))

    def emit(self, g, x):
        return "rt.check_grad_shape(%s, %s, %r, %d)" % (g, x, self.rule, self.position)


class CallGenerated(ControlOp):
    """``outs = <func>(*args)``: a call that outlining gave a generated function of its own.

    ``func`` is the ``Func`` (a user function's forward ops, or its adjoint's);
    codegen names it ``<callee>_fwd`` / ``<callee>_bwd`` and writes it once.
    """
    stateful = True

    def __init__(self, func, frame, side):
        super().__init__(callee=frame.name, side=side)
        self.func = func
        self.frame = frame
        self.first = None       # the first op outlined (where the backward sweep starts)
        self.fname = None       # the generated function's name, given by codegen

    def key(self):
        return (type(self), id(self.func))


class RecursionGroup:
    """A user function whose recursion depth is decided at run time.

    The frontend builds its body once (``func``, over fresh parameters) and
    each call of it, from outside or from inside itself, is a
    ``RecursiveCall`` op: a real Python call of a generated function, so the
    depth is whatever the run makes it.  AD adds the derivative programs
    (``fwd``/``bwd`` for reverse mode: the forward returns the residuals the
    backward reads; ``jvp`` for forward mode); the driver compiles each.
    """

    def __init__(self, name, loc):
        self.name = name
        self.loc = loc
        self.func = None        # the body: params -> result
        self.template = None    # the result's structure (tuples of leaves)
        self.fwd = self.bwd = self.jvp = None      # derivative Funcs, made by AD
        self.maybe_undefined = ()   # fwd residuals only some branch defines
        self.compiled = {}      # mode -> (source, generated Python function)
        self.runtime = types.SimpleNamespace()     # what generated code calls: .call, .fwd, ...


class RecursiveCall(ControlOp):
    """``outs = <group>.<mode>(*args)``: a call of a runtime-recursive function.

    ``mode`` ``"call"``: the function itself (args: its runtime arguments then
    the runtime inputs it reads); ``"fwd"``: the same, returning the residual
    tuple as last output; ``"bwd"``: ``(residual, *douts)`` -> one gradient
    per argument; ``"jvp"``: ``(*args, *tangents)`` -> ``(*outs, *t_outs)``.
    """
    stateful = True

    def __init__(self, group, mode):
        super().__init__(callee=group.name, mode=mode)
        self.group = group

    def key(self):
        return (type(self), id(self.group), self.mode)
