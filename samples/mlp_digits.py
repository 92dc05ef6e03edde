"""Train an MLP on the UCI hand-written digits with TrainOneStepCell.

The network, the loss, the optimizer and the training step are written as in
MindSpore (``nn.SequentialCell``, ``nn.Dense``, ``nn.SoftmaxCrossEntropyWithLogits``,
``nn.Momentum``, ``nn.WithLossCell``, ``nn.TrainOneStepCell``); s2sad compiles
the gradient of the loss once and reuses it for every batch.

    python samples/mlp_digits.py            # 20 epochs, prints the test accuracy
    python samples/mlp_digits.py --quick    # 3 epochs (what CI runs)
    python samples/mlp_digits.py --show-source   # also print the generated adjoint

The data (1,797 8x8 images, samples/data/digits.npz) is split once with a
fixed seed into 1,437 training and 360 test images.
"""
import argparse
import os
import sys
import time

import numpy as np

import s2sad
from s2sad import nn, Tensor

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.npz")
SEED = 0
TEST_FRACTION = 0.2


def load_digits(path=DATA):
    """(images as float32 [N, 64] scaled to [0, 1], labels as int32 [N])."""
    data = np.load(path)
    x = data["images"].reshape(len(data["images"]), -1).astype(np.float32) / 16.0
    y = data["labels"].astype(np.int32)
    return x, y


def split(x, y, seed=SEED, test_fraction=TEST_FRACTION):
    """A fixed random train/test split: (x_train, y_train, x_test, y_test)."""
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


class MLP(nn.Cell):
    """64 -> hidden -> hidden -> 10, ReLU between the layers."""

    def __init__(self, hidden=64):
        super().__init__()
        self.layers = nn.SequentialCell([
            nn.Dense(64, hidden, weight_init="he_uniform", activation="relu"),
            nn.Dense(hidden, hidden, weight_init="he_uniform", activation="relu"),
            nn.Dense(hidden, 10, weight_init="xavier_uniform"),
        ])

    def construct(self, x):
        return self.layers(x)


def build(seed=SEED, learning_rate=0.02, momentum=0.9):
    """The network, the loss network and the training step, seeded."""
    s2sad.set_seed(seed)
    net = MLP()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    loss_net = nn.WithLossCell(net, loss_fn)
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=learning_rate,
                            momentum=momentum)
    train_step = nn.TrainOneStepCell(loss_net, optimizer)
    train_step.set_train()
    return net, loss_net, train_step


def accuracy(net, x, y):
    logits = net(Tensor(x)).asnumpy()
    return float(np.mean(np.argmax(logits, axis=1) == y))


def batches(n, batch_size, rng):
    order = rng.permutation(n)
    for start in range(0, n, batch_size):
        yield order[start:start + batch_size]


def _progress(iterable, total, desc, enabled):
    """A tqdm progress bar when tqdm is installed and wanted, else the iterable itself."""
    if not enabled:
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False, file=sys.stderr)


def train(epochs=20, batch_size=32, seed=SEED, progress=False, log=print):
    """Train and return (per-epoch mean losses, final test accuracy, the network)."""
    x_train, y_train, x_test, y_test = split(*load_digits())
    net, _, train_step = build(seed)
    rng = np.random.default_rng(seed + 1)
    n_batches = -(-len(x_train) // batch_size)
    losses = []
    for epoch in range(1, epochs + 1):
        total = 0.0
        for idx in _progress(batches(len(x_train), batch_size, rng), n_batches,
                             "epoch %d" % epoch, progress):
            loss = train_step(Tensor(x_train[idx]), Tensor(y_train[idx]))
            total += float(loss.asnumpy()) * len(idx)
        losses.append(total / len(x_train))
        net.set_train(False)
        acc = accuracy(net, x_test, y_test)
        net.set_train(True)
        log("epoch %2d  loss %.4f  test accuracy %.4f" % (epoch, losses[-1], acc))
    net.set_train(False)
    return losses, accuracy(net, x_test, y_test), net, train_step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20, help="training epochs (default 20)")
    parser.add_argument("--quick", action="store_true",
                        help="3 epochs, for continuous integration")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--no-progress", action="store_true",
                        help="no tqdm progress bar (shown on a terminal when tqdm is installed)")
    parser.add_argument("--show-source", action="store_true",
                        help="print the adjoint s2sad generated for the loss")
    args = parser.parse_args(argv)
    epochs = 3 if args.quick else args.epochs
    x, _ = load_digits()
    print("digits: %d images of 8x8, %d train / %d test"
          % (len(x), len(x) - int(round(len(x) * TEST_FRACTION)),
             int(round(len(x) * TEST_FRACTION))))
    start = time.perf_counter()
    progress = not args.no_progress and sys.stderr.isatty()
    losses, acc, _, train_step = train(epochs, args.batch_size, args.seed, progress)
    elapsed = time.perf_counter() - start
    print("test accuracy = %.4f" % acc)
    print("training time = %.1f s" % elapsed)
    if args.show_source:
        print()
        print(s2sad.get_source(train_step.value_and_grad_fn))
    return 0


if __name__ == "__main__":
    sys.exit(main())
