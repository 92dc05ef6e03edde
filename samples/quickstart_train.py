"""MindSpore's quick start, on synthetic FashionMNIST-shaped data.

A 784-128-64-10 MLP learns 10 classes of 28x28 "images" (each class a fixed
random pattern plus noise, so it can be learnt).  It is trained twice, the
two ways MindSpore's tutorials show:

1. the functional loop: ``value_and_grad(forward_fn, None,
   optimizer.parameters, has_aux=True)`` and the optimizer, batch by batch;
2. ``Model(network, loss_fn, optimizer, metrics={"accuracy"})`` with
   ``Model.train`` and a ``LossMonitor``, then ``Model.eval``.

Then the trained weights go through a checkpoint: saved, loaded into a fresh
network, evaluated again (the same accuracy).

    python samples/quickstart_train.py
"""
import os
import sys
import tempfile

import numpy as np

import s2sad as mindspore
from mindspore import nn
from mindspore.dataset import NumpySlicesDataset
from mindspore.train import Model, LossMonitor

CLASSES, SIDE = 10, 28
SEED = 0


def make_data(n, seed):
    """``n`` images [n, 1, 28, 28] float32 in [0, 1] and int32 labels: pattern + noise."""
    patterns = np.random.default_rng(SEED).random((CLASSES, 1, SIDE, SIDE))
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, n).astype(np.int32)
    images = 0.5 * patterns[labels] + 0.5 * rng.random((n, 1, SIDE, SIDE))
    return images.astype(np.float32), labels


def datasets(batch_size=32):
    """(train, test): 480 and 160 images, batched; training data shuffled."""
    train = NumpySlicesDataset(make_data(480, 1), column_names=["image", "label"],
                               shuffle=True).batch(batch_size)
    test = NumpySlicesDataset(make_data(160, 2), column_names=["image", "label"],
                              shuffle=False).batch(batch_size)
    return train, test


class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell([
            nn.Dense(SIDE * SIDE, 128, weight_init="he_uniform"),
            nn.ReLU(),
            nn.Dense(128, 64, weight_init="he_uniform"),
            nn.ReLU(),
            nn.Dense(64, CLASSES, weight_init="xavier_uniform"),
        ])

    def construct(self, x):
        x = self.flatten(x)
        return self.dense_relu_sequential(x)


def loss_function():
    if hasattr(nn, "CrossEntropyLoss"):
        return nn.CrossEntropyLoss()
    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


def functional_loop(model, loss_fn, optimizer, train, epochs):
    """Train with value_and_grad; returns the mean loss of each epoch."""
    def forward_fn(data, label):
        logits = model(data)
        loss = loss_fn(logits, label)
        return loss, logits

    grad_fn = mindspore.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)

    def train_step(data, label):
        (loss, _), grads = grad_fn(data, label)
        optimizer(grads)
        return loss

    model.set_train()
    means = []
    for epoch in range(epochs):
        losses = [float(train_step(data, label).asnumpy()) for data, label in train]
        means.append(float(np.mean(losses)))
        print("loop epoch %d: mean loss %.6f" % (epoch + 1, means[-1]))
    return means


def main():
    mindspore.set_seed(SEED)
    train, test = datasets()
    network = Network()
    loss_fn = loss_function()
    optimizer = nn.SGD(network.trainable_params(), learning_rate=0.05)
    model = Model(network, loss_fn, optimizer, metrics={"accuracy", "loss"})

    before = model.eval(test)
    print("before training: accuracy %.4f loss %.6f" % (before["accuracy"], before["loss"]))
    functional_loop(network, loss_fn, optimizer, train, epochs=2)
    model.train(2, train, callbacks=[LossMonitor(per_print_times=5)])
    after = model.eval(test)
    print("after training: accuracy %.4f loss %.6f" % (after["accuracy"], after["loss"]))

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.ckpt")
        mindspore.save_checkpoint(network, path)
        fresh = Network()
        mindspore.load_param_into_net(fresh, mindspore.load_checkpoint(path))
    reloaded = Model(fresh, loss_fn, metrics={"accuracy", "loss"}).eval(test)
    print("after loading: accuracy %.4f loss %.6f" % (reloaded["accuracy"], reloaded["loss"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
