"""The second-order cases of the nn primitives (``test_second_order.py``).
"""
import numpy as np

from s2sad.ops import operations as P

from second_order_cases import (Case, away_from, distinct, normal, probabilities, sin, unary,
                                uniform, wiggle)


# ===================================================================== nn
LABELS = np.array([2, 0, 3])
POOL_X = distinct((1, 2, 5, 5), 200)


def conv_case(variant, x_shape, w_shape, **attrs):
    conv = P.Conv2D(w_shape[0], w_shape[2:], **attrs)

    def f_conv(x, w):
        return wiggle(conv(x, w))
    return Case("Conv2D", f_conv, [normal(x_shape, 201), 0.5 * normal(w_shape, 202)], variant)


def conv_backprop_cases(x_shape, w_shape, **attrs):
    conv = P.Conv2D(w_shape[0], w_shape[2:], **attrs)
    bi = P.Conv2DBackpropInput(w_shape[0], w_shape[2:], **attrs)
    bf = P.Conv2DBackpropFilter(w_shape[0], w_shape[2:], **attrs)
    dy_shape = conv(np.zeros(x_shape), np.zeros(w_shape)).shape

    def f_backprop_input(dy, w):
        return wiggle(bi(dy, w, x_shape))

    def f_backprop_filter(dy, x):
        return wiggle(bf(dy, x, w_shape))
    variant = attrs.get("pad_mode", "valid")
    return [Case("Conv2DBackpropInput", f_backprop_input,
                 [normal(dy_shape, 203), 0.5 * normal(w_shape, 204)], variant),
            Case("Conv2DBackpropFilter", f_backprop_filter,
                 [normal(dy_shape, 205), normal(x_shape, 206)], variant)]


def pool_cases(variant, kernel, strides, pad_mode="valid", pad=0):
    mp = P.MaxPool(kernel, strides, pad_mode, pad=pad)
    mpg = P.MaxPoolGrad(kernel, strides, pad_mode, pad=pad)
    mpgg = P.MaxPoolGradGrad(kernel, strides, pad_mode, pad=pad)
    ap = P.AvgPool(kernel, strides, pad_mode, pad=pad)
    apg = P.AvgPoolGrad(kernel, strides, pad_mode, pad=pad)
    out_shape = mp(POOL_X).shape

    def f_max_pool(x):
        return wiggle(mp(x))

    def f_max_pool_grad(x, dy):
        # the argmax of x is locally constant: no gradient to x, checked too
        return wiggle(mpg(x, mp(x), dy))

    def f_max_pool_grad_grad(x, g):
        return wiggle(mpgg(x, mp(x), g))

    def f_avg_pool(x):
        return wiggle(ap(x))

    def f_avg_pool_grad(x, dy):
        return wiggle(apg(x, ap(x), dy))
    return [Case("MaxPool", f_max_pool, [POOL_X], variant),
            Case("MaxPoolGrad", f_max_pool_grad, [POOL_X, normal(out_shape, 210)], variant),
            Case("MaxPoolGradGrad", f_max_pool_grad_grad, [POOL_X, normal(POOL_X.shape, 211)],
                 variant),
            Case("AvgPool", f_avg_pool, [normal(POOL_X.shape, 212)], variant),
            Case("AvgPoolGrad", f_avg_pool_grad, [normal(POOL_X.shape, 213),
                                                  normal(out_shape, 214)], variant)]


def f_avg_pool_count_pad(x):
    return wiggle(avg_pool_count_pad(x))


avg_pool_count_pad = P.AvgPool(3, 2, "pad", pad=1, count_include_pad=True)


def two_inputs(prim):
    def f_two_inputs(a, b):
        return wiggle(prim(a, b))
    return f_two_inputs


def all_outputs(prim):
    """``prim(*args)`` returned as is: every output gets its own random cotangent."""
    def f_all_outputs(*args):
        return prim(*args)
    return f_all_outputs


sparse_sce = P.SparseSoftmaxCrossEntropyWithLogits()
sparse_sce_grad = P.SparseSoftmaxCrossEntropyWithLogits(is_grad=True)
dropout = P.Dropout(0.6)


def f_sparse_sce(logits):
    return sparse_sce(logits, LABELS) * sin(logits)


def f_sparse_sce_grad(logits):
    return wiggle(sparse_sce_grad(logits, LABELS))


def f_dropout(x):
    out, mask = dropout(x)
    return out * sin(x) + mask


class FixedDraws:
    """Dropout's generator replaced by one giving the same uniforms for every draw,
    so the mask is fixed and the function is deterministic (finite differences
    need f(x + e v) and f(x - e v) to use the same mask)."""

    def random(self, shape):
        return np.random.default_rng(123).random(shape)


def bn_inputs(xshape):
    c = xshape[1]
    return (2 * normal(xshape, 220) + 1, 1 + 0.3 * normal((c,), 221), normal((c,), 222),
            normal((c,), 223), uniform((c,), 224, 0.5, 2.0))


