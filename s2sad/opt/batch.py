"""A backward loop's work on popped values, done once over all iterations.

The backward sweep of ``h = tanh(W @ h + x[t])`` pops each iteration's ``h``
and computes ``1 - h*h`` from it: work that does not depend on the adjoint
flowing back, so it can run before the loop, over the rows of all
iterations at once -- one NumPy call per op instead of one per op and
iteration, which on small arrays is mostly call overhead::

    h_1_rows = rt.stack_rows(stack, 1)
    mul_h_1_rows = h_1_rows * h_1_rows
    sub_mul_h_1_rows = 1 - mul_h_1_rows
    popped_rows, batched = rt.row_group(sub_mul_h_1_rows)
    for i in reversed(range(n)):
        h, h_1, shape_mat_mul_ext_W = stack.pop()
        if batched:
            sub_mul_h_1 = popped_rows[len(stack)]
        else:
            mul_h_1 = h_1 * h_1
            sub_mul_h_1 = 1 - mul_h_1
        d_add = d_h_1 * sub_mul_h_1

After a pop, the stack's length is the popped entry's row; every value the
loop reads is read in that one call.  Only ops written as a ufunc or an
operator that keeps its operand's dtype move (a primitive's ``ufunc``),
reading popped values, values from before the loop and numbers.  Whether
rows are stacked (small arrays of one shape, dtype and rank, no operand of
a higher rank, blocks of enough small rows) is decided at run time by
``rt.stack_rows``; when not, ``batched`` is False and the loop runs its own
ops (the expressions before it stay lazy ``rt.Rows``, never computed).
Only a loop whose stack is made in the same block, pushed once and popped
once at the top of its body, is rewritten.
"""
from ..ir.control import ForRange, If, NewStack, RowGroup, RowsAt, StackPop, StackPush, StackRows
from ..ir.nodes import Const, Op, Region, RowsOf, Var, defined_ids, leaves, walk_ops
from .scalars import known_scalars

_NUMBER = (bool, int, float)


def batch_popped(func):
    """Move popped-value elementwise work of top-level backward loops before them."""
    made = {op.outs[0].id for op in func.body if isinstance(op.prim, NewStack)}
    pushed, pops = {}, {}        # stack id -> top-level ops that push it; pop count
    for op in func.body:
        for o in walk_ops([op]):
            if isinstance(o.prim, StackPush):
                pushed.setdefault(o.args[0].id, []).append(op)
            elif isinstance(o.prim, StackPop):
                pops[o.args[0].id] = pops.get(o.args[0].id, 0) + 1
    out, earlier = [], set()
    zero_d = None
    for op in func.body:
        if isinstance(op.prim, ForRange):
            body = op.regions[-1]
            pop = body.ops[0] if body.ops else None
            sid = pop.args[0].id if pop is not None and isinstance(pop.prim, StackPop) else None
            # every entry pushed (by one op, run earlier) before the loop pops any
            if sid in made and pops.get(sid) == 1 and len(pushed.get(sid, ())) == 1 \
                    and id(pushed[sid][0]) in earlier:
                if zero_d is None:
                    zero_d = known_scalars(func)
                out.extend(_batch(op, pop, zero_d))
        out.append(op)
        earlier.add(id(op))
    func.body = out
    return func


def _batch(loop, pop, zero_d):
    """The ops to put before ``loop``; rewrites its body to read their rows."""
    body = loop.regions[-1]
    inside = defined_ids([loop])      # its own outputs too: no body op reads them
    popped = {o.id: k for k, o in enumerate(pop.outs)}
    batched, operands = {}, {}          # op out id -> op; outside Var id -> Var
    for op in body.ops[1:]:
        if _batchable(op, popped, batched, inside, zero_d):
            batched[op.outs[0].id] = op
            operands.update((v.id, v) for v in op.arg_vars()
                            if v.id not in popped and v.id not in batched)
    if not batched:
        return []
    read_by_rest = {v.id for v in leaves(body.result) if isinstance(v, Var)}
    for op in body.ops:
        if op.outs and op.outs[0].id in batched:
            continue
        read_by_rest.update(v.id for v in op.used_vars())
    exits = {i for i in batched if i in read_by_rest}
    if not exits:
        return []

    slots = sorted({popped[v.id] for op in batched.values() for v in op.arg_vars()
                    if v.id in popped})
    columns = [Var(RowsOf(pop.outs[k])) for k in slots]
    rows = {pop.outs[k].id: c for k, c in zip(slots, columns)}
    stack = pop.args[0]
    single = len(pop.outs) == 1       # pushed as the value itself, not in a tuple
    before = [Op(StackRows(None if single else slots), [stack] + list(operands.values()),
                 columns, pop.loc)]
    for i, op in batched.items():
        out = op.outs[0]
        rows[i] = Var(RowsOf(hint=out.hint if isinstance(out.hint, str) else None))
        args = [rows.get(a.id, a) if isinstance(a, Var) else a for a in op.args]
        before.append(Op(op.prim, args, [rows[i]], op.loc, op.origin))
    body.ops = [op for op in body.ops if not op.outs or op.outs[0].id not in batched]
    order = [i for i in batched if i in exits]
    group, pays = Var(RowsOf(hint="popped")), Var("batched")
    before.append(Op(RowGroup(), [rows[i] for i in order], [group, pays], pop.loc))
    for i in order:
        if batched[i].outs[0].hint is None:
            batched[i].outs[0].hint = RowsOf(rows[i], row=True)
    body.ops.insert(1, _read_rows(group, pays, stack, pop, [batched[i] for i in order],
                                  list(batched.values())))
    return before


def _read_rows(group, pays, stack, pop, exits, ops):
    """``if pays: <exits' rows> else: <ops as written>``: the step's rows of every
    exit in one call where ``rt.row_group`` found batching pays, else the loop's
    own ops."""
    outs = [op.outs[0] for op in exits]
    read = [Var(o.hint) for o in outs]
    renamed = {o.id: Var(o.hint) for o in outs}
    plain = [Op(op.prim, [renamed.get(a.id, a) if isinstance(a, Var) else a for a in op.args],
                [renamed.get(op.outs[0].id, op.outs[0])], op.loc, op.origin) for op in ops]
    return Op(If(), [pays], outs, pop.loc, regions=[
        Region((), [Op(RowsAt(), [group, stack], read, pop.loc)], read),
        Region((), plain, [renamed[o.id] for o in outs])])


def _batchable(op, popped, batched, inside, zero_d):
    """0-d values never stack (``rt.stack_rows`` takes arrays): their rows would
    be computed one at a time at more cost than the op itself."""
    if op.prim.ufunc is None or op.regions or len(op.outs) != 1 or op.outs[0].id in zero_d:
        return False
    from_rows = False
    for a in op.args:
        if isinstance(a, Const):
            if type(a.value) not in _NUMBER:
                return False
        elif not isinstance(a, Var):
            return False
        elif a.id in popped or a.id in batched:
            from_rows = True
        elif a.id in inside:
            return False
    return from_rows
