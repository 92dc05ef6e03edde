"""Optimizers: each update rule against a hand-written NumPy reference over several steps.

The references below are written from MindSpore's documented formulas, in
float64, independently of the implementation; the optimizers run on float64
Parameters so the comparison is tight.
"""
import numpy as np
import pytest

from s2sad import nn, Tensor, Parameter, ParameterTuple

STEPS = 5


def make_params(seed=0):
    rng = np.random.default_rng(seed)
    return [Parameter(rng.standard_normal((3, 2)), name="fc.weight"),
            Parameter(rng.standard_normal(2), name="fc.bias"),
            Parameter(rng.standard_normal(2), name="bn.gamma")]


def gradient_sequence(params, seed=1, steps=STEPS):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(p.shape) for p in params] for _ in range(steps)]


def run(opt, params, grads, as_tensor=True):
    arrays = [p._data for p in params]
    for step in grads:
        opt(tuple(Tensor(g) if as_tensor else g for g in step))
    # updated in place: the very same arrays
    assert all(p._data is a for p, a in zip(params, arrays))
    return [p.asnumpy() for p in params]


# -------------------------------------------------------------- references
def sgd_reference(ps, grads, lr, momentum=0.0, dampening=0.0, wd=0.0, nesterov=False,
                  decay=None):
    ps = [p.copy() for p in ps]
    decay = decay or [True] * len(ps)
    v = [None] * len(ps)
    for step in grads:
        for i, g in enumerate(step):
            g = g + wd * ps[i] if decay[i] else g
            v[i] = g.copy() if v[i] is None else momentum * v[i] + (1 - dampening) * g
            ps[i] = ps[i] - lr * (g + momentum * v[i] if nesterov else v[i])
    return ps, v


def momentum_reference(ps, grads, lr, momentum, wd=0.0, nesterov=False, decay=None, lrs=None):
    ps = [p.copy() for p in ps]
    decay = decay or [True] * len(ps)
    v = [np.zeros_like(p) for p in ps]
    for t, step in enumerate(grads):
        rate = lrs[t] if lrs is not None else lr
        for i, g in enumerate(step):
            g = g + wd * ps[i] if decay[i] else g
            v[i] = momentum * v[i] + g
            ps[i] = ps[i] - (rate * (g + momentum * v[i]) if nesterov else rate * v[i])
    return ps, v


def adam_reference(ps, grads, lr, b1, b2, eps, wd=0.0, decay=None, nesterov=False):
    ps = [p.copy() for p in ps]
    decay = decay or [True] * len(ps)
    m = [np.zeros_like(p) for p in ps]
    v = [np.zeros_like(p) for p in ps]
    for t, step in enumerate(grads, start=1):
        for i, g in enumerate(step):
            g = g + wd * ps[i] if decay[i] else g
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            mom = b1 * m[i] + (1 - b1) * g if nesterov else m[i]
            ps[i] = ps[i] - lr_t * mom / (np.sqrt(v[i]) + eps)
    return ps, m, v


def adamw_reference(ps, grads, lr, b1, b2, eps, wd, decay):
    ps = [p.copy() for p in ps]
    m = [np.zeros_like(p) for p in ps]
    v = [np.zeros_like(p) for p in ps]
    for step in grads:
        for i, g in enumerate(step):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            update = m[i] / (np.sqrt(v[i]) + eps)
            if decay[i]:
                update = update + wd * ps[i]
            ps[i] = ps[i] - lr * update
    return ps, m, v


# The optimizers decay every parameter whose name has neither 'beta' nor 'gamma'.
DECAY = [True, True, False]


def close(got, expected):
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------------- tests
@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(momentum=0.9),
    dict(momentum=0.9, dampening=0.3),
    dict(momentum=0.8, nesterov=True),
    dict(momentum=0.5, weight_decay=0.1),
])
def test_sgd(kwargs):
    params = make_params()
    start = [p.asnumpy().copy() for p in params]
    grads = gradient_sequence(params)
    opt = nn.SGD(params, learning_rate=0.05, **kwargs)
    got = run(opt, params, grads)
    expected, v = sgd_reference(start, grads, 0.05, kwargs.get("momentum", 0.0),
                                kwargs.get("dampening", 0.0), kwargs.get("weight_decay", 0.0),
                                kwargs.get("nesterov", False), decay=DECAY)
    close(got, expected)
    close([a.asnumpy() for a in opt.accum], v)
    assert all(float(s.asnumpy().max()) == 0 for s in opt.stat)
    assert opt.step == STEPS and int(opt.global_step.asnumpy()[0]) == STEPS
    assert isinstance(opt.accum, ParameterTuple) and opt.accum[0].name == "accum.fc.weight"


