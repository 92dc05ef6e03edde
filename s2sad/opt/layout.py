"""Transposed matrices a loop multiplies by, copied once into row-major order.

``x @ w.T`` is how a linear layer is written (PyTorch's ``F.linear``; s2sad's
recurrent layers transpose their weights once, before the time loop).
``w.T`` is a view in column-major order, and a matrix product whose right
operand is column-major runs up to twice as long in NumPy's BLAS as with a
row-major copy ([16, 64] @ [64, 256] in float32: 11 us against 5; [16, 32] @
[32, 256]: 6.3 against 2.5).  An LSTM step makes two such products.

``contiguous_transposes`` gives such a ``w.T`` a row-major copy of its own,
``w.T.copy()``, made once where ``w.T`` was: when it is the right operand of
a matrix product in a loop the transpose is outside of, and nothing but
matrix products and their gradients read it (none keeps it, returns it or
writes into it).  The values are the same; the copy costs one pass over
``w``, which the first product pays back.  NumPy only: other libraries
choose their own layouts.
"""
from ..ir.control import ForRange, While
from ..ir.nodes import Var, leaves
from ..ir.primitive import Primitive
from ..ops.operations.array_ops import TransposeT
from ..ops.operations.math_ops import MatMulExt, MatMulGradA, MatMulGradB
from .products import NewMatMulGradSum, SumAddGrad


class RowMajorT(Primitive):
    """``x.T`` as a row-major copy (``contiguous_transposes``); a gradient program's op."""
    differentiable = False
    formula = "not differentiated: made for the final program only"

    def emit(self, x):
        return "%s.T.copy()" % x


#: what may read the copy: matrix products, and the gradients' ops that read an
#: operand for its shape or as an operand of a product
_READERS = (MatMulExt, MatMulGradA, MatMulGradB, SumAddGrad, NewMatMulGradSum)


def contiguous_transposes(func):
    """Make each ``w.T`` that loops multiply by row-major, once; returns ``func``."""
    made, uses = {}, {}
    _scan(func.body, 0, made, uses)
    returned = {v.id for v in leaves(func.result) if isinstance(v, Var)}
    for vid, (op, depth) in made.items():
        found = uses.get(vid, [])
        in_loop = any(isinstance(u.prim, MatMulExt) and d > depth and isinstance(u.args[1], Var)
                      and u.args[1].id == vid for u, d, _ in found)
        if in_loop and vid not in returned \
                and all(isinstance(u.prim, _READERS) and not region for u, _, region in found):
            op.prim = RowMajorT()
    return func


def _scan(ops, depth, made, uses):
    """Record the ``TransposeT`` ops of ``ops`` with their loop depth, and every read of
    a value (``(op, depth, whether as a region's result)``)."""
    for op in ops:
        if isinstance(op.prim, TransposeT):
            made[op.outs[0].id] = (op, depth)
        for v in op.arg_vars():
            uses.setdefault(v.id, []).append((op, depth, False))
        inner = depth + 1 if isinstance(op.prim, (ForRange, While)) else depth
        for r in op.regions:
            _scan(r.ops, inner, made, uses)
            for v in leaves(r.result):
                if isinstance(v, Var):
                    uses.setdefault(v.id, []).append((op, inner, True))
