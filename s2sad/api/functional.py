"""``grad`` and ``value_and_grad``: the functional gradient API (MindSpore 2.x names).

Both are built on ``GradOperation`` (``vjp``, ``jvp`` and the Jacobians, in
their own modules, also on the forward-mode compiler), so every transform
shares the compiled-code caches.

Higher order works because the function ``grad`` returns is plain Python
with readable source: called inside a function being differentiated, the
frontend inlines it, and the ``GradFunction`` it calls is inlined as its
adjoint program.  The helpers it calls are written for the frontend too:
tuples, indexing with known indices, ``if`` and ``for`` over values known
while compiling, and ``constexpr`` helpers for the index arithmetic.

Arguments are packed as ``(selected, rest, layout)`` before differentiating,
so only the gradients asked for are computed and a Python-constant argument
(which ``get_all`` leaves out) never shifts the positions.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence, Union

from ..frontend.trees import TreeOutput
from .. import driver as G
from .. import tracebacks
from ..compat import signature
from ..errors import S2SADError
from ..runtime import constexpr
from ..tensor import Weights
from .gradoperation import GradOperation
from .gradfunction import GradFunction
from .inputs import UnfitInput, describe_input, name_input, warn_constants
from . import trees as T
from .trees import has_trees
from .fastpath import PackedFastPath
from .args import check_has_aux, target_of
from .packing import arrangement, aux_outputs_of, blank_unread, keywords_as_positional, \
    memoized, packed_function, select, take_at, unread_positions
from ..tensor import Parameter

#: ``grad_position`` of jacfwd, jacrev and hessian: one input's index, or several.
Positions = Union[int, Sequence[int]]
#: ``grad_position`` of grad and value_and_grad: also None (the weights' gradients only).
GradPosition = Optional[Positions]


# --------------------------------------------------------------- positions
def normalize_positions(grad_position, api="grad"):
    """``(positions, single)``; ``None`` gives ``((), False)``."""
    if grad_position is None:
        return (), False
    if isinstance(grad_position, bool) or not isinstance(grad_position, (int, tuple, list)):
        raise TypeError("For '%s', 'grad_position' must be an int, a tuple of ints or None, "
                        "but got %s" % (api, type(grad_position).__name__))
    single = isinstance(grad_position, int)
    positions = (grad_position,) if single else tuple(grad_position)
    if not positions:
        # RuntimeError, as MindSpore: code written for it catches that type
        raise RuntimeError("For '%s', 'grad_position' must not be an empty tuple; pass None "
                           "to get the weights' gradients only" % api)
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, int):
            raise TypeError("For '%s', every item of 'grad_position' must be an int, but got "
                            "%s" % (api, type(p).__name__))
        if p < 0:
            raise ValueError("For '%s', 'grad_position' must be >= 0, but got %d" % (api, p))
    if len(set(positions)) != len(positions):
        raise ValueError("For '%s', 'grad_position' has duplicate positions: %s"
                         % (api, positions))
    return positions, single


def _weights_key(weights):
    if weights is None:
        return None
    if isinstance(weights, Parameter):
        return ("single", id(weights))
    if isinstance(weights, (tuple, list)):
        return ("seq",) + tuple(id(w) for w in weights)
    return ("other", id(weights))


class _SelectedGrad(GradFunction):
    """A GradFunction on a packed function; eagerly checks the selected inputs first.

    The frontend inlines it like any GradFunction; the check names the
    position of an input that cannot get a gradient (staged calls ask
    ``check_position`` the same question while compiling).
    """

    @staticmethod
    def check_position(p, value):
        """A selected position called with a constant ``value`` raises (as eagerly)."""
        _constant_position(p, value)

    def __init__(self, packed, weights, grad_op, positions, user_names=None, single=False,
                 with_value=False, head_only=False):
        GradFunction.__init__(self, packed, weights, grad_op, with_value, head_only)
        self.positions = positions
        self.single = single
        self.user_names = user_names
        self._layout_specs = {}
        self._fast_packed = None
        self.head_gradient = None   # see ``_two_passes``

    def __call__(self, sel, *rest):
        try:
            fast = self._fast_packed
            if fast is not None and fast.matches(self, sel, rest):
                try:
                    return fast.run(self, sel, rest[0])
                except TypeError:
                    pass    # a complex argument met real code: compile for it (or say why)
            if self.head_gradient is not None:
                return self._two_passes(sel, rest)
            return self._call_selected(sel, rest)
        except TreeOutput:
            if not self.with_value or self.head_gradient is not None:
                raise
            self.head_gradient = self.head_gradient_function()
            return self._two_passes(sel, rest)
        except UnfitInput as err:
            sens = rest[-1] if self.grad_op.sens_param and rest else None
            raise name_input(err, sel, self.param_names(), self.positions, sens) from None
        except S2SADError as err:
            raise tracebacks.for_user(err)

    def param_names(self):
        return self.user_names

    def _two_passes(self, sel, rest):
        """``(value, gradients)`` when the output holds a dict (an aux) compiled code
        cannot return: the value from an eager run, the gradients of its first output."""
        return self.eager_value((sel,) + rest), self.head_gradient(sel, *rest)

    def _call_selected(self, sel, rest):
        sel_specs = tuple(map(G.arg_spec, sel))
        constant = [not G.has_runtime_leaves(spec) for spec in sel_specs]
        if all(constant) and self.weights is None and self.positions:
            _refuse_unknown_dicts(sel, self.positions, self.user_names)
            # no gradient asked for is of a runtime value: MindSpore's ()
            warn_constants(self, sel_specs, self.positions, self.user_names)
            empty = ((),) if self.single else ()     # ``select`` unwraps a single one
            return (self.eager_value((sel,) + rest), empty) if self.with_value else empty
        for p, a, c in zip(self.positions, sel, constant):
            if c:
                _constant_position(p, a)
        if self.grad_op.sens_param or len(rest) != 2:
            return self._general((sel,) + rest)
        others, layout = rest
        # the layout is (bool, int) pairs from arrangement: its spec depends on its value only
        layout_spec = self._layout_specs.get(layout)
        if layout_spec is None:
            layout_spec = self._layout_specs[layout] = G.arg_spec(layout)
        specs = (("tuple",) + sel_specs, G.arg_spec(others), layout_spec)
        result = self._call((sel, others, layout), None, specs)
        self._fast_packed = PackedFastPath.make(self, sel, others)
        return result


def user_param_names(fn):
    """The positional parameter names of the user's ``fn`` (a function, Cell or method)."""
    py_fn, root = target_of(fn)
    try:
        params = list(signature(py_fn).parameters.values())
    except (TypeError, ValueError):
        return None
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[1:] if root is not None else names


