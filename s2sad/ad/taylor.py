"""Taylor mode: an n-th order gradient as one jet propagation and one reverse sweep.

``GradOperation()`` applied n times to ``f`` computes, with ``v = ones_like(x)``
(the sens every inner level seeds its gradient with),

    G_n(x) = grad_x  D^(n-1) F(x)[v, ..., v],      F = sum of f's outputs.

Differentiating the previous order's whole program, forward and backward,
multiplies the code by a constant per order (geometric growth).  Here the
directional derivatives come from propagating the truncated power series
``x + t v`` through ``f`` instead: each value ``u`` gets its derivatives
``u_k = d^k/dt^k u(x + t v)`` at ``t = 0`` for ``k = 1 .. K`` (K = n - 1),
computed by Leibniz-rule recurrences with binomial (integer) weights, so the
program grows like K^2 at worst.  Then

    D^K F(x)[v, ..., v] = sum(F_K)

and one reverse sweep over that program gives ``G_n``.

A coefficient that is zero while compiling is ``None``: ``x + t v`` has only
``x_1``, and linear ops keep that sparsity.  Each primitive says how it
propagates: ``linearity`` (``"linear"``: its JVP rule; ``"bilinear"``:
Leibniz's rule) or a rule in ``taylor_rules``, next to its bprop and JVP in
``ops/_grad``.  Programs with control flow, stateful ops or a primitive
without either (``taylor = "nested"``) are left to nested reverse mode
(``Unsupported``).
"""
import math

from ..ir.nodes import Var, Const, Func, Op, AdjointOf, leaves
from ..ir import control as C
from ..ops._grad import jvp_getters, taylor_rules
from ..ops.operations import math_ops as M
from ..ops.operations import array_ops as A
from .inline import inline_rule


class Unsupported(Exception):
    """The program needs something Taylor mode here does not do."""


