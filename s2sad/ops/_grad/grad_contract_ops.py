"""bprop and JVP rules for the contraction family (einsum, diagonals, triangles).

Each rule emits primitives of the family itself (and ``Unbroadcast``), so
the adjoints and tangents differentiate again to any order.
"""
from ..operations import array_ops as A
from ..operations import contract_ops as C
from .grad_base import bprop_getters, jvp_getters

unbroadcast = A.Unbroadcast()
zeros_like = A.ZerosLike()


# ----------------------------------------------------------------- einsum
def _is_identity(spec):
    """``'ij->ij'``: an einsum that returns its one operand unchanged."""
    inputs, output = C.split_terms(spec)
    return inputs == [output]


def _operand_gradients(self):
    """Per operand: the einsum giving its gradient and the EinsumExpand (or None) after it."""
    n = len(C.split_terms(self.subscripts)[0])
    plans = [C.gradient_plan(self.subscripts, k) for k in range(n)]
    terms = C.split_terms(self.subscripts)[0]
    contract = tuple(None if _is_identity(spec) else C.Einsum(spec, self.optimize)
                     for spec, _, _ in plans)
    expand = tuple(C.EinsumExpand(source, term) if needed else None
                   for (_, source, needed), term in zip(plans, terms))
    return n, contract, expand


@bprop_getters.register(C.Einsum)
def get_bprop_einsum(self):
    n, contract, expand = _operand_gradients(self)

    def bprop(*args):
        dout = args[n + 1]
        grads = ()
        for k in range(n):
            g = dout
            if contract[k] is not None:
                g = contract[k](dout, *(args[:k] + args[k + 1:n]))
            if expand[k] is None:
                g = unbroadcast(g, args[k])
            else:
                g = expand[k](g, args[k])
            grads = grads + (g,)
        return grads
    return bprop


@jvp_getters.register(C.Einsum)
def get_jvp_einsum(self):
    """Multilinear: the sum over operands of the einsum with that operand's tangent."""
    n = len(C.split_terms(self.subscripts)[0])

    def jvp(*args):
        total = None
        for k in range(n):
            t = args[n + 1 + k]
            if t is not None:
                term = self(*(args[:k] + (t,) + args[k + 1:n]))
                total = term if total is None else total + term
        return total
    return jvp


@bprop_getters.register(C.EinsumExpand)
def get_bprop_einsum_expand(self):
    # without an ellipsis only labelled size-1 axes can differ: unbroadcast fits them
    back = C.EinsumExpand(self.source, self.source) if "..." in self.source else unbroadcast
    collapse = C.Einsum(self.target + "->" + self.source)
    identity = _is_identity(collapse.subscripts)

    def bprop(g, like, out, dout):
        d = dout if identity else collapse(dout)
        return back(d, g), zeros_like(like)
    return bprop


@jvp_getters.register(C.EinsumExpand)
def get_jvp_einsum_expand(self):
    def jvp(g, like, out, tg, tlike):
        return self(tg, like)
    return jvp


# ------------------------------------------------------------------- kron
# Kron and its two gradients form a set closed under differentiation, as the
# matmul gradients do: each is linear in its dout and in the other operand.
kron = C.Kron()
kron_grad_a = C.KronGradA()
kron_grad_b = C.KronGradB()


@bprop_getters.register(C.Kron)
def get_bprop_kron(self):
    def bprop(a, b, out, dout):
        return kron_grad_a(dout, a, b), kron_grad_b(dout, a, b)
    return bprop


@jvp_getters.register(C.Kron)
def get_jvp_kron(self):
    def jvp(a, b, out, ta, tb):
        if ta is None:
            return kron(a, tb)
        if tb is None:
            return kron(ta, b)
        return kron(ta, b) + kron(a, tb)
    return jvp


@bprop_getters.register(C.KronGradA)
def get_bprop_kron_grad_a(self):
    def bprop(d, a, b, out, dout):
        return kron(dout, b), zeros_like(a), kron_grad_b(d, dout, b)
    return bprop


@bprop_getters.register(C.KronGradB)
def get_bprop_kron_grad_b(self):
    def bprop(d, a, b, out, dout):
        return kron(a, dout), kron_grad_a(d, a, dout), zeros_like(b)
    return bprop


@jvp_getters.register(C.KronGradA)
def get_jvp_kron_grad_a(self):
    """Linear in ``d`` and in ``b`` (``a`` lends its shape only)."""
    def jvp(d, a, b, out, td, ta, tb):
        if td is None:
            return self(d, a, tb)
        if tb is None:
            return self(td, a, b)
        return self(td, a, b) + self(d, a, tb)
    return jvp


@jvp_getters.register(C.KronGradB)
def get_jvp_kron_grad_b(self):
    """Linear in ``d`` and in ``a`` (``b`` lends its shape only)."""
    def jvp(d, a, b, out, td, ta, tb):
        if td is None:
            return self(d, ta, b)
        if ta is None:
            return self(td, a, b)
        return self(td, a, b) + self(d, ta, b)
    return jvp


# ----------------------------------------------------------- diagonal family
@bprop_getters.register(C.Diagonal)
def get_bprop_diagonal(self):
    grad = C.DiagonalGrad(self.offset, self.axis1, self.axis2)

    def bprop(x, out, dout):
        return (grad(dout, x),)
    return bprop


@bprop_getters.register(C.DiagonalGrad)
def get_bprop_diagonal_grad(self):
    diagonal = C.Diagonal(self.offset, self.axis1, self.axis2)

    def bprop(d, x, out, dout):
        return unbroadcast(diagonal(dout), d), zeros_like(x)
    return bprop


@bprop_getters.register(C.Diag)
def get_bprop_diag(self):
    grad = C.DiagGrad(self.k)

    def bprop(v, out, dout):
        return (grad(dout, v),)
    return bprop


@bprop_getters.register(C.DiagGrad)
def get_bprop_diag_grad(self):
    diag = C.Diag(self.k)

    def bprop(d, v, out, dout):
        return diag(dout), zeros_like(v)
    return bprop


@bprop_getters.register(C.Tri)
def get_bprop_tri(self):
    def bprop(x, out, dout):
        return (unbroadcast(self(dout), x),)
    return bprop


@jvp_getters.register(C.Diagonal)
@jvp_getters.register(C.Diag)
@jvp_getters.register(C.Tri)
def get_jvp_unary_linear(self):
    """Linear in its one input: the same primitive maps the tangent."""
    def jvp(x, out, tx):
        return self(tx)
    return jvp


@jvp_getters.register(C.DiagonalGrad)
@jvp_getters.register(C.DiagGrad)
def get_jvp_placed(self):
    """Linear in ``d``; the second input is read for its shape only."""
    def jvp(d, x, out, td, tx):
        return self(td, x)
    return jvp
