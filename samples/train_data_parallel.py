"""Data-parallel training over MPI, written the MindSpore way.

Every process (rank) holds the whole MLP and reads its own shard of the
data; ``TrainOneStepCell`` averages the gradients over the ranks before each
step, so all ranks take the same step: the step one process would take on
the whole global batch.  Launch it with

    mpirun -n 2 python samples/train_data_parallel.py

(as root add ``--allow-run-as-root``, and ``--oversubscribe`` when there are
fewer cores than ranks); ``python samples/train_data_parallel.py`` alone
trains on one rank.  Rank 0 prints the loss of its shard at each step and
writes the final checkpoint.  Needs ``pip install 's2sad[distributed]'``.
"""
import os
import tempfile

import numpy as np

import s2sad as mindspore
from mindspore import nn
from mindspore.communication import init, get_rank, get_group_size
from mindspore.dataset import NumpySlicesDataset

ROWS, FEATURES, CLASSES = 512, 8, 3
GLOBAL_BATCH = 64
EPOCHS = 4


def make_data():
    """Synthetic 3-class data: a Gaussian blob per class (the same on every rank)."""
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((CLASSES, FEATURES)) * 2.0
    labels = rng.integers(0, CLASSES, ROWS).astype(np.int32)
    points = centres[labels] + rng.standard_normal((ROWS, FEATURES))
    return points.astype(np.float32), labels


def main():
    init()
    rank, ranks = get_rank(), get_group_size()
    mindspore.set_auto_parallel_context(parallel_mode=mindspore.ParallelMode.DATA_PARALLEL,
                                        gradients_mean=True)
    mindspore.set_seed(1)          # the same initial weights and shuffling on every rank
    points, labels = make_data()
    data = NumpySlicesDataset((points, labels), column_names=["x", "y"], shuffle=True,
                              num_shards=ranks, shard_id=rank)
    data = data.batch(GLOBAL_BATCH // ranks, drop_remainder=True)

    net = nn.SequentialCell([nn.Dense(FEATURES, 32, activation="relu"),
                             nn.Dense(32, CLASSES)])
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                     reduction="mean"))
    train_step = nn.TrainOneStepCell(loss_net, nn.Momentum(net.trainable_params(), 0.1, 0.9))
    train_step.set_train()
    if rank == 0:
        print("%d rank(s), %d rows each per step" % (ranks, GLOBAL_BATCH // ranks))
    step = 0
    for epoch in range(EPOCHS):
        for x, y in data.create_tuple_iterator(num_epochs=1):
            loss = train_step(x, y)
            step += 1
            if rank == 0:
                print("epoch %d step %2d loss %.4f" % (epoch + 1, step, float(loss.asnumpy())))
    logits = net(mindspore.Tensor(points)).asnumpy()
    accuracy = float(np.mean(logits.argmax(axis=1) == labels))
    path = os.path.join(tempfile.gettempdir(), "train_data_parallel.ckpt")
    mindspore.save_checkpoint(net, path)          # rank 0 writes, the others skip
    if rank == 0:
        print("accuracy on all rows %.3f; checkpoint %s" % (accuracy, path))


if __name__ == "__main__":
    main()
