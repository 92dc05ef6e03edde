"""Recurrent layers: RNNCell, GRUCell, LSTMCell and the multi-step RNN, GRU and LSTM.

Each step is a few matrix products and elementwise functions; the layers run
the time loop as a Python ``for`` over ``range(seq_len)`` with ``seq_len`` read
from ``x.shape``, so one compiled gradient serves every sequence length and the
backward sweep is a loop too (see ``docs/control-flow.md``).  Gate order and
Parameter names and shapes follow MindSpore 2.x: ``weight_ih`` is
``[gates * hidden_size, input_size]`` with the gates stacked along its rows
(LSTM: input, forget, cell, output; GRU: reset, update, new).
"""
import math

from ... import ops
from ... import dtype as mstype
from ...common.initializer import initializer, Uniform
from ...tensor import Parameter
from ..cell import Cell
from .basic import Dropout, _check_positive_int

__all__ = ["RNNCell", "GRUCell", "LSTMCell", "RNN", "GRU", "LSTM"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}


def _uniform_param(shape, hidden_size, dtype, name):
    """A Parameter drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), MindSpore's default."""
    scale = 1.0 / math.sqrt(hidden_size)
    return Parameter(initializer(Uniform(scale), shape, dtype), name=name)


def _linear(x, w, b):
    """``x @ w.T (+ b)``; ``b`` is None for layers built with ``has_bias=False``."""
    return _affine(x, w.T, b)


def _affine(x, w_t, b):
    """``x @ w_t (+ b)`` for a weight already transposed (once, before a time loop)."""
    y = ops.matmul(x, w_t)
    if b is not None:
        y = y + b
    return y


# Each step takes the input's part of its pre-activations, ``x_t @ W_ih.T + b_ih``,
# and ``W_hh`` transposed: the time loop transposes both weights once before it,
# so the backward loop sums their gradients as products of stacked rows after
# it; where both biases are only added (Elman, LSTM), ``b_hh`` joins ``b_ih``
# once, so one bias gradient is summed.  (The input parts of all steps as one
# product before the loop were slower on an LSTM of 50 steps, batch 16, and
# kept a [seq, batch, gates] array and its adjoint alive: more memory.)
def _rnn_tanh_step(xw, h, w_hh_t, b_hh, size):
    return ops.tanh(xw + _affine(h, w_hh_t, b_hh))


def _rnn_relu_step(xw, h, w_hh_t, b_hh, size):
    return ops.relu(xw + _affine(h, w_hh_t, b_hh))


def _gru_step(gi, h, w_hh_t, b_hh, size):
    """h' = (1 - z) * n + z * h with n = tanh(i_n + r * h_n) (the reset gate acts after W_hn)."""
    gh = _affine(h, w_hh_t, b_hh)
    r_z = ops.sigmoid(gi[:, :2 * size] + gh[:, :2 * size])     # adjacent gates: one call
    r = r_z[:, :size]
    z = r_z[:, size:]
    n = ops.tanh(gi[:, 2 * size:] + r * gh[:, 2 * size:])
    return n + z * (h - n)


def _lstm_step(xw, state, w_hh_t, b_hh, size):
    """(h, c) -> (h', c'): c' = f * c + i * g, h' = o * tanh(c')."""
    h, c = state
    gates = xw + _affine(h, w_hh_t, b_hh)
    # the input and forget gates are adjacent: one sigmoid call (and one range check) for both
    i_f = ops.sigmoid(gates[:, :2 * size])
    i = i_f[:, :size]
    f = i_f[:, size:]
    g = ops.tanh(gates[:, 2 * size:3 * size])
    o = ops.sigmoid(gates[:, 3 * size:])
    c = f * c + i * g
    return ops.tanh(c) * o, c


_STEPS = {"RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step, "GRU": _gru_step,
          "LSTM": _lstm_step}
