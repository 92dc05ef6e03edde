"""IR nodes.

A ``Func`` is a list of ``Op`` over SSA ``Var``s.  Values that are known while
compiling (numbers, shapes written in the source, primitive instances) are
``Const``s and never become ops.  Tuples stay compile-time structure: an op's
argument or a function's result may be a nested Python tuple of ``Var`` and
``Const``; there is no runtime tuple value and so no tuple op to differentiate.

Control flow stays structured: an op may own ``regions`` (lists of ops), which
is how ``if`` and loops will read back as ``if`` and ``for`` in generated code.
"""
import itertools
import re

_ids = itertools.count()


def snake_case(name):
    """``ReduceSum`` -> ``reduce_sum``: a primitive's name as part of a value's name."""
    found = _snake.get(name)
    if found is None:
        found = _snake[name] = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    return found


# primitive name -> its snake case: codegen names most values after their primitive
_snake = {}


class Var:
    """An SSA value. ``hint`` is the user's variable name it came from, if any."""

    __slots__ = ("hint", "id")

    def __init__(self, hint=None):
        self.hint = hint
        self.id = next(_ids)

    def __repr__(self):
        return "%%%s.%d" % (self.hint or "v", self.id)


class AdjointOf:
    """Hint of a derivative value: named ``<prefix><name of var>`` by codegen.

    ``d_x`` for the adjoint of ``x`` in reverse mode, ``t_x`` for its tangent
    in forward mode.  ``base`` names an unnamed ``var`` (the primitive that
    made it: ``t_log``) when ``var`` itself never gets a name in generated
    code, as a value needed only for its derivatives.
    """

    __slots__ = ("var", "prefix", "base")

    def __init__(self, var, prefix="d_", base=None):
        self.var = var
        self.prefix = prefix
        self.base = base and snake_case(base)

    def __str__(self):
        return self.prefix + (self.var.hint if isinstance(self.var.hint, str)
                              else self.base or "v")


class RowsOf:
    """Hint of a value over all iterations of a loop (``h_1_rows``), or of one row of it.

    Named ``<name of var>_rows``; without ``var``, ``<hint>_rows`` or, with
    no ``hint`` either, after its op as a temporary is, plus ``_rows``.
    ``row=True``: ``var`` is such a value and this one is its row, named
    without the suffix.
    """

    __slots__ = ("var", "row", "hint")

    def __init__(self, var=None, row=False, hint=None):
        self.var = var
        self.row = row
        self.hint = hint


class Const:
    """A value known at compile time.

    ``path`` is the attribute path from the differentiated Cell it was read
    from (``("fc1", "activation")``), when it was read from one.
    """

    __slots__ = ("value", "path")

    def __init__(self, value, path=None):
        self.value = value
        self.path = path

    def __repr__(self):
        return "Const(%r)" % (self.value,)


class Op:
    """``outs = prim(*args)``, located at a user's source line.

    ``origin`` names the rule that produced an adjoint op (for ``--explain``).
    ``frame`` is ``(Frame, side)`` when the op belongs to an inlined call of a
    user function (``side`` is ``"fwd"``, or ``"bwd"`` for its adjoint), which
    codegen may write as a function of its own.
    """

    __slots__ = ("prim", "args", "outs", "loc", "origin", "regions", "frame")

    def __init__(self, prim, args, outs, loc=None, origin=None, regions=(), frame=None):
        self.prim = prim
        self.args = list(args)
        self.outs = list(outs)
        self.loc = loc
        self.origin = origin
        self.regions = list(regions)
        self.frame = frame

    def arg_vars(self):
        # the most called function of compiling (every pass reads it): most
        # arguments are Vars or Consts, taken without a list of leaves each
        out = []
        for a in self.args:
            if isinstance(a, Var):
                out.append(a)
            elif isinstance(a, tuple):
                out.extend(v for v in leaves(a) if isinstance(v, Var))
        return out

    def used_vars(self):
        """Vars this op reads, including from inside its regions (free uses)."""
        used = self.arg_vars()
        for r in self.regions:
            defined = {p.id for p in r.params}
            for op in r.ops:
                for v in op.used_vars():
                    if v.id not in defined:
                        used.append(v)
                defined.update(o.id for o in op.outs)
            used.extend(v for v in leaves(r.result) if isinstance(v, Var) and v.id not in defined)
        return used

    def __repr__(self):
        return "Op(%r, %r -> %r)" % (self.prim, self.args, self.outs)


class Frame:
    """One inlined call of a user function (a helper, a method, a closure, a sub-Cell).

    ``name`` is what an outlined function is named after; ``parent`` the frame
    of the call's caller (``None`` for the differentiated function itself);
    ``loc`` the call site.
    """

    __slots__ = ("name", "parent", "loc", "binds")

    def __init__(self, name, parent, loc=None):
        self.name = name
        self.parent = parent
        self.loc = loc          # the call site
        self.binds = {}         # Var id of an argument -> the parameter name it is bound to

    def bind(self, env):
        """Remember the parameter names the call's tensor arguments are bound to."""
        for name, value in env.items():
            if isinstance(value, Var):
                self.binds.setdefault(value.id, name)

    def __repr__(self):
        return "Frame(%s)" % self.name


def tag_frame(ops, frame):
    """Give ``frame`` to every op of ``ops`` (and their regions) that has none yet."""
    for op in ops:
        if op.frame is None:
            op.frame = frame
        for r in op.regions:
            tag_frame(r.ops, frame)


class Region:
    """A block of ops owned by a control-flow op.

    ``params`` are bound on entry (a loop's carried values, its index),
    ``result`` is the tuple of values the region yields to its op.
    """

    __slots__ = ("params", "ops", "result")

    def __init__(self, params=(), ops=(), result=()):
        self.params = list(params)
        self.ops = list(ops)
        self.result = tuple(result)


