"""PettingZooWrapper: a PettingZoo env (parallel or AEC API) as an EnvBase."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import (
    ACTION,
    ACTION_MASK,
    DONE,
    MASK,
    RESET,
    REWARD,
    TERMINATED,
    TRUNCATED,
)
from rl_core.specs import Categorical, Composite, Unbounded
from rl_envs.libs._pettingzoo_drivers import _AECDriver, _AgentStep, _ParallelDriver
from rl_envs.libs._pettingzoo_groups import (
    _Group,
    build_groups,
    import_pettingzoo,
    resolve_group_map,
)
from rl_envs.libs._pettingzoo_spaces import leaf_codecs, value_at
from rl_envs.libs.group_map import MarlGroupMapType

STATE = "state"


@dataclass
class _Episode:
    """The wrapper's mutable state: per-agent flags (``[n, 1]`` per group, kept across steps
    because PettingZoo stops reporting finished agents), the last action masks, whether the
    episode is over, and the seed of the next reset."""

    terminated: dict[str, np.ndarray]
    truncated: dict[str, np.ndarray]
    action_masks: dict[str, torch.Tensor] = field(default_factory=dict)
    over: bool = True
    next_seed: int | None = None


class PettingZooWrapper(EnvBase):
    """Wraps a PettingZoo env, parallel or AEC (turn-based), with agents grouped under keys.

    Each group (see ``group_map``) is a TensorDict of batch size ``[n_agents]`` holding, per
    agent: ``observation``, ``action``, ``reward`` ``[n, 1]``, ``done``/``terminated``/
    ``truncated`` ``[n, 1]``, ``mask`` ``[n]`` (the agent acts from this state: it is alive and,
    with the AEC API, its turn) and ``action_mask`` ``[n, n_actions]`` when the env puts one in
    its observations (``{"observation": ..., "action_mask": ...}``). The root ``done``,
    ``terminated`` and ``truncated`` ``[1]`` say the episode is over: every agent is done
    (``terminated`` when every agent terminated, else ``truncated``).

    With the AEC API one agent acts per step: only its action is read, the others are ignored
    (their ``mask`` is False). Finished agents are removed with PettingZoo's dead steps inside
    ``step``; they keep ``done`` set and zeros as observation until the episode ends.

    :meth:`rand_action` draws legal moves from ``action_mask`` (rows without a legal move, the
    agents not acting, draw from every action). The action spec itself carries no mask: the
    legal moves change every step, and the current ones are in the ``action_mask`` entry.

    PettingZoo cannot reset single agents: a ``"_reset"`` mask under a group while the episode
    goes on (what ``step_and_maybe_reset`` writes when an agent dies) leaves the env as it is;
    the episode resets once every agent is done, or on ``reset()`` / a root ``"_reset"``.
    Stepping after the episode is over raises a ``RuntimeError``. The PettingZoo ``infos``
    are not returned.

    Args:
        env: a ``pettingzoo.ParallelEnv`` or ``pettingzoo.AECEnv`` instance.

    Keyword Args:
        return_state: add the global state (``env.state()``) as the root entry ``"state"``.
        group_map: ``None`` (one group ``"agents"`` when every agent has the same spaces,
            else one group per agent), a :class:`MarlGroupMapType`, or a dict
            ``{group: [agent names]}``. Agents of one group need values of equal shapes.
        use_mask: write the per-agent ``mask`` entry (required with the AEC API).
        categorical_actions: discrete actions as indices (``Categorical``) rather than
            one-hot vectors (``OneHot``).
        seed: seed of the first reset.
        device: where the TensorDicts live.

    Raises:
        ImportError: pettingzoo is not installed.
        TypeError: ``env`` is not a PettingZoo env, or a space is not supported.
        ValueError: a bad ``group_map``, agents of one group with values of different shapes,
            ``use_mask=False`` with the AEC API, or ``return_state`` without ``env.state()``.

    Examples:
        >>> from mpe2 import simple_spread_v3
        >>> from rl_envs.libs import PettingZooWrapper
        >>> env = PettingZooWrapper(simple_spread_v3.parallel_env(N=2, max_cycles=5), seed=0)
        >>> env.group_map
        {'agents': ['agent_0', 'agent_1']}
        >>> td = env.rollout(10)
        >>> td["next", "agents", "observation"].shape, td["next", "agents", "reward"].shape
        (torch.Size([5, 2, 12]), torch.Size([5, 2, 1]))
        >>> td["next", "done"].squeeze(-1).tolist()
        [False, False, False, False, True]
    """

    def __init__(
        self,
        env: Any,
        *,
        return_state: bool = False,
        group_map: MarlGroupMapType | Mapping[str, list[str]] | None = None,
        use_mask: bool = True,
        categorical_actions: bool = True,
        seed: int | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        name = type(self).__name__
        pettingzoo = import_pettingzoo(name)
        if isinstance(env, pettingzoo.ParallelEnv):
            driver: _ParallelDriver | _AECDriver = _ParallelDriver(env)
        elif isinstance(env, pettingzoo.AECEnv):
            driver = _AECDriver(env)
        else:
            raise TypeError(
                f"{name}: expected a pettingzoo ParallelEnv or AECEnv, got {type(env).__name__}. "
                f"Build one with e.g. simple_spread_v3.parallel_env() or tictactoe_v3.env()."
            )
        if not use_mask and isinstance(driver, _AECDriver):
            raise ValueError(
                f"{name}: use_mask=False is not possible with the AEC API: the mask says which "
                f"agent acts. Pass use_mask=True."
            )
        # An agent that died stays done when its group's flags are reset: the episode goes on
        # without it (TorchRL's wrapper allows this too).
        super().__init__(batch_size=(), device=device, allow_done_after_reset=True)
        self.parallel = isinstance(driver, _ParallelDriver)
        self._env = env
        self._driver = driver
        self.use_mask = use_mask
        self.return_state = return_state
        self.categorical_actions = categorical_actions
        agents = list(env.possible_agents)
        self.group_map = resolve_group_map(
            group_map,
            agents,
            {a: env.observation_space(a) for a in agents},
            {a: env.action_space(a) for a in agents},
            name,
        )
        self._groups = build_groups(env, self.group_map, name, categorical=categorical_actions)
        self._group_of = {a: g for g in self._groups for a in g.agents}
        self._state = self._state_codec(env, name) if return_state else None
        self._make_specs()
        # Per-agent flags persist across steps: PettingZoo stops reporting finished agents.
        self._episode = _Episode(
            terminated={g.name: np.zeros((len(g.agents), 1), dtype=bool) for g in self._groups},
            truncated={g.name: np.zeros((len(g.agents), 1), dtype=bool) for g in self._groups},
            next_seed=seed,
        )

    # ------------------------------------------------------------------ specs
    @staticmethod
    def _state_codec(env: Any, owner: str) -> Any:
        space = getattr(env, "state_space", None)
        if space is None:
            raise ValueError(
                f"{owner}: return_state=True, but {type(env).__name__} has no state_space "
                f"(no global state). Pass return_state=False."
            )
        [((), codec)] = leaf_codecs([space], f"{owner}, state")
        return codec

    def _make_specs(self) -> None:
        observation, action, reward, done = (Composite(shape=()) for _ in range(4))
        for group in self._groups:
            n = len(group.agents)
            observation[group.name] = group.observation_spec(use_mask=self.use_mask)
            action[group.name] = Composite({ACTION: group.action.spec}, shape=(n,))
            reward[group.name] = Composite({REWARD: Unbounded(shape=(n, 1))}, shape=(n,))
            flag = Categorical(2, shape=(n, 1), dtype=torch.bool)
            done[group.name] = Composite(
                {key: flag.clone() for key in (DONE, TERMINATED, TRUNCATED)}, shape=(n,)
            )
        if self._state is not None:
            observation[STATE] = self._state.spec[0]
        for key in (DONE, TERMINATED, TRUNCATED):
            done[key] = Categorical(2, shape=(1,), dtype=torch.bool)
        self.observation_spec = observation
        self.action_spec = action
        self.reward_spec = reward
        self.done_spec = done
        # Private copies used to sample legal moves (their mask changes per call).
        self._sampling_specs = {g.name: g.action.spec.clone() for g in self._groups}

    # ------------------------------------------------------------------ EnvBase contract
    def _set_seed(self, seed: int | None) -> None:
        self._episode.next_seed = seed

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        if tensordict is not None and self._agent_reset_only(tensordict):
            return tensordict.select(*self.observation_keys, *self.done_keys, strict=False)
        seed = kwargs.pop("seed", None)
        if kwargs:
            raise TypeError(
                f"{type(self).__name__}.reset: unexpected arguments {sorted(kwargs)}; only "
                f"seed=... is passed to the PettingZoo env."
            )
        episode = self._episode
        # A seed from set_seed serves the next reset only; an explicit one replaces it.
        seed, episode.next_seed = (episode.next_seed if seed is None else seed), None
        for flags in (*episode.terminated.values(), *episode.truncated.values()):
            flags[:] = False
        return self._output(self._driver.reset(seed), with_reward=False)

    def _agent_reset_only(self, tensordict: TensorDictBase) -> bool:
        """A reset asked for some agents only, while the episode goes on: nothing to do."""
        root = tensordict.get(RESET, None)
        if self._episode.over or (root is not None and bool(root.any())):
            return False
        return any(tensordict.get((g.name, RESET), None) is not None for g in self._groups)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._episode.over:
            raise RuntimeError(
                f"{type(self).__name__}.step: the episode is over (every agent is done) or the "
                f"env was never reset; call reset() first."
            )
        actions: dict[str, Any] = {}
        acting_groups = {self._group_of[a].name: self._group_of[a] for a in self._driver.acting()}
        for group in acting_groups.values():
            values = group.action.decode(tensordict.get((group.name, ACTION)))
            actions.update(zip(group.agents, values))
        return self._output(self._driver.step(actions), with_reward=True)

    def _output(self, result: _AgentStep, *, with_reward: bool) -> TensorDictBase:
        episode = self._episode
        acting = set(result.acting)
        out: dict[str, Any] = {}
        all_terminated = True
        for group in self._groups:
            out[group.name] = self._group_output(group, result, acting, with_reward=with_reward)
            all_terminated = all_terminated and bool(episode.terminated[group.name].all())
        over = result.over
        terminated = over and all_terminated
        out[DONE] = torch.from_numpy(np.array([over]))
        out[TERMINATED] = torch.from_numpy(np.array([terminated]))
        out[TRUNCATED] = torch.from_numpy(np.array([over and not terminated]))
        if self._state is not None:
            out[STATE] = self._state.encode([self._driver.state()])[0]
        episode.over = over
        return TensorDict(out, batch_size=(), device=self.device)

    def _group_output(
        self, group: _Group, result: _AgentStep, acting: set[str], *, with_reward: bool
    ) -> TensorDict:
        agents = group.agents
        raw = [result.observations.get(a) for a in agents]
        entries: dict[str, Any] = {}
        for key, path, codec in group.observations:
            value = codec.encode([value_at(r, path) for r in raw])
            node = entries
            for name in key[:-1]:
                node = node.setdefault(name, {})
            node[key[-1]] = value
        if group.mask_size is not None:
            masks = group.encode_action_mask([value_at(r, (ACTION_MASK,)) for r in raw])
            entries[ACTION_MASK] = masks
            self._episode.action_masks[group.name] = masks
        if self.use_mask:
            entries[MASK] = torch.from_numpy(np.array([a in acting for a in agents], dtype=bool))
        terminated = self._episode.terminated[group.name]
        truncated = self._episode.truncated[group.name]
        for flags, reported in ((terminated, result.terminated), (truncated, result.truncated)):
            if reported:
                for i, agent in enumerate(agents):
                    if agent in reported:
                        flags[i, 0] = reported[agent]
        if result.over:
            # Agents still running when the episode ends were cut short.
            truncated |= ~(terminated | truncated)
        entries[TERMINATED] = torch.from_numpy(terminated.copy())
        entries[TRUNCATED] = torch.from_numpy(truncated.copy())
        entries[DONE] = torch.from_numpy(terminated | truncated)
        if with_reward:
            rewards = np.array([[result.rewards.get(a, 0.0)] for a in agents], dtype=np.float32)
            entries[REWARD] = torch.from_numpy(rewards)
        return TensorDict(entries, batch_size=(len(agents),))

    # ------------------------------------------------------------------ public API
    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Writes random actions; with action masks, legal moves only.

        The mask is read from ``(group, "action_mask")`` in ``tensordict`` (else the last one
        the env returned). Agents without any legal move (not their turn) draw from every
        action: their action is ignored.

        Args:
            tensordict: where to write the actions; ``None`` makes a new TensorDict.

        Returns:
            ``tensordict`` with ``(group, "action")`` for every group.
        """
        if tensordict is None:
            tensordict = TensorDict(batch_size=self.batch_size, device=self.device)
        for group in self._groups:
            spec = self._sampling_specs[group.name]
            mask = None
            if group.mask_size is not None:
                mask = tensordict.get((group.name, ACTION_MASK), None)
                if mask is None:
                    mask = self._episode.action_masks.get(group.name)
            if mask is None or not hasattr(spec, "update_mask"):
                action = spec.rand()
            else:
                mask = mask.to(torch.bool) | ~mask.any(-1, keepdim=True)
                spec.update_mask(mask)
                try:
                    action = spec.rand()
                finally:
                    spec.update_mask(None)
            tensordict.set((group.name, ACTION), action.to(self.device) if self.device else action)
        return tensordict

    def close(self) -> None:
        """Closes the PettingZoo env (once)."""
        if not self.is_closed:
            self._env.close()
        super().close()


__all__ = ["PettingZooWrapper"]
