"""Elementwise polynomials, collected between the orders of a derivative.

Each order of a nested gradient differentiates the whole program of the
previous one, so the code reverse mode leaves for the n-th derivative of
``tanh`` is a web of products and sums that grows geometrically with n, while
its value is a polynomial of degree n + 1 in ``t = tanh(x)``.
``collect_polynomials`` finds the values computed from a few *atoms* (values
made by any other op) by ``+``, ``-``, ``*``, negation, ``square``, small
integer powers, ``ones_like`` and ``zeros_like``, and division (``a / b`` is
``a * (1 / b)``, with ``1 / b`` an atom shared by every quotient by ``b``),
expands each into a polynomial over its atoms, and writes it back in Horner form when the block
gets smaller.  The next order then differentiates a program of linear size.

What it keeps:

- shapes: every atom and ``ones_like`` of a collected value is in its shape
  class (``shape_classes``), so cancelled terms cannot change a broadcast
  shape; a value that collapses to a constant is left as it was;
- dtypes: coefficients are Python numbers, which NumPy casts to the arrays'
  dtype, as the constants they come from did;
- accuracy: expanding ``x - 1`` into ``x**2 - 2*x + 1`` would lose every
  digit near ``x = 1``.  A sum is collected only when its terms share one
  factor of *exact* atoms (inputs, and values of any op that does not
  round, like ``abs`` or indexing); the rest of each term is over *rounded*
  atoms, outputs of transcendental ops such as ``tanh`` or ``exp``, whose
  own rounding already bounds the accuracy of any form.  ``x - 1`` stays an
  atom, and ``1 - tanh(x)**2`` is expanded.  Terms are reordered and
  combined, so results differ by rounding; only the intermediate programs
  of a higher-order derivative are collected, never a first-order gradient.
"""
import math

from ..ir.nodes import Var, Const, Op, leaves
from .shapes import shape_classes, is_number, maybe_integral

MAX_TERMS = 48      # a larger expansion stays as it was (an atom for its readers)
MAX_DEGREE = 32
MAX_COEFFICIENT = 2 ** 52   # exact in float64
MAX_POWER = 8       # x ** k with a constant integer 0 <= k <= MAX_POWER is a polynomial


class _Poly:
    """``{monomial: coefficient}`` with a monomial a sorted tuple of
    ``(atom index, power)``; ``cls`` is the shape class it lives in (``None``
    while only constants have been met)."""

    __slots__ = ("terms", "cls")

    def __init__(self, terms, cls):
        self.terms = {m: c for m, c in terms.items() if c != 0}
        self.cls = cls


def _join(a, b):
    """The shape class of a combination; ``False`` when two classes meet."""
    if a is None or b is None or a == b:
        return b if a is None else a
    return False


def _add(p, q, sign=1):
    terms = dict(p.terms)
    for m, c in q.terms.items():
        terms[m] = terms.get(m, 0) + sign * c
    return _Poly(terms, _join(p.cls, q.cls))


def _mul(p, q):
    terms = {}
    for m1, c1 in p.terms.items():
        for m2, c2 in q.terms.items():
            powers = dict(m1)
            for a, k in m2:
                powers[a] = powers.get(a, 0) + k
            m = tuple(sorted(powers.items()))
            terms[m] = terms.get(m, 0) + c1 * c2
    return _Poly(terms, _join(p.cls, q.cls))


def _fits(p):
    return p.cls is not False and len(p.terms) <= MAX_TERMS and all(
        sum(k for _, k in m) <= MAX_DEGREE and abs(c) < MAX_COEFFICIENT
        for m, c in p.terms.items())


def collect_polynomials(func):
    """Rewrite ``func``'s polynomial values in Horner form where that is smaller."""
    find = shape_classes(func)
    # a value that may be boolean is no atom: ``mask * ones`` is not ``mask``, and
    # ``mask + mask`` is ``or``
    func.body = _Block(find, maybe_integral(func)).rewrite(func.body, func.result)
    return func


