"""The global seed: reproducible parameter initialisation and Dropout masks.

``set_seed(seed)`` reseeds three independent streams derived from ``seed``: one
the initializers draw from (``s2sad.common.initializer``), one Dropout draws its
masks from (``s2sad.runtime.rt_nn``), one datasets shuffle with
(``s2sad.dataset``).  Without a seed they are seeded from the operating system,
so runs differ.
"""
import numpy as np

__all__ = ["set_seed", "get_seed", "generator", "shuffle_generator"]

_seed = None
# made on first use: importing ``numpy.random`` was a cost every program paid
_generator = None
_shuffle_generator = None


def set_seed(seed):
    """Seed parameter initialisation and Dropout (MindSpore's ``mindspore.set_seed``).

    ``seed`` must be a non-negative int.  Calling it again with the same seed
    replays the same initial weights and the same Dropout masks.
    """
    global _seed, _generator, _shuffle_generator
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError("The argument 'seed' must be type of int, but got %s"
                        % type(seed).__name__)
    if seed < 0:
        raise ValueError("The argument 'seed' must be greater than or equal to 0, but got %d"
                         % seed)
    from ..runtime import rt_nn
    # the first two children are what ``spawn(2)`` gave: adding a stream
    # keeps every earlier seed's weights and masks
    init_seq, dropout_seq, shuffle_seq = np.random.SeedSequence(int(seed)).spawn(3)
    _seed = int(seed)
    _generator = np.random.default_rng(init_seq)
    _shuffle_generator = np.random.default_rng(shuffle_seq)
    rt_nn.set_seed(dropout_seq)


def get_seed():
    """The seed last given to ``set_seed``, or ``None``."""
    return _seed


def generator():
    """The NumPy ``Generator`` initializers draw from (reseeded by ``set_seed``)."""
    global _generator
    if _generator is None:
        _generator = np.random.default_rng()
    return _generator


def shuffle_generator():
    """The NumPy ``Generator`` datasets shuffle with (reseeded by ``set_seed``).

    A stream of its own, so building a dataset does not change the weights
    a later layer is initialised with.
    """
    global _shuffle_generator
    if _shuffle_generator is None:
        _shuffle_generator = np.random.default_rng()
    return _shuffle_generator
