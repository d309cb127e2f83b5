"""DoubleToFloat: float64 entries shown as float32, float32 actions given back as float64."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core.keys import NestedKey
from rl_core.specs import Bounded, Composite, TensorSpec, Unbounded
from rl_core.transforms.transform import Transform


def _with_dtype(spec: TensorSpec, dtype: torch.dtype) -> TensorSpec:
    """The same continuous spec with another floating dtype."""
    if isinstance(spec, Bounded):
        return Bounded(
            spec.low.to(dtype),
            spec.high.to(dtype),
            shape=spec.shape,
            device=spec.device,
            dtype=dtype,
        )
    if isinstance(spec, Unbounded):
        return Unbounded(shape=spec.shape, device=spec.device, dtype=dtype)
    raise TypeError(
        f"DoubleToFloat: expected float64 Bounded or Unbounded specs, got {type(spec).__name__}."
    )


class DoubleToFloat(Transform):
    """Casts float64 entries to float32 (forward) and the given actions back to float64.

    Args:
        in_keys: entries to cast. ``None``: every float64 entry of the observations and
            rewards (outside an env: every float64 entry of the TensorDict).
        in_keys_inv: actions the base env reads as float64; the policy writes them as float32.
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=in_keys, in_keys_inv=in_keys_inv)
        self.__dict__["_auto"] = in_keys is None

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.to(torch.float32) if value.dtype == torch.float64 else value

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.to(torch.float64) if value.dtype == torch.float32 else value

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._auto and not self.in_keys:
            return tensordict.apply(self._apply_transform)
        return super()._call(tensordict)

    def _cast_specs(self, spec: Composite, keys: Sequence[NestedKey] | None) -> list[NestedKey]:
        cast = []
        for key in spec.keys(include_nested=True, leaves_only=True):
            leaf = spec[key]
            if leaf is None or leaf.dtype != torch.float64:
                continue
            if keys is not None and key not in keys:
                continue
            spec[key] = _with_dtype(leaf, torch.float32)
            cast.append(key)
        return cast

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        keys = None if self._auto else self.in_keys
        found = self._cast_specs(output_spec["full_observation_spec"], keys)
        found += self._cast_specs(output_spec["full_reward_spec"], keys)
        if self._auto:
            self.in_keys = found
            self.out_keys = list(found)
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        if self.in_keys_inv:
            self._cast_specs(input_spec["full_action_spec"], self.in_keys_inv)
            self._cast_specs(input_spec["full_state_spec"], self.in_keys_inv)
        return input_spec


__all__ = ["DoubleToFloat"]