class _Block:
    def __init__(self, find, integral):
        self.find = find
        self.integral = integral

    def rewrite(self, ops, result):
        """``ops`` with each polynomial root rewritten, or ``ops`` if not smaller."""
        for op in ops:
            for r in op.regions:
                r.ops = self.rewrite(r.ops, r.result)
        self.atoms, self.index, self.exact = [], {}, set()
        self.rounded = {op.outs[0].id for op in ops if len(op.outs) == 1 and
                        op.prim.rounded and op.prim.elementwise}
        # b.id -> the Var holding 1 / b, where the block computes it
        self.reciprocals = {}
        for k, op in enumerate(ops):
            b = _reciprocal_of(op)
            if b is not None:
                self.reciprocals.setdefault(b.id, (k, op.outs[0]))
        self.pending = {}       # atom index -> b, for a 1 / b no op computes yet
        polys = {}
        for self.position, op in enumerate(ops):
            p = self._poly(op, polys)
            if p is not None and _fits(p):
                polys[op.outs[0].id] = p
        # a value read by anything but a collected op (or returned) is a root
        hard = {v.id for v in leaves(result) if isinstance(v, Var)}
        for op in ops:
            if not (len(op.outs) == 1 and op.outs[0].id in polys):
                hard.update(v.id for v in op.used_vars())
        out = []
        for op in ops:
            root = op.outs[0].id if len(op.outs) == 1 else None
            p = polys.get(root)
            if root in hard and p is not None and any(m for m in p.terms):
                out.extend(_Emitter(self.atoms, op, self.pending).root(p))
            else:
                out.append(op)
        return out if _live_count(out, result) < _live_count(ops, result) else ops

    def _atom(self, v):
        if v.id not in self.index:
            self.index[v.id] = len(self.atoms)
            self.atoms.append(v)
            if v.id not in self.rounded:
                self.exact.add(self.index[v.id])
        return _Poly({((self.index[v.id], 1),): 1}, self.find(v))

    def _reciprocal(self, b):
        """The atom ``1 / b`` (written by the first root that reads it, if no op has it)."""
        k, have = self.reciprocals.get(b.id, (None, None))
        if have is not None and k < self.position:     # computed before this op
            return self._atom(have)
        key = ("1/", b.id)
        if key not in self.index:
            self.index[key] = len(self.atoms)
            self.atoms.append(None)
            self.pending[self.index[key]] = b
        return _Poly({((self.index[key], 1),): 1}, self.find(b))

    def _operand(self, a, polys):
        if isinstance(a, Var):
            if a.id in self.integral:
                return None
            return polys[a.id] if a.id in polys else self._atom(a)
        if is_number(a) and type(a.value) is not bool:
            return _Poly({(): a.value}, None)
        return None

    def _poly(self, op, polys):
        """``op``'s output as a polynomial, or ``None`` if it is not one."""
        from ..ops.operations import array_ops as A
        from ..ops.operations import math_ops as M
        if op.regions or len(op.outs) != 1:
            return None
        p = type(op.prim)
        if p in (A.OnesLike, A.ZerosLike) and isinstance(op.args[0], Var):
            return _Poly({(): 1} if p is A.OnesLike else {}, self.find(op.args[0]))
        if p is M.RealDiv and _reciprocal_of(op) is None:
            # a / b is a * (1 / b), 1 / b a rounded atom: quotients by one b share it
            a, b = op.args
            num = self._operand(a, polys)
            if num is None or not num.terms:
                return None
            if isinstance(b, Var):
                return _mul(num, self._reciprocal(b))
            if is_number(b) and type(b.value) is not bool and b.value != 0:
                return _Poly({m: c / b.value for m, c in num.terms.items()}, num.cls)
            return None
        if p not in (M.Add, M.Sub, M.Mul, M.Neg, M.Square, M.Pow):
            return None
        if p is M.Pow:
            k = op.args[1]
            if not (isinstance(k, Const) and type(k.value) is int and 0 <= k.value <= MAX_POWER):
                return None
            args = [self._operand(op.args[0], polys)]
        else:
            args = [self._operand(a, polys) for a in op.args]
        if any(a is None for a in args) or all(a.cls is None for a in args):
            return None
        if any(not a.terms for a in args):
            return None         # ``0 * x`` is NaN where x is infinite: left as written
        if p in (M.Add, M.Sub):
            total = _add(*args, sign=1 if p is M.Add else -1)
            if len(total.terms) < len(set(args[0].terms) | set(args[1].terms)):
                return None     # terms cancel: ``x - x`` is NaN where x is infinite
            parts = {tuple(x for x in m if x[0] in self.exact) for m in total.terms}
            return total if len(parts) <= 1 else None
        if p is M.Neg:
            return _Poly({m: -c for m, c in args[0].terms.items()}, args[0].cls)
        if p is M.Mul:
            return _mul(*args)
        n = 2 if p is M.Square else op.args[1].value
        out = _Poly({(): 1}, args[0].cls)
        for _ in range(n):
            out = _mul(out, args[0])
            if not _fits(out):
                return out
        return out


