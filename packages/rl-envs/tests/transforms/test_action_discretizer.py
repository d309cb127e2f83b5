import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_envs import GymWrapper
from rl_envs.transforms import ActionDiscretizer, FlattenAction


class GridAction(gym.Env):
    """Observes the sum of its (2, 3) action; episodes last 5 steps."""

    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(self):
        self.observation_space = gym.spaces.Box(-6, 6, (1,))
        self.action_space = gym.spaces.Box(-1, 1, (2, 3))
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.steps += 1
        obs = np.array([action.sum()], dtype=np.float32)
        return obs, 0.0, False, self.steps >= 5, {}


def test_discretized_pendulum(pendulum):
    env = TransformedEnv(pendulum, ActionDiscretizer(5))
    check_env_specs(env)
    assert env.action_spec.n == 5
    td = env.reset().set("action", torch.tensor([4]))
    assert env.transform.inv(td)["action"].item() == pytest.approx(1.6)
    traj = env.rollout(4)
    assert traj["action"].dtype == torch.int64


def test_flatten_action_of_a_2d_box():
    env = TransformedEnv(GymWrapper(GridAction()), FlattenAction())
    check_env_specs(env)
    assert env.action_spec.shape == (6,)
    traj = env.rollout(3, lambda td: td.set("action", torch.arange(6.0) / 10))
    assert traj["next", "observation"][-1].item() == pytest.approx(1.5)


def test_on_buffer_batches_and_errors(cartpole):
    t = ActionDiscretizer(2)
    t.low, t.high = torch.zeros(1), torch.ones(1)
    out = t.inv(TensorDict(action=torch.tensor([[0], [1]]), batch_size=[2]))
    assert out["action"].squeeze(-1).tolist() == [0.25, 0.75]
    with pytest.raises(ValueError, match="ActionDiscretizer: expected num_intervals >= 2"):
        ActionDiscretizer(1)
    env = TransformedEnv(cartpole, ActionDiscretizer(3))
    with pytest.raises(TypeError, match="ActionDiscretizer: the action 'action' has a"):
        _ = env.action_spec
    env = TransformedEnv(cartpole, FlattenAction(ndim=3))
    with pytest.raises(ValueError, match="FlattenAction: the action 'action' of shape"):
        _ = env.action_spec
