"""The neural-network helpers of ``rt`` for arrays of another library than NumPy.

The same formulas as ``rt_nn`` (each stable where NumPy's is: the softmax
shifted by its maximum, the sigmoid without overflow), written against the
array API standard so that a Cell's layers and losses run on PyTorch's
arrays, on any device.  A helper missing here is refused with the primitive
named (``runtime.xarrays.missing_names``), never run through NumPy.
"""


class NNHelpers:
    """Mixed into ``rt_neutral.Helpers``: ``self.xp`` is the library's namespace."""

    def nn_sigmoid(self, x):
        """1 / (1 + exp(-x)) as exp(-log(1 + exp(-x))): no side overflows."""
        xp = self.xp
        return xp.exp(-xp.logaddexp(xp.zeros_like(x), -x))

    def nn_softplus(self, x):
        """log(1 + exp(x)) without overflow."""
        return self.xp.logaddexp(self.xp.zeros_like(x), x)

    def nn_softmax(self, x, axis):
        """exp(x) / sum(exp(x)) over ``axis``."""
        xp = self.xp
        e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
        return e / xp.sum(e, axis=axis, keepdims=True)

    def nn_log_softmax(self, x, axis):
        """x - logsumexp(x) over ``axis``."""
        xp = self.xp
        shifted = x - xp.max(x, axis=axis, keepdims=True)
        return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))

    def nn_softmax_cross_entropy(self, logits, labels):
        """(loss, backprop) of SoftmaxCrossEntropyWithLogits over the last axis."""
        logp = self.nn_log_softmax(logits, -1)
        return -self.xp.sum(labels * logp, axis=-1), self.xp.exp(logp) - labels

    def nn_sparse_softmax_cross_entropy(self, logits, labels, is_grad):
        """Mean cross entropy for integer labels, or its gradient when ``is_grad``."""
        xp = self.xp
        logp = self.nn_log_softmax(logits, -1)
        classes = xp.arange(logits.shape[-1], device=logits.device)
        onehot = xp.astype(xp.reshape(labels, (-1, 1)) == classes, logp.dtype)
        n = onehot.shape[0]
        if is_grad:
            return (xp.exp(logp) - onehot) / n
        return -xp.sum(logp * onehot) / n
