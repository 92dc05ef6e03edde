"""Recurrent layers: RNNCell, GRUCell, LSTMCell, RNN, GRU and LSTM.

Forward values are compared with a NumPy reference written from the
documented step equations and run over time with a Python loop; gradients
(inputs, initial states and every Parameter) with float64 central finite
differences of the layer run eagerly.
"""
import numpy as np
import pytest

import s2sad
from s2sad import nn, ops, Tensor, ParameterTuple
from s2sad import driver as G

from test_nn_layers import check_cell, to_float64, t64


# ------------------------------------------------------------------ NumPy reference
def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def np_step(mode, x, state, w_ih, w_hh, b_ih, b_hh):
    """One step of ``mode`` from the documented equations; biases may be None."""
    h = state[0] if mode == "LSTM" else state
    gi = x @ w_ih.T + (0 if b_ih is None else b_ih)
    gh = h @ w_hh.T + (0 if b_hh is None else b_hh)
    n = h.shape[-1]
    if mode == "RNN_TANH":
        return np.tanh(gi + gh)
    if mode == "RNN_RELU":
        return np.maximum(gi + gh, 0)
    if mode == "GRU":
        r = _sigmoid(gi[:, :n] + gh[:, :n])
        z = _sigmoid(gi[:, n:2 * n] + gh[:, n:2 * n])
        cand = np.tanh(gi[:, 2 * n:] + r * gh[:, 2 * n:])
        return (1 - z) * cand + z * h
    g = gi + gh
    i, f, c_hat, o = (_sigmoid(g[:, :n]), _sigmoid(g[:, n:2 * n]), np.tanh(g[:, 2 * n:3 * n]),
                      _sigmoid(g[:, 3 * n:]))
    c = f * state[1] + i * c_hat
    return o * np.tanh(c), c


def np_layer_params(net, k, suffix):
    get = lambda name: getattr(net, "%s_l%d%s" % (name, k, suffix), None)
    arrays = [get(n) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    return [None if a is None else a.asnumpy() for a in arrays]


def np_rnn(net, mode, x, hx=None, lengths=None):
    """Reference multi-layer (bi)directional run, [seq, batch, in] layout."""
    if net.batch_first:
        x = x.swapaxes(0, 1)
    seq, batch, _ = x.shape
    hidden, dirs = net.hidden_size, net.num_directions
    h_n, c_n = [], []
    inp = x
    for k in range(net.num_layers):
        outs = []
        for d in range(dirs):
            idx = k * dirs + d
            if hx is None:
                state = np.zeros((batch, hidden))
                state = (state, state) if mode == "LSTM" else state
            else:
                state = (hx[0][idx], hx[1][idx]) if mode == "LSTM" else hx[idx]
            params = np_layer_params(net, k, "_reverse" if d else "")
            out = np.zeros((seq, batch, hidden))
            for b in range(batch):
                n_valid = seq if lengths is None else lengths[b]
                st = tuple(s[b:b + 1] for s in state) if mode == "LSTM" else state[b:b + 1]
                order = range(n_valid - 1, -1, -1) if d else range(n_valid)
                for t in order:
                    st = np_step(mode, inp[t, b:b + 1], st, *params)
                    out[t, b] = st[0][0] if mode == "LSTM" else st[0]
                if mode == "LSTM":
                    h_n.append((idx, b, st[0][0]))
                    c_n.append((idx, b, st[1][0]))
                else:
                    h_n.append((idx, b, st[0]))
            outs.append(out)
        inp = np.concatenate(outs, axis=2)
    output = inp.swapaxes(0, 1) if net.batch_first else inp

    def assemble(items):
        arr = np.zeros((net.num_layers * dirs, batch, hidden))
        for idx, b, v in items:
            arr[idx, b] = v
        return arr
    if mode == "LSTM":
        return output, (assemble(h_n), assemble(c_n))
    return output, assemble(h_n)


MODES = [(nn.RNN, "RNN_TANH", {}), (nn.RNN, "RNN_RELU", {"nonlinearity": "relu"}),
         (nn.GRU, "GRU", {}), (nn.LSTM, "LSTM", {})]
IDS = ["rnn_tanh", "rnn_relu", "gru", "lstm"]


def _as_list(out):
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _as_list(o)]
    return [out.asnumpy() if isinstance(out, Tensor) else np.asarray(out)]


def _input(net, seq=4, batch=2, seed=0):
    shape = (batch, seq, net.input_size) if net.batch_first else (seq, batch, net.input_size)
    return t64(shape, seed)


