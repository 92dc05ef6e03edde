"""A two-layer MLP loss and its W1 gradient and Hessian-vector product written out:
the closed forms second-order tests check s2sad's programs against."""
import numpy as np


def mlp_loss(W1, b1, W2, b2, x, Y):
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / x.shape[0]


def mlp_grad_hand(W1, b1, W2, b2, x, Y):
    """The W1 gradient, written out."""
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return x.T @ ((((p - Y) / x.shape[0]) @ W2.T) * (1 - h * h))


def mlp_hvp_hand(W1, b1, W2, b2, x, Y, V):
    """The R-operator: the W1 gradient's derivative along ``V``."""
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    dh = ((p - Y) / x.shape[0]) @ W2.T
    Rh = (1 - h * h) * (x @ V)
    Rz = Rh @ W2
    Rp = p * (Rz - (p * Rz).sum(axis=1, keepdims=True))
    return x.T @ (((Rp / x.shape[0]) @ W2.T) * (1 - h * h) - 2 * h * Rh * dh)
