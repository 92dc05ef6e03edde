"""BatchNorm1d, BatchNorm2d, LayerNorm and GroupNorm.

Batch normalisation in training mode normalises with the batch's statistics
and moves the running statistics ``moving_mean`` / ``moving_variance``
(Parameters with ``requires_grad=False``) towards them:
``moving = momentum * moving + (1 - momentum) * batch`` (unbiased batch
variance).  In evaluation mode it normalises with the running statistics.

Compiled code has no side effects, so the running statistics are updated by
*eager* calls of the layer (``net(x)``) in training mode -- once per step in
``TrainOneStepCell``, which runs the network eagerly before differentiating it.
The gradient itself (the layer's ``construct``, inlined into the adjoint) reads
the running statistics but never writes them.
"""
from ... import ops
from ... import dtype as mstype
from ...common.initializer import initializer
from ...tensor import Parameter, Tensor
from ..cell import Cell

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm"]


class _BatchNorm(Cell):
    _expected_rank = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init="ones",
                 beta_init="zeros", moving_mean_init="zeros", moving_var_init="ones",
                 use_batch_statistics=None, data_format="NCHW", dtype=mstype.float32):
        super().__init__()
        if isinstance(num_features, bool) or not isinstance(num_features, int) \
                or num_features < 1:
            raise ValueError("For '%s', 'num_features' must be a positive int, but got %r"
                             % (type(self).__name__, num_features))
        if not 0.0 <= momentum <= 1.0:
            raise ValueError("For '%s', 'momentum' must be in [0, 1], but got %r"
                             % (type(self).__name__, momentum))
        if use_batch_statistics not in (None, True, False):
            raise ValueError("For '%s', 'use_batch_statistics' must be None, True or False"
                             % type(self).__name__)
        self.num_features = num_features
        self.eps = float(eps)
        self.momentum = float(momentum)
        self.affine = bool(affine)
        self.use_batch_statistics = use_batch_statistics
        self.gamma = Parameter(initializer(gamma_init, [num_features], dtype), name="gamma",
                               requires_grad=self.affine)
        self.beta = Parameter(initializer(beta_init, [num_features], dtype), name="beta",
                              requires_grad=self.affine)
        self.moving_mean = Parameter(initializer(moving_mean_init, [num_features], dtype),
                                     requires_grad=False)
        self.moving_variance = Parameter(initializer(moving_var_init, [num_features], dtype),
                                         requires_grad=False)
        # the primitive's momentum weighs the batch statistic
        self.bn_train = ops.BatchNorm(is_training=True, epsilon=self.eps,
                                      momentum=1.0 - self.momentum, data_format=data_format)
        self.bn_infer = ops.BatchNorm(is_training=False, epsilon=self.eps,
                                      data_format=data_format)

    def _use_batch_statistics(self):
        if self.use_batch_statistics is None:
            return self.training
        return self.use_batch_statistics

    def construct(self, x):
        if self.use_batch_statistics is None:
            if self.training:
                y, _, _, _, _ = self.bn_train(x, self.gamma, self.beta, self.moving_mean,
                                              self.moving_variance)
                return y
            y, _, _, _, _ = self.bn_infer(x, self.gamma, self.beta, self.moving_mean,
                                          self.moving_variance)
            return y
        if self.use_batch_statistics:
            y, _, _, _, _ = self.bn_train(x, self.gamma, self.beta, self.moving_mean,
                                          self.moving_variance)
            return y
        y, _, _, _, _ = self.bn_infer(x, self.gamma, self.beta, self.moving_mean,
                                      self.moving_variance)
        return y

    def __call__(self, x):
        """Eager call: ``construct``, plus the running-statistics update in training."""
        if not self._use_batch_statistics():
            return self.construct(x)
        y, _, _, new_mean, new_variance = self.bn_train(
            x, self.gamma, self.beta, self.moving_mean, self.moving_variance)
        for param, value in ((self.moving_mean, new_mean), (self.moving_variance, new_variance)):
            # written in place, cast to the Parameter's dtype: NumPy's or PyTorch's data
            param._data[...] = value._data if isinstance(value, Tensor) else value
        return y

    def extend_repr(self):
        return "num_features={}, eps={}, momentum={}, gamma={}, beta={}, moving_mean={}, " \
               "moving_variance={}".format(self.num_features, self.eps, self.momentum,
                                           self.gamma, self.beta, self.moving_mean,
                                           self.moving_variance)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``x`` [N, C] (or [N, C, L]) over all axes but the channel axis 1."""


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``x`` [N, C, H, W] over N, H and W, per channel."""


