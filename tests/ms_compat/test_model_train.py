"""Model.train/eval/predict, the metrics and the callbacks.

Model.train must do exactly what a hand-written loop of TrainOneStepCell
steps does on the same batches; eval's metrics are checked against NumPy.
"""
import os
import re

import numpy as np
import pytest

import s2sad
from s2sad import nn, Tensor
from s2sad.dataset import NumpySlicesDataset
from s2sad.train import (Model, Callback, LossMonitor, TimeMonitor, ModelCheckpoint,
                         CheckpointConfig)

N, BATCH = 24, 8

# every test builds its own network, so the loss network's gradient compiles anew each time
pytestmark = pytest.mark.filterwarnings("ignore::s2sad.RecompileWarning")


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, 4)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int32) + (x[:, 2] > 1).astype(np.int32)
    return x, y


def dataset(seed=0):
    x, y = data(seed)
    return NumpySlicesDataset((x, y), column_names=["image", "label"],
                              shuffle=False).batch(BATCH)


def build(seed=0):
    s2sad.set_seed(seed)
    net = nn.SequentialCell([nn.Dense(4, 8, activation="relu"), nn.Dense(8, 3)])
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    return net, loss, opt


def test_train_equals_a_loop_of_train_one_step_cells():
    net_a, loss_a, opt_a = build()
    Model(net_a, loss_a, opt_a).train(3, dataset())

    net_b, loss_b, opt_b = build()
    step = nn.TrainOneStepCell(nn.WithLossCell(net_b, loss_b), opt_b)
    step.set_train()
    x, y = data()
    for _ in range(3):
        for start in range(0, N, BATCH):
            step(Tensor(x[start:start + BATCH]), Tensor(y[start:start + BATCH]))
    for a, b in zip(net_a.trainable_params(), net_b.trainable_params()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert int(opt_a.global_step.asnumpy()[0]) == 3 * N // BATCH


def test_train_on_a_shuffled_dataset_equals_the_loop_over_it():
    """Model.train reads the dataset as a ``for`` loop does: same shuffled order, same updates."""
    x, y = data()
    net_a, loss_a, opt_a = build()
    shuffled = NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=True).batch(BATCH)
    Model(net_a, loss_a, opt_a).train(2, shuffled)

    net_b, loss_b, opt_b = build()
    shuffled = NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=True).batch(BATCH)
    step = nn.TrainOneStepCell(nn.WithLossCell(net_b, loss_b), opt_b)
    for _ in range(2):
        for xb, yb in shuffled:
            step(xb, yb)
    for a, b in zip(net_a.trainable_params(), net_b.trainable_params()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_train_with_a_loss_network_or_a_train_step():
    """No loss_fn: the network returns the loss; no optimizer: it is the training step."""
    net_a, loss_a, opt_a = build()
    Model(nn.WithLossCell(net_a, loss_a), optimizer=opt_a).train(1, dataset())
    net_b, loss_b, opt_b = build()
    Model(nn.TrainOneStepCell(nn.WithLossCell(net_b, loss_b), opt_b)).train(1, dataset())
    for a, b in zip(net_a.trainable_params(), net_b.trainable_params()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def softmax_ce(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels]


def test_eval_metrics_against_numpy():
    net, loss, opt = build()
    model = Model(net, loss, opt, metrics={"accuracy", "loss"})
    model.train(2, dataset())
    got = model.eval(dataset())
    x, y = data()
    logits = net(Tensor(x)).asnumpy().astype(np.float64)
    assert got["accuracy"] == np.mean(logits.argmax(axis=1) == y)
    batch_means = [softmax_ce(logits[s:s + BATCH], y[s:s + BATCH]).mean()
                   for s in range(0, N, BATCH)]
    assert got["loss"] == pytest.approx(np.mean(batch_means), rel=1e-5)
    assert sorted(got) == ["accuracy", "loss"]


def test_eval_with_metric_objects_and_regression_metrics():
    s2sad.set_seed(3)
    net = nn.Dense(4, 2)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 4)).astype(np.float32)
    y = rng.standard_normal((10, 2)).astype(np.float32)
    model = Model(net, nn.MSELoss(), metrics={"mae": nn.MAE(), "mse": nn.MSE()})
    ds = NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False).batch(4)
    got = model.eval(ds)
    diff = net(Tensor(x)).asnumpy().astype(np.float64) - y
    assert got["mae"] == pytest.approx(np.abs(diff).sum() / 10, rel=1e-6)
    assert got["mse"] == pytest.approx((diff ** 2).sum() / 10, rel=1e-6)
    np.testing.assert_array_equal(model.predict(Tensor(x)).asnumpy(), net(Tensor(x)).asnumpy())