def defined_ids(ops, out=None):
    """Ids of every value defined by ``ops`` (and their regions' params)."""
    out = set() if out is None else out
    for op in ops:
        out.update(o.id for o in op.outs)
        for r in op.regions:
            out.update(p.id for p in r.params)
            defined_ids(r.ops, out)
    return out


def walk_ops(ops):
    """Every op in ``ops`` and, depth first, in their regions."""
    for op in ops:
        yield op
        for r in op.regions:
            yield from walk_ops(r.ops)


def walk_blocks(ops):
    """``(op, the list holding it)`` for every op of ``walk_ops(ops)``."""
    for op in ops:
        yield op, ops
        for r in op.regions:
            yield from walk_blocks(r.ops)


def substitute(a, subst):
    """``a`` (a value or a nested tuple) with each Var replaced by what ``subst`` maps its id to.

    Chains are followed (``subst`` may map a value to one it maps further, or to a ``Const``).
    """
    if isinstance(a, tuple):
        return tuple(substitute(x, subst) for x in a)
    if isinstance(a, Var):
        while a.id in subst:
            a = subst[a.id]
            if not isinstance(a, Var):      # replaced by a constant
                break
    return a


class Func:
    """A function: parameters, a body of ops, and a result structure."""

    def __init__(self, name, params, body, result, loc=None):
        self.name = name
        self.params = list(params)
        self.body = list(body)
        self.result = result
        self.loc = loc
        # What passes tell later passes through the function.
        # Index in ``body`` of the first backward op of a reverse-mode program,
        # ``None`` for any other: written by ``ad.reverse``; every pass that
        # inserts, drops or moves top-level ops keeps it current (``dce``,
        # ``cse``, ``hoist_invariants``...); read by codegen, ``outline`` and
        # liveness to place the forward/backward boundary.
        self.backward_start = None
        # ``(a, b)`` Var pairs known to have one shape (an adjoint and its
        # value): written by ``ad.reverse`` and ``ad.taylor``, read by
        # ``same_shape``.
        self.shape_pairs = []
        # Seed ops ``ones_to_shape`` rewrote as ``OnesLike``, which
        # ``restore_unfolded`` makes ``SumSeed`` views where they survived.
        self.unfolded_seeds = []
        # Ids of the inputs that are 0-d at every call (NumPy scalars):
        # written by the driver from the argument specs, read by
        # ``opt.scalars``.
        self.scalar_ids = frozenset()
        # The subset of those that are float64 (``opt.floats``).
        self.float64_ids = frozenset()
        # Input Var id -> the shape of the array it stands for in the call
        # compiling the program, when the driver specialises it; and the
        # ``(position of a param, shape)`` pairs ``opt.static_shapes`` made it assume, which
        # codegen checks on entry (None: the program holds for any shapes).
        self.input_shapes = None
        self.specialised = None
        # Var id -> shape, of a program specialised (``opt.static_shapes``):
        # ``opt.shapes.shape_classes`` puts values of one shape in one class.
        self.known_shapes = None


def is_var(x):
    return isinstance(x, Var)


def leaves(struct):
    """The Var/Const leaves of a nested tuple structure, in order."""
    if not isinstance(struct, tuple):
        return [struct]
    out = []
    for s in struct:
        if isinstance(s, tuple):
            out.extend(leaves(s))
        else:
            out.append(s)       # no call (and list) per leaf: compiling calls this most
    return out


def map_structure(fn, struct):
    """Apply ``fn`` to every leaf of a nested tuple, keeping the nesting."""
    if isinstance(struct, tuple):
        return tuple(map_structure(fn, s) for s in struct)
    return fn(struct)


def use_counts(func):
    """How many times each Var is read anywhere in ``func`` (results count)."""
    counts = {}

    def bump(v):
        if isinstance(v, Var):
            counts[v.id] = counts.get(v.id, 0) + 1

    for op in walk_ops(func.body):
        for v in op.arg_vars():
            bump(v)
        for r in op.regions:
            for v in leaves(r.result):
                bump(v)
    for v in leaves(func.result):
        bump(v)
    return counts


def non_shape_uses(ops, out=None, pushes=True):
    """Ids of values ``ops`` read somewhere other than at a shape-only input; with
    ``pushes`` False, a stack push is no read (a pop rebinds the Vars pushed, so
    their reads are counted where they are)."""
    out = set() if out is None else out
    for op in ops:
        if pushes or op.prim.name != "StackPush":
            for i, a in enumerate(op.args):
                if i not in op.prim.shape_only_inputs:
                    out.update(v.id for v in leaves(a) if isinstance(v, Var))
        for r in op.regions:
            non_shape_uses(r.ops, out, pushes)
            out.update(v.id for v in leaves(r.result) if isinstance(v, Var))
    return out


def copy_func(func):
    """A copy of ``func`` the passes can rewrite without touching ``func``: new ops,
    regions and lists; the same Vars, Consts and primitives (passes replace those,
    never change them)."""
    copies = {}
    new = Func.__new__(Func)
    new.__dict__.update(func.__dict__)
    new.params = list(func.params)
    new.body = _copy_ops(func.body, copies)
    new.shape_pairs = list(func.shape_pairs)
    new.unfolded_seeds = [copies.get(id(op), op) for op in func.unfolded_seeds]
    return new


def _copy_ops(ops, copies):
    # a module-level function: a recursive closure would be a reference cycle
    out = []
    for op in ops:
        new = Op(op.prim, op.args, op.outs, op.loc, op.origin,
                 [Region(r.params, _copy_ops(r.ops, copies), r.result) for r in op.regions],
                 op.frame)
        copies[id(op)] = new
        out.append(new)
    return out