def _refuse_unknown_dicts(sel, positions, names):
    """A dict subclass that is not a registered pytree is one constant to s2sad, however
    many arrays it holds: say so, rather than give ``()`` for its gradient."""
    for p, a in zip(positions, sel):
        if isinstance(a, dict):
            raise TypeError(
                "For 'grad', %s is a %s, a subclass of dict that is not a registered pytree, "
                "so s2sad takes it for one constant; register it with "
                "s2sad.register_pytree_node(%s, flatten, unflatten), or pass a plain dict"
                % (describe_input(p, names), type(a).__name__, type(a).__name__))


def _constant_position(p, a):
    raise TypeError(
        "grad_position %d refers to a %s, which s2sad treats as a constant (no "
        "gradient), while other positions asked for are not; leaving it out would shift "
        "the positions of the gradients. Pass a Tensor or an array, or wrap a Python "
        "number in s2sad.mutable(...)" % (p, type(a).__name__))


def selected_grad_function(fn, has_aux, weights, positions, mode, sens_param=False,
                            single=False, with_value=False):
    """The gradient function ``grad``/``value_and_grad`` call with ``(selected, rest, layout)``.

    ``with_value``: it returns ``(fn's whole output, gradients)`` from one run of
    the forward, differentiating the first output only when ``has_aux``.
    """
    op = GradOperation(get_all=(mode == "both"), get_by_list=(mode != "inputs"),
                       sens_param=sens_param)
    packed = packed_function(fn, has_aux and not with_value)
    gf = _SelectedGrad(packed, weights if mode != "inputs" else None, op, positions,
                       user_param_names(fn), single, with_value, head_only=has_aux and with_value)
    if with_value:
        gf.head_gradient_function = lambda: selected_grad_function(
            fn, has_aux, weights, positions, mode, sens_param, single)
    return gf


