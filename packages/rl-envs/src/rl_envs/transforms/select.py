"""ExcludeTransform and SelectTransform: fewer observation entries."""

from __future__ import annotations

from tensordict import TensorDictBase

from rl_core.keys import NestedKey
from rl_core.specs import Composite
from rl_core.transforms import Transform


class ExcludeTransform(Transform):
    """Drops entries from what the env shows (and from TensorDicts it is applied to).

    Args:
        *excluded_keys: keys to drop. Rewards and done flags cannot be dropped.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_envs.transforms import ExcludeTransform
        >>> t = ExcludeTransform("pixels")
        >>> sorted(t(TensorDict(pixels=torch.zeros(2), observation=torch.zeros(2))).keys())
        ['observation']
    """

    def __init__(self, *excluded_keys: NestedKey) -> None:
        super().__init__(in_keys=list(excluded_keys))

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict.exclude(*self.in_keys)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        protected = set(output_spec["full_reward_spec"].keys(True, True)) | set(
            output_spec["full_done_spec"].keys(True, True)
        )
        for key in self.in_keys:
            if key in protected:
                raise ValueError(
                    f"ExcludeTransform: {key!r} is a reward or done flag, which every env must "
                    f"write; expected observation keys only."
                )
        observations = output_spec["full_observation_spec"]
        output_spec["full_observation_spec"] = observations.exclude(*self.in_keys)
        return output_spec


class SelectTransform(Transform):
    """Keeps only the given entries (plus rewards and done flags) of what the env shows.

    Args:
        *selected_keys: keys to keep.
        keep_rewards: also keep the reward entries. Defaults to ``True``.
        keep_dones: also keep the done flags. Defaults to ``True``.
    """

    def __init__(
        self, *selected_keys: NestedKey, keep_rewards: bool = True, keep_dones: bool = True
    ) -> None:
        super().__init__(in_keys=list(selected_keys))
        self.keep_rewards = keep_rewards
        self.keep_dones = keep_dones
        self.__dict__["_extra"] = None

    def _kept(self) -> list[NestedKey]:
        if self._extra is None:
            env = self.parent
            self.__dict__["_extra"] = [] if env is None else self._extra_keys(env.output_spec)
        return [*self.in_keys, *self._extra]

    def _extra_keys(self, output_spec: Composite) -> list[NestedKey]:
        extra: list[NestedKey] = []
        if self.keep_rewards:
            extra += list(output_spec["full_reward_spec"].keys(True, True))
        if self.keep_dones:
            extra += list(output_spec["full_done_spec"].keys(True, True))
        return extra

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict.select(*self._kept(), strict=False)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        self.__dict__["_extra"] = self._extra_keys(output_spec)
        observations = output_spec["full_observation_spec"]
        output_spec["full_observation_spec"] = observations.select(*self.in_keys, strict=False)
        return output_spec


__all__ = ["ExcludeTransform", "SelectTransform"]
