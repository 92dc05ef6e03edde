"""CrossEntropyLoss, NLLLoss and the functional ops.cross_entropy, ops.nll_loss and
ops.binary_cross_entropy_with_logits.

Forward values are compared with NumPy references written from the formulas
of MindSpore's API docs (loops over samples, not the library's vectorised
form); gradients of inputs, probability targets and Parameters (a class
weight) with float64 central finite differences of the loss run eagerly.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, Parameter, ParameterTuple

from gradcheck import numeric_grad


# ------------------------------------------------------------------ references
def log_softmax_np(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def nll_reference(logp, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """MindSpore's nll_loss / CrossEntropyLoss (class indices), one sample at a time.

    l_n = (1 - eps) * w[y_n] * -logp[n, y_n] + eps / C * sum_c w[c] * -logp[n, c],
    zero where y_n == ignore_index; 'mean' divides by sum_n w[y_n] over kept n.
    """
    logp = np.moveaxis(logp, 1, -1) if logp.ndim > 2 else logp
    n_classes = logp.shape[-1]
    w = np.ones(n_classes) if weight is None else weight
    flat_logp = logp.reshape(-1, n_classes)
    flat_target = np.asarray(target).reshape(-1)
    losses, total_weight = [], 0.0
    for row, y in zip(flat_logp, flat_target):
        if y == ignore_index:
            losses.append(0.0)
            continue
        nll = -w[y] * row[y]
        smooth = -np.sum(w * row)
        losses.append((1 - label_smoothing) * nll + label_smoothing / n_classes * smooth)
        total_weight += w[y]
    losses = np.array(losses).reshape(np.shape(target))
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / total_weight


def prob_reference(logp, probs, weight=None, reduction="mean", label_smoothing=0.0):
    """CrossEntropyLoss with class probabilities: l_n = -sum_c w_c * logp[n, c] * y[n, c]."""
    logp = np.moveaxis(logp, 1, -1) if logp.ndim > 2 else logp
    probs = np.moveaxis(probs, 1, -1) if probs.ndim > 2 else probs
    n_classes = logp.shape[-1]
    w = np.ones(n_classes) if weight is None else weight
    probs = probs * (1 - label_smoothing) + label_smoothing / n_classes
    losses = -(logp * probs * w).sum(axis=-1)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / losses.size


def value(t):
    return np.asarray(t.asnumpy() if isinstance(t, Tensor) else t, dtype=np.float64)


RNG = np.random.default_rng(3)
LOGITS_2D = RNG.standard_normal((5, 4))
LABELS_2D = np.array([1, 0, 3, 3, 2], np.int32)
LOGITS_4D = RNG.standard_normal((2, 3, 4, 2))
LABELS_4D = RNG.integers(0, 3, (2, 4, 2)).astype(np.int32)
WEIGHT = np.array([0.5, 2.0, 1.0, 1.5])


# --------------------------------------------------------------- forward values
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", [None, WEIGHT])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy_class_indices_matches_reference(reduction, weight, label_smoothing):
    labels = LABELS_2D.copy()
    labels[2] = -100   # ignored: counts for nothing, not even in the mean's denominator
    loss = nn.CrossEntropyLoss(None if weight is None else Tensor(weight), reduction=reduction,
                               label_smoothing=label_smoothing)
    got = loss(Tensor(LOGITS_2D), Tensor(labels))
    expected = nll_reference(log_softmax_np(LOGITS_2D, 1), labels, weight,
                             reduction=reduction, label_smoothing=label_smoothing)
    np.testing.assert_allclose(value(got), expected, rtol=1e-12)
    functional = ops.cross_entropy(Tensor(LOGITS_2D), Tensor(labels),
                                   None if weight is None else Tensor(weight),
                                   reduction=reduction, label_smoothing=label_smoothing)
    np.testing.assert_allclose(value(functional), expected, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_spatial_and_unbatched_shapes(reduction):
    got = nn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.1)(
        Tensor(LOGITS_4D), Tensor(LABELS_4D))
    expected = nll_reference(log_softmax_np(LOGITS_4D, 1), LABELS_4D, reduction=reduction,
                             label_smoothing=0.1)
    assert np.shape(value(got)) == np.shape(expected)
    np.testing.assert_allclose(value(got), expected, rtol=1e-12)
    # [C] logits with a scalar class index
    one = nn.CrossEntropyLoss(reduction=reduction)(Tensor(LOGITS_2D[0]), Tensor(np.int32(1)))
    np.testing.assert_allclose(value(one), -log_softmax_np(LOGITS_2D[0], 0)[1], rtol=1e-12)


def test_ignore_index_inside_the_class_range():
    labels = np.array([0, 1, 0, 2, 3], np.int32)
    got = nn.CrossEntropyLoss(weight=Tensor(WEIGHT), ignore_index=0)(Tensor(LOGITS_2D),
                                                                      Tensor(labels))
    expected = nll_reference(log_softmax_np(LOGITS_2D, 1), labels, WEIGHT, ignore_index=0)
    np.testing.assert_allclose(value(got), expected, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_class_probabilities_matches_reference(reduction):
    probs = RNG.dirichlet(np.ones(3), (2, 4, 2))            # [N, d1, d2, C]
    probs = np.moveaxis(probs, -1, 1)                         # [N, C, d1, d2]
    weight = np.array([1.0, 0.3, 2.0])
    got = nn.CrossEntropyLoss(Tensor(weight), reduction=reduction, label_smoothing=0.3)(
        Tensor(LOGITS_4D), Tensor(probs))
    expected = prob_reference(log_softmax_np(LOGITS_4D, 1), probs, weight, reduction, 0.3)
    np.testing.assert_allclose(value(got), expected, rtol=1e-12)


def test_nll_loss_matches_reference_and_mindspore_example():
    logp = log_softmax_np(LOGITS_4D, 1)
    got = nn.NLLLoss(weight=Tensor(WEIGHT[:3]), reduction="none")(Tensor(logp),
                                                                   Tensor(LABELS_4D))
    np.testing.assert_allclose(value(got), nll_reference(logp, LABELS_4D, WEIGHT[:3],
                                                         reduction="none"), rtol=1e-12)
    got = ops.nll_loss(Tensor(LOGITS_2D), Tensor(LABELS_2D), Tensor(WEIGHT), reduction="sum")
    np.testing.assert_allclose(value(got), nll_reference(LOGITS_2D, LABELS_2D, WEIGHT,
                                                         reduction="sum"), rtol=1e-12)
    # The example of mindspore.ops.NLLLoss's API docs prints a loss of -0.52507716
    # for these logits, labels [0, 0, 0] and this weight (reduction 'mean').
    logits = np.array([[0.5488135, 0.71518934], [0.60276335, 0.5448832],
                       [0.4236548, 0.6458941]], np.float32)
    weight = np.array([0.3834415, 0.79172504], np.float32)
    got = nn.NLLLoss(weight=Tensor(weight))(Tensor(logits), Tensor(np.zeros(3, np.int32)))
    np.testing.assert_allclose(value(got), -0.52507716, rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits_matches_formula_and_cell(reduction):
    z = RNG.standard_normal((3, 4)) * 3
    y = RNG.uniform(size=(3, 4))
    w = RNG.uniform(0.5, 1.5, size=(4,))
    pw = RNG.uniform(0.5, 2.0, size=(4,))
    sig = 1 / (1 + np.exp(-z))
    per = -(pw * y * np.log(sig) + (1 - y) * np.log(1 - sig)) * w
    expected = {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]
    got = ops.binary_cross_entropy_with_logits(Tensor(z), Tensor(y), Tensor(w), Tensor(pw),
                                               reduction)
    np.testing.assert_allclose(value(got), expected, rtol=1e-10)
    cell = nn.BCEWithLogitsLoss(reduction, Tensor(w), Tensor(pw))(Tensor(z), Tensor(y))
    np.testing.assert_allclose(value(cell), expected, rtol=1e-10)
    plain = ops.binary_cross_entropy_with_logits(Tensor(z), Tensor(y))
    np.testing.assert_allclose(value(plain), (-(y * np.log(sig) + (1 - y) * np.log(1 - sig)))
                               .mean(), rtol=1e-10)


# ------------------------------------------------------------------- gradients
class Classifier(nn.Cell):
    """Dense layer, then a loss with a trainable class weight."""

    def __init__(self, loss):
        super().__init__()
        self.dense = nn.Dense(3, 4, weight_init=Tensor(RNG.standard_normal((4, 3))),
                              bias_init=Tensor(RNG.standard_normal(4)), dtype=s2sad.float64)
        self.loss = loss

    def construct(self, x, labels):
        return self.loss(self.dense(x), labels)


def param_numeric_grad(scalar, param, eps=1e-6):
    base = param._data.copy()
    grad = np.zeros(base.shape)
    for k in range(base.size):
        for sign in (1, -1):
            param._data.reshape(-1)[k] = base.reshape(-1)[k] + sign * eps
            grad.reshape(-1)[k] += sign * scalar() / (2 * eps)
        param._data.reshape(-1)[k] = base.reshape(-1)[k]
    return grad


def check_grads(net, inputs, differentiable, rtol=1e-6, atol=1e-8):
    """Gradients of the scalar ``net(*inputs)`` (inputs, Parameters) against finite differences."""
    params = ParameterTuple(net.trainable_params())
    input_grads, param_grads = ops.GradOperation(get_all=True, get_by_list=True)(net, params)(
        *inputs)
    for i in differentiable:
        expected = numeric_grad(lambda *a: net(*a), list(inputs), i)
        np.testing.assert_allclose(value(input_grads[i]), expected, rtol=rtol, atol=atol)
    for p, g in zip(params, param_grads):
        expected = param_numeric_grad(lambda: float(value(net(*inputs))), p)
        np.testing.assert_allclose(value(g), expected, rtol=rtol, atol=atol,
                                   err_msg="parameter %s" % p.name)
    return params


@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
def test_cross_entropy_in_a_cell_gradients_match_finite_differences(label_smoothing):
    weight = Parameter(Tensor(WEIGHT.copy()), name="class_weight")
    net = Classifier(nn.CrossEntropyLoss(weight, ignore_index=2,
                                         label_smoothing=label_smoothing))
    x = Tensor(RNG.standard_normal((5, 3)))
    params = check_grads(net, (x, Tensor(LABELS_2D)), [0])
    assert "loss.weight" in [p.name for p in params]   # the class weight is trained too


def test_cross_entropy_probability_targets_get_gradients():
    net = Classifier(nn.CrossEntropyLoss(reduction="sum", label_smoothing=0.1))
    x = Tensor(RNG.standard_normal((5, 3)))
    probs = Tensor(RNG.dirichlet(np.ones(4), 5))
    check_grads(net, (x, probs), [0, 1])


def test_nll_loss_spatial_gradients_match_finite_differences():
    class Net(nn.Cell):
        def construct(self, x, labels):
            return ops.nll_loss(ops.log_softmax(x, 1), labels, ignore_index=1)

    check_grads(Net(), (Tensor(LOGITS_4D), Tensor(LABELS_4D)), [0])


def test_binary_cross_entropy_with_logits_gradients():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.pos_weight = Parameter(Tensor(np.array([0.7, 1.8, 1.2])), name="pos_weight")

        def construct(self, z, y):
            return ops.binary_cross_entropy_with_logits(z, y, pos_weight=self.pos_weight)

    check_grads(Net(), (Tensor(RNG.standard_normal((4, 3))), Tensor(RNG.uniform(size=(4, 3)))),
                [0, 1])


# ---------------------------------------------------------------------- errors
def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="'reduction' must be in"):
        nn.CrossEntropyLoss(reduction="avg")
    with pytest.raises(ValueError, match="'label_smoothing' must be"):
        nn.CrossEntropyLoss(label_smoothing=1.5)
    with pytest.raises(TypeError, match="'weight' must be a Tensor"):
        nn.NLLLoss(weight=[1.0, 2.0])
    with pytest.raises(TypeError, match="'ignore_index' must be an int"):
        nn.NLLLoss(ignore_index=1.0)
    with pytest.raises(ValueError, match="For 'cross_entropy', the 'reduction'"):
        ops.cross_entropy(Tensor(LOGITS_2D), Tensor(LABELS_2D), reduction="avg")
    with pytest.raises(ValueError, match="For 'binary_cross_entropy_with_logits'"):
        ops.binary_cross_entropy_with_logits(Tensor(LOGITS_2D), Tensor(LOGITS_2D),
                                             reduction="batchmean")


def test_out_of_range_class_index_is_an_error_eagerly_and_compiled():
    labels = Tensor(np.array([1, 0, 4, 3, 2], np.int32))      # 4 is not a class of 4
    loss = nn.CrossEntropyLoss()
    with pytest.raises(AssertionError, match="class index in \\[0, C\\)"):
        loss(Tensor(LOGITS_2D), labels)
    with pytest.raises(AssertionError, match="class index in \\[0, C\\)"):
        ops.GradOperation()(loss)(Tensor(LOGITS_2D), labels)