def test_sgd_defaults_and_validation():
    opt = nn.SGD(make_params())
    assert opt.get_lr() == 0.1 and opt.momentum == 0.0 and not opt.nesterov
    with pytest.raises(ValueError, match="nesterov"):
        nn.SGD(make_params(), momentum=0.0, nesterov=True)
    with pytest.raises(ValueError, match="nesterov"):
        nn.SGD(make_params(), momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError):
        nn.SGD(make_params(), momentum=-0.1)
    with pytest.raises(ValueError, match="not be empty"):
        nn.SGD([])
    with pytest.raises(TypeError):
        nn.SGD([np.ones(3)])


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_momentum(nesterov, weight_decay):
    params = make_params(2)
    start = [p.asnumpy().copy() for p in params]
    grads = gradient_sequence(params, 3)
    opt = nn.Momentum(params, 0.1, 0.9, weight_decay=weight_decay, use_nesterov=nesterov)
    got = run(opt, params, grads, as_tensor=False)     # ndarrays are accepted too
    expected, v = momentum_reference(start, grads, 0.1, 0.9, weight_decay, nesterov, DECAY)
    close(got, expected)
    close([m.asnumpy() for m in opt.moments], v)


def test_momentum_dynamic_learning_rate():
    params = make_params(4)
    start = [p.asnumpy().copy() for p in params]
    grads = gradient_sequence(params, 5)
    lrs = [0.1, 0.05, 0.02]                      # the last rate stays after the list ends
    opt = nn.Momentum(params, Tensor(np.array(lrs, np.float32)), 0.9)
    assert opt.dynamic_lr
    seen = []
    for step in grads:
        seen.append(opt.get_lr())
        opt(tuple(Tensor(g) for g in step))
    np.testing.assert_allclose(seen, [0.1, 0.05, 0.02, 0.02, 0.02], rtol=1e-6)
    expected, _ = momentum_reference(start, grads, None, 0.9,
                                     lrs=[float(np.float32(r)) for r in seen])
    close([p.asnumpy() for p in params], expected)


def test_learning_rate_as_a_function_of_the_step():
    params = make_params()
    opt = nn.SGD(params, learning_rate=lambda step: 1.0 / (1 + int(step.asnumpy())))
    rates = []
    for _ in range(3):
        rates.append(opt.get_lr())
        opt(tuple(np.zeros(p.shape) for p in params))
    assert rates == [1.0, 0.5, 1.0 / 3]


@pytest.mark.parametrize("kwargs", [dict(), dict(weight_decay=0.05), dict(use_nesterov=True),
                                    dict(beta1=0.5, beta2=0.9, eps=1e-3)])
def test_adam(kwargs):
    params = make_params(6)
    start = [p.asnumpy().copy() for p in params]
    grads = gradient_sequence(params, 7)
    opt = nn.Adam(params, learning_rate=0.01, **kwargs)
    got = run(opt, params, grads)
    expected, m, v = adam_reference(start, grads, 0.01, kwargs.get("beta1", 0.9),
                                    kwargs.get("beta2", 0.999), kwargs.get("eps", 1e-8),
                                    kwargs.get("weight_decay", 0.0), DECAY,
                                    kwargs.get("use_nesterov", False))
    close(got, expected)
    close([a.asnumpy() for a in opt.moment1], m)
    close([a.asnumpy() for a in opt.moment2], v)
    b1, b2 = kwargs.get("beta1", 0.9), kwargs.get("beta2", 0.999)
    np.testing.assert_allclose(opt.beta1_power.asnumpy(), [b1 ** STEPS], rtol=1e-6)
    np.testing.assert_allclose(opt.beta2_power.asnumpy(), [b2 ** STEPS], rtol=1e-6)
    assert opt.moment1[1].name == "moment1.fc.bias" and opt.step == STEPS


def test_adam_first_step_closed_form():
    """With m, v starting at zero, Adam's first step is
    lr * sqrt(1 - beta2) * g / (sqrt(1 - beta2) * |g| + eps): about lr * sign(g)."""
    g = np.array([4.0, -0.5, 1e-3])
    p = Parameter(np.array([1.0, -2.0, 3.0]), name="w")
    nn.Adam([p], learning_rate=0.1)((Tensor(g),))
    c = np.sqrt(1 - 0.999)
    np.testing.assert_allclose(p.asnumpy(), [1.0, -2.0, 3.0] - 0.1 * c * g / (c * np.abs(g) + 1e-8),
                               rtol=1e-12)
    np.testing.assert_allclose(p.asnumpy(), [0.9, -1.9, 2.9], atol=1e-4)


