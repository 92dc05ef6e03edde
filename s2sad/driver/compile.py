"""The compile driver: a function or Cell plus argument structure -> adjoint code.

trace (``tracing.py``) -> reverse, forward or Taylor-mode AD -> the pipeline's
passes -> codegen -> compile.  ``compile_forward`` skips AD: the function's
own program, simplified and compiled (what ``s2sad.jit`` runs).  The result
(``Compiled``) keeps every stage so users can read the IR and source.
"""
import functools
import gc
import os
import sys

from ..ir import Var, Const, leaves
from ..ir.nodes import walk_ops, AdjointOf, Op, copy_func
from ..ops.operations import elementwise_ops as E
from ..ops.operations import runtime_ops as R
from ..ops.operations import array_ops as A
from ..ir.primitive import complex_mode, compiling_complex
from ..backend.codegen import CodeGen, GENERAL
from ..backend.outline import outline
from ..backend.compile import compile_source
from ..backend.recursion import compile_groups, groups_in
from ..ad.reverse import reverse
from ..ad.forward import forward, split_primal
from ..ad.batching import batch_tangents
from ..ad.chains import fold_tangent_chains
from ..ad.taylor import taylor_objective, Unsupported
from ..errors import CompileError, S2SADError
from ..frontend.guards import FN
from ..opt import pipeline
from ..opt.pipeline import current as current_options
from ..runtime import GeneralCode
from ..saved_graphs import saving_graphs
from ..backend.namespaces import check_supported
from .specs import backend_of, check_aux_structure, has_runtime_leaves, is_complex_spec
from .nested import ComplexValues, check_real_mode
from .tracing import trace, display_path


