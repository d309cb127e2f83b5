"""GymLikeEnv on a plain Python object with gym's API (no gymnasium): a random walk."""

import numpy as np
import pytest
import torch

from rl_core import Categorical, Composite, Unbounded, check_env_specs
from rl_envs.libs import InfoDictReader
from rl_envs.libs.gym_like import GymLikeEnv


class Walk:
    """Position starts at a seeded draw in [0, 3); action 0/1 moves -1/+1; terminated at +-5,
    truncated after `limit` steps; info holds the step number."""

    def __init__(self, limit=100, old_api=False):
        self.limit, self.old_api = limit, old_api
        self.rng = np.random.default_rng(0)

    def reset(self, seed=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.pos, self.t = int(self.rng.integers(0, 3)), 0
        return np.array([self.pos], dtype=np.float64), {"t": 0}

    def step(self, action):
        self.pos += 1 if action == 1 else -1
        self.t += 1
        terminated, truncated = abs(self.pos) >= 5, self.t >= self.limit
        obs = np.array([self.pos], dtype=np.float64)
        if self.old_api:
            return obs, float(self.pos), terminated or truncated, {"t": self.t}
        return obs, float(self.pos), terminated, truncated, {"t": self.t}


class WalkEnv(GymLikeEnv):
    def _make_specs(self, env):
        self.observation_spec = Composite(observation=Unbounded(shape=(1,)))
        self.action_spec = Categorical(2, shape=())
        self.reward_spec = Unbounded(shape=(1,))


def _right(td):
    return td.set("action", torch.tensor(1))


def test_a_rollout_equals_the_object_driven_by_hand():
    env = WalkEnv(Walk())
    check_env_specs(env)
    env.set_seed(7)
    traj = env.rollout(10, _right)
    walk = Walk()
    pos = walk.reset(seed=7)[0][0]
    expected = [pos + k for k in range(1, 11) if pos + k - 1 < 5][: len(traj)]
    assert traj["next", "observation"][:, 0].tolist() == expected
    assert traj["next", "reward"][:, 0].tolist() == expected
    assert traj["next", "terminated"][-1].item() == (expected[-1] >= 5)
    assert traj["next", "observation"].dtype == torch.float32  # cast to the spec


def test_old_api_truncation_and_info_reader():
    env = WalkEnv(Walk(limit=3, old_api=True))
    env.set_info_dict_reader(InfoDictReader(["t"], spec=[Unbounded(shape=(), dtype=torch.int64)]))
    check_env_specs(env)
    traj = env.rollout(10, lambda td: td.set("action", torch.tensor(0)))
    assert traj.batch_size == (3,)
    assert traj["next", "t"].tolist() == [1, 2, 3]
    # the 4-tuple's done is read as terminated
    assert traj["next", "terminated"][:, 0].tolist() == [False, False, True]
    assert traj["next", "done"][:, 0].tolist() == [False, False, True]


def test_errors():
    with pytest.raises(TypeError, match=r"expected an object with gym's reset\(\) and step\(\)"):
        WalkEnv(object())
    with pytest.raises(ValueError, match="the reader has no specs"):
        WalkEnv(Walk()).set_info_dict_reader(InfoDictReader(["t"]))
