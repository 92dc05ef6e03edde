"""A logistic function written out, ``1 / (1 + np.exp(-z))``, differentiated as one.

NumPy code writes the sigmoid by hand (an LSTM cell's gates).  Differentiated
op by op, its adjoint is ``d / (1 + e) * s * e`` with ``e = exp(-z)``: three
passes over the data per gate in every backward step, and NaN where ``e``
overflows (``0 * inf``).  ``fuse_sigmoids`` makes the four ops one
``Sigmoid`` op that computes the same expression (the same NumPy calls in the
same order, so the same values and warnings) and takes the sigmoid's own
derivative, ``dout * (s * (1 - s))``: one multiplication per backward step
once ``s * (1 - s)`` is computed over all steps' popped values together
(``opt/batch.py``), and 0 where ``s`` is 0.

Only a chain of one block whose intermediate values nothing else reads, with
both constants exactly one, and not for complex programs (the primitive's
rules are written for real values).
"""
from ..ir.nodes import Const, Var, use_counts
from ..ir.primitive import complex_mode
from ..ops.operations.nn_ops import Sigmoid


def fuse_sigmoids(func):
    """Replace each ``1 / (1 + exp(-z))`` chain by a ``Sigmoid`` written so; returns ``func``."""
    if complex_mode():
        return func
    counts = use_counts(func)
    _block(func.body, counts)
    return func


def _block(ops, counts):
    made = {}
    dropped = set()
    for op in ops:
        for r in op.regions:
            _block(r.ops, counts)
        found = _chain(op, made, counts)
        if found is not None:
            z, chain, written = found
            op.prim, op.args = Sigmoid(written), [z]
            dropped.update(id(c) for c in chain)
        if len(op.outs) == 1:
            made[op.outs[0].id] = op
    if dropped:
        ops[:] = [op for op in ops if id(op) not in dropped]


def _chain(op, made, counts):
    """``(z, the ops between, the two constants)`` when ``op`` is ``1 / (1 + exp(-z))``
    of this block, each value in between read only by the next op."""
    div = _plain(op, "RealDiv", 2)
    if div is None or not _one(div[0]):
        return None
    add = _single(div[1], "Add", 2, made, counts)
    if add is None:
        return None
    one, e = add.args if _one(add.args[0]) else reversed(add.args)
    if not _one(one):
        return None
    exp = _single(e, "Exp", 1, made, counts)
    neg = exp and _single(exp.args[0], "Neg", 1, made, counts)
    if neg is None or not isinstance(neg.args[0], Var):
        return None
    return neg.args[0], (add, exp, neg), (div[0].value, one.value)


def _plain(op, name, arity):
    """``op``'s arguments when it is the attribute-free primitive ``name``."""
    p = op.prim
    if p.name != name or p.attrs or len(op.args) != arity or len(op.outs) != 1 or op.regions:
        return None
    return op.args


def _single(v, name, arity, made, counts):
    """The op of this block making ``v`` as ``name``, when only one op reads ``v``."""
    if not isinstance(v, Var) or counts.get(v.id) != 1:
        return None
    op = made.get(v.id)
    return op if op is not None and _plain(op, name, arity) is not None else None


def _one(a):
    """A constant Python 1 or 1.0 (NumPy's arrays would bring their own dtype)."""
    return isinstance(a, Const) and type(a.value) in (int, float) and a.value == 1 \
        and type(a.value) is not bool
