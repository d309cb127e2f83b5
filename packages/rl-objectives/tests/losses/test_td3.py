import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, OBS, q_critic, q_with
from _nets import assert_same_grads, grads, offpolicy_batch

from rl_core.modules import MLP, Actor
from rl_core.specs import Bounded
from rl_objectives import TD3Loss


def test_td3_matches_reference():
    torch.manual_seed(0)
    actor_net = torch.nn.Sequential(MLP(OBS, ACT, depth=1, num_cells=16), torch.nn.Tanh())
    loss = TD3Loss(
        Actor(actor_net),
        q_critic(),
        action_spec=Bounded(-0.5, 0.5, shape=(ACT,)),
        policy_noise=0.3,
        noise_clip=0.4,
        gamma=0.9,
        loss_function="l2",
    )
    with torch.no_grad():
        loss.target_qvalue_network_params.apply_(lambda x: x.mul_(0.8))
        loss.target_actor_network_params.apply_(lambda x: x.mul_(1.5))
    g = torch.Generator().manual_seed(3)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=g) - 0.5)
    torch.manual_seed(11)
    out = loss(td)
    torch.manual_seed(11)
    with torch.no_grad():
        with loss.target_actor_network_params["module"].to_module(actor_net):
            a2 = actor_net(td["next", "observation"])
        a2 = (a2 + (torch.randn_like(a2) * 0.3).clamp(-0.4, 0.4)).clamp(-0.5, 0.5)
        nq = torch.min(*[q_with(loss, i, True, td["next"], a2) for i in range(2)])
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nq
    q_loss = sum((q_with(loss, i, False, td, td["action"]) - y).pow(2).mean() for i in range(2))
    actor_loss = -q_with(loss, 0, False, td, actor_net(td["observation"])).mean()
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(grads(out["loss_qvalue"], qparams), grads(q_loss, qparams))
    assert all(g is None for g in grads(out["loss_actor"], qparams))
    assert_same_grads(
        grads(out["loss_actor"], actor_net.parameters()), grads(actor_loss, actor_net.parameters())
    )
    # the second critic is a fresh copy, not the first one
    p = loss.qvalue_network_params
    assert not torch.equal(
        p["nets", "0", "module", "0", "weight"], p["nets", "1", "module", "0", "weight"]
    )


def test_td3_reads_the_bounds_of_a_composite_action_spec():
    # TorchRL takes an env's full action spec: the Bounded entry at the loss's action key
    import pytest

    from rl_core import Composite
    from rl_objectives import TD3BCLoss

    actor = Actor(torch.nn.Sequential(MLP(OBS, ACT, depth=1, num_cells=16), torch.nn.Tanh()))
    spec = Composite(action=Bounded(-0.5, 0.25, shape=(ACT,)))
    for cls in (TD3Loss, TD3BCLoss):
        loss = cls(actor, q_critic(), action_spec=spec)
        assert loss.low.tolist() == [-0.5] * ACT
        assert loss.high.tolist() == [0.25] * ACT
    with pytest.raises(KeyError, match="Composite action_spec has no entry 'action'"):
        TD3Loss(actor, q_critic(), action_spec=Composite(other=Bounded(-1.0, 1.0, (ACT,))))
