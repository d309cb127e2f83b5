import pytest
import torch
from torch import nn

from rl_core.modules import GRU, LSTM, GRUCell, LSTMCell

N, T, IN, H, L = 3, 6, 4, 5, 2
D = torch.float64


def _sig(v):
    return 1.0 / (1.0 + torch.exp(-v))


def _ref_lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """The LSTM equations, one gate at a time (Hochreiter & Schmidhuber; torch's gate order)."""
    W_i, W_f, W_g, W_o = w_ih.split(H)
    U_i, U_f, U_g, U_o = w_hh.split(H)
    bi_i, bi_f, bi_g, bi_o = b_ih.split(H)
    bh_i, bh_f, bh_g, bh_o = b_hh.split(H)
    i = _sig(x @ W_i.T + bi_i + h @ U_i.T + bh_i)
    f = _sig(x @ W_f.T + bi_f + h @ U_f.T + bh_f)
    g = torch.tanh(x @ W_g.T + bi_g + h @ U_g.T + bh_g)
    o = _sig(x @ W_o.T + bi_o + h @ U_o.T + bh_o)
    c_new = f * c + i * g
    return o * torch.tanh(c_new), c_new


def _ref_gru_step(x, h, w_ih, w_hh, b_ih, b_hh):
    """The GRU equations (Cho et al.; torch's convention r * (U_n h + b_hn))."""
    W_r, W_z, W_n = w_ih.split(H)
    U_r, U_z, U_n = w_hh.split(H)
    bi_r, bi_z, bi_n = b_ih.split(H)
    bh_r, bh_z, bh_n = b_hh.split(H)
    r = _sig(x @ W_r.T + bi_r + h @ U_r.T + bh_r)
    z = _sig(x @ W_z.T + bi_z + h @ U_z.T + bh_z)
    n = torch.tanh(x @ W_n.T + bi_n + r * (h @ U_n.T + bh_n))
    return (1 - z) * n + z * h


def _ref_sequence(module, x, states, is_init=None):
    """Step by step, layer by layer; where is_init[:, t] every layer restarts from zero."""
    lstm = isinstance(module, nn.LSTM)
    states = [s.clone() for s in states]  # each [L, N, H]
    outputs = []
    for t in range(x.shape[1]):
        if is_init is not None:
            keep = (~is_init[:, t]).to(D).unsqueeze(-1)
            states = [s * keep for s in states]
        inp = x[:, t]
        new = [[], []]
        for k in range(module.num_layers):
            p = [
                getattr(module, f"{n}_l{k}")
                for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            ]
            if lstm:
                h, c = _ref_lstm_step(inp, states[0][k], states[1][k], *p)
                new[0].append(h)
                new[1].append(c)
            else:
                h = _ref_gru_step(inp, states[0][k], *p)
                new[0].append(h)
            inp = h
        states = [torch.stack(s) for s in new[: len(states)]]
        outputs.append(inp)
    return torch.stack(outputs, 1), states


def test_cells_match_the_equations_and_torch():
    torch.manual_seed(0)
    x, h, c = torch.randn(N, IN, dtype=D), torch.randn(N, H, dtype=D), torch.randn(N, H, dtype=D)
    cell = LSTMCell(IN, H, dtype=D)
    got_h, got_c = cell(x, (h, c))
    ref_h, ref_c = _ref_lstm_step(
        x, h, c, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh
    )
    torch.testing.assert_close(got_h, ref_h)
    torch.testing.assert_close(got_c, ref_c)
    torch_cell = nn.LSTMCell(IN, H, dtype=D)
    torch_cell.load_state_dict(cell.state_dict())
    torch.testing.assert_close(torch_cell(x, (h, c))[0], got_h)

    gcell = GRUCell(IN, H, dtype=D)
    ref = _ref_gru_step(x, h, gcell.weight_ih, gcell.weight_hh, gcell.bias_ih, gcell.bias_hh)
    torch.testing.assert_close(gcell(x, h), ref)
    torch_gcell = nn.GRUCell(IN, H, dtype=D)
    torch_gcell.load_state_dict(gcell.state_dict())
    torch.testing.assert_close(torch_gcell(x, h), ref)
    # missing state = zeros; unbatched input
    torch.testing.assert_close(gcell(x), gcell(x, torch.zeros(N, H, dtype=D)))
    assert gcell(x[0]).shape == (H,)
    assert [s.shape for s in cell(x[0])] == [(H,), (H,)]