def _mode(positions, weights):
    if weights is None:
        return "inputs"
    return "both" if positions else "weights"


# -------------------------------------------------------------------- grad
# constexpr: used inside a differentiated function, ``grad(f)`` is evaluated while
# compiling and the function it returns is inlined, instead of this factory.
@constexpr
def grad(fn: Callable[..., Any], grad_position: GradPosition = 0, weights: Weights = None,
         has_aux: bool = False, return_ids: bool = False,
         holomorphic: bool = False) -> Callable[..., Any]:
    """The gradient function of ``fn`` (MindSpore 2.x ``mindspore.grad``).

    - ``grad_position``: an int gives that input's gradient bare, a tuple a
      tuple of gradients, ``None`` none (then ``weights`` is required);
    - ``weights`` (a Parameter, list or ParameterTuple): their gradients too,
      as ``(input_grads, weight_grads)``, or alone when ``grad_position`` is None;
    - ``has_aux``: ``fn`` returns ``(out, *aux)``; only ``out`` is
      differentiated and the result is ``(gradients, aux)`` with ``aux`` the
      tuple ``out[1:]`` (as MindSpore).  The aux outputs come from one more
      forward run of ``fn``.

    - ``return_ids``: each gradient comes paired with what it belongs to,
      ``(position, gradient)`` or ``(parameter name, gradient)``, in the same
      structure; ``get_grad`` picks one out.

    - ``holomorphic``: ``fn`` is holomorphic in its complex inputs and the
      gradient is its complex derivative ``f'(z)``; without it a function of
      complex inputs must return real values, and its gradient is
      ``df/dx - 1j df/dy`` (JAX's convention, docs/numpy-coverage.md).

    Non-scalar outputs get a sens of ones, as ``GradOperation``.  The returned
    function can itself be differentiated, to any order:
    ``grad(grad(f))(x)`` is the second derivative.
    """
    check_has_aux(has_aux)
    if grad_position is None and weights is None:
        raise ValueError("For 'grad', 'grad_position' and 'weights' cannot both be None")
    positions, single = normalize_positions(grad_position)
    if return_ids:
        return memoized(("grad-ids", fn, positions, single, _weights_key(weights), has_aux),
                        lambda: _with_ids(grad(fn, grad_position, weights, has_aux),
                                          positions, single, weights, has_aux, False))
    if holomorphic:
        return memoized(("grad-holomorphic", fn, positions, single, _weights_key(weights),
                         has_aux),
                        lambda: _make_grad(fn, positions, single, weights, has_aux, False, True))
    chain = getattr(fn, "__s2sad_first_grad_of__", None)
    if chain is not None and positions == (0,) and single and weights is None and not has_aux:
        base, order = chain
        return memoized(("grad-chain", base, order + 1),
                         lambda: _grad_chain(base, order + 1))
    key = ("grad", fn, positions, single, _weights_key(weights), has_aux)
    return memoized(key, lambda: _make_grad(fn, positions, single, weights, has_aux, False))


# Used inside compiled code, ``weights`` are Parameters the code reads at run
# time; which ones they are is all these factories need (as GradOperation's).
grad.__s2sad_takes_inputs_whole__ = True
# it only wraps ``fn``, which keeps the path it was read through (``WholeReads.pass_by_path``)
grad.__s2sad_wraps_fn__ = True


def _grad_chain(base, order):
    """``grad`` applied ``order`` times to ``base``, first input each time, as one chain.

    The same derivative as the nested functions (each level differentiates
    the sum of the one below with respect to the first input), written as
    ``GradOperation()`` applied ``order`` times: such a chain compiles in
    Taylor mode (``ad/taylor.py``) when it can, instead of ``order`` nested
    reverse sweeps.
    """
    gf = base
    for _ in range(order):
        gf = GradOperation()(gf)

    def grad_fn(*args, **kwargs):
        if kwargs:
            args = keywords_as_positional(base, args, kwargs, (0,))
        # a constant first input with runtime ones after it (all constants: () and a warning)
        if args and not G.has_runtime_leaves(G.arg_spec(args[0])) \
                and G.has_runtime_leaves(G.arg_spec(args)):
            _constant_position(0, args[0])
        return gf(*args)
    grad_fn.__s2sad_first_grad_of__ = (base, order)
    return _inspectable_chain(grad_fn, gf)