# both kinks of ReLU6 (0 and 6) are exercised from either side, none closer than 0.15
RELU6_X = away_from((3, 4), 231, (0.0, 6.0), scale=4.0)
assert np.any(RELU6_X < 0) and np.any((RELU6_X > 0) & (RELU6_X < 6)) and np.any(RELU6_X > 6)

NN = [
    Case("ReLU", unary(P.ReLU()), [away_from((2, 3), 230)]),
    Case("ReLU6", unary(P.ReLU6()), [RELU6_X]),
    Case("LeakyReLU", unary(P.LeakyReLU(0.3)), [away_from((2, 3), 232)]),
    Case("ELU", unary(P.ELU(1.5)), [away_from((2, 3), 233)]),
    Case("ELU", unary(P.ELU()), [away_from((2, 3), 233)], "alpha1"),
    Case("GeLU", unary(P.GeLU("tanh")), [normal((2, 3), 234) * 2], "tanh"),
    Case("GeLU", unary(P.GeLU("none")), [normal((2, 3), 234) * 2], "erf"),
    Case("GeLUGrad", two_inputs(P.GeLUGrad("tanh")), [normal((2, 3), 235),
                                                      normal((2, 3), 236) * 2], "tanh"),
    Case("GeLUGrad", two_inputs(P.GeLUGrad("none")), [normal((2, 3), 235),
                                                      normal((2, 3), 236) * 2], "erf"),
    Case("Sigmoid", unary(P.Sigmoid()), [normal((2, 3), 237) * 3]),
    Case("Softplus", unary(P.Softplus()), [normal((2, 3), 238) * 3]),
    Case("Softmax", unary(P.Softmax()), [normal((3, 4), 239)]),
    Case("Softmax", unary(P.Softmax(0)), [normal((3, 4), 239)], "axis0"),
    Case("Softmax", unary(P.Softmax((0, 2))), [normal((2, 3, 2), 239)], "axes02"),
    Case("LogSoftmax", unary(P.LogSoftmax()), [normal((3, 4), 240)]),
    Case("LogSoftmax", unary(P.LogSoftmax(0)), [normal((3, 4), 240)], "axis0"),
    Case("SoftmaxCrossEntropyWithLogits", all_outputs(P.SoftmaxCrossEntropyWithLogits()),
         [normal((3, 4), 241), probabilities((3, 4), 242)]),
    Case("SoftmaxCrossEntropyWithLogits", all_outputs(P.SoftmaxCrossEntropyWithLogits()),
         [normal((3, 4), 241), uniform((3, 4), 243, 0.1, 1.0)], "unnormalised-labels"),
    Case("SparseSoftmaxCrossEntropyWithLogits", f_sparse_sce, [normal((3, 4), 244)]),
    Case("SparseSoftmaxCrossEntropyWithLogits", f_sparse_sce_grad, [normal((3, 4), 244)],
         "is_grad"),
    Case("BiasAdd", two_inputs(P.BiasAdd()), [normal((2, 3, 2, 2), 245), normal((3,), 246)]),
    Case("BiasAdd", two_inputs(P.BiasAdd("NHWC")), [normal((2, 2, 3), 245), normal((3,), 246)],
         "NHWC"),
    conv_case("valid", (1, 2, 5, 5), (2, 2, 3, 3)),
    conv_case("same-stride2", (1, 2, 5, 5), (2, 2, 3, 3), pad_mode="same", stride=2),
    conv_case("pad-dilation2", (1, 2, 5, 5), (2, 2, 3, 2), pad_mode="pad", pad=(1, 0, 2, 1),
              dilation=2),
]
NN += conv_backprop_cases((1, 2, 5, 5), (2, 2, 3, 3))
NN += conv_backprop_cases((1, 2, 5, 5), (2, 2, 3, 3), pad_mode="same", stride=2)
NN += pool_cases("valid", 2, 2)
NN += pool_cases("same", 3, 2, "same")
NN += pool_cases("pad", 3, 2, "pad", 1)
NN += [
    Case("AvgPool", f_avg_pool_count_pad, [normal(POOL_X.shape, 215)], "count-include-pad"),
    Case("Dropout", f_dropout, [normal((3, 4), 250)], "fixed-mask"),
    Case("LayerNorm", all_outputs(P.LayerNorm(1, 1, 1e-5)),
         [normal((2, 3, 4), 251), 1 + 0.3 * normal((3, 4), 252), normal((3, 4), 253)]),
    Case("LayerNorm", all_outputs(P.LayerNorm(-1, -1, 1e-5)),
         [normal((2, 3, 4), 251), 1 + 0.3 * normal((4,), 252), normal((4,), 253)], "last"),
    Case("BatchNorm", all_outputs(P.BatchNorm(True, 1e-5, 0.1)), bn_inputs((4, 3)),
         "training"),
    Case("BatchNorm", all_outputs(P.BatchNorm(True, 1e-5, 0.1)), bn_inputs((2, 3, 2, 2)),
         "training-nchw"),
    Case("BatchNorm", all_outputs(P.BatchNorm(False, 1e-3)), bn_inputs((2, 3, 2, 2)),
         "inference"),
]