def test_metric_classes():
    acc = nn.Accuracy()
    acc.update(Tensor(np.array([[0.1, 0.9], [0.8, 0.2]])), Tensor(np.array([1, 1])))
    acc.update(np.array([[0.3, 0.7]]), np.array([[0, 1]]))       # one-hot labels
    assert acc.eval() == pytest.approx(2 / 3)
    acc.clear()
    with pytest.raises(RuntimeError, match="no batch"):
        acc.eval()
    loss = nn.Loss()
    loss.update(Tensor(np.float32(1.0)))
    loss.update(np.array([2.0, 4.0]))
    assert loss.eval() == 2.0
    assert nn.MSE()(np.array([[1.0, 2.0]]), np.array([[0.0, 0.0]])) == 5.0
    with pytest.raises(ValueError, match="unknown metric name 'f1'"):
        Model(nn.Dense(2, 2), metrics={"f1"})


def test_loss_monitor_prints_mindspore_lines(capsys):
    net, loss, opt = build()
    Model(net, loss, opt).train(2, dataset(), callbacks=LossMonitor(per_print_times=2))
    lines = capsys.readouterr().out.splitlines()
    # 3 steps per epoch, counted over the run: steps 2, 4 and 6 print, numbered in their epoch
    assert [re.sub(r"loss is \S+$", "loss is L", line) for line in lines] == [
        "epoch: 1 step: 2, loss is L", "epoch: 2 step: 1, loss is L",
        "epoch: 2 step: 3, loss is L"]
    for line in lines:
        assert np.isfinite(float(line.rsplit(" ", 1)[1]))


def test_loss_monitor_values_are_the_step_losses(capsys):
    net_a, loss_a, opt_a = build()
    Model(net_a, loss_a, opt_a).train(1, dataset(), callbacks=[LossMonitor()])
    printed = [float(v) for v in re.findall(r"loss is (\S+)", capsys.readouterr().out)]
    net_b, loss_b, opt_b = build()
    step = nn.TrainOneStepCell(nn.WithLossCell(net_b, loss_b), opt_b)
    x, y = data()
    expected = [float(step(Tensor(x[s:s + BATCH]), Tensor(y[s:s + BATCH])).asnumpy())
                for s in range(0, N, BATCH)]
    assert printed == expected


def test_loss_monitor_stops_on_a_nan_loss():
    net, loss, opt = build()
    x, y = data()
    x[0, 0] = np.nan
    ds = NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False).batch(BATCH)
    with pytest.raises(ValueError, match=r"epoch: 1 step: 1\. Invalid loss"):
        Model(net, loss, opt).train(1, ds, callbacks=LossMonitor())


def test_time_monitor_format(capsys):
    net, loss, opt = build()
    Model(net, loss, opt).train(2, dataset(), callbacks=TimeMonitor())
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    for line in lines:
        m = re.fullmatch(r"epoch time: ([\d.]+) ms, per step time: ([\d.]+) ms", line)
        assert m, line
        assert float(m.group(2)) == pytest.approx(float(m.group(1)) / 3, abs=1e-3)


class Recorder(Callback):
    """Records each call with the counters it saw."""

    def __init__(self, stop_at=None):
        self.calls = []
        self.stop_at = stop_at

    def _record(self, name, run_context):
        p = run_context.original_args()
        self.calls.append((name, p.cur_epoch_num, p.cur_step_num))

    def on_train_begin(self, run_context):
        self._record("begin", run_context)

    def on_train_epoch_begin(self, run_context):
        self._record("epoch_begin", run_context)

    def on_train_step_begin(self, run_context):
        self._record("step_begin", run_context)

    def on_train_step_end(self, run_context):
        p = run_context.original_args()
        assert isinstance(p.net_outputs, Tensor) and p.net_outputs.shape == ()
        assert p.epoch_num == 2 and p.batch_num == 3
        self._record("step_end", run_context)
        if p.cur_step_num == self.stop_at:
            run_context.request_stop()

    def on_train_epoch_end(self, run_context):
        self._record("epoch_end", run_context)

    def on_train_end(self, run_context):
        self._record("end", run_context)


def test_callbacks_are_called_in_order_with_the_counters():
    net, loss, opt = build()
    rec = Recorder()
    Model(net, loss, opt).train(2, dataset(), callbacks=[rec])
    expected = [("begin", 0, 0)]
    for epoch in (1, 2):
        expected.append(("epoch_begin", epoch, 3 * (epoch - 1)))
        for step in range(3 * (epoch - 1) + 1, 3 * epoch + 1):
            expected += [("step_begin", epoch, step), ("step_end", epoch, step)]
        expected.append(("epoch_end", epoch, 3 * epoch))
    expected.append(("end", 2, 6))
    assert rec.calls == expected


