"""nn layers and initializers (containers, losses and training wrappers: test_nn_training.py).

Forward values are compared with NumPy closed forms; every gradient (inputs
and Parameters) with float64 central finite differences of the layer run
eagerly, or with a closed form where one is simpler (Dropout's mask,
Embedding's scatter-add).
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, ParameterTuple
from s2sad.runtime import rt_nn
from s2sad.common import initializer as init

from gradcheck import numeric_grad, random_like_output, weighted_sum


# ------------------------------------------------------------------ helpers
def to_float64(cell):
    for p in cell.get_parameters():
        p.set_data(p._data.astype(np.float64))
    return cell


def t64(shape, seed=0, scale=1.0):
    return Tensor(scale * np.random.default_rng(seed).standard_normal(shape))


def param_numeric_grad(scalar, param, eps=1e-6):
    """Central differences of ``scalar()`` with respect to ``param``, perturbed in place."""
    base = param._data.copy()
    grad = np.zeros(base.shape)
    flat = param._data.reshape(-1)
    for k in range(flat.size):
        flat[k] = base.reshape(-1)[k] + eps
        plus = scalar()
        flat[k] = base.reshape(-1)[k] - eps
        minus = scalar()
        flat[k] = base.reshape(-1)[k]
        grad.reshape(-1)[k] = (plus - minus) / (2 * eps)
    param._data[...] = base
    return grad


def check_cell(net, *inputs, seed=0, rtol=1e-6, atol=1e-7, dropout_seed=None):
    """Input and Parameter gradients of ``net`` against float64 finite differences.

    ``dropout_seed``: reseed Dropout's generator before every call so each
    evaluation draws the same masks.
    """
    def run(*args):
        if dropout_seed is not None:
            rt_nn.set_seed(dropout_seed)
        return net(*args)

    out = run(*inputs)
    sens = random_like_output(out, np.random.default_rng(seed))
    params = ParameterTuple(net.trainable_params())
    grad_op = ops.GradOperation(get_all=True, get_by_list=True, sens_param=True)
    if dropout_seed is not None:
        rt_nn.set_seed(dropout_seed)
    input_grads, param_grads = grad_op(net, params)(*inputs, sens)

    def scalar(*args):
        return weighted_sum(run(*args), sens)

    diff = [i for i, a in enumerate(inputs) if isinstance(a, Tensor) and a.dtype.name.startswith(
        "Float")]
    assert len(input_grads) == len([a for a in inputs if isinstance(a, Tensor)])
    for i in diff:
        expected = numeric_grad(scalar, list(inputs), i)
        np.testing.assert_allclose(input_grads[i].asnumpy(), expected, rtol=rtol, atol=atol,
                                   err_msg="input %d" % i)
    for p, g in zip(params, param_grads):
        expected = param_numeric_grad(lambda: scalar(*inputs), p)
        np.testing.assert_allclose(g.asnumpy(), expected, rtol=rtol, atol=atol,
                                   err_msg="parameter %s" % p.name)
    return input_grads, param_grads


# ------------------------------------------------------------- initializers
def test_initializer_names_classes_and_statistics():
    s2sad.set_seed(1)
    w = init.initializer("normal", (400, 500))
    assert w.shape == (400, 500) and w.dtype == s2sad.float32
    assert abs(float(w.asnumpy().std()) - 0.01) < 2e-4 and abs(float(w.asnumpy().mean())) < 1e-4
    u = init.initializer(init.Uniform(0.5), [1000]).asnumpy()
    assert u.min() >= -0.5 and u.max() <= 0.5 and u.min() < -0.45 and u.max() > 0.45
    for name in ("xavier_uniform", init.XavierUniform, init.XavierUniform()):
        x = init.initializer(name, (30, 20)).asnumpy()
        bound = np.sqrt(6.0 / (20 + 30))
        assert np.abs(x).max() <= bound and np.abs(x).max() > 0.9 * bound
    he = init.initializer("he_uniform", (64, 32, 3, 3)).asnumpy()
    bound = np.sqrt(3.0) * np.sqrt(2.0) / np.sqrt(32 * 9)   # gain sqrt(2), fan_in = 32 * 3 * 3
    assert np.abs(he).max() <= bound and np.abs(he).max() > 0.95 * bound
    np.testing.assert_array_equal(init.initializer("zeros", (2, 3)).asnumpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(init.initializer("ones", 4).asnumpy(), np.ones(4))
    np.testing.assert_array_equal(init.initializer(2.5, (2,)).asnumpy(), [2.5, 2.5])
    t = init.initializer(Tensor(np.arange(6.0).reshape(2, 3)), (2, 3), s2sad.float64)
    assert t.dtype == s2sad.float64 and t.asnumpy()[1, 2] == 5.0
    tn = init.initializer(init.TruncatedNormal(0.02), (5000,)).asnumpy()
    assert np.abs(tn).max() <= 0.04


def test_initializer_errors():
    with pytest.raises(ValueError, match="Unknown initializer"):
        init.initializer("gaussian", (2, 2))
    with pytest.raises(ValueError, match="does not match"):
        init.initializer(Tensor(np.zeros(3)), (4,))
    with pytest.raises(TypeError):
        s2sad.set_seed(1.5)
    with pytest.raises(ValueError):
        s2sad.set_seed(-1)


def test_set_seed_reproduces_weights_and_dropout_masks():
    def build_and_run():
        s2sad.set_seed(42)
        net = nn.SequentialCell([nn.Dense(5, 7), nn.Dropout(p=0.5)])
        net.set_train()
        x = Tensor(np.ones((3, 5), np.float32))
        return net[0].weight.asnumpy().copy(), net(x).asnumpy()

    w1, y1 = build_and_run()
    w2, y2 = build_and_run()
    np.testing.assert_array_equal(w1, w2)
    np.testing.assert_array_equal(y1, y2)
    assert s2sad.get_seed() == 42
    s2sad.set_seed(43)
    assert not np.array_equal(nn.Dense(5, 7).weight.asnumpy(), w1)


# -------------------------------------------------------------------- Dense
def test_dense_forward_closed_form_and_defaults():
    s2sad.set_seed(0)
    net = nn.Dense(3, 4)
    assert net.weight.shape == (4, 3) and net.bias.shape == (4,)
    assert net.weight.name == "weight" and net.bias.name == "bias"
    np.testing.assert_array_equal(net.bias.asnumpy(), np.zeros(4))
    assert abs(float(np.std(net.weight.asnumpy()))) < 0.05     # 'normal': sigma 0.01
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    y = net(Tensor(x)).asnumpy()
    np.testing.assert_allclose(y, x @ net.weight.asnumpy().T + net.bias.asnumpy(), rtol=1e-6)
    assert "input_channels=3, output_channels=4" in repr(net)


@pytest.mark.parametrize("activation", [None, "relu", "tanh", nn.Sigmoid(), ops.Tanh()])
def test_dense_gradients(activation):
    s2sad.set_seed(3)
    net = to_float64(nn.Dense(3, 4, weight_init="xavier_uniform", bias_init="normal",
                              activation=activation))
    check_cell(net, t64((5, 3), 1))


def test_dense_without_bias_and_batched_input():
    s2sad.set_seed(4)
    net = to_float64(nn.Dense(3, 2, weight_init="uniform", has_bias=False))
    assert [p.name for p in net.trainable_params()] == ["weight"]
    x = t64((2, 4, 3), 5)      # [..., in_channels]
    np.testing.assert_allclose(net(x).asnumpy(), x.asnumpy() @ net.weight.asnumpy().T)
    check_cell(net, x)


def test_dense_rejects_bad_arguments():
    with pytest.raises(ValueError):
        nn.Dense(0, 3)
    with pytest.raises(KeyError):
        nn.Dense(2, 3, activation="swishy")
    with pytest.raises(TypeError):
        nn.Dense(2, 3, activation=3)


# -------------------------------------------------------------- activations
ACTIVATIONS = [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    (nn.LeakyReLU(0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    (nn.ELU(), lambda x: np.where(x > 0, x, np.exp(x) - 1)),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.Tanh(), np.tanh),
    (nn.Softplus(), lambda x: np.log1p(np.exp(x))),
    (nn.GELU(), lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    (nn.GELU(approximate=False),
     lambda x: 0.5 * x * (1 + np.vectorize(__import__("math").erf)(x / np.sqrt(2)))),
    (nn.Softmax(), lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    (nn.LogSoftmax(axis=0), lambda x: x - np.log(np.exp(x).sum(0, keepdims=True))),
]


@pytest.mark.parametrize("cell,reference", ACTIVATIONS,
                         ids=[type(c).__name__ + str(i) for i, (c, _) in enumerate(ACTIVATIONS)])
def test_activation_forward_and_gradient(cell, reference):
    x = np.random.default_rng(7).standard_normal((3, 4)) * 3
    x = np.where(np.abs(x) < 0.05, 0.5, x)          # away from the kinks at 0
    x = np.where(np.abs(x - 6) < 0.05, 5.5, x)
    np.testing.assert_allclose(cell(Tensor(x)).asnumpy(), reference(x), rtol=1e-6, atol=1e-12)
    check_cell(cell, Tensor(x))


def test_get_activation():
    assert isinstance(nn.get_activation("relu"), nn.ReLU)
    assert isinstance(nn.get_activation("LogSoftmax"), nn.LogSoftmax)
    assert nn.get_activation(None) is None


# ------------------------------------------------------------ Flatten, Dropout
def test_flatten():
    x = t64((2, 3, 4), 1)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    check_cell(nn.Flatten(), x)


def test_dropout_eval_is_identity_and_train_masks():
    drop = nn.Dropout(keep_prob=0.8)
    assert drop.p == pytest.approx(0.2) and nn.Dropout(p=0.2).keep_prob == pytest.approx(0.8)
    assert nn.Dropout().keep_prob == 0.5
    x = Tensor(np.ones((200, 50)))
    assert drop(x) is x                                  # evaluation mode: the input itself
    drop.set_train()
    y = drop(x).asnumpy()
    assert set(np.unique(y)) <= {0.0, 1.25}
    assert 0.77 < np.mean(y > 0) < 0.83
    assert nn.Dropout(p=0.0).set_train()(x) is x         # keep everything
    for kwargs in ({"keep_prob": 0.0}, {"keep_prob": 1.5}, {"p": 1.0},
                   {"p": 0.2, "keep_prob": 0.8}):
        with pytest.raises(ValueError):
            nn.Dropout(**kwargs)


def test_dropout_gradient_is_mask_over_keep_prob():
    drop = nn.Dropout(p=0.25).set_train()
    x = t64((6, 7), 2)
    rt_nn.set_seed(5)
    y = drop(x).asnumpy()
    mask = (y != 0)
    rt_nn.set_seed(5)
    dx = ops.GradOperation()(drop)(x).asnumpy()
    np.testing.assert_allclose(dx, mask / 0.75, rtol=1e-12)
    check_cell(drop, x, dropout_seed=11)


def test_training_flag_specialises_per_instance():
    """Compiled code depends on ``self.training``: two instances in two modes never share it."""
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(p=0.5)

        def construct(self, x):
            return self.drop(x) * 2

    a, b = Net(), Net().set_train()
    x = Tensor(np.ones((50, 40)))
    grad = ops.GradOperation()
    np.testing.assert_array_equal(grad(a)(x).asnumpy(), np.full((50, 40), 2.0))
    gb = grad(b)(x).asnumpy()
    assert set(np.unique(gb)) == {0.0, 4.0}
    np.testing.assert_array_equal(grad(a)(x).asnumpy(), np.full((50, 40), 2.0))
    b.set_train(False)
    np.testing.assert_array_equal(grad(b)(x).asnumpy(), np.full((50, 40), 2.0))


# ----------------------------------------------------------- conv, pooling
def conv2d_reference(x, w, stride, pads):
    top, bottom, left, right = pads
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out


@pytest.mark.parametrize("pad_mode,padding,stride,pads", [
    ("same", 0, 1, (1, 1, 1, 1)),
    ("valid", 0, 2, (0, 0, 0, 0)),
    ("pad", 1, 1, (1, 1, 1, 1)),
    ("pad", (0, 1, 2, 0), 1, (0, 1, 2, 0)),
])
def test_conv2d(pad_mode, padding, stride, pads):
    s2sad.set_seed(8)
    net = to_float64(nn.Conv2d(2, 3, 3, stride=stride, pad_mode=pad_mode, padding=padding,
                               has_bias=True, bias_init="normal"))
    assert net.weight.shape == (3, 2, 3, 3)
    x = t64((2, 2, 5, 5), 9)
    expected = conv2d_reference(x.asnumpy(), net.weight.asnumpy(), stride, pads) \
        + net.bias.asnumpy()[None, :, None, None]
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-10, atol=1e-12)
    check_cell(net, x)


def test_conv2d_defaults_like_mindspore():
    net = nn.Conv2d(1, 2, (3, 1))
    assert net.pad_mode == "same" and not net.has_bias and net.trainable_params()[0].shape \
        == (2, 1, 3, 1)
    with pytest.raises(NotImplementedError):
        nn.Conv2d(2, 2, 3, group=2)


@pytest.mark.parametrize("cls,reduce", [(nn.MaxPool2d, np.max), (nn.AvgPool2d, np.mean)])
def test_pooling(cls, reduce):
    x = np.random.default_rng(10).permutation(2 * 3 * 6 * 6).reshape(2, 3, 6, 6) * 0.1
    pool = cls(kernel_size=2, stride=2)
    expected = reduce(x.reshape(2, 3, 3, 2, 3, 2), axis=(3, 5))
    np.testing.assert_allclose(pool(Tensor(x)).asnumpy(), expected, rtol=1e-12)
    check_cell(pool, Tensor(x))
    same = cls(kernel_size=3, stride=2, pad_mode="same")
    assert same(Tensor(x)).shape == (2, 3, 3, 3)
    check_cell(same, Tensor(x))
    assert cls()(Tensor(x)).shape == x.shape     # MindSpore's defaults: kernel 1, stride 1


# ----------------------------------------------------------- normalisation
@pytest.mark.parametrize("cls,shape", [(nn.BatchNorm1d, (8, 3)), (nn.BatchNorm2d, (4, 3, 2, 2))])
def test_batchnorm_training_uses_batch_statistics_and_updates_moving(cls, shape):
    bn = to_float64(cls(3, momentum=0.9, gamma_init="normal", beta_init="normal"))
    assert [p.name for p in bn.untrainable_params()] == ["moving_mean", "moving_variance"]
    assert all(not p.requires_grad for p in bn.untrainable_params())
    x = t64(shape, 12, scale=2.0) + 1.0
    axes = (0,) if len(shape) == 2 else (0, 2, 3)
    bshape = (1, 3) + (1,) * (len(shape) - 2)
    xv = x.asnumpy()
    mean, var = xv.mean(axis=axes), xv.var(axis=axes)
    n = xv.size // 3
    gamma, beta = bn.gamma.asnumpy().copy(), bn.beta.asnumpy().copy()

    bn.set_train()
    y = bn(x).asnumpy()
    expected = (xv - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + 1e-5) \
        * gamma.reshape(bshape) + beta.reshape(bshape)
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.1 * mean, rtol=1e-12)
    np.testing.assert_allclose(bn.moving_variance.asnumpy(), 0.9 + 0.1 * var * n / (n - 1),
                               rtol=1e-12)
    check_cell(bn, x)                      # gradient through the batch statistics

    bn.set_train(False)
    moving_mean, moving_var = bn.moving_mean.asnumpy().copy(), bn.moving_variance.asnumpy().copy()
    y = bn(x).asnumpy()
    expected = (xv - moving_mean.reshape(bshape)) / np.sqrt(moving_var.reshape(bshape) + 1e-5) \
        * gamma.reshape(bshape) + beta.reshape(bshape)
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(bn.moving_mean.asnumpy(), moving_mean)   # eval: no update
    check_cell(bn, x)


def test_batchnorm_gradient_has_no_side_effect():
    bn = to_float64(nn.BatchNorm1d(2)).set_train()
    x = t64((5, 2), 13)
    ops.GradOperation()(bn)(x)
    np.testing.assert_array_equal(bn.moving_mean.asnumpy(), [0.0, 0.0])
    bn(x)
    assert np.all(bn.moving_mean.asnumpy() != 0)


def test_batchnorm_use_batch_statistics_overrides_mode():
    bn = to_float64(nn.BatchNorm1d(2, use_batch_statistics=True))
    x = t64((6, 2), 14)
    y = bn(x).asnumpy()               # evaluation mode, but batch statistics
    np.testing.assert_allclose(y.mean(axis=0), 0, atol=1e-12)
    check_cell(bn, x)


def test_layernorm():
    s2sad.set_seed(15)
    ln = to_float64(nn.LayerNorm((4,), gamma_init="normal", beta_init="normal", epsilon=1e-5))
    x = t64((3, 4), 16)
    xv = x.asnumpy()
    mean, var = xv.mean(-1, keepdims=True), xv.var(-1, keepdims=True)
    expected = (xv - mean) / np.sqrt(var + 1e-5) * ln.gamma.asnumpy() + ln.beta.asnumpy()
    np.testing.assert_allclose(ln(x).asnumpy(), expected, rtol=1e-10)
    check_cell(ln, x)
    ln2 = to_float64(nn.LayerNorm((3, 4), begin_norm_axis=1, begin_params_axis=1))
    check_cell(ln2, t64((2, 3, 4), 17))


# ---------------------------------------------------------------- Embedding
@pytest.mark.parametrize("use_one_hot", [False, True])
def test_embedding(use_one_hot):
    s2sad.set_seed(18)
    emb = to_float64(nn.Embedding(6, 3, use_one_hot=use_one_hot))
    ids = Tensor(np.array([[0, 2, 2], [5, 1, 0]], np.int32))
    table = emb.embedding_table.asnumpy()
    np.testing.assert_allclose(emb(ids).asnumpy(), table[ids.asnumpy()])
    sens = np.random.default_rng(19).standard_normal((2, 3, 3))
    grad = ops.GradOperation(get_by_list=True, sens_param=True)(
        emb, emb.embedding_table)(ids, Tensor(sens)).asnumpy()
    expected = np.zeros_like(table)
    np.add.at(expected, ids.asnumpy(), sens)          # scatter-add of the sens rows
    np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-12)


def test_embedding_padding_idx():
    emb = nn.Embedding(4, 2, padding_idx=1, embedding_table="ones")
    np.testing.assert_array_equal(emb.embedding_table.asnumpy()[1], [0, 0])
    np.testing.assert_array_equal(emb.embedding_table.asnumpy()[0], [1, 1])
