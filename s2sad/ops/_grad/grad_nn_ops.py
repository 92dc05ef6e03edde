"""bprop, JVP and Taylor rules for neural-network primitives.

Rules are compositions of primitives (math, array and the nn gradient
primitives), so every adjoint and tangent program can be differentiated again.
Masks from comparisons are booleans: multiplying by them keeps the gradient's
dtype, where a Python-number select would not.
"""
from ..operations import math_ops as M
from ..operations import array_ops as A
from ..operations import nn_ops as N
from .grad_base import bprop_getters, jvp_getters, taylor_rules
from .grad_math_ops import get_jvp_bilinear, memo_series

exp = M.Exp()
tanh = M.Tanh()
sqrt = M.Sqrt()
reduce_sum = M.ReduceSum()
sum_keep = M.ReduceSum(keep_dims=True)
mean_keep = M.ReduceMean(keep_dims=True)
shape_of = A.Shape()
zeros_like = A.ZerosLike()
unbroadcast = A.Unbroadcast()
broadcast_like = A.BroadcastLike()
expand = A.ExpandReduced(False)
reduced_count = A.ReducedCount()
sigmoid = N.Sigmoid()
softmax_last = N.Softmax(-1)
log_softmax_last = N.LogSoftmax(-1)
channel_axes = N.NormAxes(0, 1)

_SQRT_2_OVER_PI = 0.7978845608028654
_INV_SQRT_2PI = 0.3989422804014327
_TANH_K = 0.044715