def test_request_stop_ends_training_after_the_step():
    net, loss, opt = build()
    rec = Recorder(stop_at=2)
    Model(net, loss, opt).train(2, dataset(), callbacks=rec)
    assert rec.calls[-3:] == [("step_end", 1, 2), ("epoch_end", 1, 2), ("end", 1, 2)]
    assert int(opt.global_step.asnumpy()[0]) == 2


def test_old_style_callback_names_are_called():
    seen = []

    class Old(Callback):
        def step_end(self, run_context):
            seen.append(run_context.original_args().cur_step_num)

    net, loss, opt = build()
    Model(net, loss, opt).train(1, dataset(), callbacks=[Old()])
    assert seen == [1, 2, 3]


def test_model_checkpoint_saves_and_keeps_the_newest(tmp_path):
    net, loss, opt = build()
    ckpt = ModelCheckpoint(prefix="net", directory=str(tmp_path),
                           config=CheckpointConfig(save_checkpoint_steps=2,
                                                   keep_checkpoint_max=2))
    Model(net, loss, opt).train(2, dataset(), callbacks=[ckpt])
    # steps 2, 4, 6 saved (epoch 1 step 2, epoch 2 steps 1 and 3); the oldest removed
    assert sorted(os.listdir(tmp_path)) == ["net-2_1.ckpt", "net-2_3.ckpt"]
    assert ckpt.latest_ckpt_file_name == os.path.join(str(tmp_path), "net-2_3.ckpt")
    fresh, _, _ = build(seed=5)
    s2sad.load_checkpoint(ckpt.latest_ckpt_file_name, net=fresh)
    for a, b in zip(net.trainable_params(), fresh.trainable_params()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_model_checkpoint_saves_the_last_step(tmp_path):
    net, loss, opt = build()
    ckpt = ModelCheckpoint(directory=str(tmp_path),
                           config=CheckpointConfig(save_checkpoint_steps=4))
    Model(net, loss, opt).train(1, dataset(), callbacks=ckpt)
    assert os.listdir(tmp_path) == ["CKP-1_3.ckpt"]


def test_sink_mode_is_accepted_and_api_misuse_is_refused():
    net, loss, opt = build()
    model = Model(net, loss, opt)
    model.train(1, dataset(), dataset_sink_mode=True)
    with pytest.raises(ValueError, match="epoch"):
        model.train(0, dataset())
    with pytest.raises(TypeError, match="dataset"):
        model.train(1, [(1, 2)])
    with pytest.raises(TypeError, match="Callback"):
        model.train(1, dataset(), callbacks=[print])
    with pytest.raises(ValueError, match="no metrics"):
        model.eval(dataset())
    with pytest.raises(ValueError, match="amp_level='O2'"):
        Model(net, loss, opt, amp_level="O2")
    with pytest.raises(TypeError, match="optimizer"):
        Model(net, loss, optimizer="sgd")


def test_mindspore_import_paths():
    import s2sad as mindspore
    from mindspore.train.callback import LossMonitor as LM
    from mindspore.train import Model as M
    assert LM is LossMonitor and M is Model and mindspore.Model is Model
    assert mindspore.nn.Accuracy is s2sad.train.Accuracy


# ------------------------------------------------------------ the quick-start sample
def test_quickstart_sample():
    """samples/quickstart_train.py: the losses fall, the accuracy ends far above chance
    (0.1), and the network reloaded from its checkpoint evaluates exactly the same."""
    import subprocess
    import sys
    from repo import ROOT as root
    r = subprocess.run([sys.executable, os.path.join("samples", "quickstart_train.py")],
                       cwd=root, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout

    def evaluation(label):
        m = re.search(r"^%s: accuracy ([\d.]+) loss ([\d.]+)$" % label, out, re.M)
        assert m, out
        return float(m.group(1)), float(m.group(2))

    loop = [float(v) for v in re.findall(r"^loop epoch \d: mean loss ([\d.]+)$", out, re.M)]
    monitored = [float(v) for v in re.findall(r"^epoch: \d step: \d+, loss is (\S+)$", out,
                                              re.M)]
    assert len(loop) == 2 and len(monitored) == 6, out
    before, after, reloaded = (evaluation(label) for label in
                               ("before training", "after training", "after loading"))
    assert loop[1] < loop[0] < before[1]
    assert np.mean(monitored[3:]) < loop[1] and after[1] < loop[1]
    assert before[0] < 0.3 and after[0] >= 0.6        # chance is 0.1
    assert reloaded == after
