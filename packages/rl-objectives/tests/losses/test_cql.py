import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, q_critic, tanh_actor, tanh_sample
from _nets import assert_same_grads, grads, offpolicy_batch

from rl_objectives import CQLLoss


def test_cql_matches_reference():
    actor, param_net = tanh_actor()
    loss = CQLLoss(
        actor,
        q_critic(),
        alpha_init=0.5,
        gamma=0.9,
        loss_function="l2",
        temperature=2.0,
        min_q_weight=5.0,
        num_random=3,
        deterministic_backup=False,
    )
    with torch.no_grad():
        loss.target_qvalue_network_params.apply_(lambda x: x.mul_(0.9))
    g = torch.Generator().manual_seed(7)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=g) * 1.6 - 0.8)
    torch.manual_seed(42)
    out = loss(td)

    def q(i, target, obs, act):
        params = loss.target_qvalue_network_params if target else loss.qvalue_network_params
        net = loss.qvalue_network.nets[i].module  # the MLP inside the ValueOperator
        with params["nets", str(i), "module"].to_module(net):
            return net(obs, act)

    torch.manual_seed(42)
    obs, nobs = td["observation"], td["next", "observation"]
    a, logp = tanh_sample(param_net, obs)
    with torch.no_grad():
        a2, logp2 = tanh_sample(param_net, nobs)
        nq = torch.min(q(0, True, nobs, a2), q(1, True, nobs, a2)) - 0.5 * logp2.unsqueeze(-1)
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nq
        rand_a = torch.rand(3, 8, ACT) * 2 - 1
        curr_a, curr_lp = tanh_sample(param_net, obs, (3,))
        next_a, next_lp = tanh_sample(param_net, nobs, (3,))
    preds = [q(i, False, obs, td["action"]) for i in range(2)]
    q_loss = sum((p - y).pow(2).mean() for p in preds)
    obs3 = obs.expand(3, 8, obs.shape[-1])
    cql = 0.0
    for i in range(2):
        cat = torch.cat(
            [
                q(i, False, obs3, rand_a) - ACT * math.log(0.5),
                q(i, False, obs3, next_a) - next_lp.unsqueeze(-1),
                q(i, False, obs3, curr_a) - curr_lp.unsqueeze(-1),
            ],
            0,
        )
        cql = cql + 5.0 * (2.0 * torch.logsumexp(cat / 2.0, 0) - preds[i]).mean()
    q_new = torch.min(q(0, False, obs, a), q(1, False, obs, a)).squeeze(-1)
    torch.testing.assert_close(out["loss_actor"], (0.5 * logp - q_new).mean())
    alpha_loss = (-loss.log_alpha * (logp.detach() - ACT)).mean()
    torch.testing.assert_close(out["loss_alpha"], alpha_loss)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    torch.testing.assert_close(out["loss_cql"], cql)
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(
        grads(out["loss_qvalue"] + out["loss_cql"], qparams), grads(q_loss + cql, qparams)
    )
    assert all(g is None for g in grads(out["loss_cql"], list(param_net.parameters())))
