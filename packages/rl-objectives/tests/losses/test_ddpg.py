import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _nets import OBS, assert_same_grads, grads, offpolicy_batch

from rl_core.modules import MLP, Actor, ValueOperator
from rl_objectives import DDPGLoss


def test_ddpg_matches_reference():
    torch.manual_seed(0)
    actor_net = torch.nn.Sequential(MLP(OBS, 2, depth=1, num_cells=16), torch.nn.Tanh())
    q_net = MLP(OBS + 2, 1, depth=1, num_cells=16)
    actor = Actor(actor_net)
    critic = ValueOperator(q_net, ["observation", "action"])
    loss = DDPGLoss(actor, critic, delay_actor=True, delay_value=True, gamma=0.9)
    with torch.no_grad():  # make the targets differ from the online networks
        loss.target_actor_network_params.apply_(lambda x: x.mul_(0.5))
        loss.target_value_network_params.apply_(lambda x: x.mul_(-1.0))
    t_actor = loss.target_actor_network_params["module", "0"]
    t_q = loss.target_value_network_params["module"]
    g = torch.Generator().manual_seed(3)
    td = offpolicy_batch(action=torch.rand(8, 2, generator=g) * 2 - 1)
    out = loss(td)

    def q(net_params, obs, act):
        with net_params.to_module(q_net):
            return q_net(torch.cat([obs, act], -1))

    def mu(net_params, obs):
        with net_params.to_module(actor_net[0]):
            return torch.tanh(actor_net[0](obs))

    actor_loss = -q_net(torch.cat([td["observation"], actor_net(td["observation"])], -1)).mean()
    pred = q_net(torch.cat([td["observation"], td["action"]], -1))
    with torch.no_grad():
        nobs = td["next", "observation"]
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * q(
            t_q, nobs, mu(t_actor, nobs)
        )
    value_loss = (pred - y).pow(2).mean()
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    torch.testing.assert_close(out["loss_value"], value_loss)
    # the actor loss trains only the actor; the value loss only the critic
    assert_same_grads(
        grads(out["loss_actor"], actor_net.parameters()), grads(actor_loss, actor_net.parameters())
    )
    assert all(g is None for g in grads(out["loss_actor"], q_net.parameters()))
    assert_same_grads(
        grads(out["loss_value"], q_net.parameters()), grads(value_loss, q_net.parameters())
    )
