"""VmasWrapper and VmasEnv: VMAS, the vectorized multi-agent simulator, as an EnvBase."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, OBSERVATION, RESET, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Bounded, Categorical, Composite, OneHot, TensorSpec, Unbounded
from rl_envs.libs.group_map import MarlGroupMapType, check_marl_grouping

INFO = "info"
_INSTALL = 'pip install "rl-envs[vmas]"'


def _import_vmas(owner: str) -> Any:
    try:
        import vmas
    except ImportError as err:
        raise ImportError(f"{owner} needs vmas: {_INSTALL}") from err
    return vmas


def _default_group_map(agent_names: Sequence[str]) -> dict[str, list[str]]:
    """TorchRL's default VMAS grouping: agents named ``<prefix>_<number>`` by prefix.

    When one name does not follow that pattern, every agent goes to ``"agents"``. The group
    ``"agent"`` (VMAS's usual ``agent_0``, ``agent_1``, ...) is named ``"agents"``.
    """
    groups: dict[str, list[str]] = {}
    for name in agent_names:
        prefix, _, number = name.rpartition("_")
        if not prefix or not number.isdigit():
            return MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(agent_names)
        groups.setdefault(prefix, []).append(name)
    if "agent" in groups:
        groups["agents"] = groups.pop("agent")
    return groups


@dataclass
class _Group:
    """One group of agents: its name, the agents' indices in VMAS's agent list and how its
    actions are read (``"continuous"``, ``"categorical"`` or ``"one_hot"``)."""

    name: str
    agents: list[str]
    indices: list[int]
    action_kind: str
    info_keys: list[str]


class VmasWrapper(EnvBase):
    """Wraps a ``vmas`` environment (batched, torch-native) with its agents grouped under keys.

    The batch size is ``[num_envs]``. Each group (see ``group_map``) holds, with batch size
    ``[num_envs, n_agents]``: ``observation`` (a nested TensorDict for dict observations),
    ``info`` (the scenario's per-agent info tensors, ``[num_envs, n, 1]`` for scalars),
    ``action``, ``reward`` ``[num_envs, n, 1]`` and ``done``/``terminated``/``truncated``
    ``[num_envs, n, 1]``. The root ``done``/``terminated``/``truncated`` are ``[num_envs, 1]``.

    VMAS ends the episode of a sub-env for all its agents at once, so the group flags repeat
    the root flag for every agent (TorchRL 0.14 writes the root flags only; the group copies
    let multi-agent losses read ``(group, "done")``). As in TorchRL, reaching ``max_steps``
    sets ``terminated`` (not ``truncated``, which stays False).

    Continuous actions are ``Bounded`` by the agents' ``u_range`` (VMAS rejects values outside
    it); discrete ones are ``Categorical`` indices or, with ``categorical_actions=False``,
    ``OneHot`` vectors. ``reset`` with ``"_reset"`` masks (root ``[num_envs, 1]`` or group
    ``[num_envs, n, 1]``) resets only the sub-envs masked, with VMAS's ``reset_at``.

    VMAS draws from one random state shared by all its envs; each wrapper swaps in its own
    around every VMAS call, so :meth:`set_seed` seeds this env only and two envs seeded alike
    produce the same episodes whatever runs in between.

    Args:
        env: a ``vmas.simulator.environment.Environment`` (from ``vmas.make_env``) without a
            wrapper.

    Keyword Args:
        categorical_actions: discrete actions as indices (``Categorical``) rather than
            one-hot vectors (``OneHot``).
        group_map: ``None`` (agents named ``<prefix>_<n>`` grouped by prefix, ``agent_*``
            under ``"agents"``), a :class:`MarlGroupMapType` or ``{group: [agent names]}``.
            Agents of one group need observations and actions of the same shapes.
        seed: seeds VMAS's random generator now (see :meth:`set_seed`).
        device: where the TensorDicts live; the simulation is moved there. Defaults to the
            env's device.

    Raises:
        ImportError: vmas is not installed.
        TypeError: ``env`` is not a VMAS environment, or it has multi-discrete actions.
        ValueError: a bad ``group_map`` or a group whose agents have different shapes.

    Examples:
        >>> import vmas
        >>> from rl_envs.libs import VmasWrapper
        >>> env = VmasWrapper(vmas.make_env("balance", num_envs=4, max_steps=5), seed=0)
        >>> env.group_map, env.batch_size
        ({'agents': ['agent_0', 'agent_1', 'agent_2']}, torch.Size([4]))
        >>> td = env.rollout(5)
        >>> td["next", "agents", "observation"].shape, td["next", "agents", "reward"].shape
        (torch.Size([4, 5, 3, 16]), torch.Size([4, 5, 3, 1]))
        >>> td["next", "done"][:, -1].squeeze(-1).tolist()
        [True, True, True, True]
    """

    def __init__(
        self,
        env: Any,
        *,
        categorical_actions: bool = True,
        group_map: MarlGroupMapType | Mapping[str, list[str]] | None = None,
        seed: int | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        name = type(self).__name__
        vmas = _import_vmas(name)
        if not isinstance(env, vmas.simulator.environment.Environment):
            raise TypeError(
                f"{name}: expected a vmas Environment (vmas.make_env(scenario, num_envs=...) "
                f"with wrapper=None), got {type(env).__name__}."
            )
        if getattr(env, "multidiscrete_actions", False):
            raise TypeError(
                f"{name}: multi-discrete actions are not supported; build the env with "
                f"multidiscrete_actions=False (one discrete action per agent)."
            )
        if getattr(env, "terminated_truncated", False):
            raise ValueError(
                f"{name}: build the env with terminated_truncated=False: reaching max_steps "
                f"sets 'terminated', as in TorchRL."
            )
        if device is not None and torch.device(device) != env.device:
            env.to(torch.device(device))
        super().__init__(batch_size=(env.num_envs,), device=env.device)
        self._env = env
        # VMAS keeps one random state (torch, numpy, random) for all its envs, a class
        # attribute; each wrapper swaps in its own so that envs seeded alike run alike.
        self._shared_random_state = type(env).vmas_random_state
        self._random_state = list(self._shared_random_state)
        self.categorical_actions = categorical_actions
        self.continuous_actions = bool(env.continuous_actions)
        self.max_steps = env.max_steps
        self.num_envs = env.num_envs
        agents = [agent.name for agent in env.agents]
        if group_map is None:
            group_map = _default_group_map(agents)
        elif isinstance(group_map, MarlGroupMapType):
            group_map = group_map.get_group_map(agents)
        check_marl_grouping(group_map, agents)
        self.group_map = {group: list(members) for group, members in group_map.items()}
        self._groups: list[_Group] = []
        self._make_specs(agents)
        if seed is not None:
            self.set_seed(seed)

    # ------------------------------------------------------------------ specs
    def _make_specs(self, agents: list[str]) -> None:
        env, name = self._env, type(self).__name__
        batch = self.batch_size
        with self._own_random_state():
            infos = env.get_from_scenario(
                get_observations=False, get_rewards=False, get_infos=True, get_dones=False
            )[0]
        observation, action, reward, done = (Composite(shape=batch) for _ in range(4))
        for group, members in self.group_map.items():
            indices = [agents.index(a) for a in members]
            shape = (*batch, len(members))
            obs_spec = _same(
                [_observation_spec(env.observation_space[i], shape) for i in indices],
                f"{name}: group {group!r}, observations",
            )
            act_spec, kind = _action_spec(
                [env.action_space[i] for i in indices], shape, self.categorical_actions, group, name
            )
            info_spec = _info_spec([infos[i] for i in indices], shape)
            entries: dict[str, TensorSpec] = {OBSERVATION: obs_spec}
            if info_spec is not None:
                entries[INFO] = info_spec
            observation[group] = Composite(entries, shape=shape)
            action[group] = Composite({ACTION: act_spec}, shape=shape)
            reward[group] = Composite({REWARD: Unbounded(shape=(*shape, 1))}, shape=shape)
            flag = Categorical(2, shape=(*shape, 1), dtype=torch.bool)
            done[group] = Composite(
                {key: flag.clone() for key in (DONE, TERMINATED, TRUNCATED)}, shape=shape
            )
            info_keys = [] if info_spec is None else list(info_spec.keys())
            self._groups.append(_Group(group, members, indices, kind, info_keys))
        for key in (DONE, TERMINATED, TRUNCATED):
            done[key] = Categorical(2, shape=(*batch, 1), dtype=torch.bool)
        self.observation_spec = observation
        self.action_spec = action
        self.reward_spec = reward
        self.done_spec = done

    # ------------------------------------------------------------------ EnvBase contract
    @contextlib.contextmanager
    def _own_random_state(self) -> Iterator[None]:
        """Runs VMAS calls with this wrapper's random state in VMAS's shared one."""
        shared = self._shared_random_state
        saved = list(shared)
        shared[:] = self._random_state
        try:
            yield
        finally:
            self._random_state = list(shared)
            shared[:] = saved

    def _set_seed(self, seed: int | None) -> None:
        # VMAS's random state (torch, numpy, random) is separate from the global one.
        with self._own_random_state():
            self._env.seed(seed)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        if kwargs:
            raise TypeError(
                f"{type(self).__name__}.reset: unexpected arguments {sorted(kwargs)}; seed the "
                f"env with set_seed(seed) instead."
            )
        mask = None if tensordict is None else self._reset_mask(tensordict)
        with self._own_random_state():
            if mask is None or bool(mask.all()):
                self._env.reset(return_observations=False)
            else:
                for index in mask.nonzero().flatten().tolist():
                    self._env.reset_at(index, return_observations=False)
            obs, infos = self._env.get_from_scenario(
                get_observations=True, get_rewards=False, get_infos=True, get_dones=False
            )
        flags = torch.zeros((*self.batch_size, 1), dtype=torch.bool, device=self.device)
        return self._output(obs, None, infos, flags)

    def _reset_mask(self, tensordict: TensorDictBase) -> torch.Tensor | None:
        """The sub-envs to reset (``[num_envs]``), from the root and group ``"_reset"``."""
        mask = None
        root = tensordict.get(RESET, None)
        if root is not None:
            mask = root.reshape(self.num_envs, -1).any(-1)
        for group in self._groups:
            value = tensordict.get((group.name, RESET), None)
            if value is not None:
                value = value.reshape(self.num_envs, -1).any(-1)
                mask = value if mask is None else mask | value
        return mask

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        actions: list[torch.Tensor | None] = [None] * len(self._env.agents)
        for group in self._groups:
            value = tensordict.get((group.name, ACTION))
            if group.action_kind == "one_hot":
                value = value.to(torch.float32).argmax(-1)
            for column, index in enumerate(group.indices):
                action = value[:, column]
                actions[index] = action.unsqueeze(-1) if action.ndim == 1 else action
        with self._own_random_state():
            obs, rewards, dones, infos = self._env.step(actions)
        return self._output(obs, rewards, infos, dones.reshape(self.num_envs, 1).bool())

    def _output(
        self,
        obs: list[Any],
        rewards: list[torch.Tensor] | None,
        infos: list[dict[str, torch.Tensor]],
        done: torch.Tensor,
    ) -> TensorDictBase:
        no = torch.zeros_like(done)
        out: dict[str, Any] = {DONE: done, TERMINATED: done.clone(), TRUNCATED: no}
        for group in self._groups:
            n = len(group.indices)
            entries: dict[str, Any] = {
                OBSERVATION: _stack([obs[i] for i in group.indices]),
            }
            if group.info_keys:
                entries[INFO] = {
                    key: torch.stack([_column(infos[i][key]) for i in group.indices], dim=1)
                    for key in group.info_keys
                }
            if rewards is not None:
                entries[REWARD] = torch.stack([rewards[i] for i in group.indices], dim=1)[..., None]
            agent_done = done.unsqueeze(1).expand(self.num_envs, n, 1).clone()
            entries[DONE] = agent_done
            entries[TERMINATED] = agent_done.clone()
            entries[TRUNCATED] = torch.zeros_like(agent_done)
            out[group.name] = TensorDict(entries, batch_size=(self.num_envs, n))
        return TensorDict(out, batch_size=self.batch_size, device=self.device)

    # ------------------------------------------------------------------ public API
    @property
    def scenario(self) -> Any:
        """The VMAS scenario object being simulated."""
        return self._env.scenario

    @property
    def n_agents(self) -> int:
        """The number of agents, all groups together."""
        return len(self._env.agents)

    @property
    def agent_names(self) -> list[str]:
        """The agents' names, in VMAS's order."""
        return [agent.name for agent in self._env.agents]

    def close(self) -> None:
        """Closes the VMAS env's renderer, if any."""
        viewer = getattr(self._env, "viewer", None)
        if not self.is_closed and viewer is not None:
            viewer.close()
        super().close()


class VmasEnv(VmasWrapper):
    """Builds a VMAS scenario by name (or from a ``BaseScenario``) and wraps it.

    See :class:`VmasWrapper` for the layout of the TensorDicts.

    Args:
        scenario: a VMAS scenario name (``"balance"``, ``"navigation"``, ``"simple_spread"``,
            ...) or a ``vmas.simulator.scenario.BaseScenario`` instance.
        num_envs: how many sub-envs VMAS simulates in one batch (the batch size).

    Keyword Args:
        continuous_actions: continuous actions (``Bounded``); ``False`` gives discrete ones.
        max_steps: the horizon; reaching it sets ``done`` and ``terminated``. ``None``: the
            scenario's own termination only.
        categorical_actions: discrete actions as indices rather than one-hot vectors.
        seed: seed of VMAS's random generator.
        device: where the simulation runs and the TensorDicts live (default: CPU).
        group_map: ``None``, a :class:`MarlGroupMapType` or ``{group: [agent names]}``.
        **kwargs: passed to ``vmas.make_env`` and the scenario (``n_agents=4``, ...).

    Raises:
        ImportError: vmas is not installed.
        ValueError: an unknown scenario name or ``num_envs < 1``.

    Examples:
        >>> from rl_envs.libs import VmasEnv
        >>> env = VmasEnv("navigation", 8, continuous_actions=False, max_steps=10, seed=0)
        >>> env.action_spec.shape, env.action_spec.n
        (torch.Size([8, 4]), 9)
        >>> env.rollout(3)["next", "agents", "reward"].shape
        torch.Size([8, 3, 4, 1])
    """

    def __init__(
        self,
        scenario: Any,
        num_envs: int,
        *,
        continuous_actions: bool = True,
        max_steps: int | None = None,
        categorical_actions: bool = True,
        seed: int | None = None,
        device: torch.device | str | None = None,
        group_map: MarlGroupMapType | Mapping[str, list[str]] | None = None,
        **kwargs: Any,
    ) -> None:
        name = type(self).__name__
        vmas = _import_vmas(name)
        if isinstance(scenario, str):
            known = _available_scenarios()
            if scenario.removesuffix(".py") not in known:
                raise ValueError(
                    f"{name}: unknown scenario {scenario!r}; expected one of VMAS's scenarios "
                    f"(e.g. 'balance', 'navigation', 'simple_spread'; {len(known)} in all)."
                )
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"{name}: num_envs must be an int >= 1, got {num_envs!r}.")
        env = vmas.make_env(
            scenario,
            num_envs=num_envs,
            device=torch.device("cpu") if device is None else torch.device(device),
            continuous_actions=continuous_actions,
            max_steps=max_steps,
            seed=seed,
            wrapper=None,
            **kwargs,
        )
        super().__init__(env, categorical_actions=categorical_actions, group_map=group_map)
        self.scenario_name = scenario if isinstance(scenario, str) else type(scenario).__name__


