"""Slice adjoints added into one buffer (``sum_slice_grads``).

The adjoint of a value read by k slices ``x[a:b]``, ``x[c:d]``, ... is the
sum of k ``rt.getitem_grad`` arrays, each a zero array of ``x``'s full shape
with one slice's adjoint written in, summed by k-1 full-size additions (an
LSTM's gate slices each step, im2col by slicing in a convnet).  A gradient
written by hand allocates one zero array and adds each slice's adjoint into
its region; ``sum_slice_grads`` rewrites such a sum into that::

    d_z = rt.getitem_grad_zeros(z, d_i, d_f)         # one allocation
    d_z = rt.getitem_grad_into(d_z, (slice(None), slice(0, 4)), d_i)
    d_z = rt.getitem_grad_into(d_z, (slice(None), slice(4, 8)), d_f)

The buffer is fresh, so adding into it in place mutates nothing user code
or another adjoint holds; a basic index names each position once, so ``+=``
is exact even where the slices overlap, and an index with arrays adds with
``np.add.at`` as ``getitem_grad`` does.  The buffer has the dtype summing the
separate arrays would give.  It runs on the program that is compiled: these
primitives have no derivative rules.
"""
from ..ir.primitive import Primitive
from ..ops.operations.array_ops import GetItemGrad
from ..ops.operations.math_ops import Add
from ..ir.nodes import Const, Op, Var, use_counts, walk_blocks


class SliceGradZeros(Primitive):
    """Zeros shaped like ``x``, of the dtype the sum of the ``getitem_grad`` terms has."""
    stateful = True         # a fresh buffer each time: never merged with another
    differentiable = False
    output_shape_of = 0
    shape_only_inputs = (0,)

    def emit(self, x, *parts):
        return "rt.getitem_grad_zeros(%s)" % ", ".join((x,) + parts)


class SliceGradInto(Primitive):
    """``buf`` with ``dout`` added at ``index``, in place where the library allows."""
    stateful = True         # writes into ``buf``
    differentiable = False
    output_shape_of = 0

    def emit(self, buf, index, dout):
        return "rt.getitem_grad_into(%s, %s, %s)" % (buf, index, dout)


def sum_slice_grads(func):
    """Give each sum of two or more ``getitem_grad`` terms of one array a single buffer."""
    counts = use_counts(func)
    blocks = {id(ops): ops for _, ops in walk_blocks(func.body)}
    blocks.setdefault(id(func.body), func.body)
    for ops in blocks.values():
        new = _rewrite_block(ops, counts)
        if new is None:
            continue
        if ops is func.body and func.backward_start is not None:
            # an op keeps its place relative to the start of the backward sweep
            func.backward_start = sum(1 for k, _ in new if k < func.backward_start)
        ops[:] = [op for _, op in new]
    return func


def _rewrite_block(ops, counts):
    """``(original position, op)`` pairs of the rewritten block, or None if unchanged."""
    made = {o.id: op for op in ops for o in op.outs}
    dropped, replaced = set(), {}
    for op in reversed(ops):
        if type(op.prim) is not Add or id(op) in dropped:
            continue
        inner, terms = [], []
        _terms(op, made, counts, inner, terms)
        group = _largest_group(terms, made, counts)
        if len(group) < 2:
            continue
        grouped = {g.id for g in group}
        rest = [t for t in terms if not (isinstance(t, Var) and t.id in grouped)]
        replaced[id(op)] = _buffered(op, group, rest, made)
        dropped.update(id(o) for o in inner)
        dropped.update(id(made[t.id]) for t in group)
    if not replaced:
        return None
    new = []
    for k, op in enumerate(ops):
        if id(op) in replaced:
            new.extend((k, o) for o in replaced[id(op)])
        elif id(op) not in dropped:
            new.append((k, op))
    return new


def _terms(add, made, counts, inner, terms):
    """The terms of the sum rooted at ``add``, in the order it adds them: additions of
    this block read only by the sum are opened (and collected in ``inner``)."""
    for a in add.args:
        op = made.get(a.id) if isinstance(a, Var) else None
        if op is not None and counts.get(a.id) == 1 and type(op.prim) is Add:
            inner.append(op)
            _terms(op, made, counts, inner, terms)
        else:
            terms.append(a)


def _largest_group(terms, made, counts):
    """The ``getitem_grad`` results among ``terms``, read only by the sum, of the array
    most of them scatter into (in the order they are added)."""
    groups = {}
    for a in terms:
        op = made.get(a.id) if isinstance(a, Var) else None
        if op is None or type(op.prim) is not GetItemGrad or counts.get(a.id) != 1:
            continue
        x = op.args[1]
        if isinstance(x, (Var, Const)):
            # a constant shape (``opt/static_shapes.py``) is one object per shape
            groups.setdefault(x.id if isinstance(x, Var) else ("shape", id(x)), []).append(a)
    return max(groups.values(), key=len, default=[])


