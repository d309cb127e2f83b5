import copy
import math
import sys
from pathlib import Path

import pytest
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


def _q_ref(loss, i, target, obs, act):
    params = loss.target_qvalue_network_params if target else loss.qvalue_network_params
    net = loss.qvalue_network.nets[i].module
    with params["nets", str(i), "module"].to_module(net):
        return net(obs, act)


def _option_reference(loss, param_net, td, *, n, max_q_backup):
    """The CQL terms written out for ``alpha=1``, ``gamma=0.9``, ``T=1``, weight 2, l2."""
    obs, nobs = td["observation"], td["next", "observation"]
    _a, logp = tanh_sample(param_net, obs)
    with torch.no_grad():
        if max_q_backup:
            nobs_n = nobs.expand(n, *nobs.shape)
            a2, _ = tanh_sample(param_net, nobs, (n,))
            per_critic = [_q_ref(loss, i, True, nobs_n, a2).max(0).values for i in range(2)]
            nq = torch.min(*per_critic)
        else:
            a2, _logp2 = tanh_sample(param_net, nobs)
            nq = torch.min(_q_ref(loss, 0, True, nobs, a2), _q_ref(loss, 1, True, nobs, a2))
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * nq
        rand_a = torch.rand(n, 8, ACT) * 2 - 1
        curr_a, curr_lp = tanh_sample(param_net, obs, (n,))
        next_a, next_lp = tanh_sample(param_net, nobs, (n,))
    preds = [_q_ref(loss, i, False, obs, td["action"]) for i in range(2)]
    q_loss = sum((p - y).pow(2).mean() for p in preds)
    obs_n = obs.expand(n, 8, obs.shape[-1])
    penalties = []
    for i in range(2):
        cat = torch.cat(
            [
                _q_ref(loss, i, False, obs_n, rand_a) - ACT * math.log(0.5),
                _q_ref(loss, i, False, obs_n, next_a) - next_lp.unsqueeze(-1),
                _q_ref(loss, i, False, obs_n, curr_a) - curr_lp.unsqueeze(-1),
            ],
            0,
        )
        penalties.append(2.0 * (torch.logsumexp(cat, 0) - preds[i]))  # [8, 1] per critic
    return q_loss, penalties, logp


def _option_loss(**kwargs):
    actor, param_net = tanh_actor()
    loss = CQLLoss(
        actor,
        q_critic(),
        gamma=0.9,
        loss_function="l2",
        min_q_weight=2.0,
        num_random=4,
        **kwargs,
    )
    with torch.no_grad():
        loss.target_qvalue_network_params.apply_(lambda x: x.mul_(0.9))
    g = torch.Generator().manual_seed(3)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=g) * 1.6 - 0.8)
    return loss, param_net, td


def test_cql_max_q_backup_matches_reference():
    loss, param_net, td = _option_loss(max_q_backup=True, deterministic_backup=False)
    torch.manual_seed(5)
    out = loss(td)
    torch.manual_seed(5)
    q_loss, penalties, _ = _option_reference(loss, param_net, td, n=4, max_q_backup=True)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    torch.testing.assert_close(out["loss_cql"], sum(p.mean() for p in penalties))
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(grads(out["loss_qvalue"], qparams), grads(q_loss, qparams))
    assert "loss_alpha_prime" not in out.keys()
    assert not hasattr(loss, "log_alpha_prime")


def test_cql_with_lagrange_matches_reference():
    loss, param_net, td = _option_loss(with_lagrange=True, lagrange_thresh=0.5)
    assert loss.target_action_gap == 0.5
    names = [name for name, _ in loss.named_parameters()]
    assert "log_alpha_prime" in names
    assert loss.log_alpha_prime.item() == 0.0
    with torch.no_grad():
        loss.log_alpha_prime.fill_(0.3)
    torch.manual_seed(5)
    out = loss(td)
    torch.manual_seed(5)
    q_loss, penalties, _ = _option_reference(loss, param_net, td, n=4, max_q_backup=False)
    alpha_prime = math.exp(0.3)
    cql = sum(alpha_prime * (p - 0.5) for p in penalties).mean()
    mean_penalty = sum(p.mean() for p in penalties) / 2
    alpha_prime_loss = -loss.log_alpha_prime.exp() * (mean_penalty.detach() - 0.5)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    torch.testing.assert_close(out["loss_cql"], cql)
    torch.testing.assert_close(out["loss_alpha_prime"], alpha_prime_loss)
    qparams = list(loss.qvalue_network_params.values(True, True))
    assert_same_grads(grads(out["loss_cql"], qparams), grads(cql, qparams))
    (got,) = grads(out["loss_alpha_prime"], [loss.log_alpha_prime])
    (want,) = grads(alpha_prime_loss, [loss.log_alpha_prime])
    torch.testing.assert_close(got, want)
    # each term trains its own parameters only
    assert all(g is None for g in grads(out["loss_alpha_prime"], qparams))
    assert grads(out["loss_cql"], [loss.log_alpha_prime]) == (None,)


@pytest.mark.parametrize(("thresh", "direction"), [(-1e3, 1.0), (1e3, -1.0)])
def test_cql_lagrange_moves_alpha_prime_toward_the_threshold(thresh, direction):
    # alpha_prime grows while the penalty is above the threshold, shrinks while below
    loss, _, td = _option_loss(with_lagrange=True, lagrange_thresh=thresh)
    opt = torch.optim.SGD([loss.log_alpha_prime], lr=1e-4)
    for _ in range(2):
        opt.zero_grad()
        loss(td.clone())["loss_alpha_prime"].backward()
        opt.step()
    assert direction * loss.log_alpha_prime.item() > 0.0


@pytest.mark.parametrize("delay_actor", [False, True])
def test_cql_delay_actor_samples_the_backup_action_from_the_target_actor(delay_actor):
    # TorchRL's CQLLoss(delay_actor=True) keeps a target copy of the actor; here, as in
    # SACLoss, the backup's next action is drawn from it
    actor, param_net = tanh_actor()
    loss = CQLLoss(
        actor, q_critic(), alpha_init=0.5, gamma=0.9, loss_function="l2", num_random=3,
        deterministic_backup=False, delay_actor=delay_actor, delay_qvalue=False,
    )  # fmt: skip
    assert loss.delay_actor is delay_actor
    assert ("actor_network" in loss.target_network_names) is delay_actor
    target_net = copy.deepcopy(param_net)
    with torch.no_grad():
        for p in target_net.parameters():
            p.mul_(0.5)
        if delay_actor:
            loss.target_actor_network_params.apply_(lambda x: x.mul_(0.5))
    g = torch.Generator().manual_seed(7)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=g) * 1.6 - 0.8)
    torch.manual_seed(42)
    out = loss(td)
    torch.manual_seed(42)
    obs, nobs = td["observation"], td["next", "observation"]
    tanh_sample(param_net, obs)  # the actor term's draw comes first
    with torch.no_grad():
        a2, logp2 = tanh_sample(target_net if delay_actor else param_net, nobs)
        nq = torch.min(*[_q_ref(loss, i, False, nobs, a2) for i in range(2)])
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).float() * (
            nq - 0.5 * logp2.unsqueeze(-1)
        )
    q_loss = sum((_q_ref(loss, i, False, obs, td["action"]) - y).pow(2).mean() for i in range(2))
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
