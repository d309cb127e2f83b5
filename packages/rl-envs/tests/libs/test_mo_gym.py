"""MOGymEnv / MOGymWrapper on mo-gymnasium tasks (vector rewards)."""

import numpy as np
import pytest
import torch

from rl_core.envs import check_env_specs
from rl_core.testing import EnvConformanceSuite
from rl_envs import MOGymEnv, MOGymWrapper

from ._batched_checks import ParallelEnv, SerialEnv, check_batched_rollouts

mo_gymnasium = pytest.importorskip("mo_gymnasium", reason='pip install "rl-envs[mo-gymnasium]"')
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


class TestDeepSeaTreasure(EnvConformanceSuite):
    def make_env(self):
        return MOGymEnv("deep-sea-treasure-v0")


class TestMountainCarCategorical(EnvConformanceSuite):
    def make_env(self):
        return MOGymEnv("mo-mountaincar-v0", categorical_action_encoding=True, max_episode_steps=30)


def test_the_reward_is_the_objective_vector_of_the_task():
    env = MOGymEnv("mo-mountaincar-v0", categorical_action_encoding=True)
    assert env.reward_spec.shape == (3,)
    env.set_seed(0)
    # Push right (action 2) each step: mo-mountaincar's objectives are time (-1 a step),
    # reverse (-1 when pushing left) and forward (-1 when pushing right).
    traj = env.rollout(5, lambda td: td.set("action", torch.tensor(2)))
    expected = torch.tensor([[-1.0, 0.0, -1.0]] * 5)
    torch.testing.assert_close(traj["next", "reward"], expected)


def test_steps_match_mo_gymnasium_and_seeding_reproduces():
    env = MOGymEnv("deep-sea-treasure-v0", categorical_action_encoding=True)
    ref = mo_gymnasium.make("deep-sea-treasure-v0")
    env.set_seed(3)
    moves = [1, 1, 3, 1, 1]  # down, down, right, down, down
    taken = iter(moves)
    traj = env.rollout(5, lambda td: td.set("action", torch.tensor(next(taken))))
    obs, _ = ref.reset(seed=3)
    np.testing.assert_array_equal(traj["observation"][0].numpy(), obs)
    for t, move in enumerate(moves[: traj.batch_size[0]]):
        obs, reward, terminated, _, _ = ref.step(move)
        np.testing.assert_array_equal(traj["next", "observation"][t].numpy(), obs)
        np.testing.assert_array_equal(traj["next", "reward"][t].numpy(), reward)
        assert traj["next", "terminated"][t].item() == terminated


def test_wrapper_one_hot_actions_and_errors():
    env = MOGymWrapper(mo_gymnasium.make("deep-sea-treasure-v0"))
    assert env.action_spec.shape == (4,)
    check_env_specs(env)
    import gymnasium

    with pytest.raises(TypeError, match="expected a mo-gymnasium env with a vector reward_space"):
        MOGymWrapper(gymnasium.make("CartPole-v1"))
    with pytest.raises(ValueError, match="unknown task 'deep-sea-v9'"):
        MOGymEnv("deep-sea-v9")


@pytest.mark.parametrize("batched", [SerialEnv, ParallelEnv])
def test_serial_and_parallel_envs(batched):
    check_batched_rollouts(lambda: MOGymEnv("minecart-v0"), batched)
