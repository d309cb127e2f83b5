"""MultiThreadedEnvWrapper and MultiThreadedEnv: EnvPool's C++ thread-pool vector envs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, OBSERVATION, RESET, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Composite, OneHot
from rl_envs.libs._gym_specs import gym_space_to_spec

_INSTALL = 'pip install "rl-envs[envpool]"'


def import_envpool(who: str) -> Any:
    try:
        import envpool
    except ImportError as err:
        raise ImportError(f"{who} needs EnvPool: {_INSTALL}") from err
    return envpool


class MultiThreadedEnvWrapper(EnvBase):
    """Wraps an EnvPool env (its gymnasium API, synchronous mode) as a batched env.

    EnvPool steps ``num_envs`` copies of a task in C++ threads and returns numpy batches;
    the env's batch size is ``(num_envs,)``. Specs come from the pool's single-env gymnasium
    spaces (:func:`rl_envs.libs.gym_space_to_spec`): a non-dict observation under
    ``"observation"``, dict observations under their keys; the action under ``"action"``
    (``OneHot`` for ``Discrete`` spaces unless ``categorical_action_encoding``); the reward
    float32 ``(num_envs, 1)``; ``terminated`` and ``truncated`` as EnvPool reports them.

    Finished sub-envs are reset through rl-core's ``"_reset"`` mask (``env.reset(env_ids)``),
    so EnvPool's own reset-on-next-step never shows up as a transition.

    Seeding: EnvPool seeds sub-env ``i`` with ``seed + i`` when the pool is built;
    ``set_seed(seed)`` rebuilds the pool from its spec with the new seed.

    Args:
        env: an EnvPool env made with ``env_type="gymnasium"`` and ``batch_size ==
            num_envs`` (the synchronous mode); the wrapper owns it.

    Keyword Args:
        categorical_action_encoding: ``Discrete`` actions as indices (``Categorical``)
            instead of one-hot vectors. Defaults to ``False``.
        device: where the output tensors live. Defaults to ``None`` (the CPU).

    Raises:
        ImportError: EnvPool is not installed.
        TypeError: ``env`` is not a gymnasium-API EnvPool env.
        ValueError: an asynchronous pool (``batch_size < num_envs``).

    Examples:
        >>> import envpool
        >>> from rl_envs.libs import MultiThreadedEnvWrapper
        >>> env = MultiThreadedEnvWrapper(
        ...     envpool.make("CartPole-v1", env_type="gymnasium", num_envs=4, seed=0)
        ... )
        >>> env.rollout(3, break_when_any_done=False)["next", "observation"].shape
        torch.Size([4, 3, 4])
    """

    def __init__(
        self,
        env: Any,
        *,
        categorical_action_encoding: bool = False,
        device: torch.device | str | int | None = None,
    ) -> None:
        who = type(self).__name__
        import_envpool(who)
        config = getattr(getattr(env, "spec", None), "config", None)
        if config is None or not hasattr(env, "send") or not hasattr(env, "recv"):
            raise TypeError(
                f"{who}: expected an EnvPool env (envpool.make(..., env_type='gymnasium')), got "
                f"{type(env).__name__}."
            )
        if "Gymnasium" not in type(env).__name__:
            raise TypeError(
                f"{who}: expected an EnvPool env with the gymnasium API (env_type='gymnasium'), "
                f"got {type(env).__name__}."
            )
        if config.batch_size != config.num_envs:
            raise ValueError(
                f"{who}: expected a synchronous pool (batch_size == num_envs), got batch_size="
                f"{config.batch_size} for num_envs={config.num_envs}."
            )
        super().__init__(batch_size=(int(config.num_envs),), device=device)
        self._env = env
        self.num_workers = int(config.num_envs)
        self.categorical_action_encoding = bool(categorical_action_encoding)
        self._make_specs()

    @property
    def env(self) -> Any:
        """The wrapped EnvPool env."""
        return self._env

    def _make_specs(self) -> None:
        batch = tuple(self.batch_size)
        observation = gym_space_to_spec(self._env.observation_space, batch_size=batch)
        if not isinstance(observation, Composite):
            observation = Composite({OBSERVATION: observation}, shape=batch)
        self.observation_spec = observation
        action = gym_space_to_spec(
            self._env.action_space,
            batch_size=batch,
            categorical_action_encoding=self.categorical_action_encoding,
        )
        self.action_spec = action
        self._one_hot = isinstance(action, OneHot)
        self._obs_keys = list(observation.keys())
        self._dict_obs = not (len(self._obs_keys) == 1 and self._obs_keys[0] == OBSERVATION)

    # ------------------------------------------------------------------ EnvBase contract
    def _set_seed(self, seed: int | None) -> None:
        if seed is None:
            return
        spec = self._env.spec
        new_spec = type(spec)(spec.config._replace(seed=int(seed)))
        rebuilt = type(self._env)(new_spec)
        self._env.close()
        self._env = rebuilt

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        mask = None if tensordict is None else tensordict.get(RESET, None)
        n = self.num_workers
        if mask is None:
            ids = np.arange(n, dtype=np.int32)
        else:
            ids = mask.reshape(n).nonzero().flatten().numpy().astype(np.int32)
        obs, _ = self._env.reset(ids)
        values = self._observations(obs)
        if len(ids) != n:
            # Rows of the sub-envs not reset are ignored by the base (it keeps its own).
            full = {key: self.observation_spec[key].zero() for key in values}
            for key, value in values.items():
                full[key][torch.from_numpy(ids.astype(np.int64))] = value
            values = full
        return TensorDict(values, batch_size=self.batch_size, device=self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(ACTION)
        if self._one_hot:
            action = action.argmax(-1)
        obs, reward, terminated, truncated, _ = self._env.step(action.detach().cpu().numpy())
        out = self._observations(obs)
        out[REWARD] = torch.from_numpy(np.asarray(reward, dtype=np.float32).reshape(-1, 1))
        out[TERMINATED] = torch.from_numpy(np.asarray(terminated, dtype=bool).reshape(-1, 1))
        out[TRUNCATED] = torch.from_numpy(np.asarray(truncated, dtype=bool).reshape(-1, 1))
        return TensorDict(out, batch_size=self.batch_size, device=self.device)

    def _observations(self, obs: Any) -> dict[str, torch.Tensor]:
        if not self._dict_obs:
            return {OBSERVATION: torch.from_numpy(np.array(obs))}
        return {key: torch.from_numpy(np.array(obs[key])) for key in self._obs_keys}

    def close(self) -> None:
        """Closes the pool (once)."""
        if not self.is_closed:
            self._env.close()
        super().close()


class MultiThreadedEnv(MultiThreadedEnvWrapper):
    """Builds an EnvPool pool of ``num_workers`` copies of a task and wraps it.

    See :class:`MultiThreadedEnvWrapper` for the specs, resets and seeding.

    Args:
        num_workers: the number of sub-envs (the batch size).
        env_name: the EnvPool task id (``"CartPole-v1"``, ``"Pong-v5"``,
            ``"HalfCheetah-v4"``, ...).

    Keyword Args:
        create_env_kwargs: passed to ``envpool.make``: ``num_threads``, ``max_episode_steps``,
            and the task's own options, e.g. Atari's ``frame_skip`` (4 by default: each action
            repeated on 4 emulator frames, the last two max-pooled, rewards summed),
            ``stack_num``, ``noop_max``, ``img_height``/``img_width``. ``set_seed`` keeps them.
        categorical_action_encoding: ``Discrete`` actions as indices. Defaults to ``False``.
        seed: seed of the pool (sub-env ``i`` gets ``seed + i``). Defaults to 0.
        device: where the output tensors live.

    Raises:
        ImportError: EnvPool is not installed.
        ValueError: an unknown task, a bad ``num_workers``, or ``create_env_kwargs`` the task
            does not take (or that set ``env_type``/``num_envs``/``batch_size``).

    Examples:
        >>> from rl_envs.libs import MultiThreadedEnv
        >>> env = MultiThreadedEnv(8, "CartPole-v1", categorical_action_encoding=True)
        >>> env.batch_size, env.action_spec.shape
        (torch.Size([8]), torch.Size([8]))
        >>> env.close()
    """

    def __init__(
        self,
        num_workers: int,
        env_name: str,
        *,
        create_env_kwargs: Mapping[str, Any] | None = None,
        categorical_action_encoding: bool = False,
        seed: int = 0,
        device: torch.device | str | int | None = None,
    ) -> None:
        who = type(self).__name__
        envpool = import_envpool(who)
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"{who}: expected num_workers to be an int >= 1, got {num_workers!r}.")
        tasks = envpool.list_all_envs()
        if env_name not in tasks:
            raise ValueError(
                f"{who}: unknown EnvPool task {env_name!r}; envpool.list_all_envs() has "
                f"{len(tasks)} (e.g. 'CartPole-v1', 'Pendulum-v1', 'Pong-v5')."
            )
        kwargs = dict(create_env_kwargs or {})
        reserved = sorted(set(kwargs) & {"env_type", "num_envs", "batch_size"})
        if reserved:
            raise ValueError(
                f"{who}: create_env_kwargs may not set {reserved}: the wrapper builds a "
                f"synchronous gymnasium-API pool of num_workers envs; pass num_workers instead."
            )
        kwargs.setdefault("seed", seed)
        try:
            env = envpool.make(
                env_name, env_type="gymnasium", num_envs=num_workers, batch_size=num_workers,
                **kwargs,
            )  # fmt: skip
        except TypeError as err:  # a keyword the task's config does not have
            known = sorted(envpool.make_spec(env_name).config._fields)
            raise ValueError(
                f"{who}: EnvPool's {env_name!r} does not take create_env_kwargs "
                f"{sorted(kwargs)} ({err}); its config keys are {known}."
            ) from err
        super().__init__(
            env, categorical_action_encoding=categorical_action_encoding, device=device
        )
        self.env_name = env_name
        self.create_env_kwargs = kwargs


__all__ = ["MultiThreadedEnv", "MultiThreadedEnvWrapper"]
