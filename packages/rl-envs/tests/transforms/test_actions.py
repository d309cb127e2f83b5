import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_envs import GymWrapper
from rl_envs.transforms import ActionMask, ActionScaling


class MaskedChoice(gym.Env):
    """Four choices, of which a random half is legal at each step; an illegal one terminates."""

    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(self):
        self.observation_space = gym.spaces.Dict(
            {"observation": gym.spaces.Box(0, 1, (2,)), "action_mask": gym.spaces.MultiBinary(4)}
        )
        self.action_space = gym.spaces.Discrete(4)
        self.mask = np.ones(4, dtype=np.int8)

    def _obs(self):
        self.mask = np.zeros(4, dtype=np.int8)
        self.mask[self.np_random.choice(4, 2, replace=False)] = 1
        return {
            "observation": self.np_random.random(2).astype(np.float32),
            "action_mask": self.mask,
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self._obs(), {}

    def step(self, action):
        legal = bool(self.mask[int(action)])
        return self._obs(), 1.0, not legal, False, {}


def test_action_scaling_on_pendulum(pendulum):
    env = TransformedEnv(pendulum, ActionScaling())
    check_env_specs(env)
    assert (env.action_spec.low.item(), env.action_spec.high.item()) == (-1.0, 1.0)
    td = env.reset().set("action", torch.tensor([0.5]))
    assert env.transform.inv(td)["action"].item() == pytest.approx(1.0)  # [-2, 2] bounds
    td = TensorDict(action=torch.tensor([[-1.0], [1.0]]), batch_size=[2])
    assert env.transform.inv(td)["action"].squeeze(-1).tolist() == [-2.0, 2.0]


def test_action_scaling_needs_bounded_float_actions(cartpole):
    env = TransformedEnv(cartpole, ActionScaling())
    with pytest.raises(TypeError, match="ActionScaling: the action 'action' has a"):
        _ = env.action_spec


def test_action_mask_makes_random_actions_legal():
    env = TransformedEnv(GymWrapper(MaskedChoice(), categorical_action_encoding=True), ActionMask())
    env.set_seed(0)
    check_env_specs(env)
    traj = env.rollout(50)
    assert traj.batch_size == (50,)  # no illegal action terminated the episode
    chosen = traj["action_mask"].gather(-1, traj["action"].long().reshape(50, 1))
    assert chosen.bool().all()


def test_action_mask_errors(cartpole, pendulum):
    env = TransformedEnv(cartpole, ActionMask())
    with pytest.raises(KeyError, match="ActionMask: the env has no 'action_mask' observation"):
        env.reset()
    env = TransformedEnv(pendulum, ActionMask())
    with pytest.raises(TypeError, match="ActionMask: the action 'action' has a"):
        _ = env.action_spec
