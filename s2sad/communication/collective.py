"""The collective the gradient reducer needs: an in-place sum over all ranks."""
from .management import world

__all__ = ["allreduce_sum"]


def allreduce_sum(buffer):
    """Replace the contiguous NumPy array ``buffer`` by its sum over all ranks.

    One call per buffer: each call costs a round of messages, so callers
    fuse many small arrays into one buffer first.
    """
    comm = world()
    if comm.Get_size() == 1:
        return buffer
    from mpi4py import MPI
    comm.Allreduce(MPI.IN_PLACE, buffer, op=MPI.SUM)
    return buffer
