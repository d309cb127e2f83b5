"""RewardSum: the return of the episode so far."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core._fast_td import entries, get_leaf, is_plain, set_leaf
from rl_core.keys import EPISODE_REWARD, REWARD, NestedKey
from rl_core.specs import Composite, TensorSpec, Unbounded
from rl_core.transforms._rows import zeros
from rl_core.transforms.transform import Transform


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

    fusable = True  # maps step and reset outputs only

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
            zero = zeros(self, tuple(spec.shape), spec.dtype, spec.device)
            if type(out_key) is str:
                set_leaf(tensordict_reset, out_key, zero)
            else:
                tensordict_reset.set(out_key, zero)
        return tensordict_reset

    def _paths(self) -> list[tuple[tuple[str, ...], tuple[str, ...], NestedKey]]:
        """``(reward path, sum path, sum key)`` per in/out key pair, built once per key list."""
        cached = self.__dict__.get("_path_cache")
        keys = (tuple(self.in_keys), tuple(self.out_keys))
        if cached is None or cached[0] != keys:
            paths = [
                (
                    (i,) if isinstance(i, str) else tuple(i),
                    (o,) if isinstance(o, str) else tuple(o),
                    o,
                )
                for i, o in zip(self.in_keys, self.out_keys)
            ]
            cached = self.__dict__["_path_cache"] = (keys, paths)
        return cached[1]

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        paths = self._paths()
        if len(paths) == 1 and is_plain(tensordict) and is_plain(next_tensordict):
            # One reward, both TensorDicts plain: the loop below with get_leaf inlined (every
            # env step runs it).
            ((in_path, out_path, out_key),) = paths
            if len(out_path) == 1 and len(in_path) == 1:
                total = entries(tensordict).get(out_key, None)
                reward = entries(next_tensordict).get(in_path[0], None)
                if total is not None and reward is not None:
                    set_leaf(next_tensordict, out_key, torch.add(total, reward))
                    return next_tensordict
        for in_path, out_path, out_key in paths:
            total = get_leaf(tensordict, out_path, None)
            if total is None:
                raise KeyError(
                    f"RewardSum: expected the running sum {out_key!r} in the TensorDict given to "
                    f"step; reset writes it. Reset the env first."
                )
            next_tensordict.set(out_key, torch.add(total, get_leaf(next_tensordict, in_path)))
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        # Outside an env there is no episode to sum over: leave the data as it is.
        return tensordict


__all__ = ["RewardSum"]
