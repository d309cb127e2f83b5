"""Oracle tests of the losses' fast paths against the generic paths they shortcut."""

import sys
from pathlib import Path

import torch
from tensordict.nn import TensorDictModule

sys.path.insert(0, str(Path(__file__).parent))
from _nets import N_ACT, OBS, offpolicy_batch

from rl_core.modules import MLP, QValueActor, ValueOperator
from rl_objectives import DQNLoss
from rl_objectives.losses import _common as C
from rl_objectives.value import TD0Estimator


class Shifted(TensorDictModule):
    """A subclass with its own forward: the fast path must not apply to it."""

    def forward(self, tensordict, *args, **kwargs):
        out = super().forward(tensordict, *args, **kwargs)
        out["state_value"] = out["state_value"] + 1
        return out


def test_read_output_matches_module_call():
    torch.manual_seed(0)
    td = offpolicy_batch()
    for module in (
        ValueOperator(MLP(OBS, 1, depth=1, num_cells=8), ["observation"]),
        TensorDictModule(MLP(OBS, 1, depth=1, num_cells=8), ["observation"], ["state_value"]),
        Shifted(MLP(OBS, 1, depth=1, num_cells=8), ["observation"], ["state_value"]),
    ):
        expected = module(td.copy())["state_value"]
        torch.testing.assert_close(C.read_output(module, td, "state_value"), expected)


def test_td0_bootstrap_fast_path_matches_estimator():
    td = offpolicy_batch()
    next_value = torch.randn(8, 1)
    loss = DQNLoss(QValueActor(MLP(OBS, N_ACT, depth=1, num_cells=8), action_space="categorical"))
    assert type(loss.value_estimator) is TD0Estimator
    fast = C.bootstrap_target(loss, td, next_value)
    keys = loss.value_estimator.tensor_keys
    generic = loss.value_estimator.value_estimate(C.next_value_td(td, keys.value, next_value, keys))
    torch.testing.assert_close(fast, generic)


def test_dqn_qvalue_head_fast_path_matches_full_network():
    torch.manual_seed(0)
    net = QValueActor(MLP(OBS, N_ACT, depth=1, num_cells=8), action_space="categorical")
    loss = DQNLoss(net)
    td = offpolicy_batch()
    fast = loss._action_values(td, target=True)
    with loss.target_value_network_params.to_module(loss.value_network):
        full = loss.value_network(td.copy())["action_value"]
    torch.testing.assert_close(fast, full)
