"""MOGymWrapper and MOGymEnv: mo-gymnasium's multi-objective tasks (vector rewards)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, OBSERVATION, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Bounded, Composite, Unbounded
from rl_envs.libs._gym_codecs import make_decoder, make_encoder, require
from rl_envs.libs._gym_specs import gym_space_to_spec

_INSTALL = 'pip install "rl-envs[mo-gymnasium]"'


def import_mo_gymnasium(who: str) -> Any:
    try:
        import mo_gymnasium
    except ImportError as err:
        raise ImportError(f"{who} needs mo-gymnasium: {_INSTALL}") from err
    return mo_gymnasium


class MOGymWrapper(EnvBase):
    """Wraps a mo-gymnasium env: a gymnasium env whose reward is a vector, one per objective.

    Observations and actions follow :class:`rl_envs.GymWrapper`'s space mapping (a non-dict
    observation under ``"observation"``, the action under ``"action"``, ``Discrete`` as
    ``OneHot`` unless ``categorical_action_encoding``). The ``"reward"`` has the shape of the
    env's ``reward_space`` (``(n_objectives,)``) and its bounds when they are finite;
    ``terminated``/``truncated`` are gymnasium's. Scalarise it with a transform (a weighted
    sum) to train a single-objective agent.

    Seeding: ``set_seed(seed)`` seeds the next reset (``env.reset(seed=seed)``) and the
    action space; later resets continue the env's generator.

    Args:
        env: a mo-gymnasium env (``mo_gymnasium.make(...)``); the wrapper owns it.

    Keyword Args:
        categorical_action_encoding: ``Discrete`` spaces as indices. Defaults to ``False``.
        device: where the output tensors live. Defaults to ``None`` (the CPU).

    Raises:
        ImportError: mo-gymnasium is not installed.
        TypeError: ``env`` has no vector ``reward_space``.

    Examples:
        >>> import mo_gymnasium
        >>> from rl_envs.libs import MOGymWrapper
        >>> env = MOGymWrapper(mo_gymnasium.make("deep-sea-treasure-v0"))
        >>> env.reward_spec.shape
        torch.Size([2])
    """

    def __init__(
        self,
        env: Any,
        *,
        categorical_action_encoding: bool = False,
        device: torch.device | str | int | None = None,
    ) -> None:
        who = type(self).__name__
        import_mo_gymnasium(who)
        reward_space = getattr(getattr(env, "unwrapped", env), "reward_space", None)
        if reward_space is None or not getattr(reward_space, "shape", None):
            raise TypeError(
                f"{who}: expected a mo-gymnasium env with a vector reward_space, got "
                f"{type(env).__name__}. Build one with mo_gymnasium.make(name)."
            )
        super().__init__(batch_size=(), device=device)
        self._env = env
        self.categorical_action_encoding = bool(categorical_action_encoding)
        self._next_seed: int | None = None
        obs_space, act_space = env.observation_space, env.action_space
        observation = gym_space_to_spec(obs_space)
        self._dict_obs = isinstance(observation, Composite)
        self._decode = make_decoder(obs_space, observation, ())
        self.observation_spec = (
            observation if self._dict_obs else Composite({OBSERVATION: observation})
        )
        action = gym_space_to_spec(
            act_space, categorical_action_encoding=self.categorical_action_encoding
        )
        self.action_spec = action
        self._encode = make_encoder(act_space, action, (), who=who)
        self._reward_shape = tuple(reward_space.shape)
        low = np.asarray(reward_space.low, dtype=np.float32)
        high = np.asarray(reward_space.high, dtype=np.float32)
        if np.isfinite(low).all() and np.isfinite(high).all():
            self.reward_spec = Bounded(
                torch.from_numpy(low), torch.from_numpy(high), shape=self._reward_shape
            )
        else:
            self.reward_spec = Unbounded(shape=self._reward_shape)

    @property
    def env(self) -> Any:
        """The wrapped mo-gymnasium env."""
        return self._env

    def _set_seed(self, seed: int | None) -> None:
        self._next_seed = seed
        if seed is not None:
            self._env.action_space.seed(seed)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        seed, self._next_seed = self._next_seed, None
        obs, _ = self._env.reset(seed=seed)
        return TensorDict(self._observations(obs), batch_size=(), device=self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = self._encode(require(tensordict, ACTION, type(self).__name__))
        obs, reward, terminated, truncated, _ = self._env.step(action)
        out = self._observations(obs)
        out[REWARD] = torch.from_numpy(
            np.asarray(reward, dtype=np.float32).reshape(self._reward_shape).copy()
        )
        out[TERMINATED] = torch.tensor([bool(terminated)])
        out[TRUNCATED] = torch.tensor([bool(truncated)])
        return TensorDict(out, batch_size=(), device=self.device)

    def _observations(self, obs: Any) -> dict[str, Any]:
        value = self._decode(obs)
        if self._dict_obs:
            return dict(value.items())
        return {OBSERVATION: value}

    def close(self) -> None:
        """Closes the env (once)."""
        if not self.is_closed:
            self._env.close()
        super().close()


class MOGymEnv(MOGymWrapper):
    """Builds a mo-gymnasium task (``mo_gymnasium.make``) and wraps it.

    See :class:`MOGymWrapper` for the keys, the vector reward and seeding.

    Args:
        env_name: the task id (``"deep-sea-treasure-v0"``, ``"minecart-v0"``,
            ``"mo-mountaincar-v0"``, ``"mo-halfcheetah-v5"``, ...).

    Keyword Args:
        categorical_action_encoding: ``Discrete`` spaces as indices. Defaults to ``False``.
        device: where the output tensors live.
        **kwargs: passed to ``mo_gymnasium.make`` (``max_episode_steps=...``).

    Raises:
        ImportError: mo-gymnasium is not installed.
        ValueError: an unknown task.

    Examples:
        >>> from rl_envs.libs import MOGymEnv
        >>> env = MOGymEnv("mo-mountaincar-v0", categorical_action_encoding=True)
        >>> env.set_seed(0)
        1
        >>> env.rollout(4)["next", "reward"].shape
        torch.Size([4, 3])
    """

    def __init__(
        self,
        env_name: str,
        *,
        categorical_action_encoding: bool = False,
        device: torch.device | str | int | None = None,
        **kwargs: Any,
    ) -> None:
        who = type(self).__name__
        mo_gymnasium = import_mo_gymnasium(who)
        import gymnasium

        if env_name not in gymnasium.registry:
            raise ValueError(
                f"{who}: unknown task {env_name!r}; mo-gymnasium registers e.g. "
                f"'deep-sea-treasure-v0', 'minecart-v0', 'mo-mountaincar-v0'."
            )
        super().__init__(
            mo_gymnasium.make(env_name, **kwargs),
            categorical_action_encoding=categorical_action_encoding,
            device=device,
        )
        self.env_name = env_name


__all__ = ["MOGymEnv", "MOGymWrapper"]