@pytest.mark.parametrize("cls", [LSTM, GRU])
def test_sequence_modules_match_the_equations_values_and_gradients(cls):
    torch.manual_seed(0)
    module = cls(IN, H, num_layers=L, dtype=D)
    assert module.batch_first
    x = torch.randn(N, T, IN, dtype=D)
    states = [torch.randn(L, N, H, dtype=D) for _ in range(2 if cls is LSTM else 1)]
    y, last = module(x, tuple(states) if cls is LSTM else states[0])
    last = list(last) if cls is LSTM else [last]
    ref_y, ref_last = _ref_sequence(module, x, states)
    torch.testing.assert_close(y, ref_y)
    for got, ref in zip(last, ref_last):
        torch.testing.assert_close(got, ref)

    grads = torch.autograd.grad(
        y.sin().sum() + sum(s.sum() for s in last), list(module.parameters())
    )
    ref_grads = torch.autograd.grad(
        ref_y.sin().sum() + sum(s.sum() for s in ref_last), list(module.parameters())
    )
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r)

    # same parameters in torch.nn's fused module give the same values
    torch_module = (nn.LSTM if cls is LSTM else nn.GRU)(IN, H, L, batch_first=True, dtype=D)
    torch_module.load_state_dict(module.state_dict())
    torch.testing.assert_close(torch_module(x, tuple(states) if cls is LSTM else states[0])[0], y)


@pytest.mark.parametrize("cls", [LSTM, GRU])
def test_layouts_unbatched_and_default_state(cls):
    torch.manual_seed(0)
    module = cls(IN, H, num_layers=L, dtype=D)
    x = torch.randn(N, T, IN, dtype=D)
    y, _ = module(x)
    zeros = [torch.zeros(L, N, H, dtype=D)] * (2 if cls is LSTM else 1)
    torch.testing.assert_close(y, _ref_sequence(module, x, zeros)[0])
    time_first = cls(IN, H, num_layers=L, batch_first=False, dtype=D)
    time_first.load_state_dict(module.state_dict())
    torch.testing.assert_close(time_first(x.transpose(0, 1))[0].transpose(0, 1), y)
    y0, last0 = module(x[0])
    torch.testing.assert_close(y0, y[0])
    first_state = last0[0] if cls is LSTM else last0
    assert first_state.shape == (L, H)


def test_resets_inside_the_loop_match_the_equations():
    torch.manual_seed(0)
    module = LSTM(IN, H, num_layers=L, dtype=D)
    x = torch.randn(N, T, IN, dtype=D)
    states = [torch.randn(L, N, H, dtype=D) for _ in range(2)]
    is_init = torch.zeros(N, T, dtype=torch.bool)
    is_init[0, 0] = is_init[1, 3] = is_init[2, 2] = is_init[2, 5] = True
    y, every = module._run(x, states, is_init)
    ref_y, _ = _ref_sequence(module, x, states, is_init)
    torch.testing.assert_close(y, ref_y)
    assert every[0].shape == (N, T, L, H)
    torch.testing.assert_close(every[0][:, -1, -1], y[:, -1])


def test_vmap_over_parameters_free_inputs():
    torch.manual_seed(0)
    module = LSTM(IN, H)
    x = torch.randn(2, N, T, IN)
    y = torch.vmap(lambda v: module(v)[0])(x)
    torch.testing.assert_close(y, torch.stack([module(v)[0] for v in x]))


def test_errors():
    with pytest.raises(NotImplementedError, match="bidirectional"):
        LSTM(IN, H, bidirectional=True)
    with pytest.raises(NotImplementedError, match="proj_size"):
        LSTM(IN, H, proj_size=2)
    with pytest.raises(NotImplementedError, match="bidirectional"):
        GRU(IN, H, bidirectional=True)
    with pytest.raises(
        ValueError, match=r"LSTM.forward: expected an input of shape \[batch, time, 4\]"
    ):
        LSTM(IN, H)(torch.zeros(N, T, IN + 1))
    with pytest.raises(
        ValueError, match=r"GRU.forward: expected hidden states of shape \[1, 3, 5\]"
    ):
        GRU(IN, H)(torch.zeros(N, T, IN), torch.zeros(1, N + 1, H))
    with pytest.raises(
        ValueError, match=r"LSTMCell.forward: expected an input of shape \[batch, 4\]"
    ):
        LSTMCell(IN, H)(torch.zeros(N, T, IN))