def opt_add(a, b):
    """``a + b`` where either may be ``None`` (a zero known while compiling)."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def opt_scale(a, s):
    """``a * s``, ``None`` when ``a`` is."""
    if a is None:
        return None
    return a * s


# ------------------------------------------------------------------ activations
@bprop_getters.register(N.ReLU)
def get_bprop_relu(self):
    def bprop(x, out, dout):
        return (dout * (out > 0),)
    return bprop


@jvp_getters.register(N.ReLU)
def get_jvp_relu(self):
    def jvp(x, out, tx):
        return tx * (out > 0)
    return jvp


@bprop_getters.register(N.ReLU6)
def get_bprop_relu6(self):
    def bprop(x, out, dout):
        return (dout * ((x > 0) * (x < 6)),)
    return bprop


@jvp_getters.register(N.ReLU6)
def get_jvp_relu6(self):
    def jvp(x, out, tx):
        return tx * ((x > 0) * (x < 6))
    return jvp


@bprop_getters.register(N.LeakyReLU)
def get_bprop_leaky_relu(self):
    alpha = self.alpha

    def bprop(x, out, dout):
        return (dout * (x > 0) + (dout * (x <= 0)) * alpha,)
    return bprop


@jvp_getters.register(N.LeakyReLU)
def get_jvp_leaky_relu(self):
    alpha = self.alpha

    def jvp(x, out, tx):
        return tx * (x > 0) + (tx * (x <= 0)) * alpha
    return jvp


@bprop_getters.register(N.ELU)
def get_bprop_elu(self):
    alpha = self.alpha

    def bprop(x, out, dout):
        # for x <= 0, d/dx alpha * (exp(x) - 1) = alpha * exp(x) = out + alpha
        return (dout * (x > 0) + (dout * (x <= 0)) * (out + alpha),)
    return bprop


@jvp_getters.register(N.ELU)
def get_jvp_elu(self):
    alpha = self.alpha

    def jvp(x, out, tx):
        return tx * (x > 0) + (tx * (x <= 0)) * (out + alpha)
    return jvp


@bprop_getters.register(N.GeLU)
def get_bprop_gelu(self):
    gelu_grad = N.GeLUGrad(self.approximate)

    def bprop(x, out, dout):
        return (gelu_grad(dout, x),)
    return bprop


@jvp_getters.register(N.GeLU)
def get_jvp_gelu(self):
    gelu_grad = N.GeLUGrad(self.approximate)

    def jvp(x, out, tx):
        return gelu_grad(tx, x)
    return jvp


def gelu_second_derivative(x, approximate):
    """gelu''(x) written with primitives, for either form of GeLU."""
    if approximate == "tanh":
        x2 = x * x
        t = tanh((x + x2 * x * _TANH_K) * _SQRT_2_OVER_PI)
        du = (x2 * (3 * _TANH_K) + 1) * _SQRT_2_OVER_PI
        ddu = x * (6 * _TANH_K * _SQRT_2_OVER_PI)
        return (1 - t * t) * (du - x * t * (du * du) + x * ddu * 0.5)
    x2 = x * x
    return exp(x2 * -0.5) * _INV_SQRT_2PI * (2 - x2)


@bprop_getters.register(N.GeLUGrad)
def get_bprop_gelu_grad(self):
    approximate = self.approximate

    def bprop(dy, x, out, dout):
        return (unbroadcast(self(dout, x), dy),
                unbroadcast(dout * dy * gelu_second_derivative(x, approximate), x))
    return bprop


@jvp_getters.register(N.GeLUGrad)
def get_jvp_gelu_grad(self):
    approximate = self.approximate

    def jvp(dy, x, out, tdy, tx):
        t = None
        if tdy is not None:
            t = self(tdy, x)
        if tx is not None:
            t = opt_add(t, broadcast_like(tx * dy * gelu_second_derivative(x, approximate), out))
        return t
    return jvp


@bprop_getters.register(N.Sigmoid)
def get_bprop_sigmoid(self):
    def bprop(x, out, dout):
        return (dout * (out * (1 - out)),)
    return bprop


@jvp_getters.register(N.Sigmoid)
def get_jvp_sigmoid(self):
    def jvp(x, out, tx):
        return tx * (out * (1 - out))
    return jvp


@taylor_rules.register(N.Sigmoid)
def taylor_sigmoid(T, x, out):
    def g(y, m):        # y - y^2
        if m == 0:
            return T.emit(M.Sub(), [out, T.emit(M.Mul(), [out, out])])
        return T.total([(1, y[m]), (-1, T.square_series(y, m))])
    return T.ode(x, out, memo_series(g))


@bprop_getters.register(N.Softplus)
def get_bprop_softplus(self):
    def bprop(x, out, dout):
        return (dout * sigmoid(x),)
    return bprop


@jvp_getters.register(N.Softplus)
def get_jvp_softplus(self):
    def jvp(x, out, tx):
        return tx * sigmoid(x)
    return jvp


@bprop_getters.register(N.Softmax)
def get_bprop_softmax(self):
    axis = self.axis

    def bprop(x, out, dout):
        return (out * (dout - sum_keep(dout * out, axis)),)
    return bprop


@jvp_getters.register(N.Softmax)
def get_jvp_softmax(self):
    axis = self.axis

    def jvp(x, out, tx):
        return out * (tx - sum_keep(tx * out, axis))
    return jvp


@bprop_getters.register(N.LogSoftmax)
def get_bprop_log_softmax(self):
    axis = self.axis

    def bprop(x, out, dout):
        return (dout - exp(out) * sum_keep(dout, axis),)
    return bprop


@jvp_getters.register(N.LogSoftmax)
def get_jvp_log_softmax(self):
    axis = self.axis

    def jvp(x, out, tx):
        return tx - sum_keep(exp(out) * tx, axis)
    return jvp


# ----------------------------------------------------------------------- losses
@bprop_getters.register(N.SoftmaxCrossEntropyWithLogits)
def get_bprop_softmax_cross_entropy(self):
    def bprop(logits, labels, out, dout):
        loss, backprop = out
        dloss, dbackprop = dout     # None where that output is not read (a loss's backprop)
        p = backprop + labels
        dlogits = None
        dlabels = None
        if dloss is not None:
            d = expand(dloss, logits, -1)
            # sum(labels) * p - labels is MindSpore's backprop when labels sum to 1
            dlogits = d * (p * sum_keep(labels, -1) - labels)
            dlabels = -(d * log_softmax_last(logits))
        if dbackprop is not None:
            dlogits = opt_add(dlogits, p * (dbackprop - sum_keep(dbackprop * p, -1)))
            dlabels = opt_add(dlabels, -dbackprop)
        return dlogits, dlabels
    return bprop


get_bprop_softmax_cross_entropy.douts_may_be_none = True


@jvp_getters.register(N.SoftmaxCrossEntropyWithLogits)
def get_jvp_softmax_cross_entropy(self):
    def jvp(logits, labels, out, tlogits, tlabels):
        loss, backprop = out
        t_loss = None
        t_backprop = None
        if tlogits is not None:
            p = backprop + labels
            tlogp = tlogits - sum_keep(p * tlogits, -1)
            t_loss = -reduce_sum(labels * tlogp, -1)
            t_backprop = p * tlogp
        if tlabels is not None:
            t_loss = opt_add(t_loss, -reduce_sum(tlabels * log_softmax_last(logits), -1))
            t_backprop = opt_add(t_backprop, -tlabels)
        return t_loss, t_backprop
    return jvp


@bprop_getters.register(N.SparseSoftmaxCrossEntropyWithLogits)
def get_bprop_sparse_softmax_cross_entropy(self):
    grad_op = N.SparseSoftmaxCrossEntropyWithLogits(is_grad=True)
    is_grad = self.is_grad

    def bprop(logits, labels, out, dout):
        if is_grad:
            # out = (softmax(logits) - one_hot) / n: its Jacobian is softmax's, over n
            p = softmax_last(logits)
            n = reduced_count(labels, ())
            return (p * (dout - sum_keep(dout * p, -1))) / n, zeros_like(labels)
        return dout * grad_op(logits, labels), zeros_like(labels)
    return bprop


@jvp_getters.register(N.SparseSoftmaxCrossEntropyWithLogits)
def get_jvp_sparse_softmax_cross_entropy(self):
    grad_op = N.SparseSoftmaxCrossEntropyWithLogits(is_grad=True)
    is_grad = self.is_grad

    def jvp(logits, labels, out, tlogits, tlabels):
        if tlogits is None:
            return None
        if is_grad:
            p = softmax_last(logits)
            n = reduced_count(labels, ())
            return (p * (tlogits - sum_keep(tlogits * p, -1))) / n
        return reduce_sum(grad_op(logits, labels) * tlogits)
    return jvp


# ------------------------------------------------------------------------ bias
@bprop_getters.register(N.BiasAdd)
def get_bprop_bias_add(self):
    bias_axes = N.NormAxes(0, self.channel_axis)

    def bprop(x, bias, out, dout):
        return dout, reduce_sum(dout, bias_axes(dout))
    return bprop


@jvp_getters.register(N.BiasAdd)
def get_jvp_bias_add(self):
    bias_axes = N.NormAxes(0, self.channel_axis)

    def jvp(x, bias, out, tx, tbias):
        if tbias is None:
            return tx
        spread = broadcast_like(expand(tbias, out, bias_axes(out)), out)
        if tx is None:
            return spread
        return tx + spread
    return jvp


# ------------------------------------------------------------------ convolution
def _conv_family(prim):
    """(Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter) sharing ``prim``'s geometry."""
    attrs = prim.conv_attrs()
    return N.Conv2D(**attrs), N.Conv2DBackpropInput(**attrs), N.Conv2DBackpropFilter(**attrs)


