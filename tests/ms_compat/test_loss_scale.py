"""Loss scaling: TrainOneStepWithLossScaleCell and the scale-update Cells.

Checked against the plain TrainOneStepCell (a power-of-two scale is exact in
floating point, so the scaled step must equal the unscaled one bit for bit)
and against the rules: an overflowing step changes nothing and shrinks a
dynamic scale; ``scale_window`` clean steps grow it.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, Tensor

# the overflow tests feed inputs whose squares overflow float32 on purpose
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")


def make(seed=0):
    s2sad.set_seed(seed)
    net = nn.Dense(3, 2)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    return net, loss_net, opt


def batch(k=0):
    rng = np.random.default_rng(k)
    return (Tensor(rng.standard_normal((4, 3)).astype(np.float32)),
            Tensor(rng.standard_normal((4, 2)).astype(np.float32)))


def weights(net):
    return [p.asnumpy().copy() for p in net.trainable_params()]


def huge_batch():
    """Inputs whose squared error overflows float32: the loss is inf."""
    x, y = batch()
    return Tensor(x.asnumpy() * np.float32(1e30)), y


@pytest.mark.parametrize("scale", [Tensor(np.float32(1024.0)), Tensor(np.array([8.0], np.float32)),
                                   nn.FixedLossScaleUpdateCell(2.0 ** 12),
                                   nn.DynamicLossScaleUpdateCell(2.0 ** 16, 2, 1000)])
def test_scaled_steps_equal_unscaled_steps(scale):
    net_a, loss_a, opt_a = make()
    plain = nn.TrainOneStepCell(loss_a, opt_a)
    net_b, loss_b, opt_b = make()
    scaled = nn.TrainOneStepWithLossScaleCell(loss_b, opt_b, scale_sense=scale)
    for k in range(3):
        expected = plain(*batch(k))
        loss, overflow, _ = scaled(*batch(k))
        assert not bool(overflow.asnumpy())
        np.testing.assert_array_equal(loss.asnumpy(), expected.asnumpy())
        for a, b in zip(weights(net_a), weights(net_b)):
            np.testing.assert_array_equal(b, a)


def test_gradients_are_unscaled_before_the_optimizer():
    """The optimizer receives the true gradient, not the scaled one."""
    _, loss_net, opt = make()
    seen = []
    original = opt.construct
    opt.construct = lambda grads: seen.append([g.asnumpy() for g in grads]) or original(grads)
    step = nn.TrainOneStepWithLossScaleCell(loss_net, opt, Tensor(np.float32(256.0)))
    expected = nn.WithGradCell(loss_net)(*batch())
    step(*batch())
    for got, want in zip(seen[0], expected):
        np.testing.assert_array_equal(got, want.asnumpy())


def test_overflow_skips_the_update_and_shrinks_the_dynamic_scale():
    net, loss_net, opt = make()
    step = nn.TrainOneStepWithLossScaleCell(loss_net, opt,
                                            nn.DynamicLossScaleUpdateCell(1024.0, 2.0, 1000))
    before = weights(net)
    moments = [m.asnumpy().copy() for m in opt.moments]
    loss, overflow, scale = step(*huge_batch())
    assert not np.isfinite(loss.asnumpy())
    assert overflow.asnumpy().dtype == np.bool_ and bool(overflow.asnumpy())
    assert float(scale.asnumpy()) == 512.0
    for a, b in zip(before, weights(net)):
        np.testing.assert_array_equal(b, a)
    for a, m in zip(moments, opt.moments):
        np.testing.assert_array_equal(m.asnumpy(), a)
    assert int(opt.global_step.asnumpy()[0]) == 0          # the optimizer was not called
    _, overflow, scale = step(*batch())                     # the next clean step trains
    assert not bool(overflow.asnumpy()) and float(scale.asnumpy()) == 512.0
    assert any(not np.array_equal(a, b) for a, b in zip(before, weights(net)))


def test_dynamic_scale_never_goes_below_one():
    _, loss_net, opt = make()
    step = nn.TrainOneStepWithLossScaleCell(loss_net, opt,
                                            nn.DynamicLossScaleUpdateCell(4.0, 4.0, 10))
    scales = [float(step(*huge_batch())[2].asnumpy()) for _ in range(3)]
    assert scales == [1.0, 1.0, 1.0]


def test_fixed_scale_skips_overflow_but_keeps_the_scale():
    net, loss_net, opt = make()
    for scale in (Tensor(np.float32(64.0)), nn.FixedLossScaleUpdateCell(64.0)):
        step = nn.TrainOneStepWithLossScaleCell(loss_net, opt, scale)
        before = weights(net)
        _, overflow, got = step(*huge_batch())
        assert bool(overflow.asnumpy()) and float(got.asnumpy()) == 64.0
        for a, b in zip(before, weights(net)):
            np.testing.assert_array_equal(b, a)


def test_dynamic_scale_grows_after_scale_window_clean_steps():
    _, loss_net, opt = make()
    step = nn.TrainOneStepWithLossScaleCell(loss_net, opt,
                                            nn.DynamicLossScaleUpdateCell(8.0, 2.0, 3))
    scales = [float(step(*batch(k))[2].asnumpy()) for k in range(7)]
    assert scales == [8.0, 8.0, 16.0, 16.0, 16.0, 32.0, 32.0]
    step(*huge_batch())                                     # overflow: halve, restart the count
    scales = [float(step(*batch(k))[2].asnumpy()) for k in range(3)]
    assert scales == [16.0, 16.0, 32.0]


def test_set_sense_scale_and_bad_scales():
    _, loss_net, opt = make()
    step = nn.TrainOneStepWithLossScaleCell(loss_net, opt, Tensor(np.float32(4.0)))
    step.set_sense_scale(Tensor(np.float32(32.0)))
    assert float(step(*batch())[2].asnumpy()) == 32.0
    with pytest.raises(TypeError, match="scale_sense"):
        nn.TrainOneStepWithLossScaleCell(loss_net, opt, 2.0)
    with pytest.raises(ValueError, match=r"shape \(\) or \(1,\)"):
        nn.TrainOneStepWithLossScaleCell(loss_net, opt, Tensor(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="scale_window"):
        nn.DynamicLossScaleUpdateCell(8.0, 2.0, 0)


def test_with_grad_cell_matches_grad_operation_and_finite_differences():
    net, _, _ = make()
    net.weight.set_data(net.weight.asnumpy().astype(np.float64))
    net.bias.set_data(net.bias.asnumpy().astype(np.float64))
    x, y = batch()
    x, y = Tensor(x.asnumpy().astype(np.float64)), Tensor(y.asnumpy().astype(np.float64))
    grads = nn.WithGradCell(net, nn.MSELoss())(x, y)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    eps = 1e-6
    for p, g in zip(net.trainable_params(), grads):
        flat = p._data.reshape(-1)
        for k in range(flat.size):
            orig = flat[k]
            flat[k] = orig + eps
            plus = float(loss_net(x, y).asnumpy())
            flat[k] = orig - eps
            minus = float(loss_net(x, y).asnumpy())
            flat[k] = orig
            np.testing.assert_allclose(g.asnumpy().reshape(-1)[k], (plus - minus) / (2 * eps),
                                       rtol=1e-6, atol=1e-9)
    doubled = nn.WithGradCell(loss_net, sens=Tensor(np.float64(2.0)))(x, y)
    for g, d in zip(grads, doubled):
        np.testing.assert_allclose(d.asnumpy(), 2 * g.asnumpy(), rtol=1e-12)


def test_forward_value_and_grad():
    net, loss_net, _ = make()
    x, y = batch()
    value, grads = nn.ForwardValueAndGrad(loss_net, net.trainable_params(),
                                          get_by_list=True)(x, y)
    np.testing.assert_array_equal(value.asnumpy(), loss_net(x, y).asnumpy())
    for g, want in zip(grads, nn.WithGradCell(loss_net)(x, y)):
        np.testing.assert_array_equal(g.asnumpy(), want.asnumpy())
    with pytest.raises(TypeError, match="weights"):
        nn.ForwardValueAndGrad(loss_net, get_by_list=True)


def test_model_trains_a_loss_scale_cell(capsys):
    """Model(step) with no optimizer calls the loss-scale step once per batch; LossMonitor
    prints the loss, the first of the step's three outputs."""
    from s2sad.dataset import NumpySlicesDataset
    from s2sad.train import Model, LossMonitor
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    ds = NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False).batch(4)

    net_a, loss_a, opt_a = make()
    step = nn.TrainOneStepWithLossScaleCell(loss_a, opt_a,
                                            nn.DynamicLossScaleUpdateCell(1024.0, 2.0, 2))
    Model(step).train(1, ds, callbacks=LossMonitor())
    net_b, loss_b, opt_b = make()
    plain = nn.TrainOneStepCell(loss_b, opt_b)
    losses = [float(plain(Tensor(x[s:s + 4]), Tensor(y[s:s + 4])).asnumpy()) for s in (0, 4)]
    assert capsys.readouterr().out.splitlines() == [
        "epoch: 1 step: %d, loss is %s" % (i + 1, v) for i, v in enumerate(losses)]
    for a, b in zip(weights(net_a), weights(net_b)):
        np.testing.assert_array_equal(a, b)
    assert float(step.scale_sense.asnumpy()) == 2048.0