# the modes whose b_hh is only added, so it joins b_ih in the input's part
_FOLDED_BIAS = ("RNN_TANH", "RNN_RELU", "LSTM")


def _split_biases(folded, b_ih, b_hh):
    """(bias of the input's part, bias left to each step); ``folded``: the mode's
    ``b_hh`` joins the input's part."""
    if b_ih is not None and folded:
        return b_ih + b_hh, None
    return b_ih, b_hh


def _rnn_mode(nonlinearity, who):
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError("For '%s', 'nonlinearity' must be 'tanh' or 'relu', but got %r"
                         % (who, nonlinearity))
    return "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


# ------------------------------------------------------------------ one step
class _CellBase(Cell):
    """One recurrent step with Parameters ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    def __init__(self, mode, input_size, hidden_size, has_bias, dtype, who):
        super().__init__()
        self.input_size = _check_positive_int(input_size, "input_size", who)
        self.hidden_size = _check_positive_int(hidden_size, "hidden_size", who)
        self.has_bias = bool(has_bias)
        self.mode = mode
        gate_size = _GATES[mode] * hidden_size
        self.weight_ih = _uniform_param([gate_size, input_size], hidden_size, dtype, "weight_ih")
        self.weight_hh = _uniform_param([gate_size, hidden_size], hidden_size, dtype,
                                        "weight_hh")
        if self.has_bias:
            self.bias_ih = _uniform_param([gate_size], hidden_size, dtype, "bias_ih")
            self.bias_hh = _uniform_param([gate_size], hidden_size, dtype, "bias_hh")
        else:
            self.bias_ih = None
            self.bias_hh = None
        self.step = _STEPS[mode]
        self.folded_bias = mode in _FOLDED_BIAS
        self.cast_like = ops.CastLike()

    def _step(self, x, hx):
        """One step from ``x`` [batch, input_size] and the state ``hx``."""
        b_in, b_rec = _split_biases(self.folded_bias, self.bias_ih, self.bias_hh)
        return self.step(_linear(x, self.weight_ih, b_in), hx, self.weight_hh.T, b_rec,
                         self.hidden_size)

    def _zeros(self, x):
        """The zero state [batch, hidden_size] in ``x``'s dtype."""
        return self.cast_like(ops.zeros((x.shape[0], self.hidden_size)), x)

    def extend_repr(self):
        return "input_size={}, hidden_size={}, has_bias={}".format(
            self.input_size, self.hidden_size, self.has_bias)


class RNNCell(_CellBase):
    """Elman step ``h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)``, ``act`` tanh or relu.

    ``x`` [batch, input_size], ``hx`` [batch, hidden_size] (zeros when
    omitted) -> ``h'`` [batch, hidden_size].
    """

    def __init__(self, input_size, hidden_size, has_bias=True, nonlinearity="tanh",
                 dtype=mstype.float32):
        super().__init__(_rnn_mode(nonlinearity, "RNNCell"), input_size, hidden_size, has_bias,
                         dtype, "RNNCell")
        self.nonlinearity = nonlinearity

    def construct(self, x, hx=None):
        if hx is None:
            hx = self._zeros(x)
        return self._step(x, hx)


class GRUCell(_CellBase):
    """One GRU step: ``x`` [batch, input_size], ``hx`` [batch, hidden_size] -> ``h'``."""

    def __init__(self, input_size, hidden_size, has_bias=True, dtype=mstype.float32):
        super().__init__("GRU", input_size, hidden_size, has_bias, dtype, "GRUCell")

    def construct(self, x, hx=None):
        if hx is None:
            hx = self._zeros(x)
        return self._step(x, hx)


class LSTMCell(_CellBase):
    """One LSTM step: ``x`` [batch, input_size], ``hx = (h, c)`` -> ``(h', c')``."""

    def __init__(self, input_size, hidden_size, has_bias=True, dtype=mstype.float32):
        super().__init__("LSTM", input_size, hidden_size, has_bias, dtype, "LSTMCell")

    def construct(self, x, hx=None):
        if hx is None:
            zeros = self._zeros(x)
            hx = (zeros, zeros)
        return self._step(x, hx)


