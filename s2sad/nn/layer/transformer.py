"""MultiheadAttention and TransformerEncoderLayer with MindSpore 2.x's arguments and defaults.

Both are plain Python over matrix products, ``softmax`` and the existing
layers (Dense, LayerNorm, Dropout), so their gradients come from the
primitives' rules.  Sequences are ``[seq, batch, embed]`` (``[batch, seq,
embed]`` with ``batch_first=True``).
"""
import math

import numpy as np

from ... import ops
from ... import dtype as mstype
from ...common.initializer import initializer, XavierUniform
from ...tensor import Parameter
from ..cell import Cell
from .basic import Dense, Dropout, _check_positive_int
from .normalization import LayerNorm
from .activation import get_activation

__all__ = ["MultiheadAttention", "TransformerEncoderLayer"]


def _additive_mask(mask, like):
    """A mask as values added to attention scores: a bool mask gives ``-inf`` where it is
    True (that position is not attended to) and 0 elsewhere; a float mask is added as it is."""
    if np.result_type(np.asarray(ops.stop_gradient(mask))) == np.bool_:
        return ops.zeros_like(like).masked_fill(mask, float("-inf"))
    return mask


class MultiheadAttention(Cell):
    """Scaled dot-product attention over ``num_heads`` heads of ``embed_dim // num_heads``.

    Parameters: ``in_proj_weight`` [3 * embed_dim, embed_dim] (or
    ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight`` when ``kdim`` or
    ``vdim`` differ from ``embed_dim``), ``in_proj_bias`` [3 * embed_dim] and
    ``out_proj`` (a Dense).  ``construct`` returns ``(attn_output,
    attn_weights)``; ``attn_weights`` is [batch, L, S] averaged over heads
    (``[batch, num_heads, L, S]`` with ``average_attn_weights=False``) and
    None with ``need_weights=False``.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, has_bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False,
                 dtype=mstype.float32):
        super().__init__()
        who = "MultiheadAttention"
        self.embed_dim = _check_positive_int(embed_dim, "embed_dim", who)
        self.num_heads = _check_positive_int(num_heads, "num_heads", who)
        if embed_dim % num_heads:
            raise ValueError("For 'MultiheadAttention', 'embed_dim' (%d) must be divisible by "
                             "'num_heads' (%d)" % (embed_dim, num_heads))
        for name, value in (("add_bias_kv", add_bias_kv), ("add_zero_attn", add_zero_attn)):
            if value:
                raise NotImplementedError("For 'MultiheadAttention', %s=True is not supported "
                                          "by s2sad; leave it False" % name)
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.head_dim = embed_dim // num_heads
        self.batch_first = bool(batch_first)
        self.has_bias = bool(has_bias)
        self.dropout = float(dropout)
        self.same_dims = self.kdim == embed_dim and self.vdim == embed_dim
        if self.same_dims:
            self.in_proj_weight = Parameter(initializer(
                XavierUniform(), [3 * embed_dim, embed_dim], dtype), name="in_proj_weight")
        else:
            for name, size in (("q", embed_dim), ("k", self.kdim), ("v", self.vdim)):
                setattr(self, name + "_proj_weight", Parameter(initializer(
                    XavierUniform(), [embed_dim, size], dtype), name=name + "_proj_weight"))
        if self.has_bias:
            self.in_proj_bias = Parameter(initializer("zeros", [3 * embed_dim], dtype),
                                          name="in_proj_bias")
        self.out_proj = Dense(embed_dim, embed_dim, has_bias=has_bias, dtype=dtype)
        self.attn_dropout = Dropout(p=self.dropout)
        self.scale = 1.0 / math.sqrt(self.head_dim)

    def _project(self, x, which):
        """Query, key or value projection (``which`` 0, 1 or 2) of ``x`` [seq, batch, dim]."""
        e = self.embed_dim
        if self.same_dims:
            w = self.in_proj_weight[which * e:(which + 1) * e]
        elif which == 0:
            w = self.q_proj_weight
        elif which == 1:
            w = self.k_proj_weight
        else:
            w = self.v_proj_weight
        y = ops.matmul(x, w.T)
        if self.has_bias:
            y = y + self.in_proj_bias[which * e:(which + 1) * e]
        return y

    def _heads(self, x, batch):
        """[seq, batch, embed] -> [batch * num_heads, seq, head_dim]."""
        x = ops.reshape(x, (x.shape[0], batch * self.num_heads, self.head_dim))
        return ops.swapaxes(x, 0, 1)

    def construct(self, query, key, value, key_padding_mask=None, need_weights=True,
                  attn_mask=None, average_attn_weights=True):
        if self.batch_first:
            query = ops.swapaxes(query, 0, 1)
            key = ops.swapaxes(key, 0, 1)
            value = ops.swapaxes(value, 0, 1)
        tgt_len, batch, _ = query.shape
        src_len = key.shape[0]
        q = self._heads(self._project(query, 0), batch)
        k = self._heads(self._project(key, 1), batch)
        v = self._heads(self._project(value, 2), batch)
        scores = ops.bmm(q * self.scale, ops.swapaxes(k, 1, 2))
        if attn_mask is not None:
            scores = scores + _additive_mask(attn_mask, scores)
        if key_padding_mask is not None:
            scores = ops.reshape(scores, (batch, self.num_heads, tgt_len, src_len))
            padding = ops.reshape(key_padding_mask, (batch, 1, 1, src_len))
            scores = scores + _additive_mask(padding, scores)
            scores = ops.reshape(scores, (batch * self.num_heads, tgt_len, src_len))
        weights = ops.softmax(scores, -1)
        attended = ops.bmm(self.attn_dropout(weights), v)
        attended = ops.reshape(ops.swapaxes(attended, 0, 1), (tgt_len, batch, self.embed_dim))
        out = self.out_proj(attended)
        if self.batch_first:
            out = ops.swapaxes(out, 0, 1)
        if not need_weights:
            return out, None
        weights = ops.reshape(weights, (batch, self.num_heads, tgt_len, src_len))
        if average_attn_weights:
            weights = ops.mean(weights, 1)
        return out, weights

    def extend_repr(self):
        return "embed_dim={}, num_heads={}, dropout={}, batch_first={}".format(
            self.embed_dim, self.num_heads, self.dropout, self.batch_first)


class TransformerEncoderLayer(Cell):
    """Self-attention then a two-layer feed-forward block, each with a residual connection
    and LayerNorm (after the residual sum, or before the block with ``norm_first=True``)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 dtype=mstype.float32):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Dense(d_model, dim_feedforward, dtype=dtype)
        self.dropout = Dropout(p=dropout)
        self.linear2 = Dense(dim_feedforward, d_model, dtype=dtype)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
        self.norm2 = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
        self.dropout1 = Dropout(p=dropout)
        self.dropout2 = Dropout(p=dropout)
        if isinstance(activation, str):
            if activation not in ("relu", "gelu"):
                raise ValueError("For 'TransformerEncoderLayer', 'activation' must be 'relu', "
                                 "'gelu' or a Cell, but got %r" % (activation,))
            activation = get_activation(activation)
        self.activation = activation

    def _self_attention(self, x, attn_mask, key_padding_mask):
        out, _ = self.self_attn(x, x, x, key_padding_mask, False, attn_mask)
        return self.dropout1(out)

    def _feed_forward(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def construct(self, src, src_mask=None, src_key_padding_mask=None):
        x = src
        if self.norm_first:
            x = x + self._self_attention(self.norm1(x), src_mask, src_key_padding_mask)
            x = x + self._feed_forward(self.norm2(x))
        else:
            x = self.norm1(x + self._self_attention(x, src_mask, src_key_padding_mask))
            x = self.norm2(x + self._feed_forward(x))
        return x
