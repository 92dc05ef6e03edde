"""Contractions written with Einstein's summation, and the diagonal family.

``Einsum`` carries its subscripts in explicit form (``'ij,jk->ik'``), made so
while compiling: an implicit output is spelled out, spaces are dropped, so two
spellings of one contraction share a primitive, and every rule can read the
output's indices.  Its adjoints are einsums again (``EinsumExpand`` puts a
gradient back on the diagonal of an operand that repeats an index, or along
the axes of indices only that operand has), so derivatives of any order stay
within these two primitives.

``Kron`` and its two gradients form a set closed under differentiation, as
the matmul gradients do.  The diagonal family (``Diagonal``, ``DiagonalGrad``,
``Diag``, ``DiagGrad``, ``Tri``) is linear; each adjoint is another member.
"""
from ...ir.primitive import Primitive

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def split_terms(subscripts):
    """``'ij,...jk->ik'`` -> (['ij', '...jk'], 'ik'); the output is None when implicit."""
    text = subscripts.replace(" ", "")
    if "->" in text:
        inputs, output = text.split("->")
    else:
        inputs, output = text, None
    return inputs.split(","), output


def letters(term):
    """The index letters of one term, without its ellipsis."""
    return term.replace("...", "")


def normalize_subscripts(subscripts):
    """Explicit-output subscripts: NumPy's implicit output is its once-used letters, sorted.

    NumPy puts the broadcast (ellipsis) axes first and orders the letters as
    Python sorts them (capitals before small letters).
    """
    if not isinstance(subscripts, str):
        raise TypeError("einsum subscripts must be a str, got %r" % (subscripts,))
    inputs, output = split_terms(subscripts)
    for term in inputs + ([output] if output is not None else []):
        bad = [c for c in letters(term) if c not in _LETTERS]
        if bad or term.count("...") > 1 or "." in letters(term):
            raise ValueError("einsum subscripts %r: term %r has characters other than "
                             "letters and one '...'" % (subscripts, term))
    if output is None:
        used = "".join(letters(t) for t in inputs)
        once = sorted(c for c in set(used) if used.count(c) == 1)
        output = ("..." if any("..." in t for t in inputs) else "") + "".join(once)
    return ",".join(inputs) + "->" + output


def gradient_plan(subscripts, k):
    """How to get operand ``k``'s gradient: (einsum subscripts, source term, expand?).

    The gradient einsum contracts ``dout`` with the other operands into the
    indices of operand ``k`` that they know (``source``).  When operand ``k``
    repeats an index, has one nobody else has (summed away), or has an
    ellipsis anywhere in the subscripts (broadcast axes), ``EinsumExpand`` brings that
    result to the operand's shape; otherwise an unbroadcast suffices.
    """
    inputs, output = split_terms(subscripts)
    term = inputs[k]
    others = [t for j, t in enumerate(inputs) if j != k]
    known = set(letters(output)).union(*[set(letters(t)) for t in others])
    source = ""
    for c in letters(term):
        if c in known and c not in source:
            source += c
    if "..." in subscripts:
        # NumPy keeps broadcast axes only in an output with an ellipsis; an
        # operand without one gets them summed away by EinsumExpand
        source = "..." + source
    spec = ",".join([output] + others) + "->" + source
    return spec, source, source != term


def _quote(text):
    return "'%s'" % text


class Einsum(Primitive):
    """``np.einsum(subscripts, *operands)``: sums of products over Einstein indices.

    Any number of operands; the subscripts are stored explicit (``'ij,jk->ik'``).
    """
    # multilinear in any number of operands: Leibniz's rule for Taylor mode is
    # written for two, so higher orders come from nested reverse mode
    taylor = "nested"
    formula = ("d operand_k = einsum(out,others->k)(dout, others...), put back on the "
               "diagonal / broadcast by EinsumExpand where operand k repeats or owns an index")

    def __init__(self, subscripts, optimize=False):
        if optimize not in (True, False, "greedy", "optimal"):
            raise ValueError("einsum optimize=%r: use True, False, 'greedy' or 'optimal'"
                             % (optimize,))
        super().__init__(subscripts=normalize_subscripts(subscripts), optimize=optimize)

    def emit(self, *operands):
        args = ", ".join((_quote(self.subscripts),) + operands)
        if len(operands) == 2:
            # one matrix product whatever ``optimize`` says: NumPy's einsum
            # uses no BLAS unless optimizing, and then re-plans on each call
            return "rt.einsum_pair(%s)" % args
        if self.optimize is False:
            return "xp.einsum(%s)" % args
        return "xp.einsum(%s, optimize=%r)" % (args, self.optimize)


class EinsumExpand(Primitive):
    """``g`` (indices ``source``) brought to the shape of ``like`` (indices ``target``).

    The adjoint of an einsum's reduction of one operand: a value where the
    repeated indices of ``target`` agree and zero elsewhere, broadcast along
    the indices ``source`` lacks, summed or broadcast where broadcasting
    matched the two shapes.  ``like`` is read for its shape only.
    """
    linearity = "linear"
    output_shape_of = 1
    shape_only_inputs = (1,)
    formula = "dg = EinsumExpand(source, source)(einsum(target->source)(dout), g)"

    def __init__(self, source, target):
        super().__init__(source=source, target=target)

    def emit(self, g, like):
        return "rt.einsum_expand(%s, %s, %r, %r)" % (g, like, self.source, self.target)