def _available_scenarios() -> list[str]:
    """The names of the scenarios VMAS can build (VMAS, MPE and debug scenarios).

    Raises:
        ImportError: vmas is not installed.
    """
    vmas = _import_vmas("VmasEnv")
    return [*vmas.scenarios, *vmas.mpe_scenarios, *vmas.debug_scenarios]


# ---------------------------------------------------------------------- helpers
def _same(specs: list[TensorSpec], where: str) -> TensorSpec:
    first = specs[0]
    for other in specs[1:]:
        if other != first:
            raise ValueError(
                f"{where}: expected the same spec for every agent of the group, got {first} "
                f"and {other}. Put such agents in different groups (group_map="
                f"MarlGroupMapType.ONE_GROUP_PER_AGENT)."
            )
    return first


def _observation_spec(space: Any, shape: tuple[int, ...]) -> TensorSpec:
    spaces = getattr(space, "spaces", None)
    if isinstance(spaces, Mapping):
        return Composite(
            {key: _observation_spec(sub, shape) for key, sub in spaces.items()}, shape=shape
        )
    return Unbounded(shape=(*shape, *space.shape), dtype=torch.float32)


def _action_spec(
    spaces: list[Any], shape: tuple[int, ...], categorical: bool, group: str, owner: str
) -> tuple[TensorSpec, str]:
    where = f"{owner}: group {group!r}, actions"
    first = spaces[0]
    if hasattr(first, "n"):
        if any(getattr(s, "n", None) != first.n for s in spaces):
            raise ValueError(f"{where}: expected one number of actions, got {spaces}.")
        n = int(first.n)
        if categorical:
            return Categorical(n, shape=shape), "categorical"
        return OneHot(n, shape=(*shape, n)), "one_hot"
    if not hasattr(first, "low"):
        raise TypeError(f"{where}: expected a Box or Discrete space, got {first}.")
    lows = torch.stack([torch.as_tensor(s.low, dtype=torch.float32) for s in spaces])
    highs = torch.stack([torch.as_tensor(s.high, dtype=torch.float32) for s in spaces])
    if any(tuple(s.shape) != tuple(first.shape) for s in spaces):
        raise ValueError(
            f"{where}: expected the same action size for every agent, got "
            f"{[tuple(s.shape) for s in spaces]}. Put such agents in different groups."
        )
    size = (*shape, *first.shape)
    return Bounded(lows.expand(size), highs.expand(size), shape=size), "continuous"


