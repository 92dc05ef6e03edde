"""One rank of the data-parallel checks, run by ``mpirun`` from test_data_parallel.py.

``python data_parallel_worker.py MODE OUT_DIR``:

* ``train``: checks, on this rank, that the gradient reduced over the ranks
  equals the full-batch gradient computed alone, and that 20 data-parallel
  ``TrainOneStepCell`` steps on the shards give the weights 20 steps on the
  full batch give; writes ``rank<r>.json`` with the measured differences;
* ``raise``: rank 1 raises while rank 0 waits in a collective (the job must
  end, not hang).

Everything runs in float64, so the tolerances are round-off only.
"""
import json
import os
import sys

import numpy as np

import s2sad as ms
from s2sad import nn, ops, Tensor
from s2sad import dataset as ds
from s2sad.communication import init, get_rank, get_group_size
from s2sad.context import ParallelMode

ROWS, FEATURES = 12, 3
RNG = np.random.default_rng(5)
X = RNG.standard_normal((ROWS, FEATURES))
Y = RNG.standard_normal((ROWS, 1))


def mlp():
    """The same initial float64 MLP on every rank (and for each reference)."""
    ms.set_seed(11)
    net = nn.SequentialCell([nn.Dense(FEATURES, 8, activation="tanh"), nn.Dense(8, 1)])
    for p in net.get_parameters():
        p.set_data(p.asnumpy().astype(np.float64))
    return nn.WithLossCell(net, nn.MSELoss())


def shard():
    """This rank's rows, read through the sharded dataset as one batch."""
    data = ds.NumpySlicesDataset((X, Y), column_names=["x", "y"], shuffle=False,
                                 num_shards=get_group_size(), shard_id=get_rank())
    rows = ROWS // get_group_size()
    assert data.get_dataset_size() == rows, data.get_dataset_size()
    batch = next(data.batch(rows).create_tuple_iterator())
    return batch[0], batch[1]


def largest_difference(a, b):
    return max(float(np.max(np.abs(np.asarray(u) - np.asarray(v)))) for u, v in zip(a, b))


def gradient_check(x, y):
    """|reduced shard gradient - full-batch gradient|, largest entry."""
    loss_net = mlp()
    weights = loss_net.trainable_params()
    grad_fn = ops.GradOperation(get_by_list=True)(loss_net, weights)
    full = grad_fn(Tensor(X), Tensor(Y))
    reduced = nn.DistributedGradReducer(weights, mean=True)(grad_fn(x, y))
    return largest_difference([g.asnumpy() for g in reduced], [g.asnumpy() for g in full])


def train(x, y, sens, steps=20):
    """The weights after ``steps`` TrainOneStepCell steps on (x, y)."""
    loss_net = mlp()
    step = nn.TrainOneStepCell(loss_net, nn.SGD(loss_net.trainable_params(), 0.1 / sens),
                               sens=sens)
    for _ in range(steps):
        step(x, y)
    return [p.asnumpy().copy() for p in loss_net.trainable_params()]


def train_check(x, y, sens):
    """|data-parallel weights - full-batch weights| after 20 steps (sens 1: one-pass path)."""
    ms.reset_auto_parallel_context()
    alone = train(Tensor(X), Tensor(Y), sens)
    ms.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True)
    parallel = train(x, y, sens)
    moved = largest_difference(parallel, [p.asnumpy() for p in mlp().trainable_params()])
    return largest_difference(parallel, alone), moved


def main(mode, out_dir):
    init()
    rank = get_rank()
    if mode == "raise":
        from s2sad.communication.management import world
        if rank == 1:
            raise ValueError("rank 1 fails on purpose")
        world().allreduce(1)                 # rank 0 would wait here for ever
        return
    ms.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True)
    x, y = shard()
    result = {"rank": rank, "size": get_group_size(), "grad": gradient_check(x, y)}
    result["train"], result["moved"] = train_check(x, y, 1.0)
    result["train_eager"], _ = train_check(x, y, 2.0)
    ms.save_checkpoint(mlp(), os.path.join(out_dir, "rank%d.ckpt" % rank))
    with open(os.path.join(out_dir, "rank%d.json" % rank), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
