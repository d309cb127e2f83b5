"""GymLikeEnv: the base of envs that drive an object with a gym-like ``reset``/``step`` API."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import EnvBase
from rl_core.keys import ACTION, DONE, OBSERVATION, REWARD, TERMINATED, TRUNCATED

InfoReader = Callable[[Mapping[str, Any], TensorDictBase], TensorDictBase]


def _as_tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    return torch.as_tensor(np.asarray(value))


class GymLikeEnv(EnvBase):
    """An env driven through an object with gym's API (TorchRL's ``GymLikeEnv`` base):
    ``reset(**kwargs)`` returns ``obs`` or ``(obs, info)``; ``step(action)`` returns
    ``(obs, reward, terminated, truncated, info)`` (gymnasium) or ``(obs, reward, done, info)``
    (gym < 0.26, ``done`` read as terminated).

    A subclass builds the specs in :meth:`_make_specs` (called once by the constructor, with
    the wrapped object); the conversions are methods it may override: :meth:`read_obs` (a
    dict of observations becomes entries of the same names, anything else the
    ``"observation"`` entry), :meth:`read_reward`, :meth:`read_done` and :meth:`read_action`
    (the action tensor to what the object's ``step`` takes: a numpy array, or a Python scalar
    for a 0-dim action). Values are cast to the specs' dtypes and shapes. Readers given to
    :meth:`set_info_dict_reader` copy ``info`` entries into each output. ``set_seed`` passes
    the seed to the next ``reset`` as ``seed=``.

    For gymnasium itself use :class:`~rl_envs.GymWrapper`/:class:`~rl_envs.GymEnv`
    (vector envs, space conversion, rendering); this base is for other objects with the
    same API.

    Args:
        env: the object to drive.
        device: where the tensors go (keyword-only).
        batch_size: the env's batch size (keyword-only); ``()`` for one env.
        allow_done_after_reset: as :class:`~rl_core.EnvBase` (keyword-only).
    """

    def __init__(
        self,
        env: Any,
        *,
        device: torch.device | str | None = None,
        batch_size: torch.Size | tuple[int, ...] | None = None,
        allow_done_after_reset: bool = False,
    ) -> None:
        for method in ("reset", "step"):
            if not callable(getattr(env, method, None)):
                raise TypeError(
                    f"{type(self).__name__}: expected an object with gym's reset() and step() "
                    f"methods, got {type(env).__name__} without {method}()."
                )
        super().__init__(
            device=device, batch_size=batch_size, allow_done_after_reset=allow_done_after_reset
        )
        self.__dict__["_env"] = env
        self.__dict__["_info_readers"] = []
        self.__dict__["_next_seed"] = None
        self._make_specs(env)

    @abc.abstractmethod
    def _make_specs(self, env: Any) -> None:
        """Sets ``observation_spec``, ``action_spec``, ``reward_spec`` (and ``done_spec``)."""

    @property
    def env(self) -> Any:
        """The wrapped object."""
        return self._env

    # ------------------------------------------------------------------ conversions
    def _cast(self, key: Any, value: Any, group: str) -> torch.Tensor:
        spec = self.output_spec[group][key]
        tensor = _as_tensor(value).to(spec.dtype)
        return (
            tensor.reshape(spec.shape).to(self.device)
            if self.device
            else tensor.reshape(spec.shape)
        )

    def read_obs(self, observations: Any) -> dict[str, torch.Tensor]:
        """The observation entries of what ``reset``/``step`` returned."""
        if isinstance(observations, Mapping):
            return {
                key: self._cast(key, value, "full_observation_spec")
                for key, value in observations.items()
            }
        return {OBSERVATION: self._cast(OBSERVATION, observations, "full_observation_spec")}

    def read_reward(self, reward: Any) -> torch.Tensor:
        """The reward entry."""
        return self._cast(REWARD, reward, "full_reward_spec")

    def read_done(
        self, terminated: Any = None, truncated: Any = None, done: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, bool]:
        """``(terminated, truncated, done, any_done)`` as bool tensors of the done spec's
        shape; a missing flag is False, ``done = terminated | truncated`` unless given."""
        shape = self.output_spec["full_done_spec"][DONE].shape

        def flag(value: Any) -> torch.Tensor:
            if value is None:
                return torch.zeros(shape, dtype=torch.bool)
            return _as_tensor(value).to(torch.bool).reshape(shape)

        term, trunc = flag(terminated), flag(truncated)
        done_t = term | trunc if done is None else flag(done) | term | trunc
        return term, trunc, done_t, bool(done_t.any())

    def read_action(self, action: torch.Tensor) -> Any:
        """What the object's ``step`` takes for ``action``."""
        array = action.detach().cpu().numpy()
        return array.item() if array.ndim == 0 else array

    def set_info_dict_reader(self, info_dict_reader: InfoReader) -> GymLikeEnv:
        """Adds a reader ``(info, tensordict) -> tensordict`` run on every reset and step
        output; an :class:`~rl_envs.InfoDictReader` with specs adds its entries to the
        observation spec. Returns ``self``.

        Raises:
            ValueError: an ``InfoDictReader`` without specs (give ``spec=``).
        """
        spec = getattr(info_dict_reader, "info_spec", None)
        if hasattr(info_dict_reader, "info_spec") and spec is None:
            raise ValueError(
                f"{type(self).__name__}.set_info_dict_reader: the reader has no specs; build it "
                f"with spec=... (one entry per info key)."
            )
        if spec is not None:
            for key in spec.keys():
                self.observation_spec[key] = spec[key].expand(*self.batch_size, *spec[key].shape)
        self._info_readers.append(info_dict_reader)
        return self

    @property
    def info_dict_reader(self) -> list[InfoReader]:
        """The readers, in order."""
        return list(self._info_readers)

    # ------------------------------------------------------------------ EnvBase
    def _output(self, obs: Any, info: Any) -> TensorDict:
        out = TensorDict(self.read_obs(obs), batch_size=self.batch_size, device=self.device)
        if isinstance(info, Mapping):
            for reader in self._info_readers:
                out = reader(info, out)
        return out

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        seed = self._next_seed
        if seed is not None:
            kwargs["seed"] = seed
            self.__dict__["_next_seed"] = None
        result = self._env.reset(**kwargs)
        obs, info = result if isinstance(result, tuple) and len(result) == 2 else (result, {})
        return self._output(obs, info)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        result = self._env.step(self.read_action(tensordict.get(ACTION)))
        if len(result) == 5:
            obs, reward, terminated, truncated, info = result
            term, trunc, done, _ = self.read_done(terminated, truncated)
        elif len(result) == 4:
            obs, reward, done_flag, info = result
            term, trunc, done, _ = self.read_done(terminated=done_flag)
        else:
            raise ValueError(
                f"{type(self).__name__}: step() returned {len(result)} values; expected "
                f"(obs, reward, terminated, truncated, info) or (obs, reward, done, info)."
            )
        out = self._output(obs, info)
        out.set(REWARD, self.read_reward(reward))
        out.set(TERMINATED, term)
        out.set(TRUNCATED, trunc)
        out.set(DONE, done)
        return out

    def _set_seed(self, seed: int | None) -> None:
        self.__dict__["_next_seed"] = seed


__all__ = ["GymLikeEnv"]