def _column(value: torch.Tensor) -> torch.Tensor:
    """A per-env info or observation value as ``[num_envs, ...]`` with at least 2 dims."""
    return value.unsqueeze(-1) if value.ndim == 1 else value


def _info_spec(infos: list[Mapping[str, torch.Tensor]], shape: tuple[int, ...]) -> Any:
    """The info entries every agent of the group has, with one shape and dtype; else None."""
    first = infos[0]
    specs: dict[str, TensorSpec] = {}
    for key, value in first.items():
        if not isinstance(value, torch.Tensor):
            continue
        value = _column(value)
        same = all(
            isinstance(info.get(key), torch.Tensor)
            and _column(info[key]).shape == value.shape
            and info[key].dtype == value.dtype
            for info in infos[1:]
        )
        if not same:
            continue
        size = (*shape, *value.shape[1:])
        if value.dtype is torch.bool:
            specs[key] = Categorical(2, shape=size, dtype=torch.bool)
        else:
            specs[key] = Unbounded(shape=size, dtype=value.dtype)
    return Composite(specs, shape=shape) if specs else None


def _stack(values: list[Any]) -> Any:
    """Per-agent observations (tensors ``[num_envs, ...]`` or dicts of them) stacked at dim 1."""
    if isinstance(values[0], Mapping):
        return {key: _stack([v[key] for v in values]) for key in values[0]}
    return torch.stack(values, dim=1)


__all__ = ["VmasEnv", "VmasWrapper"]
