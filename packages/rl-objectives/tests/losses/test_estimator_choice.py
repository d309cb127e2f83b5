"""``make_value_estimator`` given an estimator instance or class (TorchRL 0.14), and the error
for an estimator a loss does not use (TorchRL's NotImplementedError, e.g. GAE for DQN)."""

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import q_critic, tanh_actor
from _nets import N_ACT, OBS, categorical_actor, offpolicy_batch, onpolicy_batch, value_critic

from rl_core.modules import MLP, QValueActor
from rl_objectives import (
    GAE,
    A2CLoss,
    ClipPPOLoss,
    DQNLoss,
    SACLoss,
    TD0Estimator,
    TD1Estimator,
    TDLambdaEstimator,
    ValueEstimators,
    VTrace,
)


def _dqn(gamma=0.9):
    torch.manual_seed(0)
    net = MLP(OBS, N_ACT, depth=1, num_cells=16)
    actor = QValueActor(net, in_keys=["observation"], action_space="categorical")
    return DQNLoss(actor, delay_value=False, gamma=gamma, loss_function="l2"), net


def test_dqn_uses_the_estimator_instance_it_is_given():
    loss, net = _dqn(gamma=0.9)
    estimator = TD0Estimator(gamma=0.5, value_network=None)
    assert loss.make_value_estimator(estimator) is loss
    assert loss.value_estimator is estimator
    assert loss.value_type is TD0Estimator
    assert [name for name, _ in loss.named_children()].count("value_type") == 0
    td = offpolicy_batch(action=torch.randint(N_ACT, (8,), generator=torch.Generator()))
    out = loss(td)
    # by hand, with the instance's gamma (0.5), not the loss's (0.9)
    with torch.no_grad():
        nv = net(td["next", "observation"]).max(-1, keepdim=True).values
        y = td["next", "reward"] + 0.5 * (~td["next", "terminated"]).float() * nv
    q = net(td["observation"]).gather(-1, td["action"].unsqueeze(-1))
    torch.testing.assert_close(out["loss"].detach(), (q - y).pow(2).mean().detach())


def test_an_estimator_class_is_built_with_the_hyperparameters():
    actor, _ = tanh_actor()
    loss = SACLoss(actor, q_critic())
    assert loss.make_value_estimator(TD1Estimator, gamma=0.95, value_network=None) is loss
    assert type(loss.value_estimator) is TD1Estimator
    assert loss.value_estimator.gamma == 0.95
    assert loss.value_type is TD1Estimator


def test_ppo_uses_a_gae_instance_and_gives_it_its_keys():
    actor, actor_net = categorical_actor()
    critic, critic_net = value_critic()
    loss = ClipPPOLoss(actor, critic, entropy_bonus=False, critic_coeff=None)
    loss.set_keys(value_target="my_target")
    gae = GAE(gamma=0.5, lmbda=0.0, value_network=critic)
    loss.make_value_estimator(gae)
    assert loss.value_estimator is gae
    assert loss.value_type is GAE
    assert gae.tensor_keys.value_target == "my_target"  # the loss's keys are passed on
    td = onpolicy_batch().exclude("advantage", "value_target")
    out = loss(td)
    # lmbda=0: the advantage is the one-step TD error r + 0.5 * (1 - term) * V(s') - V(s)
    with torch.no_grad():
        v = critic_net(td["observation"])
        nv = critic_net(td["next", "observation"])
        adv = td["next", "reward"] + 0.5 * (~td["next", "terminated"]).float() * nv - v
        logp = torch.log_softmax(actor_net(td["observation"]), -1)
        logp = (logp * td["action"].float()).sum(-1)
        ratio = (logp - td["action_log_prob"]).exp()
        a = adv.squeeze(-1)
        expected = -torch.minimum(ratio * a, ratio.clamp(0.8, 1.2) * a).mean()
    torch.testing.assert_close(out["loss_objective"].detach(), expected)


@pytest.mark.parametrize("kind", [ValueEstimators.GAE, ValueEstimators.MAGAE, "VTrace", GAE])
def test_dqn_refuses_an_estimator_it_does_not_use(kind):
    loss, _ = _dqn()
    # TorchRL raises NotImplementedError; the error is a ValueError too
    if kind is GAE:
        kind = GAE(gamma=0.9, lmbda=0.9, value_network=None)
    with pytest.raises(NotImplementedError, match=r"DQNLoss\.make_value_estimator: "):
        loss.make_value_estimator(kind)
    with pytest.raises(ValueError, match=r"supported: \['TD0', 'TD1', 'TDLambda'\]"):
        loss.make_value_estimator(VTrace)
    assert type(loss.value_estimator) is TD0Estimator  # unchanged


def test_hyperparameters_with_an_instance_are_refused():
    actor, _ = categorical_actor()
    critic, _ = value_critic()
    loss = A2CLoss(actor, critic)
    estimator = TDLambdaEstimator(gamma=0.9, lmbda=0.9, value_network=critic)
    with pytest.raises(TypeError, match=r"got hyperparameters \['gamma'\] with an estimator"):
        loss.make_value_estimator(estimator, gamma=0.5)


def test_an_unknown_estimator_name_is_named():
    loss, _ = _dqn()
    with pytest.raises(ValueError, match=r"got 'TD2'"):
        loss.make_value_estimator("TD2")
    with pytest.raises(ValueError, match=r"got <class 'torch.nn.modules.linear.Linear'>"):
        loss.make_value_estimator(nn.Linear)


def test_a_differentiable_estimator_does_not_train_the_critic_through_the_objective():
    # TorchRL's PPO test: the advantage of a differentiable GAE run on the critic module
    # itself; the policy terms then send no gradient to the critic
    actor, actor_net = categorical_actor()
    critic, critic_net = value_critic()
    loss = ClipPPOLoss(actor, critic, entropy_bonus=False)
    td = onpolicy_batch().exclude("advantage", "value_target")
    GAE(gamma=0.9, lmbda=0.9, value_network=critic, differentiable=True)(td)
    out = loss(td)
    critic_params = list(critic_net.parameters())
    assert all(
        g is None
        for g in torch.autograd.grad(out["loss_objective"], critic_params, allow_unused=True)
    )
    actor_grads = torch.autograd.grad(out["loss_objective"], list(actor_net.parameters()))
    assert all(g.abs().sum() > 0 for g in actor_grads)
