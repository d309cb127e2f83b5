"""Value functionals, GAE and a DQN loss, as a TorchRL user tests them: against references
written from the definitions in float64."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn
from torchrl.data import OneHot
from torchrl.modules import MLP, ProbabilisticActor, QValueActor, TanhNormal, ValueOperator
from torchrl.objectives import ClipPPOLoss, DQNLoss, SoftUpdate, ValueEstimators
from torchrl.objectives.value import GAE, functional
from torchrl.objectives.value.functional import (
    generalized_advantage_estimate,
    td0_return_estimate,
    vec_td_lambda_advantage_estimate,
)


def gae_reference(gamma, lmbda, value, next_value, reward, done, terminated):
    advantage = torch.zeros_like(reward)
    running = torch.zeros_like(reward[..., 0, :])
    for t in reversed(range(reward.shape[-2])):
        not_terminated = (~terminated[..., t, :]).double()
        not_done = (~done[..., t, :]).double()
        delta = (
            reward[..., t, :] + gamma * not_terminated * next_value[..., t, :] - value[..., t, :]
        )
        running = delta + gamma * lmbda * not_done * running
        advantage[..., t, :] = running
    return advantage, advantage + value


def random_batch(batch, time, seed=0):
    g = torch.Generator().manual_seed(seed)
    value = torch.randn(batch, time, 1, generator=g, dtype=torch.float64)
    next_value = torch.randn(batch, time, 1, generator=g, dtype=torch.float64)
    reward = torch.randn(batch, time, 1, generator=g, dtype=torch.float64)
    terminated = torch.rand(batch, time, 1, generator=g) < 0.1
    truncated = torch.rand(batch, time, 1, generator=g) < 0.1
    return value, next_value, reward, terminated | truncated, terminated


@pytest.mark.parametrize(("gamma", "lmbda"), [(0.99, 0.95), (0.5, 1.0), (0.9, 0.0)])
def test_gae_matches_definition(gamma, lmbda):
    value, next_value, reward, done, terminated = random_batch(3, 17)
    advantage, target = generalized_advantage_estimate(
        gamma, lmbda, value, next_value, reward, done, terminated
    )
    ref_advantage, ref_target = gae_reference(
        gamma, lmbda, value, next_value, reward, done, terminated
    )
    torch.testing.assert_close(advantage, ref_advantage)
    torch.testing.assert_close(target, ref_target)


def test_vectorized_gae_matches_definition():
    value, next_value, reward, done, terminated = random_batch(2, 11, seed=1)
    advantage, _ = functional.vec_generalized_advantage_estimate(
        0.9, 0.8, value, next_value, reward, done, terminated
    )
    torch.testing.assert_close(
        advantage, gae_reference(0.9, 0.8, value, next_value, reward, done, terminated)[0]
    )


def td_lambda_reference(gamma, lmbda, value, next_value, reward, done, terminated):
    target = torch.zeros_like(reward)
    following = next_value[..., -1, :]  # past the data: bootstrap
    for t in reversed(range(reward.shape[-2])):
        not_terminated = (~terminated[..., t, :]).double()
        # past the end of an episode, bootstrap from the next value instead of the return
        following = torch.where(done[..., t, :], next_value[..., t, :], following)
        blended = (1 - lmbda) * next_value[..., t, :] + lmbda * following
        target[..., t, :] = reward[..., t, :] + gamma * not_terminated * blended
        following = target[..., t, :]
    return target - value


@pytest.mark.parametrize("lmbda", [0.0, 0.6, 1.0])
def test_vec_td_lambda_advantage_matches_definition(lmbda):
    value, next_value, reward, done, terminated = random_batch(2, 13, seed=3)
    advantage = vec_td_lambda_advantage_estimate(
        0.95, lmbda, value, next_value, reward, done, terminated
    )
    torch.testing.assert_close(
        advantage,
        td_lambda_reference(0.95, lmbda, value, next_value, reward, done, terminated),
    )


def test_td0_return():
    _, next_value, reward, _, terminated = random_batch(4, 5, seed=2)
    target = td0_return_estimate(0.9, next_value, reward, terminated)
    torch.testing.assert_close(target, reward + 0.9 * (~terminated).double() * next_value)


def test_gae_module_writes_advantage_and_value_target():
    torch.manual_seed(0)
    value_net = ValueOperator(nn.Linear(3, 1), in_keys=["observation"])
    obs = torch.randn(2, 6, 3)
    next_obs = torch.randn(2, 6, 3)
    td = TensorDict(
        {
            "observation": obs,
            "next": {
                "observation": next_obs,
                "reward": torch.randn(2, 6, 1),
                "done": torch.zeros(2, 6, 1, dtype=torch.bool),
                "terminated": torch.zeros(2, 6, 1, dtype=torch.bool),
            },
        },
        batch_size=[2, 6],
    )
    gae = GAE(gamma=0.9, lmbda=0.7, value_network=value_net)
    out = gae(td)
    with torch.no_grad():
        value = value_net.module(obs).double()
        next_value = value_net.module(next_obs).double()
    zeros = torch.zeros(2, 6, 1, dtype=torch.bool)
    ref_advantage, ref_target = gae_reference(
        0.9, 0.7, value, next_value, td["next", "reward"].double(), zeros, zeros
    )
    torch.testing.assert_close(out["advantage"].double(), ref_advantage, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out["value_target"].double(), ref_target, rtol=1e-5, atol=1e-5)


def test_dqn_loss_matches_definition():
    torch.manual_seed(0)
    n_obs, n_act, batch, gamma = 4, 3, 16, 0.9
    net = MLP(in_features=n_obs, out_features=n_act, num_cells=[32])
    actor = QValueActor(net, in_keys=["observation"], spec=OneHot(n_act))
    loss = DQNLoss(actor, delay_value=True)
    loss.make_value_estimator(ValueEstimators.TD0, gamma=gamma)
    actions = nn.functional.one_hot(torch.randint(n_act, (batch,)), n_act)
    td = TensorDict(
        {
            "observation": torch.randn(batch, n_obs),
            "action": actions,
            "next": {
                "observation": torch.randn(batch, n_obs),
                "reward": torch.randn(batch, 1),
                "done": torch.zeros(batch, 1, dtype=torch.bool),
                "terminated": torch.zeros(batch, 1, dtype=torch.bool),
            },
        },
        batch_size=[batch],
    )
    out = loss(td.clone())
    with torch.no_grad():
        q = net(td["observation"]).double()
        q_next = net(td["next", "observation"]).double()
        chosen = (q * actions).sum(-1)
        target = td["next", "reward"].double().squeeze(-1) + gamma * q_next.max(-1).values
        expected = ((chosen - target) ** 2).mean()
    torch.testing.assert_close(out["loss"].double(), expected, rtol=1e-5, atol=1e-6)
    out["loss"].backward()
    assert all(p.grad is not None for p in net.parameters())
    updater = SoftUpdate(loss, eps=0.5)
    updater.step()


def test_clip_ppo_loss_at_the_behaviour_policy():
    torch.manual_seed(0)
    actor = ProbabilisticActor(
        TensorDictModule(
            nn.Sequential(
                MLP(in_features=3, out_features=2, num_cells=[16]), NormalParamExtractor()
            ),
            in_keys=["observation"],
            out_keys=["loc", "scale"],
        ),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        return_log_prob=True,
    )
    critic = ValueOperator(
        MLP(in_features=3, out_features=1, num_cells=[16]), in_keys=["observation"]
    )
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.0)
    td = TensorDict({"observation": torch.randn(8, 3)}, batch_size=[8])
    with torch.no_grad():
        actor(td)  # the behaviour policy writes the action and its log-prob
    td["advantage"] = torch.randn(8, 1)
    td["value_target"] = torch.randn(8, 1)
    out = loss(td)
    # the data come from the current policy: the ratio is 1, no clipping applies, and the
    # clipped surrogate is the mean advantage
    torch.testing.assert_close(out["loss_objective"], -td["advantage"].mean())
    assert out["loss_critic"] > 0
    (out["loss_objective"] + out["loss_critic"]).backward()
    assert all(p.grad is not None for p in actor.parameters())
