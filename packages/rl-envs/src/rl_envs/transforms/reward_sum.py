"""RewardSum: the return of the episode so far."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core.keys import EPISODE_REWARD, REWARD, NestedKey
from rl_core.specs import Composite, TensorSpec, Unbounded
from rl_core.transforms import Transform


def _name(key: NestedKey) -> str:
    return key if isinstance(key, str) else key[-1]


class RewardSum(Transform):
    """Accumulates rewards over the episode: ``episode_reward`` is 0 after a reset.

    Args:
        in_keys: the rewards to sum. Defaults to ``["reward"]``.
        out_keys: where the sums go. Defaults to ``"episode_reward"`` for ``"reward"`` and
            ``"episode_<name>"`` for others, beside the reward (same group).

    Raises:
        KeyError: a step comes without the running sum (the env was not reset through the
            transform).
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=REWARD if in_keys is None else in_keys, out_keys=out_keys)
        if out_keys is None:
            self.out_keys = [self._default_out_key(key) for key in self.in_keys]
        self.__dict__["_reward_specs"] = {}

    @staticmethod
    def _default_out_key(key: NestedKey) -> NestedKey:
        name = EPISODE_REWARD if _name(key) == REWARD else f"episode_{_name(key)}"
        return name if isinstance(key, str) else (*key[:-1], name)

    def _sum_spec(self, reward: TensorSpec) -> Unbounded:
        return Unbounded(shape=reward.shape, device=reward.device, dtype=reward.dtype)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        rewards = output_spec["full_reward_spec"]
        observations = output_spec["full_observation_spec"]
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in rewards.keys(include_nested=True, leaves_only=True):
                raise KeyError(
                    f"RewardSum: expected the reward {in_key!r} in the env's reward spec, got "
                    f"{list(rewards.keys(include_nested=True, leaves_only=True))}."
                )
            spec = self._sum_spec(rewards[in_key])
            observations[out_key] = spec
            self._reward_specs[out_key] = spec
        return output_spec

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        if len(self._reward_specs) != len(self.out_keys):
            env = self.parent
            if env is None:
                raise RuntimeError("RewardSum: reset outside an env; it needs the reward spec.")
            self.transform_output_spec(env.output_spec.clone())
        for out_key in self.out_keys:
            spec = self._reward_specs[out_key]
            tensordict_reset.set(
                out_key, torch.zeros(spec.shape, dtype=spec.dtype, device=spec.device)
            )
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            total = tensordict.get(out_key, None)
            if total is None:
                raise KeyError(
                    f"RewardSum: expected the running sum {out_key!r} in the TensorDict given to "
                    f"step; reset writes it. Reset the env first."
                )
            next_tensordict.set(out_key, total + next_tensordict.get(in_key))
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        # Outside an env there is no episode to sum over: leave the data as it is.
        return tensordict


__all__ = ["RewardSum"]
