"""A backward loop's matmul gradients summed once per batch (``rt.MatMulGradSum``).

The gradient of a weight read by a loop is accumulated in the backward loop,
``d_W[...] += outer(d_t, h_t)`` per iteration.  On an RNN's small arrays each
step pays for two NumPy calls there; the sum of the terms is one matmul over
the stacked operands.  ``sum_matmul_grads`` rewrites such an accumulator
into a ``MatMulGradSum`` that keeps the operands and multiplies them in
batches.  Unbroadcast terms into the same accumulator (``h @ W + b``'s
``d_b``) are summed as they come and reduced once, after the loop.  It runs last, on the program that is compiled: the collector has
no derivative rules.
"""
from ..ir.primitive import Primitive
from ..ops.operations.math_ops import DotGradA, DotGradB, MatMul, MatMulGradA, \
    MatMulGradB
from ..ops.operations.array_ops import TransposeT, Unbroadcast
from ..ir.control import ForRange, NewAccumulator, AccumulateAt
from ..ir.nodes import Var, Op, use_counts, walk_blocks


class NewMatMulGradSum(Primitive):
    """``NewAccumulator`` whose additions may be matmul gradients kept for later."""
    stateful = True
    differentiable = False

    def emit(self, x):
        return "rt.math_matmul_grad_sum(%s)" % x


class SumAdd(Primitive):
    """``AccumulateAt`` into a ``MatMulGradSum``: added at once."""
    stateful = True
    differentiable = False

    def emit(self, acc, index, d):
        return "%s.add(%s, %s)" % (acc, index, d)


class SumAddGrad(Primitive):
    """``+= MatMulGradA/B(d, x, y)`` (``side`` "a" or "b"), batched with the other terms;
    ``dot``: ``DotGradA/B``'s, batched where ``np.dot`` is a matmul; ``transposed``:
    ``+= MatMulGradA/B(d, x, y).T`` (a weight read as ``w.T``, as ``nn.LSTM`` does)."""
    stateful = True
    differentiable = False

    def __init__(self, side, dot=False, transposed=False):
        super().__init__(side=side, dot=bool(dot), transposed=bool(transposed))
        # only the operand whose gradient this is is read for its shape
        self.shape_only_inputs = (2,) if side == "a" else (3,)

    def emit(self, acc, d, x, y):
        return "%s.add_%sgrad_%s%s(%s, %s, %s)" % (acc, "dot_" if self.dot else "", self.side,
                                                   "_t" if self.transposed else "", d, x, y)


class SumAddMatMul(Primitive):
    """``+= MatMul(transpose_a, transpose_b)(a, b)``, batched with the other iterations' terms."""
    stateful = True
    differentiable = False

    def __init__(self, transpose_a=False, transpose_b=False):
        super().__init__(transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))

    def emit(self, acc, a, b):
        return "%s.add_matmul(%s, %s, %r, %r)" % (acc, a, b, self.transpose_a, self.transpose_b)


class SumAddUnbroadcast(Primitive):
    """``+= Unbroadcast(d, x)``: the ``d`` of the iterations summed first, reduced once
    (a bias's gradient: one addition per step instead of a reduction)."""
    stateful = True
    differentiable = False
    shape_only_inputs = (2,)

    def emit(self, acc, d, x):
        return "%s.add_unbroadcast(%s, %s)" % (acc, d, x)


class SumTotal(Primitive):
    """The array a ``MatMulGradSum`` holds once its loop is over."""
    stateful = True
    differentiable = False

    def emit(self, acc):
        return "%s.total()" % acc


_ADD = {MatMulGradA: lambda prim: SumAddGrad("a"), MatMulGradB: lambda prim: SumAddGrad("b"),
        DotGradA: lambda prim: SumAddGrad("a", True), DotGradB: lambda prim: SumAddGrad("b", True),
        MatMul: lambda prim: SumAddMatMul(prim.transpose_a, prim.transpose_b),
        Unbroadcast: lambda prim: SumAddUnbroadcast()}
# the terms that may be added transposed (``acc += term.T``)
_ADD_T = {MatMulGradA: lambda prim: SumAddGrad("a", transposed=True),
          MatMulGradB: lambda prim: SumAddGrad("b", transposed=True)}


