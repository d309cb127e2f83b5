"""The two PettingZoo loops (parallel and AEC) behind one small interface.

A driver resets and steps the wrapped PettingZoo env and reports, per step, what each agent
got as plain dicts keyed by agent name (:class:`_AgentStep`). The wrapper turns that into
TensorDicts; the drivers know nothing of groups or tensors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _AgentStep:
    """What one reset or step reported, by agent name.

    Attributes:
        observations: the new observation of each agent that has one.
        rewards: the reward of each agent during the step (missing: 0).
        terminated: the termination flag reported for each agent (missing: unchanged).
        truncated: the truncation flag reported for each agent (missing: unchanged).
        acting: the agents that act from the new state (alive; in AEC, the selected one).
        over: the episode is over (no agent left).
    """

    observations: dict[str, Any] = field(default_factory=dict)
    rewards: dict[str, float] = field(default_factory=dict)
    terminated: dict[str, bool] = field(default_factory=dict)
    truncated: dict[str, bool] = field(default_factory=dict)
    acting: list[str] = field(default_factory=list)
    over: bool = False


class _ParallelDriver:
    """Drives a PettingZoo ``ParallelEnv``: every live agent acts at every step."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self._acting: list[str] = []

    def acting(self) -> list[str]:
        """The agents that act at the next step."""
        return self._acting

    def reset(self, seed: int | None) -> _AgentStep:
        observations, _ = self.env.reset(seed=seed)
        self._acting = list(self.env.agents)
        return _AgentStep(observations=observations, acting=self._acting, over=not self._acting)

    def step(self, actions: Mapping[str, Any]) -> _AgentStep:
        env = self.env
        observations, rewards, terminated, truncated, _ = env.step(
            {agent: actions[agent] for agent in self._acting}
        )
        self._acting = [
            agent
            for agent in env.agents
            if not (terminated.get(agent, False) or truncated.get(agent, False))
        ]
        return _AgentStep(
            observations=observations,
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            acting=self._acting,
            over=not self._acting,
        )

    def state(self) -> Any:
        return self.env.state()


class _AECDriver:
    """Drives a PettingZoo ``AECEnv``: one agent (``agent_selection``) acts per step.

    After the acting agent's step, agents that finished are observed one last time, then
    removed by the "dead steps" PettingZoo expects (``step(None)`` while the selected agent
    is done), so the next step always starts with a live agent selected.
    """

    def __init__(self, env: Any) -> None:
        self.env = env
        self._acting: list[str] = []

    def acting(self) -> list[str]:
        """The agent that acts at the next step (none once the episode is over)."""
        return self._acting

    def reset(self, seed: int | None) -> _AgentStep:
        env = self.env
        env.reset(seed=seed)
        out = _AgentStep()
        self._remove_finished(out)
        return self._finish(out)

    def step(self, actions: Mapping[str, Any]) -> _AgentStep:
        env = self.env
        env.step(actions[self._acting[0]])
        terminated, truncated = env.terminations, env.truncations
        out = _AgentStep(
            rewards=dict(env.rewards), terminated=dict(terminated), truncated=dict(truncated)
        )
        for agent in env.agents:
            if terminated[agent] or truncated[agent]:
                out.observations[agent] = env.observe(agent)
        if out.observations:
            self._remove_finished(out)
        return self._finish(out)

    def _finish(self, out: _AgentStep) -> _AgentStep:
        env = self.env
        agents = env.agents
        for agent in agents:
            if agent not in out.observations:
                out.observations[agent] = env.observe(agent)
        self._acting = [env.agent_selection] if agents else []
        out.acting = self._acting
        out.over = not agents
        return out

    def _remove_finished(self, out: _AgentStep) -> None:
        env = self.env
        while env.agents and (
            env.terminations.get(env.agent_selection, False)
            or env.truncations.get(env.agent_selection, False)
        ):
            env.step(None)
            for agent, reward in env.rewards.items():
                out.rewards[agent] = out.rewards.get(agent, 0.0) + reward

    def state(self) -> Any:
        return self.env.state()


__all__ = ["_AECDriver", "_AgentStep", "_ParallelDriver"]
