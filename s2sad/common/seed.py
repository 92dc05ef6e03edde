"""The global seed: reproducible parameter initialisation and Dropout masks.

``set_seed(seed)`` reseeds two independent streams derived from ``seed``: one
the initializers draw from (``s2sad.common.initializer``), one Dropout draws its
masks from (``s2sad.runtime.rt_nn``).  Without a seed both are seeded from the
operating system, so runs differ.
"""
import numpy as np

__all__ = ["set_seed", "get_seed", "generator"]

_seed = None
_generator = np.random.default_rng()


def set_seed(seed):
    """Seed parameter initialisation and Dropout (MindSpore's ``mindspore.set_seed``).

    ``seed`` must be a non-negative int.  Calling it again with the same seed
    replays the same initial weights and the same Dropout masks.
    """
    global _seed, _generator
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError("The argument 'seed' must be type of int, but got %s"
                        % type(seed).__name__)
    if seed < 0:
        raise ValueError("The argument 'seed' must be greater than or equal to 0, but got %d"
                         % seed)
    from ..runtime import rt_nn
    init_seq, dropout_seq = np.random.SeedSequence(int(seed)).spawn(2)
    _seed = int(seed)
    _generator = np.random.default_rng(init_seq)
    rt_nn.set_seed(dropout_seq)


def get_seed():
    """The seed last given to ``set_seed``, or ``None``."""
    return _seed


def generator():
    """The NumPy ``Generator`` initializers draw from (reseeded by ``set_seed``)."""
    return _generator