# ------------------------------------------------------------ whole sequences
class _RNNBase(Cell):
    """``num_layers`` stacked recurrent layers, each run over the sequence in one or two
    directions.

    Parameters are attributes named as in MindSpore, ``weight_ih_l{k}``,
    ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``, with the suffix
    ``_reverse`` for the backward direction; ``self.weights`` holds them per
    layer and direction for ``construct``, which unrolls the (few) layers and
    directions while compiling and keeps the time loop a loop.
    """

    def __init__(self, mode, input_size, hidden_size, num_layers, has_bias, batch_first,
                 dropout, bidirectional, dtype, who):
        super().__init__()
        self.input_size = _check_positive_int(input_size, "input_size", who)
        self.hidden_size = _check_positive_int(hidden_size, "hidden_size", who)
        self.num_layers = _check_positive_int(num_layers, "num_layers", who)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
                or not 0.0 <= dropout < 1.0:
            raise ValueError("For '%s', 'dropout' must be a float in [0.0, 1.0), but got %r"
                             % (who, dropout))
        self.has_bias = bool(has_bias)
        self.batch_first = bool(batch_first)
        self.bidirectional = bool(bidirectional)
        self.dropout = float(dropout)
        self.num_directions = 2 if self.bidirectional else 1
        self.mode = mode
        self.step = _STEPS[mode]
        self.folded_bias = mode in _FOLDED_BIAS
        self.is_lstm = mode == "LSTM"
        self.weights = tuple(self._make_layer(k, dtype) for k in range(num_layers))
        self.dropout_layer = Dropout(p=self.dropout) if self.dropout > 0 else None
        self.cast_like = ops.CastLike()

    def _make_layer(self, k, dtype):
        """Per direction, ``(weight_ih, weight_hh, bias_ih, bias_hh)`` of layer ``k``,
        registered as attributes under MindSpore's names."""
        gate_size = _GATES[self.mode] * self.hidden_size
        in_size = self.input_size if k == 0 else self.hidden_size * self.num_directions
        directions = []
        for suffix in ("", "_reverse")[:self.num_directions]:
            shapes = [("weight_ih", [gate_size, in_size]),
                      ("weight_hh", [gate_size, self.hidden_size])]
            if self.has_bias:
                shapes += [("bias_ih", [gate_size]), ("bias_hh", [gate_size])]
            params = []
            for base, shape in shapes:
                name = "%s_l%d%s" % (base, k, suffix)
                param = _uniform_param(shape, self.hidden_size, dtype, name)
                setattr(self, name, param)
                params.append(param)
            if not self.has_bias:
                params += [None, None]
            directions.append(tuple(params))
        return tuple(directions)

    def _scan(self, x, state, weights, reverse, seq_length):
        """Run one direction of one layer over ``x`` [seq, batch, in]: (outputs, final state).

        With ``seq_length`` (lengths [batch]), steps at ``t >= seq_length[b]``
        keep sample ``b``'s state and output zeros: the forward direction's
        final state is the one at its last valid step, and the backward
        direction starts at that step from the initial state.
        """
        seq_len = x.shape[0]
        out = self.cast_like(ops.zeros((seq_len, x.shape[1], self.hidden_size)), x)
        w_ih, w_hh, b_ih, b_hh = weights
        b_in, b_rec = _split_biases(self.folded_bias, b_ih, b_hh)
        w_ih_t, w_hh_t = w_ih.T, w_hh.T
        for i in range(seq_len):
            if reverse:
                t = seq_len - 1 - i
            else:
                t = i
            new = self.step(_affine(x[t], w_ih_t, b_in), state, w_hh_t, b_rec, self.hidden_size)
            if seq_length is not None:
                valid = ops.expand_dims(self.cast_like(seq_length > t, x), 1)
                new = self._masked(valid, new, state)
            state = new
            if self.is_lstm:
                h = state[0]
            else:
                h = state
            if seq_length is not None:
                h = h * valid
            out[t] = h
        return out, state

    def _masked(self, valid, new, old):
        """``new`` where ``valid`` is 1, ``old`` where it is 0 (each part of an LSTM state)."""
        if self.is_lstm:
            return (valid * new[0] + (1 - valid) * old[0], valid * new[1] + (1 - valid) * old[1])
        return valid * new + (1 - valid) * old

    def _initial(self, x, hx, index):
        """The initial state of direction-layer ``index``, zeros when ``hx`` is None."""
        if hx is None:
            zeros = self.cast_like(ops.zeros((x.shape[1], self.hidden_size)), x)
            if self.is_lstm:
                return zeros, zeros
            return zeros
        if self.is_lstm:
            return hx[0][index], hx[1][index]
        return hx[index]

    def construct(self, x, hx=None, seq_length=None):
        if self.batch_first:
            x = ops.swapaxes(x, 0, 1)
        h_n = ()
        c_n = ()
        layer_input = x
        for k, layer in enumerate(self.weights):
            if k > 0 and self.dropout_layer is not None:
                layer_input = self.dropout_layer(layer_input)
            outputs = ()
            for d, weights in enumerate(layer):
                state = self._initial(x, hx, k * self.num_directions + d)
                out, state = self._scan(layer_input, state, weights, d == 1, seq_length)
                outputs = outputs + (out,)
                if self.is_lstm:
                    h_n = h_n + (state[0],)
                    c_n = c_n + (state[1],)
                else:
                    h_n = h_n + (state,)
            if self.bidirectional:
                layer_input = ops.concat(outputs, 2)
            else:
                layer_input = outputs[0]
        output = layer_input
        if self.batch_first:
            output = ops.swapaxes(output, 0, 1)
        if self.is_lstm:
            return output, (ops.stack(h_n, 0), ops.stack(c_n, 0))
        return output, ops.stack(h_n, 0)

    def extend_repr(self):
        return ("input_size={}, hidden_size={}, num_layers={}, has_bias={}, batch_first={}, "
                "dropout={}, bidirectional={}".format(
                    self.input_size, self.hidden_size, self.num_layers, self.has_bias,
                    self.batch_first, self.dropout, self.bidirectional))