def sum_matmul_grads(func):
    """Give each backward-loop accumulator that adds matmul gradients a ``MatMulGradSum``."""
    made = {o.id: (op, ops) for op, ops in walk_blocks(func.body) for o in op.outs}
    loops = [(op, block) for op, block in made.values() if isinstance(op.prim, ForRange)]
    if not loops:
        return func
    counts = use_counts(func)
    done = set()
    for loop, block in loops:
        if id(loop) not in done:
            done.add(id(loop))
            _rewrite_loop(loop, block, counts, made)
    return func


def _rewrite_loop(loop, block, counts, made):
    body = loop.regions[0]
    found = []
    for k, param in enumerate(body.params[1:]):
        init = loop.args[3 + k]
        maker = made.get(init.id) if isinstance(init, Var) else None
        if maker is None or not isinstance(maker[0].prim, NewAccumulator) \
                or counts.get(init.id) != 1:
            continue
        links = _chain(body, param, body.result[k], counts)
        if links:
            products = [_product(link, body, counts, made) for link in links]
            found.append((k, param, maker, links, products))
    # unbroadcast terms (a bias's) join a loop that has matmul gradients to batch
    if any(p is not None and type(p[0].prim) is not Unbroadcast
           for *_, ps in found for p in ps):
        for k, param, maker, links, products in found:
            if any(products):
                _collect(loop, block, k, param, maker, links, products)


def _collect(loop, block, k, param, maker, links, products):
    """Make the accumulator ``param`` (the loop's ``k``-th carried value) a collector."""
    body = loop.regions[0]
    maker[0].prim = NewMatMulGradSum()
    # every term is added where it was computed (where its operands are
    # live under their names), into the one collector the loop carries
    for link, prod in zip(links, products):
        if prod is None:
            term = Op(SumAdd(), [param] + link.args[1:], [], link.loc, link.origin,
                      frame=link.frame)
            body.ops[body.ops.index(link)] = term
            continue
        prod, transpose = prod
        adder = (_ADD_T if transpose is not None else _ADD)[type(prod.prim)](prod.prim)
        term = Op(adder, [param] + list(prod.args), [], prod.loc, prod.origin,
                  frame=prod.frame)
        body.ops[body.ops.index(prod)] = term
        body.ops.remove(link)
        if transpose is not None:
            body.ops.remove(transpose)
    result = list(body.result)
    result[k] = param
    body.result = tuple(result)
    # the loop now yields the collector; its old output is the collector's total
    out = loop.outs[k]
    collector = Var(out.hint)
    loop.outs[k] = collector
    block.insert(block.index(loop) + 1,
                 Op(SumTotal(), [collector], [out], loop.loc, frame=loop.frame))


def _chain(body, param, result, counts):
    """The ``AccumulateAt`` ops from ``param`` to ``result``, each read once, or None."""
    adds = {op.args[0].id: op for op in body.ops
            if isinstance(op.prim, AccumulateAt) and isinstance(op.args[0], Var)}
    links, cur = [], param
    while cur is not result:
        link = adds.get(cur.id)
        if link is None or counts.get(cur.id) != 1:
            return None
        links.append(link)
        cur = link.outs[0]
    if counts.get(cur.id) != 1:
        return None
    return links


def _product(link, body, counts, made):
    """``(op, transpose)``: the matmul-gradient op that ``link`` adds, when only
    ``link`` reads it, or only a ``.T`` (``transpose``, else None) that only
    ``link`` reads; or None."""
    index, part = link.args[1], link.args[2]
    if not isinstance(part, Var) or getattr(index, "value", None) is not Ellipsis:
        return None
    prod = _made_here(part, body, counts, made)
    if prod is not None and type(prod.prim) in _ADD:
        return prod, None
    if prod is not None and type(prod.prim) is TransposeT and isinstance(prod.args[0], Var):
        inner = _made_here(prod.args[0], body, counts, made)
        if inner is not None and type(inner.prim) in _ADD_T:
            return inner, prod
    return None


def _made_here(v, body, counts, made):
    """The op of ``body`` that makes ``v``, when one reader only reads ``v``; else None."""
    prod, where = made.get(v.id, (None, None))
    return prod if prod is not None and where is body.ops and counts.get(v.id) == 1 else None