class Compiled:
    """One compiled adjoint: its IRs, source, callable and what it assumed."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def draws(self):
        """Whether a run draws random numbers or writes a Parameter (``Primitive.draws``):
        running the program again is not running the same program."""
        found = self.__dict__.get("_draws")
        if found is None:
            found = self._draws = any(op.prim.draws for op in walk_ops(self.grad_ir.body))
        return found


def _gradients_of(what, t):
    """``what`` ("gradient", ...) of the user's function, through the gradients it wraps.

    Spelled out at every order: "order-N gradient" is Taylor mode's header, and
    the header tells the two ways of compiling a chain apart."""
    return what + " of the gradient" * t.gradients


@saving_graphs     # set_context(save_graphs=True) writes each compiled entry to files
def _finish(ir, t, header, specs, simplify=True, **kw):
    """Simplify (unless ``simplify`` is False: done already), generate and compile
    ``ir``; bundle it with its trace.

    ``specs``: the arguments' specs, which with the data read when the code
    runs choose the array library (``backend_of``),
    None for NumPy; the same source is compiled against its namespace.
    Simplified here, a NumPy program may be specialised to the shapes of the
    call compiling it (``opt/static_shapes.py``); a call with other shapes
    then runs the general program, compiled on its first use.
    """
    backend = _backend(specs, t)
    general = None
    if simplify:
        general = _specialising(ir, t, backend)
        ir = _simplified(ir, t, backend)
    title = "%s of %s (%s)" % (header, t.display, display_path(t.info.filename))
    fallback = None
    if general is not None and ir.specialised:
        fallback = GeneralCode(_general_builder(general, t, title))
    source, shown, gen, callable_ = _generate(ir, t, title, backend, fallback)
    # functions a runtime recursion calls, compiled apart, shown after the program
    shown = "\n\n".join([shown.rstrip("\n")] + compile_groups(ir)) + "\n"
    return Compiled(forward=t.forward, grad_ir=ir, source=shown, executed_source=source,
                    backend=backend,
                    constants=gen.consts, fn=callable_,
                    check=t.builder.guards.compile(), guards=t.builder.guards,
                    inputs=t.builder.inputs, result_structure=t.result, info=t.info,
                    hints=t.hints, display=t.display, complex=complex_mode(),
                    names=gen.namer.names, general=fallback, **kw)


def _generate(ir, t, title, backend, fallback=None):
    """Source (as run and as shown), code generator and callable of the simplified ``ir``;
    with ``fallback`` (a ``GeneralCode``), the code first checks the shapes it was
    specialised to (``ir.specialised``) and hands other calls to it."""
    gen = CodeGen(release=current_options().release)
    shapes = ir.specialised if fallback is not None else None
    if any(op.frame is not None for op in walk_ops(ir.body)):
        # each call of a user function becomes functions of its own, its values
        # keeping the names they would have inline
        naming = CodeGen(release=False)
        naming.function(ir)
        source = gen.module(outline(ir), naming.namer, header=title, shapes=shapes)
    else:
        source = gen.function(ir, header=title, shapes=shapes)
    shown = gen.readable(source)
    constants = gen.consts.namespace()
    if fallback is not None:
        constants[GENERAL] = fallback
    if backend is not None:
        _refuse_recursion(ir, t, backend)
        check_supported(source, ir, backend)
        constants = {k: backend.constant(v) for k, v in constants.items()}
    callable_ = compile_source(source, ir.name, constants, gen.where, shown=shown,
                               backend=backend)
    if backend is not None and current_options().backend_jit:
        callable_ = backend.jitted(callable_)
    return source, shown, gen, callable_


def _specialising(ir, t, backend):
    """Give ``ir`` the shapes of the call compiling it, keeping a copy of it for the
    general program; None (nothing specialised) for other array libraries, complex
    programs and runtime recursion."""
    if backend is not None or not t.input_shapes or complex_mode() \
            or not current_options().runs("static_shapes") or any(True for _ in groups_in(ir)):
        return None
    general = copy_func(ir)
    ir.input_shapes = t.input_shapes
    return general


def _general_builder(general, t, title):
    """What compiles the program for any shapes, under the options of this compile."""
    options = current_options()

    def build():
        if os.environ.get("S2SAD_LOG_COMPILES"):
            print("s2sad: compiling %s for any shapes: called with shapes other than those "
                  "it was specialised to" % title.split(": ", 1)[-1], file=sys.stderr)
        with pipeline.exactly(options):
            ir = _simplified(general, t, None)
            return _generate(ir, t, title + ", for any shapes", None)[3]
    return build


def _simplified(ir, t, backend):
    """``ir`` through the final passes, its results keeping their names."""
    names = [getattr(v, "hint", None) for v in leaves(ir.result)]
    ir.scalar_ids = t.scalar_ids        # the inputs every derived program shares
    ir.float64_ids = t.float64_ids
    ir = pipeline.run(pipeline.FINAL if backend is None else pipeline.FINAL_ANY_LIBRARY, ir)
    _keep_result_names(ir, names)
    return ir


def _refuse_recursion(ir, t, backend):
    """Runtime recursion compiles its functions against NumPy only (for now)."""
    if any(True for _ in groups_in(ir)):
        raise CompileError("%s calls itself with a depth known only at run time, which s2sad "
                           "runs on NumPy arrays only; pass NumPy arrays, or write the "
                           "recursion as a loop" % t.display, t.info.loc(t.info.tree))


def _backend(specs, t):
    """The Backend of the arguments and the data the program reads (None for NumPy).

    NumPy arrays computed while compiling (the constant bins of an
    ``AdaptiveAvgPool2d``) are the program's own: they move to that library
    and device once, like the constants of the generated code.
    """
    backend = backend_of(specs, _runtime_data(t))
    if backend is not None:
        t.builder.inputs.move_computed(backend.constant, (backend.library, backend.device))
    return backend


def _runtime_data(t):
    """``(name, (library, device) or None)`` of each array the program reads when it
    runs (a Cell's Parameters, a global array): ``backend_of``'s ``runtime``.  The
    NumPy arrays computed while compiling are left out (``_backend`` moves them)."""
    inputs = t.builder.inputs
    return [(var.hint or "a global or closure array", inputs.where(var))
            for var, _path, obj in inputs.entries if not inputs.computed(obj)]


def _keep_result_names(ir, names):
    """Name each returned derivative after its input again (``d_a``), when simplifying renamed it.

    Dropping an ``unbroadcast`` or a copy leaves a rule's unnamed value in its
    place (``mul_d_b_2``); the name it replaced says what the value is.
    """
    result = leaves(ir.result)
    if len(result) != len(names):
        return
    taken = set()
    for v, name in zip(result, names):
        if isinstance(v, Var) and v.hint is None and isinstance(name, AdjointOf) \
                and v.id not in taken:
            v.hint = name
            taken.add(v.id)


def _without_gc(compile_fn):
    """Run a compile with the cyclic garbage collector paused (the outermost one resumes it).

    Compiling builds hundreds of thousands of IR objects that stay alive
    until it ends; each automatic collection rescans all of them, which made
    compile time grow faster than the program (10,000 calls: 4.2 s, 2.8 s
    without collections).  Nothing collectable is made meanwhile that cannot
    wait for the end -- nor should be: a reference cycle would keep all it
    reaches until the collector runs again, so passes recurse through
    module-level functions, never through a nested function calling itself
    (which would hold its tables, as large as the program, to the end;
    ``tests/ad/test_compile_garbage.py``).
    """
    @functools.wraps(compile_fn)
    def run(*args, **kwargs):
        if not gc.isenabled():
            return compile_fn(*args, **kwargs)
        gc.disable()
        try:
            return compile_fn(*args, **kwargs)
        finally:
            gc.enable()
    return run


def _complex_aware(compile_fn):
    """Compile in complex mode when an argument is complex (its spec says so), when
    an enclosing compile is (a gradient staged inside a complex program's), or when
    the program makes complex values of real ones (``nested.check_real_mode``)."""
    @functools.wraps(compile_fn)
    def run(fn, root, args, specs, *rest, **kwargs):
        on = complex_mode() or any(map(is_complex_spec, specs))
        with compiling_complex(on):
            try:
                return compile_fn(fn, root, args, specs, *rest, **kwargs)
            except ComplexValues:
                pass
        with compiling_complex(True):
            return compile_fn(fn, root, args, specs, *rest, **kwargs)
    return run


@_complex_aware
@_without_gc
def compile_grad(fn, root, args, specs, weights, weight_paths, sens_spec=None,
                 sens_value=None, return_value=False, inputs="all", head_only=False,
                 holomorphic=False):
    """Trace, differentiate in reverse mode, simplify and compile.

    ``inputs`` says which inputs get gradients: ``"all"``, ``"first"`` (the
    first argument that has runtime leaves) or ``"none"`` -- only what the
    caller will return is computed.  ``return_value``: the compiled function
    returns ``(value, gradients)``, the forward run once for both;
    ``head_only``: the output is ``(objective, aux...)`` and only the
    objective is differentiated (``has_aux``); ``holomorphic``: a program with
    complex inputs may have a complex output (else it is checked to be real).
    """
    specs_all = specs + (sens_spec,) if sens_spec not in (None, "auto") else specs
    backend_of(specs_all)       # mixed arguments are refused before tracing
    t = trace(fn, root, args, specs, weights, weight_paths)
    check_real_mode(t.forward.body)
    if head_only:
        check_aux_structure(t.result)
    if complex_mode() and not holomorphic and sens_spec is None:
        _check_real_output(t.forward, head_only)
    if sens_spec is None:
        _check_float_output(t.forward, t.builder.inert, head_only)
    sens = None
    if sens_spec is not None:
        sens = _sens_structure(t.result, sens_spec, sens_value, t.info, t.builder.inert)
    wrt_inputs = select_inputs(t.abstract, inputs)
    ir = reverse(t.forward, wrt_inputs + t.weight_vars, sens=sens,
                 name=t.qualname + "_grad" * (t.gradients + 1), return_value=return_value,
                 head_only=head_only)
    return _finish(ir, t, "s2sad: " + _gradients_of("gradient", t), specs_all,
                   n_flat=len(wrt_inputs), weights=list(weights))


@_complex_aware
@_without_gc
def compile_nested(fn, root, args, specs, order, origin=(FN,)):
    """``GradOperation()`` applied ``order`` times to ``fn``, in Taylor mode.

    ``None`` when Taylor mode does not apply (see ``taylor.py``): the caller
    then differentiates the gradient program again, order by order.
    """
    backend_of(specs)       # mixed arguments are refused before tracing
    t = trace(fn, root, args, specs, origin=origin)
    check_real_mode(t.forward.body)
    wrt = select_inputs(t.abstract, "first")
    if len(wrt) != 1 or complex_mode():     # no complex Taylor rules: nested reverse mode
        return None
    try:
        objective = taylor_objective(t.forward, wrt[0], order)
    except (Unsupported, S2SADError):    # a JVP rule that cannot take a derivative here
        return None
    pairs = objective.shape_pairs
    objective = pipeline.run(pipeline.OBJECTIVE, objective)
    ir = reverse(objective, wrt, name="%s_grad%d" % (t.qualname, order))
    ir.shape_pairs.extend(pairs)
    return _finish(ir, t, "s2sad: order-%d gradient" % order, specs, n_flat=1, weights=[])


#: how many forward-mode compiles are tracing their program now (read by
#: ``api/staged.py``, which refuses what forward mode gets wrong there)
FORWARD_TRACING = [0]


@_complex_aware
@_without_gc
def compile_jvp(fn, root, args, specs, positions=None, split=False, tangent_only=False):
    """Trace and differentiate in forward mode w.r.t. the runtime leaves of the
    arguments at ``positions`` (all of them by default).

    The compiled function takes the inputs' runtime leaves, the Cell's runtime
    inputs, then one tangent per differentiated leaf (``n_tangents``), and
    returns ``(out, t_out)``; the other inputs' tangents are symbolic zeros, so
    no rule multiplies by them.  With ``split`` (``jacfwd``, many tangents at
    one point), when ``split_primal`` applies, ``fn`` returns ``(out, saved)``
    and ``tangent.fn(*saved, *tangents)`` returns ``t_out``; else ``tangent``
    is None.  ``batched`` (or None) is ``batch_tangents``' program: the same
    with tangents of a leading axis of basis vectors (``batched_out`` flags
    the result leaves that have it).  With ``tangent_only`` (``hvp``) ``out`` is
    None, and the work only it needs is not done.
    """
    backend_of(specs)       # mixed arguments are refused before tracing
    FORWARD_TRACING[0] += 1
    try:
        t = trace(fn, root, args, specs)
    finally:
        FORWARD_TRACING[0] -= 1
    check_real_mode(t.forward.body)
    wrt = t.flat_inputs if positions is None else leaves_at(t.abstract, positions)
    name = t.qualname + "_grad" * t.gradients + "_jvp"
    ir = forward(t.forward, wrt, name=name)
    if tangent_only:
        ir.result = (Const(None), ir.result[1])
    header = "s2sad: " + _gradients_of("forward-mode derivative", t)
    if not split:
        return _finish(ir, t, header, specs, n_flat=len(t.flat_inputs),
                       n_tangents=len(wrt), tangent=None, batched=None)
    backend = _backend(specs, t)
    ir = _simplified(ir, t, backend)
    t_params = ir.params[len(ir.params) - len(wrt):]
    if current_options().runs("fold_tangent_chains"):
        ir = fold_tangent_chains(ir, t_params)
    parts = split_primal(ir, t_params)
    if parts is None:
        return _finish(ir, t, header, specs, simplify=False, n_flat=len(t.flat_inputs),
                       n_tangents=len(wrt), tangent=None, batched=None)
    entry = _finish(parts[0], t, header + ", the values (run once)", specs, simplify=False,
                    n_flat=len(t.flat_inputs), n_tangents=len(wrt))
    for v in parts[1].params:       # the values passed on keep the names they had
        if v.id in entry.names:
            v.hint = entry.names[v.id]
    batched = batch_tangents(parts[1], len(parts[1].params) - len(wrt))
    entry.tangent = _finish(parts[1], t, header + ", the tangents (run per tangent)", specs,
                            simplify=False)
    entry.batched, entry.batched_out = None, None
    if batched is not None and backend is None:
        entry.batched = _finish(batched[0], t, header + ", all basis tangents at once", specs,
                                simplify=False)
        entry.batched_out = batched[1]
    entry.source = "\n\n".join(e.source for e in (entry, entry.tangent, entry.batched) if e)
    return entry


@_complex_aware
@_without_gc
def compile_forward(fn, root, args, specs):
    """Trace, simplify and compile the forward program itself (no derivative).

    The compiled function takes the inputs' runtime leaves then the Cell's
    runtime inputs (``entry.inputs``) and returns what ``fn`` returns.
    """
    backend_of(specs)       # mixed arguments are refused before tracing
    t = trace(fn, root, args, specs)
    ir = pipeline.run(pipeline.SIMPLIFY, t.forward)
    return _finish(ir, t, "s2sad: compiled forward", specs, n_flat=len(t.flat_inputs))


def _check_float_output(forward, inert, head_only):
    """Make ``forward`` check at run time that a differentiated output no gradient
    flows into is floating-point: a boolean or integer one (``np.allclose``,
    ``x > 0``) has no derivative, and JAX and autograd refuse it with a TypeError.
    A cast may make an integer; other outputs a gradient flows into are float
    already: no check, no cost."""
    result = forward.result
    if head_only and isinstance(result, tuple):
        result = result[0]
    casts = {o.id for op in forward.body if isinstance(op.prim, A.Cast) for o in op.outs}
    for v in leaves(result):
        if isinstance(v, Var) and (v.id in inert or v.id in casts):
            forward.body.append(Op(R.CheckFloatOutput(), [v], [], loc=forward.loc))


def _check_real_output(forward, head_only):
    """Make ``forward`` check at run time that its differentiated output is real
    (JAX's rule: ``grad`` of a complex output needs ``holomorphic=True``)."""
    def checked(v):
        if not isinstance(v, Var):
            return v
        out = Var(v.hint)
        forward.body.append(Op(E.RealOutput(), [v], [out], loc=forward.loc))
        return out
    result = forward.result
    if head_only and isinstance(result, tuple):
        forward.result = (checked(result[0]),) + result[1:]
    elif isinstance(result, tuple):
        forward.result = tuple(checked(v) for v in result)
    else:
        forward.result = checked(result)


def select_inputs(abstract, which):
    """The runtime leaves of the inputs whose gradients are wanted."""
    per_arg = [[v for v in leaves(a) if isinstance(v, Var)] for a in abstract]
    if which == "all":
        return [v for group in per_arg for v in group]
    if which == "first":
        return next((group for group in per_arg if group), [])
    return []


def leaves_at(abstract, positions):
    """The runtime leaves of the inputs at ``positions``, in argument order."""
    return [v for i, a in enumerate(abstract) if i in positions
            for v in leaves(a) if isinstance(v, Var)]


def _sens_structure(result, sens_spec, sens_value, info, inert=frozenset()):
    """Vars for the sens, mirroring the output; a mismatch is the user's error.

    ``sens_spec == "auto"`` mirrors whatever the output is (for the CLI).
    ``inert``: the ids of the values no gradient flows through.
    """
    def no_gradient(out):
        return isinstance(out, Const) or isinstance(out, Var) and out.id in inert

    if sens_spec == "auto":
        def mirror(out):
            return tuple(mirror(o) for o in out) if isinstance(out, tuple) else Var("sens")
        return mirror(result)

    def build(out, spec, value, path):
        if isinstance(out, tuple):
            if spec[0] not in ("tuple", "list") or len(spec) - 1 != len(out):
                raise ValueError(
                    "For 'GradOperation', the sens must have the same structure as the "
                    "output: the output%s is a tuple of %d items, but sens is %s"
                    % (path, len(out), _describe_value(value)))
            return tuple(build(o, s, v, "%s[%d]" % (path, i))
                         for i, (o, s, v) in enumerate(zip(out, spec[1:], value)))
        if no_gradient(out) and not has_runtime_leaves(spec):
            # an output no gradient flows through (a shape, a constant) with a sens of
            # Python numbers, as MindSpore takes a shape's own value: it seeds nothing
            return Const(None)
        if spec[0] not in ("tensor", "array", "npscalar", "mutable", "xarray"):
            raise ValueError(
                "For 'GradOperation', the sens%s must be a Tensor matching the output%s, "
                "but got %s%s" % (path, path, _describe_value(value),
                                  _ONE_ARRAY if spec[0] in ("tuple", "list") else ""))
        return Var("sens")
    return build(result, sens_spec, sens_value, "")


_ONE_ARRAY = (
    ": the compiled function makes one array there. Code is compiled for inputs of "
    "every rank at once, so a NumPy function whose number of results depends on an "
    "input's rank (np.gradient(x) without axis) makes one array, for a 1-D input; "
    "name the axes, e.g. np.gradient(x, axis=(0, 1)), to get one result per axis")


def _describe_value(v):
    if isinstance(v, (tuple, list)):
        return "a %s of %d items" % (type(v).__name__, len(v))
    shape = getattr(v, "shape", None)
    if shape is not None:
        return "%s of shape %s" % (type(v).__name__, list(shape))
    return repr(v)
