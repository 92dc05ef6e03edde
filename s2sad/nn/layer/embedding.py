"""Embedding: rows of a trainable table looked up by integer ids."""
from ... import ops
from ... import dtype as mstype
from ...common.initializer import initializer
from ...tensor import Parameter
from ..cell import Cell

__all__ = ["Embedding"]


class Embedding(Cell):
    """``embedding_table[ids]``: ids of any shape -> ``ids.shape + [embedding_size]``.

    ``use_one_hot=True`` computes ``one_hot(ids) @ table`` instead of a gather
    (same values and gradients).  ``padding_idx``: that row starts at zero.
    """

    def __init__(self, vocab_size, embedding_size, use_one_hot=False, embedding_table="normal",
                 dtype=mstype.int32, padding_idx=None):
        super().__init__()
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.use_one_hot = bool(use_one_hot)
        self.dtype = dtype
        self.padding_idx = padding_idx
        table = initializer(embedding_table, [vocab_size, embedding_size], mstype.float32)
        if padding_idx is not None:
            if not -vocab_size <= padding_idx < vocab_size:
                raise ValueError("For 'Embedding', 'padding_idx' must be in [%d, %d), but got %d"
                                 % (-vocab_size, vocab_size, padding_idx))
            table.asnumpy()[padding_idx] = 0
        self.embedding_table = Parameter(table, name="embedding_table")
        self.gather = ops.Gather()
        self.one_hot = ops.OneHot()
        self.matmul = ops.BatchMatMul()
        self.cast_like = ops.CastLike()

    def construct(self, ids):
        if self.use_one_hot:
            hot = self.one_hot(ids, self.vocab_size, 1.0, 0.0)
            return self.matmul(self.cast_like(hot, self.embedding_table), self.embedding_table)
        return self.gather(self.embedding_table, ids, 0)

    def extend_repr(self):
        return "vocab_size={}, embedding_size={}, use_one_hot={}".format(
            self.vocab_size, self.embedding_size, self.use_one_hot)
