import math
import sys
from pathlib import Path

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

sys.path.insert(0, str(Path(__file__).parent))
from _nets import N_ACT, OBS, assert_same_grads, categorical_actor, grads, offpolicy_batch

from rl_core.modules import MLP
from rl_objectives import DiscreteSACLoss


def test_discrete_sac_matches_reference():
    actor, actor_net = categorical_actor()
    torch.manual_seed(3)
    q_net = MLP(OBS, N_ACT, depth=1, num_cells=16)
    loss = DiscreteSACLoss(
        actor,
        TensorDictModule(q_net, ["observation"], ["action_value"]),
        alpha_init=0.3,
        gamma=0.9,
        loss_function="l2",
    )
    with torch.no_grad():
        loss.target_qvalue_network_params.apply_(lambda x: x.mul_(0.7))
    g = torch.Generator().manual_seed(2)
    td = offpolicy_batch(action=torch.randint(N_ACT, (8,), generator=g))
    out = loss(td)

    def q(i, target, obs):
        params = loss.target_qvalue_network_params if target else loss.qvalue_network_params
        net = loss.qvalue_network.nets[i]
        with params["nets", str(i)].to_module(net):
            return net(TensorDict(observation=obs, batch_size=obs.shape[:1]))["action_value"]

    obs, nobs = td["observation"], td["next", "observation"]
    log_p = torch.log_softmax(actor_net(obs), -1)
    p = log_p.exp()
    q_min = torch.min(q(0, False, obs), q(1, False, obs)).detach()
    actor_loss = (p * (0.3 * log_p - q_min)).sum(-1).mean()
    with torch.no_grad():
        nlp = torch.log_softmax(actor_net(nobs), -1)
        nq = torch.min(q(0, True, nobs), q(1, True, nobs))
        nv = (nlp.exp() * (nq - 0.3 * nlp)).sum(-1, keepdim=True)
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nv
    a = td["action"].unsqueeze(-1)
    q_loss = sum((q(i, False, obs).gather(-1, a) - y).pow(2).mean() for i in range(2))
    entropy = -(p * log_p).sum(-1)
    alpha_loss = (loss.log_alpha * (entropy.detach() - 0.98 * math.log(N_ACT))).mean()
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    torch.testing.assert_close(out["loss_alpha"], alpha_loss)
    ap = list(actor_net.parameters())
    assert_same_grads(grads(out["loss_actor"], ap), grads(actor_loss, ap))
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(grads(out["loss_qvalue"], qparams), grads(q_loss, qparams))
    assert all(g is None for g in grads(out["loss_actor"], qparams))
