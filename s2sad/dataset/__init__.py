"""``mindspore.dataset`` for data held in memory: the quick-start pipeline.

``NumpySlicesDataset`` (arrays, lists, tuples or dicts of them, sliced along
the first axis) and ``GeneratorDataset`` (a generator function, an iterable
or an indexable object) are the sources; ``batch``, ``shuffle``, ``map`` and
``repeat`` chain onto them; ``create_tuple_iterator`` and
``create_dict_iterator`` (or a plain ``for``) read them, as Tensors or, with
``output_numpy=True``, NumPy arrays.  Shuffling draws from its own stream of
``s2sad.set_seed``, so a seeded script reads the same order every run.
"""
from .datasets import Dataset, NumpySlicesDataset, GeneratorDataset

__all__ = ["Dataset", "NumpySlicesDataset", "GeneratorDataset"]
