import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, OBS, tanh_actor, tanh_sample
from _nets import assert_same_grads, grads, offpolicy_batch

from rl_core.modules import MLP, ValueOperator
from rl_objectives import CrossQLoss


def test_crossq_matches_reference_with_batch_norm():
    actor, param_net = tanh_actor()
    torch.manual_seed(1)
    q_mlp = MLP(OBS + ACT, 1, depth=1, num_cells=16, norm_class=torch.nn.BatchNorm1d)
    loss = CrossQLoss(
        actor,
        ValueOperator(q_mlp, ["observation", "action"]),
        alpha_init=0.5,
        gamma=0.9,
        loss_function="l2",
    )
    assert not loss.target_network_names  # CrossQ has no target networks
    g = torch.Generator().manual_seed(7)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=g) * 1.6 - 0.8)
    params = [loss.qvalue_network_params["nets", str(i), "module"].clone() for i in range(2)]
    torch.manual_seed(11)
    out = loss(td)
    torch.manual_seed(11)

    def q(i, obs, act, *, train):
        net = loss.qvalue_network.nets[i].module
        net.train(train)
        with params[i].to_module(net):
            return net(obs, act)

    obs, nobs = td["observation"], td["next", "observation"]
    a, logp = tanh_sample(param_net, obs)
    q_new = torch.min(q(0, obs, a, train=False), q(1, obs, a, train=False)).squeeze(-1)
    actor_loss = (0.5 * logp - q_new).mean()
    with torch.no_grad():
        a2, logp2 = tanh_sample(param_net, nobs)
    joint_obs = torch.cat([obs, nobs])
    joint_act = torch.cat([td["action"], a2])
    both = [q(i, joint_obs, joint_act, train=True) for i in range(2)]
    nq = torch.min(both[0][8:], both[1][8:]).detach() - 0.5 * logp2.unsqueeze(-1)
    y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nq
    q_loss = sum((b[:8] - y).pow(2).mean() for b in both)
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    # the joint pass updated the loss's running statistics like the reference's
    for i in range(2):
        mine = loss.qvalue_network_params["nets", str(i), "module"]
        for key in mine.keys(True, True):
            if "running" in key[-1]:
                torch.testing.assert_close(mine[key], params[i][key])
    ap = list(param_net.parameters())
    assert_same_grads(grads(out["loss_actor"], ap), grads(actor_loss, ap))
