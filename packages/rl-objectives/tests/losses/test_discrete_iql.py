import sys
from pathlib import Path

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

sys.path.insert(0, str(Path(__file__).parent))
from _nets import N_ACT, OBS, assert_same_grads, categorical_actor, grads, offpolicy_batch

from rl_core.modules import MLP, ValueOperator
from rl_objectives import DiscreteIQLLoss


def test_discrete_iql_matches_reference():
    actor, actor_net = categorical_actor()
    torch.manual_seed(5)
    q_net = MLP(OBS, N_ACT, depth=1, num_cells=16)
    v_net = MLP(OBS, 1, depth=1, num_cells=16)
    loss = DiscreteIQLLoss(
        actor,
        TensorDictModule(q_net, ["observation"], ["action_value"]),
        ValueOperator(v_net, ["observation"]),
        expectile=0.8,
        temperature=2.0,
        gamma=0.9,
        loss_function="l2",
    )
    g = torch.Generator().manual_seed(2)
    idx = torch.randint(N_ACT, (8,), generator=g)
    td = offpolicy_batch(action=torch.nn.functional.one_hot(idx, N_ACT).bool())
    out = loss(td)

    def q(i, target, obs):
        params = loss.target_qvalue_network_params if target else loss.qvalue_network_params
        net = loss.qvalue_network.nets[i]
        with params["nets", str(i)].to_module(net):
            all_q = net(TensorDict(observation=obs, batch_size=obs.shape[:1]))["action_value"]
        return all_q.gather(-1, idx.unsqueeze(-1))

    obs = td["observation"]
    with torch.no_grad():
        q_t = torch.min(q(0, True, obs), q(1, True, obs))
    v = v_net(obs)
    u = q_t - v
    value_loss = (torch.where(u < 0, 0.2, 0.8) * u**2).mean()
    logp = torch.log_softmax(actor_net(obs), -1).gather(-1, idx.unsqueeze(-1)).squeeze(-1)
    actor_loss = -(torch.exp(2.0 * u.detach().squeeze(-1)).clamp(max=100) * logp).mean()
    with torch.no_grad():
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * v_net(
            td["next", "observation"]
        )
    q_loss = sum((q(i, False, obs) - y).pow(2).mean() for i in range(2))
    torch.testing.assert_close(out["loss_value"], value_loss)
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(grads(out["loss_qvalue"], qparams), grads(q_loss, qparams))
    ap = list(actor_net.parameters())
    assert_same_grads(grads(out["loss_actor"], ap), grads(actor_loss, ap))
