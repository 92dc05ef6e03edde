"""SSA construction by partial evaluation.

The builder walks a function's gast tree once, evaluating everything that is
known while compiling (constants, ``self.`` attributes, primitives, shapes
written in the source, calls whose arguments are all known) and staging every
operation on a runtime value as an ``Op`` in SSA form.  Calls to sub-Cells,
user functions and library functional forms are inlined by walking the
callee's source the same way; bprop rules are inlined through the same entry
point (``call``), which is what makes rules differentiable again.

Abstract values during the walk are ``Var`` (runtime), ``Const`` (known), a
Python ``tuple`` of abstract values (tuples are compile-time structure) or a
``Bound`` method of a runtime value (``x.sum``), or a ``TreeVal`` (a dict or
other container of the functional API's pytrees, ``trees.py``).

``Builder`` is put together from one mixin per part of the walk, each in its
own module: ``statements``, ``expressions``, ``calls``, ``control``
(branches), ``loops``, ``closures``, ``alias`` (writes in place) and ``trees``, over the
``Emitter`` that holds the op list.  What is left here is the state they
share and the types of the differentiated function's inputs.
"""
import numpy as np

from ..errors import CompileError
from ..ir.nodes import Var, Const
from .guards import GuardSet
from . import resolve
from .emitter import Emitter
from .statements import Statements
from .expressions import Expressions
from .calls import Calls
from .control import ControlFlow
from .loops import Loops
from .closures import Closures
from .alias import Aliasing
from .trees import Trees
from .writes import ParameterWrites
from .recursion import Recursion
from .wholereads import WholeReads
from .values import ListVal, FrozenList, TreeVal


class Builder(Statements, Expressions, Calls, Loops, ControlFlow, Closures, Aliasing, Trees,
              ParameterWrites, Recursion, WholeReads, Emitter):
    """Stages one program's operations into a list of SSA ops."""

    def __init__(self, root=None):
        super().__init__()
        self.root = root
        self.maybe_undefined = {}
        self.guards = GuardSet()
        self.inputs = resolve.RuntimeInputs()
        self.depth = 0
        self.name_hints = True
        self.select_depth = 0      # inside an operand of a runtime 'and'/'or'/'... if ... else'
        self.frames = []           # (scope, location of the call that entered it)
        self.frame = None          # the user function call being inlined (see ``Op.frame``)
        self.writing = None        # the assignment statement being carried out
        self.random_states = set() # ids of Vars holding a generator made at run time
        self.kinds = {}            # Var id -> the types an input's value may have
        self.written = {}          # Parameters assigned so far (see ``ParameterWrites``)
        self.seen_objects = {}     # runtime input Var id -> the object it stood for while tracing
        self.known_paths = {}      # id -> (function, its path): ``WholeReads.pass_by_path``
        self.stored_of = {}
        self.recursion_groups = {} # what a runtime recursion calls (see ``Recursion``)
        self.active_calls = []     # the user function calls being inlined, as compared there

    # ---------------------------------------------------------------- inputs
    def typed_inputs(self, abstract, specs):
        """The differentiated function's arguments as its code sees them.

        A list argument stays a list (``isinstance(xs, list)``), and each
        runtime input remembers whether it is a Tensor, an ndarray or a NumPy
        scalar, so that type checks on it are answered from its real kind.
        """
        return [self._typed(a, s) for a, s in zip(abstract, specs)]

    def _typed(self, value, spec):
        from ..tensor import Tensor, Parameter
        kind = spec[0] if spec else None
        if isinstance(value, Var):
            types_ = {"tensor": (Tensor, Parameter), "array": (np.ndarray,),
                      "npscalar": spec[1:2]}.get(kind)
            if types_:
                self.kinds[value.id] = types_
            return value
        if isinstance(value, tuple) and kind in ("tuple", "list"):
            items = tuple(self._typed(v, s) for v, s in zip(value, spec[1:]))
            return ListVal(items, self.ops) if kind == "list" else items
        if isinstance(value, Const) and kind == "list" and isinstance(value.value, tuple):
            return Const(list(value.value))
        return value

    def type_check(self, value, check, loc):
        """``isinstance(value, classes)`` or ``type(value)`` while compiling.

        ``check(t)`` answers for a value of type ``t``.  A runtime value whose
        possible types disagree is refused (in user code) rather than guessed.
        """
        if isinstance(value, (ListVal, FrozenList)):
            return Const(check(list))
        if isinstance(value, tuple):
            return Const(check(tuple))
        if isinstance(value, TreeVal):
            return Const(check(type(value.obj)))
        if not isinstance(value, Var):
            return None
        known = self.inputs.type_of(value)
        types_ = self.kinds.get(value.id) or ((known,) if known is not None else _RUNTIME_TYPES)
        answers = {check(t) for t in types_}
        if len(answers) == 1:
            return Const(answers.pop())
        if self.in_library():
            return None
        raise CompileError(
            "this type check on a runtime value cannot be answered while compiling: the "
            "value may be any of %s here" % ", ".join(map(_type_name, types_)), loc,
            hint="check the type of the function's argument itself (compiled code is "
                 "specialised on it), or restructure the code so it does not depend on the "
                 "type of a computed value")


def _runtime_types():
    from ..tensor import Tensor, Parameter
    return (Tensor, Parameter, np.ndarray, np.float64, np.float32, np.int64, np.bool_,
            float, int, bool)


class _LazyTypes:
    """What an intermediate runtime value may be: a Tensor or an array, a NumPy or
    Python scalar (imported on first use: the Tensor module imports this one)."""

    def __iter__(self):
        return iter(_runtime_types())

    def __bool__(self):
        return True


_RUNTIME_TYPES = _LazyTypes()


def _type_name(t):
    module = getattr(t, "__module__", "") or ""
    return ("np." if module.startswith("numpy") else "") + t.__name__

