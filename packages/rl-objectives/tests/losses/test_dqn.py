import copy
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
from _nets import N_ACT, OBS, assert_same_grads, grads, offpolicy_batch

from rl_core.modules import MLP, QValueActor
from rl_objectives import DQNLoss, HardUpdate


class Dueling(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = MLP(OBS, 16, depth=0)
        self.value = nn.Linear(16, 1)
        self.adv = nn.Linear(16, N_ACT)

    def forward(self, obs):
        h = torch.relu(self.trunk(obs))
        a = self.adv(h)
        return self.value(h) + a - a.mean(-1, keepdim=True)


def make(dueling, seed=0):
    torch.manual_seed(seed)
    net = Dueling() if dueling else MLP(OBS, N_ACT, depth=1, num_cells=16)
    return QValueActor(net, in_keys=["observation"], action_space="categorical"), net


@pytest.mark.parametrize("double", [False, True])
@pytest.mark.parametrize("dueling", [False, True])
def test_dqn_matches_reference(double, dueling):
    actor, net = make(dueling)
    loss = DQNLoss(actor, double_dqn=double, gamma=0.9, loss_function="smooth_l1")
    target_net = copy.deepcopy(net)
    with torch.no_grad():  # a target that differs from the online net
        for p in target_net.parameters():
            p.add_(0.1)
    _load_target(loss, target_net)
    g = torch.Generator().manual_seed(1)
    td = offpolicy_batch(action=torch.randint(N_ACT, (8,), generator=g))
    out = loss(td)
    q = net(td["observation"]).gather(-1, td["action"].unsqueeze(-1))
    with torch.no_grad():
        next_t = target_net(td["next", "observation"])
        if double:
            a_star = net(td["next", "observation"]).argmax(-1, keepdim=True)
            nv = next_t.gather(-1, a_star)
        else:
            nv = next_t.max(-1, keepdim=True).values
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nv
    ref = nn.functional.smooth_l1_loss(q, y)
    torch.testing.assert_close(out["loss"], ref)
    torch.testing.assert_close(td["td_error"], (q - y).abs().squeeze(-1).detach())
    assert_same_grads(grads(out["loss"], net.parameters()), grads(ref, net.parameters()))


def _load_target(loss, target_net):
    from tensordict import TensorDict

    src = TensorDict.from_module(target_net).data
    dst = loss.target_value_network_params.data
    # the QValueActor wraps the net: its params sit under the TensorDictModule's "module"
    for key, value in src.items(True, True):
        matches = [k for k in dst.keys(True, True) if k[-len(key) :] == key]
        assert len(matches) == 1, (key, matches)
        dst[matches[0]].copy_(value)


def test_dqn_one_hot_actions_and_hard_update():
    actor, net = make(False)
    loss = DQNLoss(actor, delay_value=True)
    td = offpolicy_batch(action=torch.eye(N_ACT)[torch.arange(8) % N_ACT].bool())
    out = loss(td)
    assert out["loss"].requires_grad
    with torch.no_grad():
        net[0].weight.add_(1.0)
    HardUpdate(loss, value_network_update_interval=1).step()
    torch.testing.assert_close(
        loss.target_value_network_params["module", "0", "module", "0", "weight"], net[0].weight
    )


def test_dqn_rejects_float_action_of_wrong_shape():
    actor, _ = make(False)
    td = offpolicy_batch(action=torch.randn(8, 2))
    with pytest.raises(ValueError, match="DQNLoss: expected a one-hot action of shape"):
        DQNLoss(actor)(td)


def test_dqn_target_ignores_masked_actions():
    torch.manual_seed(0)
    net = MLP(OBS, N_ACT, depth=1, num_cells=16)
    actor = QValueActor(net, action_space="categorical", action_mask_key="action_mask")
    loss = DQNLoss(actor, delay_value=False, gamma=0.9)
    td = offpolicy_batch(action=torch.randint(N_ACT, (8,)))
    mask = torch.zeros(8, N_ACT, dtype=torch.bool)
    mask[:, 0] = True  # only action 0 is allowed in the next states
    td["next", "action_mask"] = mask
    td["action_mask"] = torch.ones(8, N_ACT, dtype=torch.bool)
    out = loss(td)
    q = net(td["observation"]).gather(-1, td["action"].unsqueeze(-1))
    with torch.no_grad():
        nv = net(td["next", "observation"])[:, :1]
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nv
    torch.testing.assert_close(out["loss"], (q - y).pow(2).mean())