# ------------------------------------------------------------------ cells
@pytest.mark.parametrize("cls,mode,kw", [(nn.RNNCell, "RNN_TANH", {}),
                                         (nn.RNNCell, "RNN_RELU", {"nonlinearity": "relu"}),
                                         (nn.GRUCell, "GRU", {}), (nn.LSTMCell, "LSTM", {})],
                         ids=IDS)
@pytest.mark.parametrize("has_bias", [True, False])
def test_cell_forward_shapes_and_gradients(cls, mode, kw, has_bias):
    cell = to_float64(cls(3, 4, has_bias=has_bias, **kw))
    gates = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}[mode]
    assert cell.weight_ih.shape == (gates * 4, 3) and cell.weight_hh.shape == (gates * 4, 4)
    assert len(cell.trainable_params()) == (4 if has_bias else 2)
    x = t64((2, 3), 1)
    hx = (t64((2, 4), 2), t64((2, 4), 3)) if mode == "LSTM" else t64((2, 4), 2)
    params = [cell.weight_ih.asnumpy(), cell.weight_hh.asnumpy(),
              cell.bias_ih.asnumpy() if has_bias else None,
              cell.bias_hh.asnumpy() if has_bias else None]
    np_hx = tuple(h.asnumpy() for h in hx) if mode == "LSTM" else hx.asnumpy()
    expected = np_step(mode, x.asnumpy(), np_hx, *params)
    got = cell(x, hx)
    for g, e in zip(_as_list(got), _as_list(expected)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    if mode == "LSTM":
        check_cell(_LSTMCellFlat(cell), x, hx[0], hx[1])
    else:
        check_cell(cell, x, hx)


class _LSTMCellFlat(nn.Cell):
    """An LSTMCell taking ``h`` and ``c`` as separate inputs, so each gets a gradient."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def construct(self, x, h, c):
        return self.cell(x, (h, c))


def test_cell_without_hx_starts_from_zeros():
    cell = to_float64(nn.GRUCell(3, 4))
    x = t64((2, 3), 1)
    np.testing.assert_allclose(cell(x).asnumpy(), cell(x, Tensor(np.zeros((2, 4)))).asnumpy())


# ------------------------------------------------------------------ sequences
@pytest.mark.parametrize("cls,mode,kw", MODES, ids=IDS)
@pytest.mark.parametrize("num_layers,bidirectional,batch_first",
                         [(1, False, False), (2, False, True), (1, True, False),
                          (2, True, True)])
def test_sequence_forward_matches_numpy(cls, mode, kw, num_layers, bidirectional, batch_first):
    net = to_float64(cls(3, 4, num_layers=num_layers, bidirectional=bidirectional,
                         batch_first=batch_first, **kw))
    dirs = 2 if bidirectional else 1
    x = _input(net, seq=5, batch=2)
    shape = (num_layers * dirs, 2, 4)
    hx = (t64(shape, 5), t64(shape, 6)) if mode == "LSTM" else t64(shape, 5)
    out, state = net(x, hx)
    np_hx = tuple(h.asnumpy() for h in hx) if mode == "LSTM" else hx.asnumpy()
    exp_out, exp_state = np_rnn(net, mode, x.asnumpy(), np_hx)
    assert out.shape == ((2, 5, 4 * dirs) if batch_first else (5, 2, 4 * dirs))
    np.testing.assert_allclose(out.asnumpy(), exp_out, rtol=1e-12, atol=1e-12)
    for g, e in zip(_as_list(state), _as_list(exp_state)):
        assert g.shape == shape
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_parameter_names_and_shapes_follow_mindspore():
    net = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    names = dict((n, p.shape) for n, p in net.parameters_and_names())
    assert names["weight_ih_l0"] == (16, 3) and names["weight_hh_l0"] == (16, 4)
    assert names["weight_ih_l1_reverse"] == (16, 8) and names["bias_hh_l1_reverse"] == (16,)
    assert len(names) == 16
    assert len(nn.GRU(3, 4, has_bias=False).trainable_params()) == 2


class _Flat(nn.Cell):
    """A recurrent layer whose initial states are separate inputs and whose outputs are flat."""

    def __init__(self, net, lstm):
        super().__init__()
        self.net = net
        self.lstm = lstm

    def construct(self, x, h, c):
        if self.lstm:
            out, (h_n, c_n) = self.net(x, (h, c))
            return out, h_n, c_n
        out, h_n = self.net(x, h)
        return out, h_n


@pytest.mark.parametrize("cls,mode,kw", MODES, ids=IDS)
@pytest.mark.parametrize("num_layers,bidirectional,batch_first",
                         [(1, False, False), (2, True, True)])
def test_sequence_gradients_match_finite_differences(cls, mode, kw, num_layers, bidirectional,
                                                     batch_first):
    net = to_float64(cls(2, 3, num_layers=num_layers, bidirectional=bidirectional,
                         batch_first=batch_first, **kw))
    dirs = 2 if bidirectional else 1
    x = _input(net, seq=3, batch=2)
    shape = (num_layers * dirs, 2, 3)
    check_cell(_Flat(net, mode == "LSTM"), x, t64(shape, 7), t64(shape, 8), rtol=1e-5,
               atol=1e-7)


def test_gradient_with_s2sad_grad_and_no_hx():
    net = to_float64(nn.GRU(2, 3, bidirectional=True))
    x = t64((4, 2, 2), 3)

    def loss(x):
        out, h_n = net(x)
        return (out * out).sum() + h_n.sum()

    got = s2sad.grad(loss)(x)
    from gradcheck import numeric_grad
    expected = numeric_grad(lambda a: loss(a).asnumpy(), [x], 0)
    np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("cls,mode,kw", [MODES[0], MODES[3]], ids=["rnn_tanh", "lstm"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_seq_length_masks_padding(cls, mode, kw, bidirectional):
    net = to_float64(cls(2, 3, bidirectional=bidirectional, **kw))
    x = t64((5, 3, 2), 4)
    lengths = np.array([5, 2, 3], dtype=np.int32)
    out, state = net(x, None, Tensor(lengths))
    exp_out, exp_state = np_rnn(net, mode, x.asnumpy(), None, lengths)
    np.testing.assert_allclose(out.asnumpy(), exp_out, rtol=1e-12, atol=1e-12)
    for g, e in zip(_as_list(state), _as_list(exp_state)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)

    class Loss(nn.Cell):
        def __init__(self):
            super().__init__()
            self.net = net

        def construct(self, x, seq_length):
            out, _ = self.net(x, None, seq_length)
            return out

    check_cell(Loss(), x, Tensor(lengths), rtol=1e-5, atol=1e-7)


def test_dropout_between_layers_only_in_training():
    net = to_float64(nn.LSTM(2, 3, num_layers=2, dropout=0.5))
    x = t64((4, 2, 2), 1)
    ref = to_float64(nn.LSTM(2, 3, num_layers=2))
    for name, p in ref.parameters_and_names():
        p.set_data(getattr(net, name)._data.copy())
    np.testing.assert_allclose(net(x)[0].asnumpy(), ref(x)[0].asnumpy())
    net.set_train(True)
    assert not np.allclose(net(x)[0].asnumpy(), ref(x)[0].asnumpy())
    check_cell(net, x, rtol=1e-5, atol=1e-7, dropout_seed=3)


def test_one_compile_serves_two_sequence_lengths(monkeypatch):
    net = to_float64(nn.LSTM(2, 3, bidirectional=True))
    grad = ops.GradOperation(get_by_list=True)(net, ParameterTuple(net.trainable_params()))
    grad(t64((3, 2, 2), 1))
    calls = []
    real = G.compile_grad

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(G, "compile_grad", counted)
    grads = grad(t64((7, 2, 2), 2))
    assert not calls
    assert grads[0].shape == net.weight_ih_l0.shape
    assert "for i in range(" in s2sad.get_source(grad)


@pytest.mark.parametrize("cls,mode,kw", MODES, ids=IDS)
def test_time_loop_transposes_nothing_and_reads_no_shapes(cls, mode, kw):
    """Both weights are transposed once before the time loop (so the backward
    loop sums their gradients after it) and the gate slices are constants:
    each step is its two products and the elementwise work.  Values and
    gradients are checked against the step equations and finite differences
    above."""
    net = to_float64(cls(2, 3, **kw))
    grad = ops.GradOperation(get_by_list=True)(net, ParameterTuple(net.trainable_params()))
    grad(_input(net))
    lines = s2sad.get_source(grad).splitlines()
    loops = [k for k, line in enumerate(lines) if line.strip().startswith("for i in ")]
    assert len(loops) == 2          # the forward loop and the backward one
    for start in loops:
        depth = len(lines[start]) - len(lines[start].lstrip())
        body = []
        for line in lines[start + 1:]:
            if len(line) - len(line.lstrip()) <= depth:
                break
            body.append(line)
        assert not any(".T" in line or "xp.shape" in line or "make_slice" in line
                       for line in body), body
    forward = lines[loops[0]:loops[1]]
    assert sum(" @ " in line for line in forward) == 2


@pytest.mark.parametrize("bad", [{"dropout": 1.0}, {"num_layers": 0}, {"hidden_size": -1}])
def test_bad_arguments_name_themselves(bad):
    kw = dict(input_size=2, hidden_size=3)
    kw.update(bad)
    with pytest.raises(ValueError, match=list(bad)[0]):
        nn.GRU(**kw)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(2, 3, nonlinearity="sigmoid")