def _inspectable_chain(wrapper, gf):
    def compiled(*args):
        return gf.compiled(*args) if args else gf.last
    wrapper.__s2sad_compiled__ = compiled
    return wrapper


@constexpr
def value_and_grad(fn: Callable[..., Any], grad_position: GradPosition = 0,
                   weights: Weights = None, has_aux: bool = False,
                   return_ids: bool = False, holomorphic: bool = False) -> Callable[..., Any]:
    """Like ``grad`` but returns ``(value, gradients)``; ``value`` is ``fn``'s full output.

    With ``has_aux`` only the first output is differentiated.  The value
    comes from a forward run of ``fn`` besides the gradient's own, so an
    ``fn`` drawing random numbers sees different draws in each.
    ``return_ids`` pairs each gradient with its id, and ``holomorphic`` is, as in ``grad``.
    """
    check_has_aux(has_aux)
    if grad_position is None and weights is None:
        raise ValueError("For 'value_and_grad', 'grad_position' and 'weights' cannot both "
                         "be None")
    positions, single = normalize_positions(grad_position, "value_and_grad")
    if return_ids:
        return memoized(("value_and_grad-ids", fn, positions, single, _weights_key(weights),
                         has_aux),
                        lambda: _with_ids(value_and_grad(fn, grad_position, weights, has_aux),
                                          positions, single, weights, has_aux, True))
    key = ("value_and_grad", fn, positions, single, _weights_key(weights), has_aux, holomorphic)
    return memoized(key, lambda: _make_grad(fn, positions, single, weights, has_aux, True,
                                            holomorphic))


value_and_grad.__s2sad_takes_inputs_whole__ = True
value_and_grad.__s2sad_wraps_fn__ = True


def scalar_grad(fn, grad_position, api):
    """``grad(fn, grad_position)`` for ``api`` (``hessian``), whose compiled code checks
    that ``fn`` returns one element where it computes the output: ``fn`` need not
    run eagerly on every call for the check.  Not memoized: ``grad(fn)`` stays as it is."""
    positions, single = normalize_positions(grad_position, api)
    return _make_grad(fn, positions, single, None, False, False, scalar_output=api)


def _make_grad(fn, positions, single, weights, has_aux, with_value, holomorphic=False,
               scalar_output=None):
    if not callable(fn):
        raise TypeError("'fn' must be a function or a Cell, but got %s" % type(fn).__name__)
    mode = _mode(positions, weights)
    if with_value or has_aux:
        # one run of the forward gives the value (or the aux outputs) and the gradients
        gf = selected_grad_function(fn, has_aux, weights, positions, mode, single=single,
                                    with_value=True)
    else:
        gf = selected_grad_function(fn, has_aux, weights, positions, mode, single=single)
    gf.holomorphic = holomorphic
    gf.scalar_output = scalar_output
    aux_outputs = aux_outputs_of["value_and_grad" if with_value else "grad"]
    unread = unread_positions(fn, positions)    # their numbers need no compile of their own

    def tree_grad(args, inspect_only=False):
        return _tree_grad(fn, positions, single, weights, has_aux, with_value, args,
                          inspect_only)

    if with_value:
        def value_and_grad_fn(*args, **kwargs):
            if kwargs:
                args = keywords_as_positional(fn, args, kwargs, positions)
            if unread:
                args = blank_unread(args, unread)
            if has_trees(args):
                return tree_grad(args)
            rest, layout = arrangement(positions, len(args))
            value, grads = gf(take_at(args, positions), take_at(args, rest), layout)
            if has_aux:
                aux_outputs(value)
            return value, select(grads, mode, single)
        return _inspectable(value_and_grad_fn, gf, positions, tree_grad)

    if has_aux:
        def grad_aux_fn(*args, **kwargs):
            if kwargs:
                args = keywords_as_positional(fn, args, kwargs, positions)
            if unread:
                args = blank_unread(args, unread)
            if has_trees(args):
                return tree_grad(args)
            rest, layout = arrangement(positions, len(args))
            value, grads = gf(take_at(args, positions), take_at(args, rest), layout)
            return select(grads, mode, single), aux_outputs(value)
        return _inspectable(grad_aux_fn, gf, positions, tree_grad)

    def grad_fn(*args, **kwargs):
        if kwargs:
            args = keywords_as_positional(fn, args, kwargs, positions)
        if unread:
            args = blank_unread(args, unread)
        if has_trees(args):
            return tree_grad(args)
        rest, layout = arrangement(positions, len(args))
        grads = gf(take_at(args, positions), take_at(args, rest), layout)
        return select(grads, mode, single)
    if positions == (0,) and single and weights is None and not has_aux \
            and inspect.isfunction(fn):
        grad_fn.__s2sad_first_grad_of__ = (fn, 1)       # grad(grad_fn) continues the chain
    return _inspectable(grad_fn, gf, positions, tree_grad)