class _Emitter:
    """Ops computing a polynomial by multivariate Horner, at ``site``'s place."""

    def __init__(self, atoms, site, pending):
        self.atoms, self.site, self.ops, self.powers = atoms, site, [], {}
        self.pending = pending

    def atom(self, a):
        """The Var of atom ``a``; a pending ``1 / b`` is written here, once for the block."""
        if self.atoms[a] is None:
            self.atoms[a] = self.op("RealDiv", [Const(1), self.pending.pop(a)])
        return self.atoms[a]

    def root(self, p):
        """The ops; the last one defines the site's own output."""
        value, sign = self.signed(p)
        if sign < 0:
            value = self.op("Neg", [value])
        last = self.ops[-1] if self.ops and self.ops[-1].outs[0] is value else None
        if last is None or any(value is v for v in self.atoms):
            # p is a bare atom (maybe a 1 / b just written, which others read): a copy
            from ..ir.control import Copy
            last = Op(Copy(), [value], [Var()], self.site.loc, self.site.origin,
                      frame=self.site.frame)
            self.ops.append(last)
        last.outs = [self.site.outs[0]]
        return self.ops

    def op(self, name, args):
        from ..ops.operations import math_ops as M
        site = self.site
        out = Var()
        self.ops.append(Op(getattr(M, name)(), args, [out], site.loc, site.origin,
                           frame=site.frame))
        return out

    def signed(self, terms):
        """``(operand, sign)`` with ``sign * operand`` equal to the polynomial."""
        terms = terms.terms if isinstance(terms, _Poly) else terms
        if list(terms) == [()]:
            c = terms[()]
            return (Const(-c), -1) if c < 0 else (Const(c), 1)
        if len(terms) == 1:
            (m, c), = terms.items()
            value = self.monomial(m)
            if abs(c) != 1:
                value = self.op("Mul", [Const(abs(c)), value])
            return value, (-1 if c < 0 else 1)
        count = {}
        for m in terms:
            for a, _ in m:
                count[a] = count.get(a, 0) + 1
        a = min(count, key=lambda i: (-count[i], i))
        groups = {}             # power of a -> the rest of each monomial
        for m, c in terms.items():
            k = dict(m).get(a, 0)
            rest = tuple(x for x in m if x[0] != a)
            groups.setdefault(k, {})[rest] = c
        ks = sorted(groups, reverse=True)
        low = ks[-1]
        step = 0
        for k in ks:
            step = math.gcd(step, k - low)
        acc, sign = self.signed(groups[ks[0]])
        for hi, lo in zip(ks, ks[1:]):
            acc = self.op("Mul", [acc, self.power(a, (hi - lo) // step, step)])
            value, s = self.signed(groups[lo])
            acc, sign = self.combine(acc, sign, value, s)
        if low:
            acc = self.op("Mul", [acc, self.power(a, 1, low)])
        return acc, sign

    def combine(self, acc, sign, value, s):
        """``sign * acc + s * value`` as one op and a sign."""
        if sign == s:
            return self.op("Add", [acc, value]), sign
        if sign > 0:
            return self.op("Sub", [acc, value]), 1
        return self.op("Sub", [value, acc]), 1

    def monomial(self, m):
        value = None
        for a, k in m:
            v = self.power(a, 1, k)
            value = v if value is None else self.op("Mul", [value, v])
        return value

    def power(self, a, n, step):
        """``atom a ** (n * step)``, sharing the powers already written."""
        key = (a, n * step)
        if key in self.powers:
            return self.powers[key]
        if n * step == 1:
            return self.atom(a)
        if n == 1:
            half, odd = divmod(step, 2)
            base = self.power(a, 1, half)
            v = self.op("Mul", [base, base])
            if odd:
                v = self.op("Mul", [v, self.atom(a)])
        else:
            w = self.power(a, 1, step)
            half, odd = divmod(n, 2)
            v = self.power(a, half, step)
            v = self.op("Mul", [v, v]) if half else w
            if odd and half:
                v = self.op("Mul", [v, w])
        self.powers[key] = v
        return v


def _reciprocal_of(op):
    """``b`` when ``op`` computes ``1 / b``."""
    from ..ops.operations import math_ops as M
    if isinstance(op.prim, M.Reciprocal) and isinstance(op.args[0], Var):
        return op.args[0]
    if isinstance(op.prim, M.RealDiv) and isinstance(op.args[1], Var) and \
            isinstance(op.args[0], Const) and type(op.args[0].value) in (int, float) and \
            op.args[0].value == 1:
        return op.args[1]
    return None


def _live_count(ops, result):
    """How many of ``ops`` something reads (what DCE would keep), regions counted."""
    live = {v.id for v in leaves(result) if isinstance(v, Var)}
    n = 0
    for op in reversed(ops):
        if op.regions or op.prim.stateful or any(o.id in live for o in op.outs):
            n += 1 + sum(len(r.ops) for r in op.regions)
            live.update(v.id for v in op.used_vars())
    return n