def test_adam_validation():
    with pytest.raises(ValueError, match="beta1"):
        nn.Adam(make_params(), beta1=1.0)
    with pytest.raises(ValueError, match="eps"):
        nn.Adam(make_params(), eps=0.0)
    with pytest.raises(ValueError, match="weight_decay"):
        nn.Adam(make_params(), weight_decay=-1.0)
    with pytest.raises(ValueError, match="learning_rate"):
        nn.Adam(make_params(), learning_rate=-0.1)


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adam_weight_decay(weight_decay):
    params = make_params(8)
    start = [p.asnumpy().copy() for p in params]
    grads = gradient_sequence(params, 9)
    opt = nn.AdamWeightDecay(params, learning_rate=0.01, weight_decay=weight_decay)
    assert opt.eps == 1e-6
    got = run(opt, params, grads)
    expected, m, v = adamw_reference(start, grads, 0.01, 0.9, 0.999, 1e-6, weight_decay, DECAY)
    close(got, expected)
    close([a.asnumpy() for a in opt.moment1], m)
    close([a.asnumpy() for a in opt.moments2], v)


def test_parameter_groups():
    params = make_params(10)
    start = [p.asnumpy().copy() for p in params]
    grads = gradient_sequence(params, 11)
    groups = [{"params": params[:1], "lr": 0.5, "weight_decay": 0.1},
              {"params": params[1:]}]
    opt = nn.Momentum(groups, learning_rate=0.1, momentum=0.9, weight_decay=0.01)
    assert opt.is_group and opt.is_group_lr and opt.get_lr() == (0.5, 0.1, 0.1)
    # grouped: every parameter of a group is decayed with its group's (or the default) value,
    # including 'bn.gamma'
    assert opt.weight_decays == (0.1, 0.01, 0.01)
    run(opt, params, grads)
    first, _ = momentum_reference(start[:1], [g[:1] for g in grads], 0.5, 0.9, wd=0.1)
    rest, _ = momentum_reference(start[1:], [g[1:] for g in grads], 0.1, 0.9, wd=0.01)
    close([p.asnumpy() for p in params], first + rest)
    with pytest.raises(ValueError, match="unknown keys"):
        nn.SGD([{"params": params, "momentum": 0.9}])


def test_loss_scale_divides_gradients():
    params = make_params(12)
    start = [p.asnumpy().copy() for p in params]
    grads = gradient_sequence(params, 13)
    opt = nn.Momentum(params, 0.1, 0.9, loss_scale=8.0)
    run(opt, params, [[8.0 * g for g in step] for step in grads])
    expected, _ = momentum_reference(start, grads, 0.1, 0.9)
    close([p.asnumpy() for p in params], expected)


def test_gradient_count_and_shape_are_checked():
    params = make_params()
    opt = nn.SGD(params)
    with pytest.raises(ValueError, match="expected 3 gradients"):
        opt((np.zeros((3, 2)),))
    with pytest.raises(ValueError, match="shape"):
        opt((np.zeros((2, 3)), np.zeros(2), np.zeros(2)))


def test_float32_parameters_stay_float32():
    p = Parameter(np.ones(3, np.float32), name="w")
    opt = nn.Adam([p], learning_rate=0.1)
    opt((Tensor(np.ones(3, np.float32)),))
    assert p.asnumpy().dtype == np.float32 and opt.moment1[0].asnumpy().dtype == np.float32
    np.testing.assert_allclose(p.asnumpy(), 0.9, rtol=1e-6)


def test_optimizer_is_a_cell_and_a_training_step_uses_it():
    """End to end: 50 steps of Adam on least squares reach the closed-form solution."""
    rng = np.random.default_rng(14)
    x = rng.standard_normal((40, 3))
    w_true = np.array([[1.5, -2.0, 0.5]])
    y = x @ w_true.T + 0.3
    net = nn.Dense(3, 1, weight_init="zeros")
    for p in net.get_parameters():
        p.set_data(p._data.astype(np.float64))
    opt = nn.Adam(net.trainable_params(), learning_rate=0.1)
    assert isinstance(opt, nn.Cell)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    losses = [float(step(Tensor(x), Tensor(y)).asnumpy()) for _ in range(300)]
    assert losses[-1] < 1e-6 < losses[0]
    np.testing.assert_allclose(net.weight.asnumpy(), w_true, atol=1e-3)
    np.testing.assert_allclose(net.bias.asnumpy(), [0.3], atol=1e-3)


def test_state_follows_a_later_change_of_parameter_dtype():
    p = Parameter(np.ones(2, np.float32), name="w")
    opt = nn.Momentum([p], 0.1, 0.9)
    p.set_data(p._data.astype(np.float64))          # e.g. the network moved to float64
    g = np.array([1.0 + 1e-12, 2.0])
    opt((Tensor(g),))
    assert opt.moments[0].asnumpy().dtype == np.float64
    np.testing.assert_array_equal(opt.moments[0].asnumpy(), g)
    np.testing.assert_array_equal(p.asnumpy(), 1.0 - 0.1 * g)
