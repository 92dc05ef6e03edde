"""Chains of elementwise tangent ops as one product by a coefficient.

A tangent program is linear in its tangents.  A run of elementwise ops that
scale a tangent by values of the primal program (``t * a``, ``t / b``,
``-t``, ``t1 - t2`` of two scalings of one tangent, a ``broadcast_like``)
is ``t * c`` for a coefficient ``c`` that reads no tangent.  ``jacfwd`` and
``hessian`` run the tangent program on many tangents (every basis vector at
once, ``ad/batching.py``) and its values once (``split_primal``): written as
``t * c``, the coefficient goes with the values, computed once on the
primal's shape, and the tangents get one product instead of the whole chain.

Each tangent value is kept as a sum of terms ``sign * src * coef`` (``coef``
None for one); a value is written out (``materialised``) where an op that is
not such a scaling reads it, or the program returns it.  Two terms of one
``src`` are merged (``c1 + c2``) only when both coefficients are known to be
floating point: a sum of boolean masks would be their ``or``, and a negated
mask an error, so a coefficient not known to be a float keeps its sign apart.
A ``broadcast_like`` moves into the coefficients only when each is known to
be a NumPy value (made by a NumPy call): a Python number broadcast becomes a
float64 array, where ``t * c`` keeps the tangent's dtype.
Only straight-line programs are rewritten (``split_primal`` splits no other).
"""
import numpy as np

from ..ir import control as C
from ..ir.nodes import Const, Op, Var, leaves, map_structure, substitute
from ..ir.passes import cse, dce
from ..opt import pipeline
from ..ops.operations import array_ops as A
from ..ops.operations import math_ops as M
from ..ops.operations import nn_ops as N

#: primitives whose output is floating point whatever their inputs
_FLOAT_OUT = (M.Exp, M.Log, M.Tanh, M.Sqrt, M.Reciprocal, M.RealDiv, N.Sigmoid)
#: primitives whose output is floating point when an input is
_FLOAT_KEPT = (M.Mul, M.Add, M.Sub, M.Neg, A.BroadcastLike, A.ExpandReduced, A.Unbroadcast)
#: primitives written as a NumPy call: their output is never a Python number
_NUMPY_OUT = (M.Exp, M.Log, M.Tanh, M.Sqrt, N.Sigmoid, A.BroadcastLike, A.ExpandReduced,
              A.Unbroadcast)


def fold_tangent_chains(func, t_params):
    """``func`` (a straight-line tangent program over ``t_params``) with its
    elementwise scaling chains written as one product each; unchanged otherwise."""
    if any(op.regions or op.prim.stateful or isinstance(op.prim, C.ControlOp)
           for op in func.body):
        return func
    F = _Folder({p.id for p in t_params})
    for op in func.body:
        F.op(op)
    result = map_structure(lambda a: F.read(a, func.loc), func.result)
    func.body = F.ops
    func.result = substitute(result, F.subst)
    return pipeline.run((cse, dce), func)       # coefficients computed twice, or unread


