"""LBForagingWrapper / LBForagingEnv: Level-Based Foraging's multi-agent grid worlds."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, DONE, OBSERVATION, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Bounded, Categorical, Composite, OneHot, Unbounded

_INSTALL = 'pip install "rl-envs[lbforaging]"'
GROUP = "agents"


def _import_lbforaging(who: str) -> Any:
    try:
        import gymnasium
        import lbforaging  # noqa: F401  (registers the Foraging-* gymnasium envs)
    except ImportError as err:
        raise ImportError(f"{who} needs lbforaging: {_INSTALL}") from err
    return gymnasium


def _available_envs() -> list[str]:
    gymnasium = _import_lbforaging("LBForagingEnv.available_envs")
    return sorted(name for name in gymnasium.envs.registry if name.startswith("Foraging-"))


class LBForagingWrapper(EnvBase):
    """A Level-Based Foraging env (``lbforaging``'s gymnasium env) with its agents grouped.

    Level-Based Foraging is a cooperative grid world: agents and food have levels, and a food
    item is collected when the agents next to it that load it have levels summing to at least
    its own. lbforaging steps all agents at once with a tuple of actions and gives a tuple of
    observations and a list of rewards. Here, as in TorchRL, the per-agent entries sit under
    the group ``"agents"`` (``n`` agents): ``("agents", "observation")`` float32 ``(n,
    obs_dim)`` bounded by the env's boxes, ``("agents", "action")`` (``Categorical(6)``
    ``(n,)``, or ``OneHot(6)`` ``(n, 6)`` without ``categorical_actions``; 0 none, 1-4
    north/south/west/east, 5 load) and ``("agents", "reward")`` ``(n, 1)``; ``done``,
    ``terminated`` and ``truncated`` ``(1,)`` are shared at the root. Collecting the last
    food item terminates the episode (at the step limit too); reaching the step limit with
    food left truncates it.

    Seeding: ``set_seed(seed)`` seeds the next reset (``env.reset(seed=seed)``); later resets
    go on with the env's generator. lbforaging's layouts depend on an env's past episodes too
    (its players keep their old positions while the new ones are drawn), so the same seed
    reproduces an episode on fresh envs only.

    Args:
        env: a Level-Based Foraging env (``gymnasium.make("Foraging-...")`` after
            ``import lbforaging``), wrapped by gymnasium or not.

    Keyword Args:
        categorical_actions: actions as indices (``True``, the default) or one-hot.
        device: where the output tensors live. Defaults to the CPU.

    Raises:
        ImportError: lbforaging is not installed (``pip install "rl-envs[lbforaging]"``).
        TypeError: ``env`` is not a Level-Based Foraging env.

    Examples:
        >>> import gymnasium, lbforaging
        >>> env = LBForagingWrapper(gymnasium.make("Foraging-8x8-2p-3f-v3", disable_env_checker=True))
        >>> env.rollout(3)["next", "agents", "reward"].shape
        torch.Size([3, 2, 1])
    """

    def __init__(
        self,
        env: Any = None,
        *,
        categorical_actions: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        who = type(self).__name__
        _import_lbforaging(who)
        from lbforaging.foraging.environment import ForagingEnv

        if not isinstance(getattr(env, "unwrapped", None), ForagingEnv):
            raise TypeError(
                f"{who}: expected a Level-Based Foraging env (gymnasium.make('Foraging-...') "
                f"after import lbforaging), got {type(env).__name__}; for a name, use "
                f"LBForagingEnv(env_name)."
            )
        super().__init__(batch_size=(), device=device)
        self._env = env
        self.categorical_actions = bool(categorical_actions)
        self._seed: int | None = None
        self.n_agents = len(env.action_space)
        self._make_specs()

    @property
    def env(self) -> Any:
        """The wrapped gymnasium env."""
        return self._env

    def _make_specs(self) -> None:
        n, boxes = self.n_agents, self._env.observation_space
        low = torch.as_tensor(np.stack([b.low for b in boxes]))
        high = torch.as_tensor(np.stack([b.high for b in boxes]))
        n_actions = int(self._env.action_space[0].n)
        action = (
            Categorical(n_actions, shape=(n,))
            if self.categorical_actions
            else OneHot(n_actions, shape=(n, n_actions))
        )
        self.observation_spec = Composite(
            {GROUP: Composite({OBSERVATION: Bounded(low, high, shape=low.shape)}, shape=(n,))}
        )
        self.action_spec = Composite({GROUP: Composite({ACTION: action}, shape=(n,))})
        self.reward_spec = Composite(
            {GROUP: Composite({REWARD: Unbounded(shape=(n, 1))}, shape=(n,))}
        )
        flag = Categorical(2, shape=(1,), dtype=torch.bool)
        self.done_spec = Composite({DONE: flag, TERMINATED: flag.clone(), TRUNCATED: flag.clone()})

    def _observation(self, obs: Any) -> torch.Tensor:
        return torch.as_tensor(np.stack(obs), dtype=torch.float32)

    def _set_seed(self, seed: int | None) -> None:
        self._seed = None if seed is None else int(seed)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        seed, self._seed = self._seed, None
        obs, _ = self._env.reset(seed=seed)
        return TensorDict(
            {GROUP: TensorDict({OBSERVATION: self._observation(obs)}, batch_size=(self.n_agents,))},
            batch_size=(),
            device=self.device,
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get((GROUP, ACTION))
        if not self.categorical_actions:
            action = action.to(torch.int64).argmax(-1)
        obs, rewards, game_over, _, _ = self._env.step(tuple(int(a) for a in action.tolist()))
        terminated = bool(self._env.unwrapped.field.sum() == 0)  # every food item collected
        truncated = bool(game_over) and not terminated
        agents = TensorDict(
            {
                OBSERVATION: self._observation(obs),
                REWARD: torch.as_tensor(rewards, dtype=torch.float32).reshape(self.n_agents, 1),
            },
            batch_size=(self.n_agents,),
        )
        return TensorDict(
            {
                GROUP: agents,
                DONE: torch.tensor([terminated or truncated]),
                TERMINATED: torch.tensor([terminated]),
                TRUNCATED: torch.tensor([truncated]),
            },
            batch_size=(),
            device=self.device,
        )

    def close(self) -> None:
        """Closes the gymnasium env."""
        self._env.close()
        super().close()


class LBForagingEnv(LBForagingWrapper):
    """A Level-Based Foraging env built from its registered name (see
    :class:`LBForagingWrapper` for the layout).

    Args:
        env_name: a registered ``"Foraging-..."`` name, e.g. ``"Foraging-8x8-2p-3f-v3"`` (an
            8 x 8 grid, 2 players, 3 food items); :meth:`available_envs` lists them.

    Keyword Args:
        categorical_actions: actions as indices (``True``, the default) or one-hot.
        seed: seed of the first reset. Defaults to ``None``.
        device: where the output tensors live.
        **kwargs: passed to ``gymnasium.make`` (its passive env checker is off unless
            ``disable_env_checker=False``: lbforaging returns its rewards as a list).

    Raises:
        ImportError: lbforaging is not installed.
        ValueError: ``env_name`` is not a registered Level-Based Foraging env.

    Examples:
        >>> env = LBForagingEnv("Foraging-8x8-2p-3f-v3", categorical_actions=False, seed=0)
        >>> env.rollout(3)["agents", "action"].shape
        torch.Size([3, 2, 6])
    """

    def __init__(
        self,
        env_name: str,
        *,
        categorical_actions: bool = True,
        seed: int | None = None,
        device: torch.device | str | None = None,
        **kwargs: Any,
    ) -> None:
        gymnasium = _import_lbforaging(type(self).__name__)
        names = _available_envs()
        if env_name not in names:
            raise ValueError(
                f"LBForagingEnv: env_name {env_name!r} is not a registered Level-Based Foraging "
                f"env; expected a name like {names[0]!r} (LBForagingEnv.available_envs() lists "
                f"all {len(names)})."
            )
        kwargs.setdefault("disable_env_checker", True)
        self.env_name = env_name
        super().__init__(
            gymnasium.make(env_name, **kwargs),
            categorical_actions=categorical_actions,
            device=device,
        )
        if seed is not None:
            self.set_seed(seed)

    @staticmethod
    def available_envs() -> list[str]:
        """The registered Level-Based Foraging env names."""
        return _available_envs()


__all__ = ["LBForagingEnv", "LBForagingWrapper"]
