"""Fixtures for the transform tests: real gymnasium envs (CartPole, Pendulum, an Atari game)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

gym = pytest.importorskip("gymnasium")


@pytest.fixture(autouse=True)
def _seeded_torch():
    """Random actions come from the torch RNG: seed it so that statistics are reproducible."""
    torch.manual_seed(0)


@pytest.fixture
def cartpole():
    from rl_envs import GymEnv

    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    return env


@pytest.fixture
def pendulum():
    from rl_envs import GymEnv

    env = GymEnv("Pendulum-v1")
    env.set_seed(0)
    return env


@pytest.fixture
def pong():
    """A pixel env: uint8 frames [210, 160, 3] under "observation"."""
    pytest.importorskip("ale_py")
    from rl_envs import GymEnv

    env = GymEnv("ALE/Pong-v5", frameskip=4, repeat_action_probability=0.0)
    env.set_seed(0)
    return env


@pytest.fixture
def buffer_batch() -> TensorDict:
    """A replay-buffer-like batch of transitions [8]: observation, action, reward, done."""
    n, obs_dim = 8, 3
    obs = torch.randn(n, obs_dim)
    return TensorDict(
        {
            "observation": obs,
            "action": torch.randn(n, 1),
            "next": {
                "observation": obs + 1,
                "reward": torch.randn(n, 1) * 5,
                "done": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        batch_size=[n],
    )
