"""Containers (SequentialCell, CellList...), losses and training wrappers.

Forward values are compared with NumPy closed forms; gradients with central
finite differences; training steps with the update written in NumPy.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor
from s2sad.runtime import rt_nn

from test_nn_layers import check_cell, param_numeric_grad, t64, to_float64
from gradcheck import numeric_grad


# --------------------------------------------------------------- containers
def test_sequential_cell_indexing_names_and_gradient():
    s2sad.set_seed(20)
    seq = nn.SequentialCell([nn.Dense(3, 4, activation="tanh"), nn.Dense(4, 2)])
    assert len(seq) == 2 and isinstance(seq[0], nn.Dense) and isinstance(seq[-1], nn.Dense)
    assert [p.name for p in seq.trainable_params()] == ["0.weight", "0.bias", "1.weight",
                                                      "1.bias"]
    assert [type(c) for c in seq] == [nn.Dense, nn.Dense]
    to_float64(seq)
    x = t64((4, 3), 21)
    w0, b0, w1, b1 = [p.asnumpy() for p in seq.trainable_params()]
    np.testing.assert_allclose(seq(x).asnumpy(),
                               np.tanh(x.asnumpy() @ w0.T + b0) @ w1.T + b1, rtol=1e-12)
    check_cell(seq, x)


def test_sequential_cell_append_recompiles():
    s2sad.set_seed(22)
    seq = to_float64(nn.SequentialCell(nn.Dense(2, 2, weight_init="ones")))
    x = t64((3, 2), 23)
    grad = ops.GradOperation()(seq)
    np.testing.assert_allclose(grad(x).asnumpy(), np.full((3, 2), 2.0))
    seq.append(to_float64(nn.Dense(2, 2, weight_init="ones")))
    assert len(seq) == 2
    np.testing.assert_allclose(grad(x).asnumpy(), np.full((3, 2), 4.0))


def test_sequential_cell_from_ordered_dict_and_slicing():
    from collections import OrderedDict
    seq = nn.SequentialCell(OrderedDict([("fc", nn.Dense(2, 3)), ("act", nn.ReLU())]))
    assert [name for name, _ in seq.parameters_and_names()] == ["fc.weight", "fc.bias"]
    assert len(seq[:1]) == 1
    with pytest.raises(TypeError):
        nn.SequentialCell([nn.Dense(2, 3), "relu"])
    with pytest.raises(IndexError):
        seq[5]


def test_cell_list_loop_is_unrolled_in_construct():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.layers = nn.CellList([nn.Dense(3, 3, weight_init="xavier_uniform"),
                                       nn.Tanh(),
                                       nn.Dense(3, 1, weight_init="xavier_uniform")])

        def construct(self, x):
            for cell in self.layers:
                x = cell(x)
            return x

    s2sad.set_seed(24)
    net = to_float64(Net())
    assert [p.name for p in net.trainable_params()] == [
        "layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"]
    check_cell(net, t64((5, 3), 25))
    grad = ops.GradOperation()(net)
    grad(t64((5, 3), 25))
    source = s2sad.get_source(grad)
    assert "for " not in source and "xp.tanh(" in source      # unrolled while compiling
    cells = nn.CellList()
    cells.append(nn.ReLU())
    cells.extend([nn.Tanh()])
    cells.insert(0, nn.Sigmoid())
    assert [type(c) for c in cells] == [nn.Sigmoid, nn.ReLU, nn.Tanh]
    del cells[1]
    cells[0] = nn.ReLU()
    assert [type(c) for c in cells] == [nn.ReLU, nn.Tanh]


# ------------------------------------------------------------------- losses
def _labels(n, c, seed):
    return Tensor(np.random.default_rng(seed).integers(0, c, n).astype(np.int32))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(reduction):
    rng = np.random.default_rng(26)
    logits, labels = Tensor(rng.standard_normal((3, 4))), Tensor(rng.standard_normal((3, 4)))
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction]
    d = logits.asnumpy() - labels.asnumpy()
    for loss, value in ((nn.MSELoss(reduction), d ** 2), (nn.L1Loss(reduction), np.abs(d)),
                        (nn.SmoothL1Loss(0.5, reduction),
                         np.where(np.abs(d) < 0.5, 0.5 * d * d / 0.5, np.abs(d) - 0.25))):
        np.testing.assert_allclose(loss(logits, labels).asnumpy(), reduce(value), rtol=1e-12)
        check_cell(loss, logits, labels)


def test_loss_rejects_unknown_reduction():
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss("avg")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_softmax_cross_entropy(reduction):
    rng = np.random.default_rng(27)
    logits = Tensor(rng.standard_normal((5, 4)))
    labels = _labels(5, 4, 28)
    log_p = logits.asnumpy() - np.log(np.exp(logits.asnumpy()).sum(-1, keepdims=True))
    per_sample = -log_p[np.arange(5), labels.asnumpy()]
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction]
    sparse = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction=reduction)
    np.testing.assert_allclose(sparse(logits, labels).asnumpy(), reduce(per_sample), rtol=1e-12)
    check_cell(sparse, logits, labels)
    onehot = Tensor(np.eye(4)[labels.asnumpy()])
    dense = nn.SoftmaxCrossEntropyWithLogits(reduction=reduction)
    np.testing.assert_allclose(dense(logits, onehot).asnumpy(), reduce(per_sample), rtol=1e-12)
    check_cell(dense, logits, onehot)


def test_softmax_cross_entropy_default_is_per_sample():
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True)
    assert loss(Tensor(np.zeros((3, 5), np.float32)), _labels(3, 5, 1)).shape == (3,)


@pytest.mark.parametrize("weighted", [False, True])
def test_bce_loss(weighted):
    rng = np.random.default_rng(29)
    p = Tensor(rng.uniform(0.05, 0.95, (4, 3)))
    y = Tensor(rng.integers(0, 2, (4, 3)).astype(np.float64))
    w = Tensor(rng.uniform(0.5, 2.0, (3,))) if weighted else None
    loss = nn.BCELoss(weight=w)
    pv, yv = p.asnumpy(), y.asnumpy()
    value = -(yv * np.log(pv) + (1 - yv) * np.log(1 - pv)) * (w.asnumpy() if weighted else 1)
    np.testing.assert_allclose(loss(p, y).asnumpy(), value.mean(), rtol=1e-9)
    check_cell(loss, p, y)
    none = nn.BCELoss(weight=w, reduction="none")
    np.testing.assert_allclose(none(p, y).asnumpy(), value, rtol=1e-9)


def test_bce_with_logits_matches_bce_of_sigmoid():
    rng = np.random.default_rng(30)
    z = Tensor(rng.standard_normal((4, 3)) * 3)
    y = Tensor(rng.integers(0, 2, (4, 3)).astype(np.float64))
    sig = 1 / (1 + np.exp(-z.asnumpy()))
    np.testing.assert_allclose(nn.BCEWithLogitsLoss()(z, y).asnumpy(),
                               nn.BCELoss()(Tensor(sig), y).asnumpy(), rtol=1e-9)
    check_cell(nn.BCEWithLogitsLoss(), z, y)
    check_cell(nn.BCEWithLogitsLoss(pos_weight=Tensor(np.array([1.0, 2.0, 3.0]))), z, y)


# ---------------------------------------------------------- training wrappers
def make_loss_net(seed=31):
    s2sad.set_seed(seed)
    net = nn.SequentialCell([nn.Dense(4, 5, weight_init="xavier_uniform", activation="relu"),
                             nn.Dense(5, 3, weight_init="xavier_uniform")])
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                     reduction="mean"))
    return net, to_float64(loss_net)


def test_with_loss_cell_names_and_gradient():
    net, loss_net = make_loss_net()
    assert [p.name for p in loss_net.trainable_params()] == ["0.weight", "0.bias", "1.weight",
                                                           "1.bias"]
    x, y = t64((6, 4), 32), _labels(6, 3, 33)
    expected = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")(net(x), y)
    np.testing.assert_allclose(loss_net(x, y).asnumpy(), expected.asnumpy(), rtol=1e-12)
    assert loss_net.backbone_network is net
    check_cell(loss_net, x, y)


class RecordingSGD(nn.SGD):
    """SGD that keeps the gradients it was given."""

    def construct(self, gradients):
        self.seen = [np.array(getattr(g, "_data", g)) for g in gradients]
        return super().construct(gradients)


@pytest.mark.parametrize("sens", [1.0, 4.0])
def test_train_one_step_cell_applies_the_finite_difference_gradient(sens):
    _, loss_net = make_loss_net()
    x, y = t64((6, 4), 34), _labels(6, 3, 35)
    params = loss_net.trainable_params()
    before = [p.asnumpy().copy() for p in params]
    expected = [param_numeric_grad(lambda: float(loss_net(x, y).asnumpy()), p) for p in params]
    opt = RecordingSGD(params, learning_rate=0.1)
    step = nn.TrainOneStepCell(loss_net, opt, sens=sens)
    assert step.weights is opt.parameters
    loss = step(x, y)
    assert loss.shape == ()
    for g, e, b, p in zip(opt.seen, expected, before, params):
        np.testing.assert_allclose(g, sens * e, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(p.asnumpy(), b - 0.1 * g, rtol=1e-12)
    assert opt.step == 1


def test_train_one_step_cell_gradient_matches_the_returned_loss_with_dropout():
    """The eager forward and the compiled gradient see the same Dropout mask."""
    s2sad.set_seed(36)
    net = nn.SequentialCell([nn.Dense(4, 8, weight_init="xavier_uniform"), nn.Dropout(p=0.5),
                             nn.Dense(8, 1, weight_init="xavier_uniform")])
    loss_net = to_float64(nn.WithLossCell(net, nn.MSELoss()))
    loss_net.set_train()
    x, y = t64((5, 4), 37), t64((5, 1), 38)
    params = loss_net.trainable_params()
    opt = RecordingSGD(params, learning_rate=0.0)
    step = nn.TrainOneStepCell(loss_net, opt)
    rt_nn.set_seed(7)
    loss = step(x, y)

    def replay():
        rt_nn.set_seed(7)
        return float(loss_net(x, y).asnumpy())

    assert replay() == pytest.approx(float(loss.asnumpy()), rel=1e-12)
    for p, g in zip(params, opt.seen):
        np.testing.assert_allclose(g, param_numeric_grad(replay, p), rtol=1e-6, atol=1e-8)


def test_train_one_step_cell_updates_batchnorm_statistics_once_per_step():
    s2sad.set_seed(39)
    bn = nn.BatchNorm1d(4)
    net = nn.SequentialCell([nn.Dense(3, 4), bn])
    loss_net = to_float64(nn.WithLossCell(net, nn.MSELoss()))
    loss_net.set_train()
    x, y = t64((8, 3), 40), t64((8, 4), 41)
    hidden = net[0](x).asnumpy()
    step = nn.TrainOneStepCell(loss_net, nn.SGD(loss_net.trainable_params(), 0.0))
    step(x, y)
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.1 * hidden.mean(axis=0), rtol=1e-10)


def test_with_eval_cell():
    net, _ = make_loss_net()
    cell = nn.WithEvalCell(net, nn.MSELoss())
    x = Tensor(np.ones((2, 4), np.float32))
    label = Tensor(np.zeros((2, 3), np.float32))
    loss, out, lab = cell(x, label)
    assert lab is label and out.shape == (2, 3)
    np.testing.assert_allclose(loss.asnumpy(), np.mean(out.asnumpy() ** 2), rtol=1e-6)


def test_mindspore_style_imports():
    import mindspore
    from mindspore.common.initializer import Normal, initializer
    from mindspore import nn as ms_nn
    assert mindspore.set_seed is s2sad.set_seed
    assert ms_nn.TrainOneStepCell is nn.TrainOneStepCell
    assert initializer(Normal(0.5), (3,)).shape == (3,)


# ------------------------------------------------------------- known issues
class _SquareWithBprop(nn.Cell):
    def construct(self, x):
        return x * x

    def bprop(self, x, out, dout):
        return (dout * 10.0,)


def test_custom_bprop_of_the_differentiated_cell_itself():
    x = Tensor(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(ops.GradOperation()(_SquareWithBprop())(x).asnumpy(),
                                  [10.0, 10.0])


def test_custom_bprop_of_a_sub_cell_is_used():
    class Outer(nn.Cell):
        def __init__(self):
            super().__init__()
            self.inner = _SquareWithBprop()

        def construct(self, x):
            return self.inner(x)

    x = Tensor(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(ops.GradOperation()(Outer())(x).asnumpy(), [10.0, 10.0])


# ------------------------------------------------------ one forward per step
class _PrintingLoss(nn.Cell):
    """A loss whose forward prints once per run: the printed lines count the runs."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.loss = nn.MSELoss()

    def construct(self, x, y):
        print("forward ran")
        return self.loss(self.net(x), y)