class RNN(_RNNBase):
    """Multi-layer Elman RNN.  ``x`` [seq, batch, input_size] ([batch, seq, ...] with
    ``batch_first``), ``hx`` [num_directions * num_layers, batch, hidden_size]
    (zeros when omitted) -> ``(output, h_n)``, ``output`` [seq, batch,
    num_directions * hidden_size]."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh",
                 has_bias=True, batch_first=False, dropout=0.0, bidirectional=False,
                 dtype=mstype.float32):
        super().__init__(_rnn_mode(nonlinearity, "RNN"), input_size, hidden_size, num_layers,
                         has_bias, batch_first, dropout, bidirectional, dtype, "RNN")
        self.nonlinearity = nonlinearity


class GRU(_RNNBase):
    """Multi-layer GRU; inputs and outputs as ``RNN``'s."""

    def __init__(self, input_size, hidden_size, num_layers=1, has_bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=mstype.float32):
        super().__init__("GRU", input_size, hidden_size, num_layers, has_bias, batch_first,
                         dropout, bidirectional, dtype, "GRU")


class LSTM(_RNNBase):
    """Multi-layer LSTM; ``hx`` is ``(h_0, c_0)`` and the result ``(output, (h_n, c_n))``."""

    def __init__(self, input_size, hidden_size, num_layers=1, has_bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=mstype.float32):
        super().__init__("LSTM", input_size, hidden_size, num_layers, has_bias, batch_first,
                         dropout, bidirectional, dtype, "LSTM")
