"""Fixtures for the gymnasium wrapper tests: headless rendering and small custom envs."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")


@pytest.fixture(autouse=True)
def _headless_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    """pygame renders off-screen (classic-control ``rgb_array`` frames)."""
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")


class EchoEnv(gym.Env):
    """Observes the action it was given: encoding an action and decoding an observation of
    the same space must give the action back.

    Rewards count the steps; an episode terminates after ``horizon`` steps. The info dict
    holds ``steps`` (an int), ``half`` (a bool) and ``pair`` (a float array).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, space: Any, horizon: int = 4) -> None:
        self.observation_space = space
        self.action_space = space
        self.horizon = horizon
        self.steps = 0

    def _info(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "half": self.steps * 2 >= self.horizon,
            "pair": np.array([self.steps, -self.steps], dtype=np.float32),
            "_private": 1,
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        self.steps = 0
        return self.observation_space.sample(), self._info()

    def step(self, action: Any):
        self.steps += 1
        terminated = self.steps >= self.horizon
        return action, float(self.steps), terminated, False, self._info()


@pytest.fixture
def echo_env() -> type[EchoEnv]:
    return EchoEnv