class LayerNorm(Cell):
    """Normalise over the axes from ``begin_norm_axis`` on, then ``* gamma + beta``.

    ``gamma`` and ``beta`` have shape ``normalized_shape``, which must equal
    ``x.shape[begin_params_axis:]``.
    """

    def __init__(self, normalized_shape, begin_norm_axis=-1, begin_params_axis=-1,
                 gamma_init="ones", beta_init="zeros", epsilon=1e-7, dtype=mstype.float32):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        if not isinstance(normalized_shape, (tuple, list)):
            raise TypeError("For 'LayerNorm', 'normalized_shape' must be a tuple or list of "
                            "ints, but got %s" % type(normalized_shape).__name__)
        self.normalized_shape = tuple(normalized_shape)
        self.begin_norm_axis = begin_norm_axis
        self.begin_params_axis = begin_params_axis
        self.epsilon = epsilon
        self.gamma = Parameter(initializer(gamma_init, self.normalized_shape, dtype),
                               name="gamma")
        self.beta = Parameter(initializer(beta_init, self.normalized_shape, dtype), name="beta")
        self.layer_norm = ops.LayerNorm(begin_norm_axis=begin_norm_axis,
                                        begin_params_axis=begin_params_axis, epsilon=epsilon)

    def construct(self, input_x):
        y, _, _ = self.layer_norm(input_x, self.gamma, self.beta)
        return y

    def extend_repr(self):
        return "normalized_shape={}, begin_norm_axis={}, begin_params_axis={}".format(
            self.normalized_shape, self.begin_norm_axis, self.begin_params_axis)


class GroupNorm(Cell):
    """Normalise ``x`` [N, C, *] over each group of ``C / num_groups`` channels (and all of
    ``*``), then ``* gamma + beta`` per channel.

    The variance is the biased one (divided by the count), as in MindSpore;
    ``affine=False`` freezes ``gamma`` (ones) and ``beta`` (zeros).  The
    statistics come from each sample alone, so training and evaluation agree.
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, gamma_init="ones",
                 beta_init="zeros", dtype=mstype.float32):
        super().__init__()
        for name, value in (("num_groups", num_groups), ("num_channels", num_channels)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError("For 'GroupNorm', '%s' must be a positive int, but got %r"
                                 % (name, value))
        if num_channels % num_groups:
            raise ValueError("For 'GroupNorm', the 'num_channels' must be divided by "
                             "'num_groups', but got 'num_channels': %d, 'num_groups': %d"
                             % (num_channels, num_groups))
        if not eps > 0:
            raise ValueError("For 'GroupNorm', 'eps' must be positive, but got %r" % (eps,))
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = float(eps)
        self.affine = bool(affine)
        self.gamma = Parameter(initializer(gamma_init, [num_channels], dtype), name="gamma",
                               requires_grad=self.affine)
        self.beta = Parameter(initializer(beta_init, [num_channels], dtype), name="beta",
                              requires_grad=self.affine)

    def construct(self, x):
        shape = ops.shape(x)
        n = shape[0]
        grouped = ops.reshape(x, (n, self.num_groups, -1))
        centred = grouped - ops.mean(grouped, 2, True)
        variance = ops.mean(ops.square(centred), 2, True)
        normed = ops.reshape(centred / ops.sqrt(variance + self.eps), (n, self.num_channels, -1))
        out = normed * ops.expand_dims(self.gamma, 1) + ops.expand_dims(self.beta, 1)
        return ops.reshape(out, shape)

    def extend_repr(self):
        return "num_groups={}, num_channels={}, eps={}, affine={}".format(
            self.num_groups, self.num_channels, self.eps, self.affine)