def _tree_grad(fn, positions, single, weights, has_aux, with_value, args, inspect_only=False):
    """``grad``/``value_and_grad`` of arguments holding dicts and other pytrees.

    The flat function (``trees.py``) of this call's structures is
    differentiated at the runtime leaves of the arguments asked for; each
    argument's gradient mirrors its structure, with None for a leaf that is
    a Python number (a constant, as in a tuple argument).  ``inspect_only``:
    the compiled code instead (``get_source``).
    """
    api = "value_and_grad" if with_value else "grad"
    if weights is not None:
        raise ValueError("For '%s', 'weights' cannot be combined with dict, namedtuple, "
                         "dataclass or registered-container arguments; pass the parameters "
                         "in a dict argument instead" % api)
    arrangement(positions, len(args))           # the positions exist
    flat = T.FlatArgs(args)
    leaf_positions = flat.runtime_leaves(positions)
    if not leaf_positions:
        T.warn_all_constant(api, positions)
        if with_value:
            return fn(*args), ()
        return ((), aux_outputs_of["grad"](fn(*args))) if has_aux else ()
    flat_fn = T.flat_function(fn, flat.key, "same-aux" if has_aux else "same")
    flat_grad = (value_and_grad if with_value else grad)(flat_fn, leaf_positions, None, has_aux)
    if inspect_only:        # get_source/get_ir: what this call compiles
        return flat_grad.__s2sad_compiled__(*flat.leaves)
    out = flat_grad(*flat.leaves)

    def rebuild(grads):
        return flat.rebuild_all(positions, single, dict(zip(leaf_positions, grads)))
    if with_value:
        return out[0], rebuild(out[1])
    if has_aux:
        return rebuild(out[0]), out[1]
    return rebuild(out)


# ------------------------------------------------------------ return_ids
def _ids_of(positions, single, weights):
    """The ids ``return_ids`` pairs with the gradients, in the gradients' structure.

    Positions for the inputs, ``Parameter.name`` for the weights; ``None``
    stands for the part the mode leaves out.
    """
    from ..tensor import Parameter
    input_ids = (positions[0] if single else positions) if positions else None
    if weights is None:
        weight_ids = None
    elif isinstance(weights, Parameter):
        weight_ids = weights.name
    else:
        weight_ids = tuple(w.name for w in weights)
    return input_ids, weight_ids


def _paired(ids, grads):
    """``(id, grad)``, or a tuple of such pairs when ``ids`` is a tuple."""
    if isinstance(ids, tuple):
        return tuple((i, g) for i, g in zip(ids, grads))
    return ids, grads


