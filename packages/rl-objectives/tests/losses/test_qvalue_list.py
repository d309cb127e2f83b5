"""A list of Q networks (``qvalue_network=[q1, q2]``), as TorchRL accepts: the loss trains
those modules' own parameters, nothing copied or re-initialised."""

import copy
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, q_critic, tanh_actor
from _nets import OBS, offpolicy_batch, value_critic

from rl_core.modules import MLP, Actor
from rl_objectives import CQLLoss, CrossQLoss, IQLLoss, REDQLoss, SACLoss, TD3Loss


def _actor(name):
    if name == "TD3Loss":
        torch.manual_seed(0)
        return Actor(MLP(OBS, ACT, depth=1, num_cells=8))
    return tanh_actor()[0]


def make(name, qnets, **kwargs):
    cls = {
        "TD3Loss": TD3Loss,
        "SACLoss": SACLoss,
        "CQLLoss": CQLLoss,
        "CrossQLoss": CrossQLoss,
        "IQLLoss": IQLLoss,
        "REDQLoss": REDQLoss,
    }[name]
    extra = (value_critic()[0],) if name == "IQLLoss" else ()
    return cls(_actor(name), qnets, *extra, **kwargs)


NAMES = ["TD3Loss", "SACLoss", "CQLLoss", "CrossQLoss", "IQLLoss", "REDQLoss"]


def _count(name):
    return {"REDQLoss": {"num_qvalue_nets": 3, "sub_sample_len": 2}}.get(name, {})


@pytest.mark.parametrize("name", NAMES)
def test_listed_networks_are_the_loss_parameters(name):
    kwargs = _count(name)
    n = kwargs.get("num_qvalue_nets", 2)
    qnets = [q_critic(seed=10 + i) for i in range(n)]
    before = [[p.detach().clone() for p in q.parameters()] for q in qnets]
    loss = make(name, qnets, **kwargs)
    held = loss.qvalue_network_params
    for i, q in enumerate(qnets):
        mine = dict(q.named_parameters())
        theirs = held["nets", str(i)].flatten_keys(".")
        assert sorted(mine) == sorted(theirs.keys())
        for key, param in mine.items():
            assert theirs[key] is param  # the module's own parameter, trained in place
        for p, old in zip(q.parameters(), before[i], strict=True):
            torch.testing.assert_close(p.detach(), old, rtol=0, atol=0)  # not re-initialised
    if loss.target_network_names and "qvalue_network" in loss.target_network_names:
        for key, value in loss.target_qvalue_network_params.items(True, True):
            torch.testing.assert_close(value, held[key].detach(), rtol=0, atol=0)
    # the gradient of the loss reaches every listed module
    out = loss(offpolicy_batch(action=torch.rand(8, ACT) * 2 - 1))
    out["loss_qvalue"].backward()
    for q in qnets:
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in q.parameters())


def test_listed_networks_give_their_own_q_values():
    # TD3's critic loss written by hand in float64 from the two listed critics
    q1, q2 = q_critic(seed=10), q_critic(seed=11)
    loss = make("TD3Loss", [q1, q2], policy_noise=0.0, delay_actor=False, delay_qvalue=False)
    loss.make_value_estimator(gamma=0.9)
    td = offpolicy_batch(action=torch.rand(8, ACT) * 2 - 1)
    out = loss(td.clone())

    def q(net, obs, act):  # the listed module itself, in float64
        net64 = copy.deepcopy(net).double()
        return net64(TensorDict(observation=obs, action=act, batch_size=[8]))["state_action_value"]

    actor = loss.actor_network
    with loss.actor_network_params.to_module(actor):
        next_action = actor(td["next"].copy())["action"].clamp(-1, 1).double()
    obs, nobs = td["observation"].double(), td["next", "observation"].double()
    next_q = torch.minimum(q(q1, nobs, next_action), q(q2, nobs, next_action))
    not_term = (~td["next", "terminated"]).double()
    target = td["next", "reward"].double() + 0.9 * not_term * next_q
    expected = sum(
        torch.nn.functional.smooth_l1_loss(q(net, obs, td["action"].double()), target)
        for net in (q1, q2)
    )
    torch.testing.assert_close(out["loss_qvalue"].double(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_list_length_must_match_num_qvalue_nets(name):
    with pytest.raises(ValueError, match=r"num_qvalue_nets \(4\) must equal the number of Q"):
        make(name, [q_critic(seed=1), q_critic(seed=2)], num_qvalue_nets=4)


def test_list_of_non_modules_is_refused():
    with pytest.raises(TypeError, match="non-empty list of them, got a list holding"):
        make("SACLoss", [q_critic(), "q2"])


def test_the_same_module_listed_twice_shares_its_parameters():
    # TorchRL expands (shares) the parameters of a module given twice instead of stacking
    q = q_critic(seed=3)
    loss = make("SACLoss", [q, q])
    held = loss.qvalue_network_params
    for key, param in q.named_parameters():
        parts = tuple(key.split("."))
        assert held["nets", "0", *parts] is param
        assert held["nets", "1", *parts] is param
    assert sum(p is q_param for p in loss.parameters() for q_param in q.parameters()) == 4
