import copy
import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core.specs import OneHot
from rl_objectives import DistributionalDQNLoss, ValueEstimators
from rl_objectives.modules import DistributionalQValueActor

ATOMS, N_ACT, OBS, B = 7, 3, 4, 6


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(OBS, ATOMS * N_ACT)

    def forward(self, obs):
        return self.linear(obs).view(*obs.shape[:-1], ATOMS, N_ACT).log_softmax(-2)


def project_by_hand(p, support, r, discount):
    """Per sample, per atom: move each atom's mass to its two neighbours."""
    v_min, v_max = support[0].item(), support[-1].item()
    dz = (v_max - v_min) / (len(support) - 1)
    out = [0.0] * len(support)
    for j, z in enumerate(support.tolist()):
        tz = min(max(r + discount * z, v_min), v_max)
        b = (tz - v_min) / dz
        lo, hi = math.floor(b), math.ceil(b)
        if lo == hi:
            out[lo] += p[j]
        else:
            out[lo] += p[j] * (hi - b)
            out[hi] += p[j] * (b - lo)
    return out


def test_distributional_dqn_matches_reference():
    torch.manual_seed(0)
    net = Net()
    support = torch.linspace(-2.0, 3.0, ATOMS)
    loss = DistributionalDQNLoss(
        TensorDictModule(net, ["observation"], ["action_value"]), 0.9, support=support
    )
    target_net = copy.deepcopy(net)
    with torch.no_grad():
        loss.target_value_network_params.apply_(lambda x: x.mul_(2.0))
        for p in target_net.parameters():
            p.mul_(2.0)
    g = torch.Generator().manual_seed(1)
    done = torch.rand(B, 1, generator=g) < 0.4
    td = TensorDict(
        observation=torch.randn(B, OBS, generator=g),
        action=torch.randint(N_ACT, (B,), generator=g),
        next=TensorDict(
            observation=torch.randn(B, OBS, generator=g),
            reward=torch.randn(B, 1, generator=g) * 2,
            done=done,
            terminated=done,
            batch_size=[B],
        ),
        batch_size=[B],
    )
    out = loss(td)
    log_p = net(td["observation"])[torch.arange(B), :, td["action"]]
    with torch.no_grad():
        np_ = target_net(td["next", "observation"]).exp()
        best = (np_ * support.view(-1, 1)).sum(-2).argmax(-1)
        rows = []
        for i in range(B):
            disc = 0.0 if td["next", "terminated"][i] else 0.9
            rows.append(
                project_by_hand(
                    np_[i, :, best[i]].tolist(), support, td["next", "reward"][i].item(), disc
                )
            )
        m = torch.tensor(rows)
    ref = -(m * log_p).sum(-1).mean()
    torch.testing.assert_close(out["loss"], ref)
    torch.testing.assert_close(m.sum(-1), torch.ones(B))
    p = list(net.parameters())
    for a, b in zip(torch.autograd.grad(out["loss"], p), torch.autograd.grad(ref, p)):
        torch.testing.assert_close(a, b)


def test_distributional_dqn_rejects_support():
    net = TensorDictModule(Net(), ["observation"], ["action_value"])
    with pytest.raises(ValueError, match="expected a 1-D support of at least 2 atoms"):
        DistributionalDQNLoss(net, 0.9, support=torch.zeros(1))


def test_distributional_dqn_reads_the_support_of_a_distributional_actor():
    # TorchRL's DistributionalDQNLoss takes no support: it reads the actor's
    support = torch.linspace(-2.0, 3.0, ATOMS)
    actor = DistributionalQValueActor(Net(), support, spec=OneHot(N_ACT), make_log_softmax=False)
    loss = DistributionalDQNLoss(actor, 0.9)
    assert torch.equal(loss.support, support)
    with pytest.raises(TypeError, match=r"DistributionalDQNLoss: expected support= .* got neither"):
        DistributionalDQNLoss(TensorDictModule(Net(), ["observation"], ["action_value"]), 0.9)


def test_distributional_dqn_takes_td0_alone():
    # TorchRL: TD0 is the one estimator of DistributionalDQNLoss; others raise NotImplementedError
    support = torch.linspace(-2.0, 3.0, ATOMS)
    torch.manual_seed(0)
    net = TensorDictModule(Net(), ["observation"], ["action_value"])
    loss = DistributionalDQNLoss(net, 0.9, support=support, delay_value=False)
    assert loss.make_value_estimator(ValueEstimators.TD0, gamma=0.5) is loss
    assert loss.gamma == 0.5
    ref = DistributionalDQNLoss(net, 0.5, support=support, delay_value=False)
    g = torch.Generator().manual_seed(1)
    td = TensorDict(
        observation=torch.randn(B, OBS, generator=g),
        action=torch.randint(N_ACT, (B,), generator=g),
        next=TensorDict(
            observation=torch.randn(B, OBS, generator=g),
            reward=torch.randn(B, 1, generator=g),
            done=torch.zeros(B, 1, dtype=torch.bool),
            terminated=torch.zeros(B, 1, dtype=torch.bool),
            batch_size=[B],
        ),
        batch_size=[B],
    )
    torch.testing.assert_close(loss(td.clone())["loss"], ref(td.clone())["loss"])
    for kind in (ValueEstimators.GAE, ValueEstimators.TD1, ValueEstimators.TDLambda):
        with pytest.raises(NotImplementedError, match=r"expected one of \['TD0'\]"):
            loss.make_value_estimator(kind)
    # no value_type: TD(0), TorchRL's default, discounting with the loss's gamma
    plain = DistributionalDQNLoss(net, 0.7, support=support, delay_value=False)
    assert plain.make_value_estimator() is plain
    assert plain.value_type is ValueEstimators.TD0
    assert plain.value_estimator.gamma == 0.7
    assert plain.gamma == 0.7
