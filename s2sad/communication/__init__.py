"""``mindspore.communication``: the processes of a data-parallel run, over MPI.

``init()`` joins the job ``mpirun -n N python train.py`` started;
``get_rank()`` and ``get_group_size()`` say which process this is and how
many there are; ``release()`` leaves.  ``docs/backends.md`` ("Data-parallel
training (MPI)") explains the launch.
"""
from .management import (GlobalComm, init, release, get_rank, get_group_size,
                          get_local_rank, get_local_rank_size)

__all__ = ["GlobalComm", "init", "release", "get_rank", "get_group_size", "get_local_rank",
           "get_local_rank_size"]
