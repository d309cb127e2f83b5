"""rl_envs.testing's vector and image mock envs: specs, the state arithmetic, the policies."""

import pytest
import torch

from rl_core import check_env_specs
from rl_envs.testing import (
    ContinuousActionConvMockEnv,
    ContinuousActionConvMockEnvNumpy,
    ContinuousActionVecMockEnv,
    DiscreteActionConvMockEnv,
    DiscreteActionConvMockEnvNumpy,
    DiscreteActionConvPolicy,
    DiscreteActionVecMockEnv,
    DiscreteActionVecPolicy,
    EnvThatDoesNothing,
    EnvWithScalarAction,
    MockBatchedLockedEnv,
    MockSerialEnv,
)

MOCKS = {
    DiscreteActionVecMockEnv: ("observation", (7,)),
    ContinuousActionVecMockEnv: ("observation", (7,)),
    DiscreteActionConvMockEnv: ("pixels", (1, 7, 7)),
    ContinuousActionConvMockEnv: ("pixels", (1, 7, 7)),
    DiscreteActionConvMockEnvNumpy: ("pixels", (7, 7, 3)),
    ContinuousActionConvMockEnvNumpy: ("pixels", (7, 7, 3)),
}


@pytest.mark.parametrize("batch_size", [[], [2]])
@pytest.mark.parametrize("cls", list(MOCKS), ids=lambda c: c.__name__)
def test_mock_env_specs(cls, batch_size):
    env = cls(batch_size=batch_size)
    check_env_specs(env)
    key, shape = MOCKS[cls]
    assert env.rollout(3)["next", key].shape == (*batch_size, 3, *shape)
    assert (env.custom_fun(), env.custom_attr, env.custom_prop) == (0, 1, 2)


def test_discrete_vec_mock_env_adds_the_action_over_100():
    env = DiscreteActionVecMockEnv(seed=100)  # counter 100 % 17 = 15, 16 after the reset
    traj = env.rollout(3, DiscreteActionVecPolicy())
    # the policy picks the entry after the first largest: 1, then 2, then 2 again
    assert traj["action"].argmax(-1).tolist() == [1, 2, 2]
    expected = torch.full((7,), 16.0)
    expected[1] += 0.01
    expected[2] += 0.02
    torch.testing.assert_close(traj["next", "observation"][-1], expected)
    assert traj["next", "reward"].sum() == 0
    assert not traj["next", "done"].any()


def test_discrete_vec_mock_env_refuses_a_non_one_hot_action():
    env = DiscreteActionVecMockEnv()
    td = env.reset().set("action", torch.zeros(7, dtype=torch.bool))
    with pytest.raises(ValueError, match="expected a one-hot action"):
        env.step(td)


def test_discrete_vec_mock_env_rewards_reaching_the_next_counter():
    env = DiscreteActionVecMockEnv(seed=0, categorical_action_encoding=True)
    td = env.reset()  # counter 1: every entry is 1.0; 100 steps of +0.01 on entry 3 reach 2.0
    for _ in range(100):
        td = env.step(td.set("action", torch.tensor(3)))["next"]
    assert td["reward"].item() == 1.0
    assert td["observation"][3].item() == pytest.approx(2.0)


def test_conv_mock_env_shows_the_state_on_the_diagonal():
    env = DiscreteActionConvMockEnv()
    traj = env.rollout(2, DiscreteActionConvPolicy())
    pixels = traj["next", "pixels"][-1, 0]
    assert torch.equal(pixels, torch.diag(pixels.diagonal()))
    assert pixels.diagonal()[1].item() == pytest.approx(16.01)


def test_continuous_conv_mock_env_pixel_shape():
    env = ContinuousActionConvMockEnv(pixel_shape=[3, 5, 5])
    check_env_specs(env)
    assert env.action_spec.shape == (5,)
    with pytest.raises(ValueError, match=r"pixel_shape as \(channels, side, side\), got \(3, 5\)"):
        ContinuousActionConvMockEnv(pixel_shape=[3, 5])


def test_mock_batched_locked_env_counts_steps():
    env = MockBatchedLockedEnv(batch_size=[2])
    check_env_specs(env)
    env.set_seed(18)  # counter 18 % 17 = 1
    traj = env.rollout(3)
    assert traj["next", "observation"].squeeze(-1).tolist() == [[2.0, 3.0, 4.0]] * 2
    assert traj["next", "reward"].squeeze(-1).tolist() == [[2.0, 3.0, 4.0]] * 2
    with pytest.raises(ValueError, match="expected a seed >= 1, got 0"):
        env.set_seed(0)


def test_mock_serial_env_rand_step_steps():
    env = MockSerialEnv()
    env.set_seed(1)
    assert env.rand_step()["next", "observation"].tolist() == [2.0]


def test_env_that_does_nothing_rolls_out():
    env = EnvThatDoesNothing()
    check_env_specs(env)
    assert env.rollout(3).batch_size == (3,)


@pytest.mark.parametrize("singleton", [False, True])
def test_env_with_scalar_action(singleton):
    env = EnvWithScalarAction(singleton=singleton, batch_size=[2])
    check_env_specs(env)
    assert env.action_spec.shape == ((2, 1) if singleton else (2,))
    traj = env.rollout(3)
    assert traj["action"].shape == ((2, 3, 1) if singleton else (2, 3))
    assert traj["next", "observation"].shape == (2, 3, 3)
