"""BurnInTransform against float64 recurrences written from the GRU and LSTM equations."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from rl_core import TransformedEnv
from rl_core.modules import GRUModule, LSTMModule
from rl_core.testing import CountingEnv
from rl_core.transforms import InitTracker
from rl_envs.transforms import BurnInTransform

B, T, F, H, BURN = 3, 7, 3, 4, 4


def _ref_gru(gru, x, h, is_init):
    """Float64 GRU from ``h`` over ``x`` [B, T, F]; zero state where is_init. Last state."""
    w_ih, w_hh = gru.weight_ih_l0.double(), gru.weight_hh_l0.double()
    b_ih, b_hh = gru.bias_ih_l0.double(), gru.bias_hh_l0.double()
    h = h.double()
    for t in range(x.shape[1]):
        h = h * (~is_init[:, t]).double().unsqueeze(-1)
        xr, xz, xn = (x[:, t].double() @ w_ih.T + b_ih).chunk(3, -1)
        hr, hz, hn = (h @ w_hh.T + b_hh).chunk(3, -1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
    return h


def _ref_lstm(lstm, x, h, c):
    """Float64 LSTM from ``(h, c)`` over ``x`` [B, T, F]; last ``(h, c)``."""
    w_ih, w_hh = lstm.weight_ih_l0.double(), lstm.weight_hh_l0.double()
    b = (lstm.bias_ih_l0 + lstm.bias_hh_l0).double()
    h, c = h.double(), c.double()
    for t in range(x.shape[1]):
        i, f, g, o = (x[:, t].double() @ w_ih.T + h @ w_hh.T + b).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
    return h, c


def _sample(with_state=True):
    torch.manual_seed(1)
    is_init = torch.zeros(B, T, 1, dtype=torch.bool)
    is_init[1, 2] = True  # row 1 starts a new episode inside the burn-in steps
    is_init[2, BURN] = True  # row 2 starts one right at the first kept step
    td = TensorDict(obs=torch.randn(B, T, F), is_init=is_init, batch_size=[B, T])
    if with_state:
        td["recurrent_state"] = torch.randn(B, T, 1, H)  # stale states from collection
    return td


def test_gru_burn_in_matches_the_equations():
    torch.manual_seed(0)
    gru = GRUModule(F, H, in_key="obs", out_key="features", recurrent_mode=True)
    td = _sample()
    before = td.clone()
    out = BurnInTransform([gru], burn_in=BURN)(td)
    assert out.batch_size == (B, T - BURN)
    expected = _ref_gru(
        gru.gru, td["obs"][:, :BURN], td["recurrent_state"][:, 0, 0], td["is_init"][:, :BURN, 0]
    )
    torch.testing.assert_close(out["recurrent_state"][:, 0, 0], expected.float())
    # the later steps and the other entries are the sample's own, and the input is untouched
    torch.testing.assert_close(
        out["recurrent_state"][:, 1:], before["recurrent_state"][:, BURN + 1 :]
    )
    torch.testing.assert_close(out["obs"], before["obs"][:, BURN:])
    assert (td == before).all()
    assert "features" not in out.keys()
    assert not out["recurrent_state"].requires_grad
    # the module on the kept steps now starts from the burnt-in state; row 2 restarts anyway
    features = gru(out.clone())["features"]
    assert features.shape == (B, T - BURN, H)


def test_lstm_in_a_sequence_without_stored_states():
    torch.manual_seed(0)
    embed = TensorDictModule(nn.Linear(F, 5), in_keys=["obs"], out_keys=["embed"])
    lstm = LSTMModule(5, H, in_key="embed", out_key="features", recurrent_mode=True)
    burn = BurnInTransform([TensorDictSequential(embed, lstm)], burn_in=BURN)
    assert burn.out_keys == ["recurrent_state_h", "recurrent_state_c"]
    td = _sample(with_state=False).exclude("is_init")
    out = burn(td)
    with torch.no_grad():
        x = embed.module(td["obs"][:, :BURN])
    zeros = torch.zeros(B, H)
    h, c = _ref_lstm(lstm.lstm, x, zeros, zeros)
    torch.testing.assert_close(out["recurrent_state_h"][:, 0, 0], h.float())
    torch.testing.assert_close(out["recurrent_state_c"][:, 0, 0], c.float())
    assert (out["recurrent_state_h"][:, 1:] == 0).all()
    # leading batch dims: [2, B, T] gives the same per sequence
    stacked = burn(torch.stack([td, td], 0))
    torch.testing.assert_close(stacked["recurrent_state_h"][1], out["recurrent_state_h"])


def test_errors():
    step_mode = GRUModule(F, H, in_key="obs", out_key="features")
    with pytest.raises(ValueError, match="holds a GRUModule in step mode"):
        BurnInTransform([step_mode], burn_in=2)
    seq = step_mode.set_recurrent_mode(True)
    with pytest.raises(ValueError, match="expected burn_in an int >= 1, got 0"):
        BurnInTransform([seq], burn_in=0)
    with pytest.raises(TypeError, match="expected TensorDict modules, got Linear"):
        BurnInTransform([nn.Linear(2, 2)], burn_in=2)
    plain = TensorDictModule(nn.Linear(F, 2), in_keys=["obs"], out_keys=["y"])
    with pytest.raises(ValueError, match=r"write no \('next', key\) entry"):
        BurnInTransform([plain], burn_in=2)
    burn = BurnInTransform([seq], burn_in=T)
    with pytest.raises(ValueError, match=r"more than burn_in=7 steps, got batch_size \[3, 7\]"):
        burn(_sample())
    env = TransformedEnv(CountingEnv(batch_size=[2]), InitTracker())
    env.append_transform(BurnInTransform([seq], burn_in=2))
    with pytest.raises(RuntimeError, match="BurnInTransform: it transforms replayed sequences"):
        env.reset()
