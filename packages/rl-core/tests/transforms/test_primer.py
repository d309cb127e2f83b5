"""TensorDictPrimer in rl-core, and the primers the recurrent modules build for themselves.

The oracle of the rollout tests is a float64 LSTM written from the gate equations, run step by
step on the rollout's observations and restarted at each ``is_init``.
"""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from rl_core import (
    Composite,
    InitTracker,
    TensorDictPrimer,
    TransformedEnv,
    Unbounded,
    check_env_specs,
)
from rl_core.modules import GRUModule, LSTMModule, get_primers_from_module
from rl_core.testing import CountingEnv


def _ref_lstm(module, x, is_init):
    """Float64 LSTM from its equations over ``x`` [B, T, F], zero state at each is_init."""
    lstm = module.lstm
    w_ih, w_hh = lstm.weight_ih_l0.double(), lstm.weight_hh_l0.double()
    b = (lstm.bias_ih_l0 + lstm.bias_hh_l0).double()
    batch, steps, _ = x.shape
    hidden = lstm.hidden_size
    h = torch.zeros(batch, hidden, dtype=torch.float64)
    c = torch.zeros(batch, hidden, dtype=torch.float64)
    hs, cs = [], []
    for t in range(steps):
        keep = (~is_init[:, t]).double().unsqueeze(-1)
        h, c = h * keep, c * keep
        gates = x[:, t].double() @ w_ih.T + h @ w_hh.T + b
        i, f, g, o = gates.chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        hs.append(h)
        cs.append(c)
    return torch.stack(hs, 1), torch.stack(cs, 1)


def _policy(lstm):
    return TensorDictSequential(
        TensorDictModule(nn.Linear(1, 3), in_keys=["observation"], out_keys=["embed"]),
        lstm,
        TensorDictModule(
            lambda f: torch.ones(*f.shape[:-1], 1, dtype=torch.int64),
            in_keys=["features"],
            out_keys=["action"],
        ),
    )


def test_make_tensordict_primer_carries_the_lstm_state_through_rollout():
    torch.manual_seed(0)
    lstm = LSTMModule(3, 5, in_key="embed", out_key="features")
    env = TransformedEnv(CountingEnv(max_count=3, batch_size=[2]), InitTracker())
    env.append_transform(lstm.make_tensordict_primer())
    check_env_specs(env)
    policy = _policy(lstm)
    with torch.no_grad():
        data = env.rollout(8, policy, break_when_any_done=False)
    is_init = data["is_init"].squeeze(-1)
    assert is_init[:, 0].all()
    assert is_init[:, 3].all()
    assert is_init[:, 6].all()
    h, c = _ref_lstm(lstm, data["embed"], is_init)
    torch.testing.assert_close(data["next", "recurrent_state_h"][..., 0, :], h.float())
    torch.testing.assert_close(data["next", "recurrent_state_c"][..., 0, :], c.float())
    torch.testing.assert_close(data["features"], h.float())
    # the state at each step's root is the previous step's next state, zeros after a reset
    expected_h = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
    expected_h[is_init] = 0
    torch.testing.assert_close(data["recurrent_state_h"][..., 0, :], expected_h.float())


def test_primer_specs_keys_and_dict_form():
    lstm = LSTMModule(3, 5, num_layers=2, in_key="x", out_key="y")
    primer = lstm.make_tensordict_primer()
    assert isinstance(primer, TensorDictPrimer)
    assert primer.out_keys == ["recurrent_state_h", "recurrent_state_c"]
    assert primer.primers["recurrent_state_h"].shape == (2, 5)
    gru = GRUModule(3, 4, in_keys=["x", ("memory", "h")], out_keys=["y", ("next", "memory", "h")])
    spec = gru.make_tensordict_primer().primers[("memory", "h")]
    assert spec.shape == (1, 4)
    assert spec.dtype == torch.float32
    out = TensorDictPrimer({"h": Unbounded(shape=(2,))})(TensorDict(batch_size=[3]))
    assert out["h"].shape == (3, 2)
    env = TransformedEnv(CountingEnv(batch_size=[4]), gru.make_tensordict_primer())
    assert env.reset()["memory", "h"].shape == (4, 1, 4)


def test_get_primers_from_module_merges_every_recurrent_module():
    policy = TensorDictSequential(
        LSTMModule(3, 8, in_key="obs", out_key="a"),
        GRUModule(8, 4, in_key="a", out_key="b"),
    )
    primer = get_primers_from_module(policy)
    assert sorted(primer.out_keys) == ["recurrent_state", "recurrent_state_c", "recurrent_state_h"]
    assert primer.primers["recurrent_state"].shape == (1, 4)
    with pytest.warns(UserWarning, match="no recurrent module in Linear"):
        assert get_primers_from_module(nn.Linear(2, 2)) is None
    clash = TensorDictSequential(
        GRUModule(3, 8, in_key="obs", out_key="a"), GRUModule(8, 4, in_key="a", out_key="b")
    )
    with pytest.raises(ValueError, match="two recurrent modules write the state 'recurrent_st"):
        get_primers_from_module(clash)


def test_errors():
    lstm = LSTMModule(
        3,
        5,
        in_keys=["x", "h", "c"],
        out_keys=["y", ("next", "h"), "c_out"],
    )
    with pytest.raises(RuntimeError, match=r"expected each output state key to be its input key"):
        lstm.make_tensordict_primer()
    with pytest.raises(TypeError, match="TensorDictPrimer: expected a dict of TensorSpec"):
        TensorDictPrimer({"h": torch.zeros(2)})
    with pytest.raises(TypeError, match="TensorDictPrimer: primers must be a Composite"):
        TensorDictPrimer([Unbounded(shape=(2,))])
    with pytest.raises(ValueError, match="give primers or keyword specs, not both"):
        TensorDictPrimer(Composite(h=Unbounded(shape=(2,))), c=Unbounded(shape=(2,)))


def test_primer_is_one_class_below_the_env_layer():
    # Recurrent modules build primers without importing rl_core.transforms (the layer above
    # envs, see .importlinter): the class is defined in rl_core._transform, and every public
    # path gives that same class.
    import rl_core._transform.primer as low
    import rl_core.transforms as transforms
    import rl_core.transforms.primer as public_module
    from rl_core.modules import recurrent

    assert transforms.TensorDictPrimer is low.TensorDictPrimer is TensorDictPrimer
    assert public_module.TensorDictPrimer is TensorDictPrimer
    assert recurrent.TensorDictPrimer is TensorDictPrimer
    primer = LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h")
    assert type(primer.make_tensordict_primer()) is TensorDictPrimer