@bprop_getters.register(N.Conv2D)
def get_bprop_conv2d(self):
    conv, input_grad, filter_grad = _conv_family(self)

    def bprop(x, w, out, dout):
        return input_grad(dout, w, shape_of(x)), filter_grad(dout, x, shape_of(w))
    return bprop


jvp_getters.register(N.Conv2D)(get_jvp_bilinear)


@bprop_getters.register(N.Conv2DBackpropInput)
def get_bprop_conv2d_backprop_input(self):
    conv, input_grad, filter_grad = _conv_family(self)

    def bprop(dy, w, input_size, out, dout):
        # <dout, BI(dy, w)> = <conv(dout, w), dy> = <w, BF(dy, dout)>
        return conv(dout, w), filter_grad(dy, dout, shape_of(w)), zeros_like(input_size)
    return bprop


@jvp_getters.register(N.Conv2DBackpropInput)
def get_jvp_conv2d_backprop_input(self):
    def jvp(dy, w, input_size, out, tdy, tw, tsize):
        t = None
        if tdy is not None:
            t = self(tdy, w, input_size)
        if tw is not None:
            t = opt_add(t, self(dy, tw, input_size))
        return t
    return jvp


@bprop_getters.register(N.Conv2DBackpropFilter)
def get_bprop_conv2d_backprop_filter(self):
    conv, input_grad, filter_grad = _conv_family(self)

    def bprop(dy, x, filter_size, out, dout):
        # <dout, BF(dy, x)> = <conv(x, dout), dy> = <x, BI(dy, dout)>
        return conv(x, dout), input_grad(dy, dout, shape_of(x)), zeros_like(filter_size)
    return bprop


@jvp_getters.register(N.Conv2DBackpropFilter)
def get_jvp_conv2d_backprop_filter(self):
    def jvp(dy, x, filter_size, out, tdy, tx, tsize):
        t = None
        if tdy is not None:
            t = self(tdy, x, filter_size)
        if tx is not None:
            t = opt_add(t, self(dy, tx, filter_size))
        return t
    return jvp


