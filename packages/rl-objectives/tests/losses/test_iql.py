import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, OBS, q_critic, q_with, tanh_actor
from _nets import assert_same_grads, grads, offpolicy_batch

from rl_core.modules import MLP, ValueOperator
from rl_objectives import IQLLoss


def test_iql_matches_reference():
    actor, param_net = tanh_actor()
    torch.manual_seed(4)
    v_net = MLP(OBS, 1, depth=1, num_cells=16)
    loss = IQLLoss(
        actor,
        q_critic(),
        ValueOperator(v_net, ["observation"]),
        expectile=0.7,
        temperature=3.0,
        gamma=0.9,
        loss_function="l2",
    )
    with torch.no_grad():
        loss.target_qvalue_network_params.apply_(lambda x: x.mul_(1.1))
    g = torch.Generator().manual_seed(9)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=g) * 1.6 - 0.8)
    out = loss(td)
    obs = td["observation"]
    with torch.no_grad():
        q_t = torch.min(*[q_with(loss, i, True, td, td["action"]) for i in range(2)])
    v = v_net(obs)
    u = q_t - v
    value_loss = (torch.where(u < 0, 0.3, 0.7) * u**2).mean()
    loc, scale = param_net(obs)
    x = torch.atanh(td["action"])
    # TanhNormal log-density of the data actions, by hand
    lp = torch.distributions.Normal(loc, scale).log_prob(x) - torch.log1p(-(td["action"] ** 2))
    lp = lp.sum(-1)
    actor_loss = -(torch.exp(3.0 * u.detach().squeeze(-1)).clamp(max=100) * lp).mean()
    with torch.no_grad():
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * v_net(
            td["next", "observation"]
        )
    q_loss = sum((q_with(loss, i, False, td, td["action"]) - y).pow(2).mean() for i in range(2))
    torch.testing.assert_close(out["loss_value"], value_loss)
    torch.testing.assert_close(out["loss_actor"], actor_loss, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    assert_same_grads(
        grads(out["loss_value"], v_net.parameters()), grads(value_loss, v_net.parameters())
    )
    ap = list(param_net.parameters())
    assert_same_grads(grads(out["loss_actor"], ap), grads(actor_loss, ap), atol=1e-4)
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(grads(out["loss_qvalue"], qparams), grads(q_loss, qparams))


@pytest.mark.parametrize("expectile", [0.0, 1.0])
def test_iql_takes_the_closed_expectile_range(expectile):
    # TorchRL's IQLLoss takes expectile=1.0 (its tests use 0.1, 0.5 and 1.0): the value loss
    # then weighs only the samples whose q exceeds V (and 0.0 only those below)
    actor, _ = tanh_actor()
    torch.manual_seed(4)
    v_net = MLP(OBS, 1, depth=1, num_cells=16)
    loss = IQLLoss(actor, q_critic(), ValueOperator(v_net, ["observation"]), expectile=expectile)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=torch.Generator().manual_seed(9)))
    out = loss(td)
    with torch.no_grad():
        q_t = torch.min(*[q_with(loss, i, True, td, td["action"]) for i in range(2)])
        u = q_t - v_net(td["observation"])
    weight = (u > 0).float() if expectile == 1.0 else (u < 0).float()
    torch.testing.assert_close(out["loss_value"].detach(), (weight * u**2).mean())


@pytest.mark.parametrize("expectile", [1.5, -0.1])
def test_iql_rejects_expectile(expectile):
    actor, _ = tanh_actor()
    v = ValueOperator(MLP(OBS, 1, depth=1, num_cells=4), ["observation"])
    with pytest.raises(
        ValueError, match=rf"IQLLoss: expected expectile in \[0, 1\], got {expectile}"
    ):
        IQLLoss(actor, q_critic(), v, expectile=expectile)
