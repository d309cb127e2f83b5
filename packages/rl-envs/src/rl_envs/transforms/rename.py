"""RenameTransform: entries shown under other names."""

from __future__ import annotations

from collections.abc import Sequence

from tensordict import TensorDictBase

from rl_core.keys import NestedKey
from rl_core.specs import Composite
from rl_core.transforms import Transform


def _rename_spec(spec: Composite, old: NestedKey, new: NestedKey, keep_old: bool) -> None:
    if old in spec.keys(include_nested=True, leaves_only=True):
        spec[new] = spec[old].clone()
        if not keep_old:
            del spec[old]


class RenameTransform(Transform):
    """Renames entries: ``in_keys[i]`` is shown as ``out_keys[i]``.

    On the inverse path, the policy writes ``out_keys_inv[i]`` and the base env reads
    ``in_keys_inv[i]``.

    Args:
        in_keys: names the env writes.
        out_keys: names shown instead.
        in_keys_inv: names the base env reads.
        out_keys_inv: names the policy writes.
        create_copy: keep the old entries beside the new ones.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_envs.transforms import RenameTransform
        >>> t = RenameTransform(["observation"], ["obs"])
        >>> sorted(t(TensorDict(observation=torch.zeros(3))).keys())
        ['obs']
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey],
        out_keys: NestedKey | Sequence[NestedKey],
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        *,
        create_copy: bool = False,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        self.create_copy = create_copy

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for old, new in zip(self.in_keys, self.out_keys):
            value = tensordict.get(old, None)
            if value is None:
                continue
            tensordict.set(new, value)
            if not self.create_copy:
                tensordict.del_(old)
        return tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for inner, outer in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(outer, None)
            if value is None:
                continue
            tensordict.set(inner, value)
            if not self.create_copy:
                tensordict.del_(outer)
        return tensordict

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        for name in ("full_observation_spec", "full_reward_spec", "full_done_spec"):
            for old, new in zip(self.in_keys, self.out_keys):
                _rename_spec(output_spec[name], old, new, self.create_copy)
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        for name in ("full_action_spec", "full_state_spec"):
            for inner, outer in zip(self.in_keys_inv, self.out_keys_inv):
                _rename_spec(input_spec[name], inner, outer, self.create_copy)
        return input_spec


__all__ = ["RenameTransform"]