def test_train_one_step_cell_runs_the_forward_once(capsys):
    s2sad.set_seed(42)
    loss_net = to_float64(_PrintingLoss(nn.Dense(4, 3)))
    x, y = t64((5, 4), 43), t64((5, 3), 44)
    params = loss_net.trainable_params()
    capsys.readouterr()
    expected_loss = float(loss_net(x, y).asnumpy())
    expected = [param_numeric_grad(lambda: float(loss_net(x, y).asnumpy()), p) for p in params]
    capsys.readouterr()
    opt = RecordingSGD(params, learning_rate=0.0)
    step = nn.TrainOneStepCell(loss_net, opt)
    for _ in range(2):          # the first call compiles, the second takes the cached entry
        loss = step(x, y)
        assert capsys.readouterr().out.count("forward ran") == 1
        assert isinstance(loss, Tensor) and loss.shape == ()
        assert float(loss.asnumpy()) == pytest.approx(expected_loss, rel=1e-12)
        for g, e in zip(opt.seen, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)


def test_value_and_grad_and_has_aux_run_the_forward_once(capsys):
    def loss_and_aux(w, x):
        print("forward ran")
        h = np.tanh(x @ w)
        return np.sum(h * h), h

    w, x = np.linspace(-1, 1, 6).reshape(3, 2), np.linspace(0.5, -0.5, 12).reshape(4, 3)
    expected = numeric_grad(lambda w_: float(loss_and_aux(w_, x)[0]), (w,), 0)
    capsys.readouterr()
    for api in ("value_and_grad", "grad"):
        fn = getattr(s2sad, api)(loss_and_aux, has_aux=True)
        for _ in range(2):
            out = fn(w, x)
            assert capsys.readouterr().out.count("forward ran") == 1, api
            if api == "value_and_grad":
                (value, h), g = out
                assert value == pytest.approx(np.sum(np.tanh(x @ w) ** 2), rel=1e-12)
            else:
                g, (h,) = out
            np.testing.assert_allclose(h, np.tanh(x @ w), rtol=1e-12)
            np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


def test_value_and_grad_with_a_batchnorm_moves_its_statistics_once():
    s2sad.set_seed(45)
    bn = nn.BatchNorm1d(4)
    net = to_float64(nn.SequentialCell([nn.Dense(3, 4), bn]))
    net.set_train()
    x = t64((8, 3), 46)
    hidden = net[0](x).asnumpy()
    value, grads = s2sad.value_and_grad(lambda v: ops.sum(net(v) ** 2), None,
                                        net.trainable_params())(x)
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.1 * hidden.mean(axis=0), rtol=1e-10)
    assert len(grads) == len(net.trainable_params())
