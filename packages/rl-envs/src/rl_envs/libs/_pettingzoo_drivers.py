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

    def acting(self) -> list[str]:
        return list(self.env.agents)

    def reset(self, seed: int | None) -> _AgentStep:
        observations, _ = self.env.reset(seed=seed)
        agents = list(self.env.agents)
        return _AgentStep(observations=dict(observations), acting=agents, over=not agents)

    def step(self, actions: Mapping[str, Any]) -> _AgentStep:
        live = self.env.agents
        observations, rewards, terminated, truncated, _ = self.env.step(
            {agent: actions[agent] for agent in live}
        )
        acting = [
            agent
            for agent in self.env.agents
            if not (terminated.get(agent, False) or truncated.get(agent, False))
        ]
        return _AgentStep(
            observations=observations,
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            acting=acting,
            over=not acting,
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

    def acting(self) -> list[str]:
        env = self.env
        return [env.agent_selection] if env.agents else []

    def reset(self, seed: int | None) -> _AgentStep:
        env = self.env
        env.reset(seed=seed)
        out = _AgentStep()
        self._remove_finished(out)
        for agent in env.agents:
            out.observations[agent] = env.observe(agent)
        out.acting = self.acting()
        out.over = not env.agents
        return out

    def step(self, actions: Mapping[str, Any]) -> _AgentStep:
        env = self.env
        env.step(actions[env.agent_selection])
        out = _AgentStep(
            rewards=dict(env.rewards),
            terminated=dict(env.terminations),
            truncated=dict(env.truncations),
        )
        for agent in env.agents:
            if out.terminated.get(agent, False) or out.truncated.get(agent, False):
                out.observations[agent] = env.observe(agent)
        self._remove_finished(out)
        for agent in env.agents:
            if agent not in out.observations:
                out.observations[agent] = env.observe(agent)
        out.acting = self.acting()
        out.over = not env.agents
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