# ---------------------------------------------------------------------- pooling
@bprop_getters.register(N.MaxPool)
def get_bprop_max_pool(self):
    pool_grad = N.MaxPoolGrad(**self.pool_attrs())

    def bprop(x, out, dout):
        return (pool_grad(x, out, dout),)
    return bprop


@jvp_getters.register(N.MaxPool)
def get_jvp_max_pool(self):
    gather = N.MaxPoolGradGrad(**self.pool_attrs())

    def jvp(x, out, tx):
        return gather(x, out, tx)
    return jvp


@bprop_getters.register(N.MaxPoolGrad)
def get_bprop_max_pool_grad(self):
    gather = N.MaxPoolGradGrad(**self.pool_attrs())

    def bprop(x, out_, dy, out, dout):
        # the argmax is locally constant: only dy gets a gradient
        return zeros_like(x), zeros_like(out_), gather(x, out_, dout)
    return bprop


@bprop_getters.register(N.MaxPoolGradGrad)
def get_bprop_max_pool_grad_grad(self):
    scatter = N.MaxPoolGrad(**self.pool_attrs())

    def bprop(x, out_, g, out, dout):
        return zeros_like(x), zeros_like(out_), scatter(x, out_, dout)
    return bprop


@bprop_getters.register(N.AvgPool)
def get_bprop_avg_pool(self):
    pool_grad = N.AvgPoolGrad(**self.pool_attrs())

    def bprop(x, out, dout):
        return (pool_grad(x, out, dout),)
    return bprop


@jvp_getters.register(N.AvgPool)
def get_jvp_avg_pool(self):
    def jvp(x, out, tx):
        return self(tx)
    return jvp


@bprop_getters.register(N.AvgPoolGrad)
def get_bprop_avg_pool_grad(self):
    pool = N.AvgPool(**self.pool_attrs())

    def bprop(x, out_, dy, out, dout):
        return zeros_like(x), zeros_like(out_), pool(dout)
    return bprop


# MaxPoolGrad, MaxPoolGradGrad and AvgPoolGrad are linear in their last input
# and constant in the others (almost everywhere).
@jvp_getters.register(N.MaxPoolGrad)
@jvp_getters.register(N.MaxPoolGradGrad)
@jvp_getters.register(N.AvgPoolGrad)
def get_jvp_pool_grad(self):
    def jvp(x, out_, g, out, tx, tout, tg):
        if tg is None:
            return None
        return self(x, out_, tg)
    return jvp


# ------------------------------------------------------------------------ dropout
@bprop_getters.register(N.Dropout)
def get_bprop_dropout(self):
    keep_prob = self.keep_prob

    def bprop(x, out, dout):
        mask = out[1]
        return ((dout[0] * mask) / keep_prob,)
    return bprop


@jvp_getters.register(N.Dropout)
def get_jvp_dropout(self):
    keep_prob = self.keep_prob

    def jvp(x, out, tx):
        return (tx * out[1]) / keep_prob, None
    return jvp


# ----------------------------------------------------------------- normalisation
def normalised_input_grad(dxhat, xhat, rstd, axes):
    """The input gradient through ``xhat = (x - mean(x)) * rstd`` over ``axes``."""
    return rstd * (dxhat - mean_keep(dxhat, axes) - xhat * mean_keep(dxhat * xhat, axes))


def normalised_tangent(tx, xhat, rstd, axes):
    """(tangent of xhat, of the mean, of the biased variance) for an input tangent ``tx``."""
    tmean = mean_keep(tx, axes)
    tc = tx - tmean
    proj = mean_keep(xhat * tc, axes)
    return rstd * (tc - xhat * proj), tmean, (proj / rstd) * 2


@bprop_getters.register(N.LayerNorm)
def get_bprop_layer_norm(self):
    epsilon = self.epsilon
    norm_axes = N.NormAxes(self.begin_norm_axis)

    def bprop(x, gamma, beta, out, dout):
        y, mean, variance = out
        dy, dmean, dvariance = dout
        axes = norm_axes(x)
        n = reduced_count(x, axes)
        centred = x - mean
        rstd = 1 / sqrt(variance + epsilon)
        xhat = centred * rstd
        dx = normalised_input_grad(dy * gamma, xhat, rstd, axes) \
            + dmean / n + dvariance * (centred * 2) / n
        return dx, unbroadcast(dy * xhat, gamma), unbroadcast(dy, beta)
    return bprop