class _Taylor:
    def __init__(self, order):
        from ..frontend.build import Builder
        self.K = order
        self.b = Builder()
        self.b.name_hints = False
        self.jets = {}      # var id -> [None, u_1, ..., u_K]
        self.shape_pairs = []
        self.loc = None

    # ------------------------------------------------------------ emission
    def emit(self, prim, args):
        return self.b.emit(prim, args, self.loc)

    def mul(self, a, b):
        if a is None or b is None:
            return None
        return self.emit(M.Mul(), [a, b])

    def scale(self, c, a):
        if a is None or c == 1:
            return a
        if c == -1:
            return self.emit(M.Neg(), [a])
        return self.emit(M.Mul(), [a, Const(c)])

    def total(self, terms):
        """``sum(c * t)`` over ``(c, t)`` pairs, ``None`` when every t is."""
        terms = [(c, t) for c, t in terms if t is not None]
        if not terms:
            return None
        if all(c == terms[0][0] for c, _ in terms):    # one common factor: scale once
            acc = terms[0][1]
            for _, t in terms[1:]:
                acc = self.emit(M.Add(), [acc, t])
            return self.scale(terms[0][0], acc)
        acc = self.scale(terms[0][0], terms[0][1])
        for c, t in terms[1:]:
            if c < 0:
                acc = self.emit(M.Sub(), [acc, self.scale(-c, t)])
            else:
                acc = self.emit(M.Add(), [acc, self.scale(c, t)])
        return acc

    def jet(self, a):
        if isinstance(a, Var) and a.id in self.jets:
            return self.jets[a.id]
        return None

    def has_jet(self, a):
        if isinstance(a, tuple):        # the operand list of Concat, Stack...
            return any(self.has_jet(x) for x in a)
        return self.jet(a) is not None

    def coefficient(self, a, k):
        """``a_k``, with ``Const(None)`` for a zero (what JVP rules take)."""
        if isinstance(a, tuple):
            return tuple(self.coefficient(x, k) for x in a)
        j = self.jet(a)
        return j[k] if j is not None and j[k] is not None else Const(None)

    def series(self, a):
        """``[a, a_1, ..., a_K]`` with ``None`` for zero coefficients."""
        j = self.jet(a)
        return [a] + (j[1:] if j is not None else [None] * self.K)

    # ---------------------------------------------------------------- ops
    def block(self, ops):
        for op in ops:
            if op.regions or isinstance(op.prim, (C.StackPush, C.StackPop)) or op.prim.stateful:
                raise Unsupported(op.prim.name)
            self.b.ops.append(Op(op.prim, op.args, op.outs, op.loc, op.origin))
            if isinstance(op.prim, C.CheckDefined):
                if self.jet(op.args[0]) is not None:
                    self.jets[op.outs[0].id] = self.jets[op.args[0].id]
                continue
            if not op.prim.differentiable:
                continue
            if not any(self.has_jet(a) for a in op.args):
                continue
            self.loc = op.loc
            outs = self.rule(op)
            for k in range(1, self.K + 1):
                for o, c in zip(op.outs, outs[k]):
                    if isinstance(c, Var) and c.hint is None:
                        c.hint = AdjointOf(o, "t_" if k == 1 else "t%d_" % k, op.prim.name)
            for i, o in enumerate(op.outs):
                col = [None] + [outs[k][i] for k in range(1, self.K + 1)]
                if any(c is not None for c in col):
                    self.jets[o.id] = col
                    # every rule keeps a derivative in its value's shape
                    self.shape_pairs.extend((c, o) for c in col if isinstance(c, Var))

    def rule(self, op):
        """``[None, outs_1, ..., outs_K]``: each ``outs_k`` one coefficient per output."""
        prim = op.prim
        K = self.K
        if prim.linearity == "linear":      # coefficient k is the JVP of coefficient k
            return [None] + [self.linear(op, k) for k in range(1, K + 1)]
        if prim.linearity == "bilinear":    # Leibniz's rule
            a, b = (self.series(x) for x in op.args[:2])
            rest = list(op.args[2:])
            return [None] + [[self.total(
                (math.comb(k, i), self.emit(prim, [a[i], b[k - i]] + rest))
                for i in range(k + 1) if a[i] is not None and b[k - i] is not None)]
                for k in range(1, K + 1)]
        fn = taylor_rules.lookup(prim)
        if fn is not None:
            series = fn(self, *[self.series(a) for a in op.args], op.outs[0])
            return [None] + [[c] for c in series[1:]]
        raise Unsupported(prim.name)    # taylor = "nested" (or undecided): nested reverse mode

    def linear(self, op, k):
        getter = jvp_getters.lookup(op.prim)
        if getter is None:
            raise Unsupported(op.prim.name)
        coeffs = [self.coefficient(a, k) for a in op.args]
        if all(isinstance(c, Const) for c in leaves(tuple(coeffs))):
            return [None] * len(op.outs)
        out = op.outs[0] if len(op.outs) == 1 else tuple(op.outs)
        t = inline_rule(self.b, getter(op.prim), list(op.args) + [out] + coeffs, op.loc,
                        "taylor")
        ts = list(t) if len(op.outs) > 1 else [t]
        return [None if isinstance(c, Const) and c.value is None else c for c in ts]

    def ode(self, x, y0, g):
        """Derivatives of ``y`` with ``y' = g x'`` (``g``'s derivatives built lazily).

        ``y_k = sum_{j=0..k-1} C(k-1,j) x_(j+1) g_(k-1-j)``; ``g(y, m)`` may
        read ``y_0..y_m``.
        """
        y = [y0]
        for k in range(1, self.K + 1):
            y.append(self.total([(math.comb(k - 1, j), self.mul(x[j + 1], g(y, k - 1 - j)))
                                 for j in range(k)]))
        return y

    def square_series(self, y, m):
        """``(y*y)_m = sum_{i=0..m} C(m,i) y_i y_(m-i)``, each pair once."""
        terms = []
        for i in range((m + 1) // 2):
            terms.append((2 * math.comb(m, i), self.mul(y[i], y[m - i])))
        if m % 2 == 0:
            terms.append((math.comb(m, m // 2), self.mul(y[m // 2], y[m // 2])))
        return self.total(terms)


def taylor_objective(func, x, order):
    """``func`` extended to return ``sum(F_(order-1))`` along ``v = ones_like(x)``.

    Raises ``Unsupported`` when the program needs nested reverse mode.
    """
    K = order - 1
    T = _Taylor(K)
    T.loc = func.loc
    v = T.emit(A.OnesLike(), [x])
    v.hint = AdjointOf(x, "t_")
    T.jets[x.id] = [None, v] + [None] * (K - 1)
    T.shape_pairs.append((v, x))
    T.block(func.body)
    T.loc = func.loc
    parts = []
    for r in leaves(func.result):
        j = T.jet(r)
        if j is not None and j[K] is not None:
            parts.append(T.emit(M.ReduceSum(False), [j[K], Const(())]))
    if not parts:       # a derivative that is zero while compiling: nested mode says how
        raise Unsupported("zero")
    total = T.total([(1, p) for p in parts])
    out = Func(func.name, list(func.params), T.b.ops, total, func.loc)
    out.shape_pairs = T.shape_pairs
    return out