class _Folder:
    def __init__(self, dependent):
        self.dependent = set(dependent)   # ids of values that read a tangent
        self.floats = set()               # ids of values known to be floating point
        self.numpy = set()                # ids of values known to be NumPy arrays or scalars
        self.pending = {}                 # id -> (the Var, [(src, sign, coef)]) not written
        self.subst = {}
        self.ops = []

    # ------------------------------------------------------------ helpers
    def is_float(self, a):
        if isinstance(a, Const):
            v = a.value
            return isinstance(v, float) or (isinstance(v, np.ndarray) and
                                            np.issubdtype(v.dtype, np.floating))
        return isinstance(a, Var) and a.id in self.floats

    def emit(self, prim, args, loc, out=None):
        out = Var() if out is None else out
        op = Op(prim, list(args), [out], loc)
        self.ops.append(op)
        self._facts(op)
        return out

    def _facts(self, op):
        p, args = op.prim, op.args
        if isinstance(p, _FLOAT_OUT) or (isinstance(p, _FLOAT_KEPT) and
                                         any(self.is_float(a) for a in args[:2])):
            self.floats.update(o.id for o in op.outs)
        if isinstance(p, _NUMPY_OUT) or (isinstance(p, _FLOAT_KEPT + (M.RealDiv,)) and any(
                isinstance(a, Var) and a.id in self.numpy for a in args[:2])):
            self.numpy.update(o.id for o in op.outs)
        if any(isinstance(a, Var) and a.id in self.dependent for a in leaves(tuple(args))):
            self.dependent.update(o.id for o in op.outs)

    def is_tangent(self, a):
        return isinstance(a, Var) and a.id in self.dependent

    def terms(self, v):
        if v.id in self.pending:
            return self.pending[v.id][1]
        return [(v, 1, None)]

    def scaled(self, terms, factor, prim, loc):
        """Each term's coefficient times (``Mul``) or over (``RealDiv``) ``factor``."""
        out = []
        for src, sign, c in terms:
            if c is None:
                c = factor if prim is M.Mul else self.emit(M.RealDiv(), [Const(1.0), factor], loc)
            else:
                c = self.emit(prim(), [c, factor], loc)
            out.append(self.signed(src, sign, c, loc))
        return out

    def signed(self, src, sign, c, loc):
        """A term with its sign moved into a float coefficient (a primal op)."""
        if sign < 0 and c is not None and self.is_float(c):
            return (src, 1, self.emit(M.Neg(), [c], loc))
        return (src, sign, c)

    def merged(self, terms, loc):
        out = []
        for src, sign, c in terms:
            k = next((i for i, (s, _, c2) in enumerate(out) if s is src and
                      self.is_float(c) and self.is_float(c2)), None)
            if k is None:
                out.append((src, sign, c))
                continue
            _, sign2, c2 = out[k]
            prim = M.Add if sign == sign2 else M.Sub
            out[k] = (src, sign2, self.emit(prim(), [c2, c], loc))
        return out

    # -------------------------------------------------------------- ops
    def op(self, op):
        p, args = op.prim, [substitute(a, self.subst) for a in op.args]
        folded = self.fold(op, p, args)
        if folded is not None:
            self.pending[op.outs[0].id] = (op.outs[0], folded)
            self.dependent.add(op.outs[0].id)
            return
        op.args = [map_structure(lambda a: self.read(a, op.loc), a) for a in args]
        self.ops.append(op)
        self._facts(op)

    def fold(self, op, p, args):
        """The terms of ``op``'s output when it scales a tangent, else None."""
        t = [self.is_tangent(a) for a in args]
        kind = type(p)
        if kind is M.Neg and t == [True]:
            return [self.signed(s, -g, c, op.loc) for s, g, c in self.terms(args[0])]
        if kind is M.Mul and sum(t) == 1 and len(args) == 2:
            x, f = (args[0], args[1]) if t[0] else (args[1], args[0])
            return self.scaled(self.terms(x), f, M.Mul, op.loc)
        if kind is M.RealDiv and t == [True, False]:
            return self.scaled(self.terms(args[0]), args[1], M.RealDiv, op.loc)
        if kind in (M.Add, M.Sub) and t == [True, True]:
            second = self.terms(args[1])
            if kind is M.Sub:
                second = [self.signed(s, -g, c, op.loc) for s, g, c in second]
            return self.merged(self.terms(args[0]) + second, op.loc)
        if kind is A.BroadcastLike and t == [True, False] and args[0].id in self.pending:
            terms = self.terms(args[0])
            # a Python number broadcast would be a float64 array, where it
            # took the tangent's dtype in ``broadcast_like(t * c)``
            if all(isinstance(c, Var) and c.id in self.numpy for _, _, c in terms):
                return [(s, g, self.emit(A.BroadcastLike(), [c, args[1]], op.loc))
                        for s, g, c in terms]
        return None

    def read(self, a, loc):
        """``a`` written out if it is a pending tangent (once, under its own name)."""
        if not (isinstance(a, Var) and a.id in self.pending):
            return substitute(a, self.subst)
        v, terms = self.pending.pop(a.id)
        terms = sorted(terms, key=lambda term: -term[1])      # a positive term first
        if len(terms) == 1 and terms[0][1] > 0 and terms[0][2] is None:
            self.subst[v.id] = terms[0][0]
            return terms[0][0]
        last = len(terms) - 1
        acc = None
        for k, (src, sign, c) in enumerate(terms):
            alone = k == 0 and sign < 0    # a negative first term: negated after its product
            out = v if k == last and not alone else None
            x = src if c is None else self.emit(M.Mul(), [src, c], loc,
                                                out=out if k == 0 else None)
            if k == 0:
                acc = self.emit(M.Neg(), [x], loc, out=v if last == 0 else None) \
                    if alone else x
            else:
                acc = self.emit(M.Add() if sign > 0 else M.Sub(), [acc, x], loc, out=out)
        return v