# ------------------------------------------------------------------ kron
class Kron(Primitive):
    """``np.kron(a, b)``: blocks ``a[i] * b``, the lower rank padded with leading 1s."""
    linearity = "bilinear"
    formula = "da = KronGradA(dout, a, b), db = KronGradB(dout, a, b)"

    def emit(self, a, b):
        return "xp.kron(%s, %s)" % (a, b)


class KronGradA(Primitive):
    """The gradient of ``kron(a, b)`` w.r.t. ``a``: each block of ``d`` contracted with ``b``.

    Inputs ``(d, a, b)``; only ``a``'s shape is read.  With ``KronGradB`` and
    ``Kron`` it forms a set whose rules use only each other.
    """
    taylor = "nested"   # a gradient program's op, not classified for Taylor mode
    output_shape_of = 1
    shape_only_inputs = (1,)
    formula = "dd = kron(c, b), db = KronGradB(d, c, b) for cotangent c"

    def emit(self, d, a, b):
        return "rt.kron_grad_a(%s, %s, %s)" % (d, a, b)


class KronGradB(Primitive):
    """The gradient of ``kron(a, b)`` w.r.t. ``b``: the blocks of ``d`` weighted by ``a``.

    Inputs ``(d, a, b)``; only ``b``'s shape is read.
    """
    taylor = "nested"   # as KronGradA
    output_shape_of = 2
    shape_only_inputs = (2,)
    formula = "dd = kron(a, c), da = KronGradA(d, a, c) for cotangent c"

    def emit(self, d, a, b):
        return "rt.kron_grad_b(%s, %s, %s)" % (d, a, b)


# ------------------------------------------------------------- diagonal family
class Diagonal(Primitive):
    """``np.diagonal(x, offset, axis1, axis2)``: the diagonal as the last axis (a copy)."""
    linearity = "linear"
    formula = "dx = DiagonalGrad(dout, x) (dout put back on the diagonal)"

    def __init__(self, offset=0, axis1=0, axis2=1):
        super().__init__(offset=int(offset), axis1=int(axis1), axis2=int(axis2))

    def emit(self, x):
        return "xp.diagonal(%s, %d, %d, %d).copy()" % (x, self.offset, self.axis1, self.axis2)


class DiagonalGrad(Primitive):
    """Zeros shaped like ``x`` with ``d`` on the diagonal ``Diagonal`` reads: its adjoint."""
    linearity = "linear"
    output_shape_of = 1
    shape_only_inputs = (1,)
    formula = "dd = Diagonal(dout)"

    def __init__(self, offset=0, axis1=0, axis2=1):
        super().__init__(offset=int(offset), axis1=int(axis1), axis2=int(axis2))

    def emit(self, d, x):
        return "rt.diagonal_grad(%s, %s, %d, %d, %d)" % (d, x, self.offset, self.axis1,
                                                        self.axis2)


class Diag(Primitive):
    """``np.diag(v, k)``: a 1-D ``v`` put on diagonal ``k``, or a 2-D ``v``'s diagonal ``k``.

    Which one is decided by ``v``'s rank at run time, as ``np.diag`` decides.
    """
    linearity = "linear"
    formula = "dv = DiagGrad(k)(dout, v)"

    def __init__(self, k=0):
        super().__init__(k=int(k))

    def emit(self, v):
        return "xp.diag(%s, %d)" % (v, self.k)


class DiagGrad(Primitive):
    """The adjoint of ``Diag``: ``d``'s diagonal ``k`` (1-D ``v``) or ``d`` put on it (2-D ``v``).

    ``v`` is read for its shape only.
    """
    linearity = "linear"
    output_shape_of = 1
    shape_only_inputs = (1,)
    formula = "dd = Diag(k)(dout)"

    def __init__(self, k=0):
        super().__init__(k=int(k))

    def emit(self, d, v):
        return "rt.diag_grad(%s, %s, %d)" % (d, v, self.k)


class Tri(Primitive):
    """``np.tril(x, k)`` (``upper=False``) or ``np.triu(x, k)``: zero one side of diagonal k.

    Over the last two axes, batched over the leading ones as NumPy does.
    """
    linearity = "linear"
    formula = "dx = unbroadcast(Tri(k, upper)(dout), x) (the same mask)"

    def __init__(self, k=0, upper=False):
        super().__init__(k=int(k), upper=bool(upper))

    def emit(self, x):
        return "xp.%s(%s, %d)" % ("triu" if self.upper else "tril", x, self.k)


__all__ = ["Einsum", "EinsumExpand", "Kron", "KronGradA", "KronGradB", "Diagonal", "DiagonalGrad",
           "Diag", "DiagGrad", "Tri"]
