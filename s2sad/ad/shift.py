"""A softmax's stabilising shift carries no gradient.

``z = x - max(x, axis, keepdims=True)`` keeps ``exp`` from overflowing in a
softmax ``exp(z) / sum(exp(z))`` or a log-softmax ``z - log(sum(exp(z)))``.
Both are unchanged when every slice of ``x`` along ``axis`` is shifted by a
constant, so the output does not depend on the max's value at all: its
adjoint ``-sum(d_z, axis)`` is zero in exact arithmetic (in floating point a
residue of rounding), and the max's rule (the tie mask, its count, a division
and a product) only spends time spreading that zero.  JAX's ``logsumexp`` and
PyTorch's ``log_softmax`` stop the gradient at the max for the same reason;
``constant_shifts`` lets reverse mode do so for the idiom written out.

It proves the invariance by following the shifted values forward in their
block: ``S`` values are ``f(x) - m`` and ``P`` values ``g(x) * exp(-m)``, per
slice along ``axis``::

    z = x - m         S  (x is the max's own operand, so z has x's shape)
    exp(S)            P
    sum(P, axis)      P  (keepdims, or a full sum of a full max)
    log(P)            S
    S - S, P / P      free of m

Every reader of ``m``, ``z`` and what they make must be one of these (in the
same block, not a region, not the result); then ``m`` is a constant to AD.
``stop_constant_shifts`` writes that decision into the program (the shift
reads ``stop_gradient(m)``), so a derivative of the gradient program
(forward over reverse, reverse over reverse) treats ``m`` as a constant too:
the gradient is free of ``m`` as the function is.
Only these ops are accepted: none of them changes the rank or adds a
broadcast axis, so ``axis`` names the same axis throughout.  Derivatives of
every order stay exact, since the derivatives of a shift-invariant function
are shift-invariant too.
"""
import heapq

from ..ir.nodes import Const, Op, Var, leaves
from ..ops.operations import array_ops as A
from ..ops.operations import math_ops as M


def constant_shifts(body, result):
    """Ids of the max/min values ``result`` depends on only through shift-invariant code."""
    return {ops[k].outs[0].id for ops, k in _accepted(body, result)}


def stop_constant_shifts(body, result):
    """Make the shift of each max/min ``constant_shifts`` accepts read
    ``stop_gradient(m)``: the max's only reader is that subtraction (``_invariant``).
    ``stop_gradient`` is written as its operand, so the generated code is unchanged."""
    for ops, k in sorted(_accepted(body, result), key=lambda a: -a[1]):
        m = ops[k].outs[0]
        stopped = Var(m.hint)
        for op in ops[k + 1:]:
            op.args = [stopped if a is m else a for a in op.args]
        ops.insert(k + 1, Op(A.StopGradient(), [m], [stopped], ops[k].loc))


def _accepted(body, result):
    """``(block, index)`` of each max/min accepted, blocks regions included."""
    found = []
    blocks = [(body, result)]
    while blocks:
        ops, result = blocks.pop()
        readers, escaping = None, None
        for k, op in enumerate(ops):
            for r in op.regions:
                blocks.append((r.ops, r.result))
            if isinstance(op.prim, (M.ReduceMax, M.ReduceMin)) and isinstance(op.args[0], Var):
                if readers is None:
                    readers, escaping = _readers(ops, result)
                if _invariant(ops, k, readers, escaping):
                    found.append((ops, k))
    return found


def _readers(ops, result):
    """Value id -> positions of the block's ops reading it; the ids read any other way
    (returned by the block, or by its control-flow ops)."""
    readers = {}
    escaping = {v.id for v in leaves(result) if isinstance(v, Var)}
    for i, op in enumerate(ops):
        if op.regions:
            escaping.update(v.id for v in op.used_vars())
        for v in op.arg_vars():
            readers.setdefault(v.id, []).append(i)
    return readers, escaping


def _axes(a, full):
    """``a`` as a comparable key, or None when it is not a constant."""
    if not isinstance(a, Const):
        return None
    v = a.value
    if v is None or v == ():
        return "all" if full else None
    return tuple(sorted(v)) if isinstance(v, (tuple, list)) else (v,)


def _invariant(ops, k, readers, escaping):
    """Whether the max/min ``ops[k]`` reaches the result only through shift-invariant code.

    The readers of classified values are visited in program order, so each
    is classified after all of its operands; only they are visited.
    """
    op = ops[k]
    x, m = op.args[0], op.outs[0]
    full = _axes(op.args[1], True) == "all"
    axes = _axes(op.args[1], full)
    if axes is None or not (op.prim.keep_dims or full) or m.id in escaping:
        return False
    kind = {m.id: "m"}  # value id -> "S" (shifted by -m) or "P" (scaled by exp(-m))
    todo = list(readers.get(m.id, ()))
    seen = set(todo)
    while todo:
        r = ops[heapq.heappop(todo)]
        ks = [kind.get(a.id) if isinstance(a, Var) else None for a in r.args]
        if "m" in ks:
            made = "S" if isinstance(r.prim, M.Sub) and r.args[0] is x and r.args[1] is m \
                else False
        else:
            made = _made(r, ks, axes, full)
        if made is False:
            return False
        if made is not None:
            out = r.outs[0]
            if out.id in escaping:
                return False
            kind[out.id] = made
            for i in readers.get(out.id, ()):
                if i not in seen:
                    seen.add(i)
                    heapq.heappush(todo, i)
    return True


def _made(r, ks, axes, full):
    """What ``r`` makes of operands of kinds ``ks``: "S", "P", None (free of m) or False (not invariant)."""
    p = r.prim
    if isinstance(p, M.Exp) and ks == ["S"]:
        return "P"
    if isinstance(p, M.Log) and ks == ["P"]:
        return "S"
    if isinstance(p, M.ReduceSum) and ks == ["P", None] and _axes(r.args[1], full) == axes \
            and (p.keep_dims or full):
        return "P"
    if isinstance(p, M.Sub) and ks == ["S", "S"]:
        return None
    if isinstance(p, M.RealDiv) and ks == ["P", "P"]:
        return None
    return False
