"""Writing Parameters: ``self.w = value`` and ``ops.assign(self.w, value)`` in compiled code.

MindSpore's graph mode lets ``construct`` assign to a Parameter attribute,
with the meaning of ``ops.assign(self.w, value)``.  The builder does it in two
halves: for the rest of the trace, reads of the Parameter (through any path:
``self.w``, a sub-Cell's own ``self.w``) give the assigned value, an SSA value
like any other, so gradients flow through it; and a ``WriteParameter`` op,
run on every call, stores the value in the Parameter.  The write replaces the
Parameter's array instead of writing into it, so the array read before the
assignment, which a backward sweep may still read, keeps its value.

Other attributes (a Python number, a cached tensor) cannot change inside
compiled code: their values are what the code was specialised on.
"""
from ..errors import CompileError
from ..ir.nodes import Var, Const
from ..ops.operations import array_ops as A
from ..ops.operations import runtime_ops as R
from . import resolve
from .values import freeze, is_const, const_value


class ParameterWrites:
    """Mixin of ``Builder``: assignments that write Parameters.

    ``written`` maps the id of a Parameter's input Var to the value assigned
    to it last, ``stored_of`` such a value's id back to that Var.
    """

    def written_value(self, value):
        """The value last assigned to the Parameter ``value`` in this trace, else ``None``."""
        if not self.written:
            return None
        var = self.inputs.var_of(value)
        return self.written.get(var.id) if var is not None else None

    def assign_attribute(self, target, value, scope):
        """``obj.name = value``: allowed when ``obj.name`` is a Parameter (``ops.assign``)."""
        from ..tensor import Parameter
        loc = scope.info.loc(target)
        owner = self.eval(target.value, scope)
        current = getattr(owner.value, target.attr, None) if isinstance(owner, Const) else None
        if not isinstance(current, Parameter):
            what = ("holds a value of type %s" % type(current).__name__) \
                if isinstance(owner, Const) and hasattr(owner.value, target.attr) \
                else "is not a Parameter"
            raise CompileError(
                "cannot assign to the attribute '%s' inside compiled code: it %s; only a "
                "Parameter attribute can be assigned (as ops.assign)" % (target.attr, what),
                loc, hint="keep state that changes in a Parameter (self.%s = Parameter(...) in "
                          "__init__), or compute the value in a local variable and return it"
                          % target.attr)
        path = resolve.child_path(owner, target.attr)
        if path is not None:
            self.guards.record(path, current)
        self.write_parameter(self.inputs.var_for(current, path), value, loc)

    def write_parameter(self, variable, value, loc):
        """Stage ``ops.assign(variable, value)``; the Parameter's new value (an SSA value)."""
        data = self.stored_of.get(variable.id, variable) if isinstance(variable, Var) else None
        handle = self.inputs.handle_for(data) if data is not None else None
        if handle is None or not _is_parameter_type(self.inputs.type_of(data)):
            raise CompileError("ops.assign writes into a Parameter: its first argument must be "
                               "one (such as self.weight)", loc)
        if self.region_depth:
            raise CompileError(
                "a Parameter can be assigned only outside runtime branches and loops (a 'for' "
                "over range(...) is a runtime loop)", loc,
                hint="compute the new value in a local variable (ops.select for a choice, an "
                     "accumulator in a loop) and assign it after the 'if' or loop")
        value = freeze(value)
        if not isinstance(value, Var) and not (is_const(value) and
                                               _is_array_like(const_value(value))):
            raise CompileError("the value assigned to a Parameter must be a tensor or a number",
                               loc)
        stored = self.emit(A.BroadcastLike(), [value, data], loc)    # the Parameter's shape
        stored.hint = data.hint
        self.emit(R.WriteParameter(), [handle, stored], loc)
        self.written[data.id] = stored
        self.stored_of[stored.id] = data
        return stored


def _is_parameter_type(cls):
    from ..tensor import Parameter
    return isinstance(cls, type) and issubclass(cls, Parameter)


def _is_array_like(v):
    import numbers
    import numpy as np
    return isinstance(v, (numbers.Number, np.ndarray, np.generic)) and not isinstance(v, bool)