def _with_ids(grad_fn, positions, single, weights, has_aux, with_value):
    """Wrap a ``grad``/``value_and_grad`` function so its gradients carry their ids.

    A separate wrapper, so the functions without ``return_ids`` (the common
    case, differentiated again for higher order) keep their plain source.
    """
    input_ids, weight_ids = _ids_of(positions, single, weights)

    def label(grads):
        if isinstance(grads, tuple) and not grads:   # every input a constant: no gradients
            return grads
        if weight_ids is None:
            return _paired(input_ids, grads)
        if input_ids is None:
            return _paired(weight_ids, grads)
        return _paired(input_ids, grads[0]), _paired(weight_ids, grads[1])

    def grad_with_ids(*args):
        out = grad_fn(*args)
        if with_value:
            value, grads = out
            if has_aux:
                return value, (label(grads[0]), grads[1])
            return value, label(grads)
        if has_aux:
            return label(out[0]), out[1]
        return label(out)
    grad_with_ids.__s2sad_compiled__ = grad_fn.__s2sad_compiled__
    return grad_with_ids


def _is_id_pair(item):
    return (isinstance(item, tuple) and len(item) == 2 and not isinstance(item[1], tuple)
            and isinstance(item[0], (int, str)) and not isinstance(item[0], bool))


def _find_by_id(gradients, key):
    """The gradient paired with ``key`` anywhere in ``gradients``, or None."""
    if _is_id_pair(gradients):
        return gradients[1] if gradients[0] == key and type(gradients[0]) is type(key) else None
    if isinstance(gradients, tuple):
        for item in gradients:
            found = _find_by_id(item, key)
            if found is not None:
                return found
    return None


def get_grad(gradients: Any, identifier: Any) -> Any:
    """The gradient that ``grad(..., return_ids=True)`` paired with ``identifier``.

    ``identifier`` is an input's position (int) or a Parameter (looked up
    by its name).  Raises RuntimeError when no gradient has that id, as
    MindSpore does.  Inside compiled code it is inlined: the ids are known
    while compiling, so it picks the gradient then.
    """
    if not isinstance(gradients, tuple):
        raise TypeError("For 'get_grad', 'gradients' must be the tuple returned by a gradient "
                        "function made with return_ids=True, but got %s"
                        % type(gradients).__name__)
    if isinstance(identifier, Parameter):
        key = identifier.name
    elif isinstance(identifier, int) and not isinstance(identifier, bool):
        key = identifier
    else:
        raise TypeError("For 'get_grad', 'identifier' must be an int (an input's position) or "
                        "a Parameter, but got %s" % type(identifier).__name__)
    found = _find_by_id(gradients, key)
    if found is None:
        raise RuntimeError("For 'get_grad', no gradient has the id %r: pass a position in "
                           "'grad_position' or a Parameter in 'weights' of the gradient "
                           "function, made with return_ids=True" % (key,))
    return found


def _stage_get_grad(builder, args, kwargs, loc, path):
    """``get_grad`` met inside compiled code: the ids are known while compiling, so
    the gradient (an abstract value) is picked then."""
    from ..errors import CompileError
    from ..frontend.values import ListVal, const_value, is_const
    from ..ir import Var

    def plain(v):       # the ids as Python values, the gradients left abstract
        if isinstance(v, ListVal):
            v = tuple(v.items)
        if isinstance(v, tuple):
            return tuple(plain(x) for x in v)
        return const_value(v) if is_const(v) else v
    try:
        bound = signature(get_grad).bind(*args, **kwargs)
        identifier = bound.arguments["identifier"]
        if isinstance(identifier, Var):         # a Parameter: the object it stands for
            identifier = builder.known_object(identifier, get_grad, loc)
        return get_grad(plain(bound.arguments["gradients"]), plain(identifier))
    except (TypeError, RuntimeError) as e:
        raise CompileError(str(e), loc) from None


get_grad.__s2sad_stage__ = _stage_get_grad


def _inspectable(wrapper, gf, positions, tree_grad):
    """Let ``s2sad.get_source``/``get_ir`` read what ``wrapper``'s calls run
    (for pytree arguments, the gradient of the flat function ``tree_grad`` uses)."""
    def compiled(*args):
        if not args:
            return gf.last
        if has_trees(args):
            return tree_grad(args, inspect_only=True)
        rest, layout = arrangement(positions, len(args))
        return gf.compiled(take_at(args, positions), take_at(args, rest), layout)
    wrapper.__s2sad_compiled__ = compiled
    return wrapper