@jvp_getters.register(N.LayerNorm)
def get_jvp_layer_norm(self):
    epsilon = self.epsilon
    norm_axes = N.NormAxes(self.begin_norm_axis)

    def jvp(x, gamma, beta, out, tx, tgamma, tbeta):
        y, mean, variance = out
        rstd = 1 / sqrt(variance + epsilon)
        xhat = (x - mean) * rstd
        ty = None
        tmean = None
        tvariance = None
        if tx is not None:
            txhat, tmean, tvariance = normalised_tangent(tx, xhat, rstd, norm_axes(x))
            ty = txhat * gamma
        if tgamma is not None:
            ty = opt_add(ty, xhat * tgamma)
        if tbeta is not None:
            ty = opt_add(ty, tbeta)
        if ty is not None:
            ty = broadcast_like(ty, y)
        return ty, tmean, tvariance
    return jvp


@bprop_getters.register(N.BatchNorm)
def get_bprop_batch_norm(self):
    epsilon = self.epsilon
    momentum = self.momentum
    is_training = self.is_training

    def bprop(x, scale, bias, mean, variance, out, dout):
        y, batch_mean, batch_variance, new_mean, new_variance = out
        dy, dbatch_mean, dbatch_variance, dnew_mean, dnew_variance = dout
        axes = channel_axes(x)
        centred = x - expand(batch_mean, x, axes)
        rstd = 1 / sqrt(expand(batch_variance, x, axes) + epsilon)
        xhat = centred * rstd
        g = dy * expand(scale, x, axes)
        dscale = reduce_sum(dy * xhat, axes)
        dbias = reduce_sum(dy, axes)
        if is_training:
            n = reduced_count(x, axes)
            dm = dbatch_mean + dnew_mean * momentum
            dv = dbatch_variance + dnew_variance * (momentum * n / (n - 1))
            dx = normalised_input_grad(g, xhat, rstd, axes) + expand(dm, x, axes) / n \
                + expand(dv, x, axes) * (centred * 2) / n
            return (dx, dscale, dbias, dnew_mean * (1 - momentum),
                    dnew_variance * (1 - momentum))
        # inference: batch statistics are the inputs mean and variance
        dmean = dbatch_mean + dnew_mean - reduce_sum(g * rstd, axes)
        dvar = dbatch_variance + dnew_variance \
            + reduce_sum(g * xhat * rstd * rstd, axes) * -0.5
        return g * rstd, dscale, dbias, dmean, dvar
    return bprop


@jvp_getters.register(N.BatchNorm)
def get_jvp_batch_norm(self):
    epsilon = self.epsilon
    momentum = self.momentum
    is_training = self.is_training

    def jvp(x, scale, bias, mean, variance, out, tx, tscale, tbias, tmean, tvariance):
        y, batch_mean, batch_variance, new_mean, new_variance = out
        axes = channel_axes(x)
        rstd = 1 / sqrt(expand(batch_variance, x, axes) + epsilon)
        xhat = (x - expand(batch_mean, x, axes)) * rstd
        g = expand(scale, x, axes)
        ty = None
        t_bmean = None
        t_bvar = None
        if is_training:
            if tx is not None:
                txhat, tm, tv = normalised_tangent(tx, xhat, rstd, axes)
                n = reduced_count(x, axes)
                ty = txhat * g
                t_bmean = reduce_sum(tm, axes)
                t_bvar = reduce_sum(tv, axes)
            t_new_mean = opt_add(opt_scale(tmean, 1 - momentum), opt_scale(t_bmean, momentum))
            t_new_var = opt_scale(tvariance, 1 - momentum)
            if t_bvar is not None:
                t_new_var = opt_add(t_new_var, t_bvar * (momentum * n / (n - 1)))
        else:
            if tx is not None:
                ty = tx * (g * rstd)
            if tmean is not None:
                ty = opt_add(ty, -(expand(tmean, x, axes) * (g * rstd)))
            if tvariance is not None:
                ty = opt_add(ty, expand(tvariance, x, axes) * (g * xhat * rstd * rstd) * -0.5)
            t_bmean = tmean
            t_bvar = tvariance
            t_new_mean = tmean
            t_new_var = tvariance
        if tscale is not None:
            ty = opt_add(ty, xhat * expand(tscale, x, axes))
        if tbias is not None:
            ty = opt_add(ty, expand(tbias, x, axes))
        if ty is not None:
            ty = broadcast_like(ty, y)
        return ty, t_bmean, t_bvar, t_new_mean, t_new_var
    return jvp