def _buffered(add, group, rest, made):
    """The ops computing ``add``'s output: one buffer, each ``getitem_grad`` term of
    ``group`` added into it, then the other terms ``rest`` added as before."""
    scatters = [made[g.id] for g in group]
    x = scatters[0].args[1]
    out = add.outs[0]

    def op(prim, args, hint=out.hint):
        return Op(prim, args, [Var(hint)], add.loc, add.origin, frame=add.frame)

    ops = [op(SliceGradZeros(), [x] + [s.args[0] for s in scatters])]
    for s in scatters:
        ops.append(op(SliceGradInto(), [ops[-1].outs[0], s.args[2], s.args[0]]))
    for r in rest:
        ops.append(op(Add(), [ops[-1].outs[0], r]))
    ops[-1].outs = [out]        # the sum's readers read the last op
    return ops


class SliceGradConcat(Primitive):
    """``x``'s adjoint from the adjoints of slices along one axis: their concatenation
    when the slices tile the axis, else a zero buffer with each added in."""
    stateful = True         # a fresh array each time: never merged with another
    differentiable = False
    output_shape_of = 0
    shape_only_inputs = (0,)

    def emit(self, x, axis, slices, parts):
        return "rt.getitem_grad_concat(%s, %s, %s, %s)" % (x, axis, slices, parts)


def concat_slice_grads(func):
    """Make each buffer of ``sum_slice_grads`` whose indices are slices along one axis
    (``z[:, :H]``, ``z[:, H:2 * H]``, ...: an LSTM's gates) one concatenation.

    The slices' bounds are known only when the code runs, so
    ``rt.getitem_grad_concat`` checks there that they tile the axis (each
    position in exactly one slice, each adjoint of its slice's shape and one
    dtype): then the sum of the zero-padded adjoints is their concatenation,
    one call against a zero fill and an in-place addition into a strided view
    per slice (29 µs against 2.3 for four 16x64 float32 gates).  Otherwise it
    adds each into a zero buffer, as before.
    """
    counts = use_counts(func)
    blocks = {id(ops): ops for _, ops in walk_blocks(func.body)}
    blocks.setdefault(id(func.body), func.body)
    for ops in blocks.values():
        _concat_block(ops, counts)
    return func


def _concat_block(ops, counts):
    k = 0
    while k < len(ops):
        op = ops[k]
        n = len(op.args) - 1
        chain = ops[k + 1:k + 1 + n]
        if type(op.prim) is SliceGradZeros and _is_chain(op, chain, counts):
            axes = {_slice_axis(c.args[1]) for c in chain}
            slices = tuple(_last(c.args[1]) for c in chain)
            if len(axes) == 1 and None not in axes and _may_tile(slices):
                axis = axes.pop()
                new = Op(SliceGradConcat(), [op.args[0], Const(axis), slices,
                                             tuple(c.args[2] for c in chain)],
                         chain[-1].outs, op.loc, op.origin, frame=op.frame)
                ops[k:k + 1 + n] = [new]
        k += 1


def _is_chain(zeros, chain, counts):
    """Whether ``chain`` is the ``getitem_grad_into`` calls that fill ``zeros``'s buffer,
    each partial buffer read by the next call alone."""
    prev = zeros.outs[0]
    for c in chain:
        buf = c.args[0]
        if type(c.prim) is not SliceGradInto or not isinstance(buf, Var) \
                or buf.id != prev.id or counts.get(buf.id) != 1:
            return False
        prev = c.outs[0]
    return len(chain) == len(zeros.args) - 1


def _slice_axis(index):
    """The axis of ``index`` when all its entries but the last are ``:`` and the last is
    a Var or a constant slice (``x[a:b]``, ``x[:, a:b]``), else None."""
    entries = _entries(index)
    last = entries[-1] if entries else None
    if not (isinstance(last, Var) or (isinstance(last, Const) and type(last.value) is slice)):
        return None
    full = all(isinstance(e, Const) and type(e.value) is slice and e.value == slice(None)
               for e in entries[:-1])
    return len(entries) - 1 if full else None


def _may_tile(slices):
    """False when the slices are all constants that cannot tile an axis (they overlap,
    leave a gap, step or count from the end): those keep the buffer."""
    if any(isinstance(s, Var) for s in slices):
        return True     # known when the code runs
    bounds = []
    for s in slices:
        v = s.value
        if v.step is not None or not all(b is None or (type(b) is int and b >= 0)
                                         for b in (v.start, v.stop)):
            return False
        bounds.append((v.start or 0, v.stop))
    bounds.sort(key=lambda b: b[0])
    end = 0
    for start, stop in bounds:
        if start != end:
            return False
        end = stop
    return True


def _entries(index):
    """The entries of an index as Vars and Consts (a constant index is one Const)."""
    if isinstance(index, Const) and type(index.value) is tuple:
        return tuple(Const(v) for v in index.value)
    return index if isinstance(index, tuple) else (index,)


def _last(index):
    return _entries(index)[-1]
