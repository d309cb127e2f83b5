"""RewardScaling and RewardClipping: affine maps and clipping of rewards."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from rl_core import Composite, TensorSpec, Transform
from rl_core.keys import REWARD, NestedKey
from rl_envs.transforms._affine import affine, affine_stats
from rl_envs.transforms._common import (
    OUTPUT_MAP_FUSABLE,
    bounds,
    clipped_spec,
    continuous_like,
    map_output_leaves,
)


class RewardScaling(Transform):
    """Scales rewards: ``r * scale + loc``, or ``(r - loc) / scale`` with ``standard_normal``.

    Args:
        loc: a float or tensor broadcastable to the reward.
        scale: same, for the scale.
        in_keys: the rewards. Defaults to ``["reward"]``.
        out_keys: where to write them; default ``in_keys``.
        standard_normal: see above.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = RewardScaling(loc=1.0, scale=0.5)
        >>> t(TensorDict(reward=torch.tensor([2.0])))["reward"].tolist()
        [2.0]
    """

    def __init__(
        self,
        loc: float | torch.Tensor,
        scale: float | torch.Tensor,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        standard_normal: bool = False,
    ) -> None:
        super().__init__(in_keys=REWARD if in_keys is None else in_keys, out_keys=out_keys)
        scale_t = torch.as_tensor(scale, dtype=torch.float32)
        if standard_normal and bool((scale_t == 0).any()):
            raise ValueError("RewardScaling: scale must be nonzero with standard_normal=True.")
        self.register_buffer("loc", torch.as_tensor(loc, dtype=torch.float32))
        self.register_buffer("scale", scale_t)
        self.standard_normal = standard_normal

    fusable = OUTPUT_MAP_FUSABLE  # type: ignore[assignment]  # maps outputs only (_common)

    def _stats(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """loc and scale on ``device`` (and their numpy arrays on the CPU), moved once per
        (loc, scale, their versions, device): ``_affine.affine_stats``."""
        return affine_stats(self, device)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        loc, scale, _ = self._stats(value.device)
        return affine(value, loc, scale, standard_normal=self.standard_normal).to(value.dtype)

    def _map_spec(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if not spec.dtype.is_floating_point:
            raise TypeError(
                f"RewardScaling: the entry {key!r} has dtype {spec.dtype}; expected a floating "
                f"dtype."
            )
        found = bounds(spec)
        if found is None:
            return continuous_like(spec)
        low, high = self._apply_transform(found[0]), self._apply_transform(found[1])
        return continuous_like(spec, low=torch.minimum(low, high), high=torch.maximum(low, high))

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map_spec, "RewardScaling"
        )


class RewardClipping(Transform):
    """Clips rewards to ``[clamp_min, clamp_max]``.

    Args:
        clamp_min: the lower bound, or ``None``.
        clamp_max: the upper bound, or ``None``.
        in_keys: the rewards. Defaults to ``["reward"]``.
        out_keys: where to write them; default ``in_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = RewardClipping(-1.0, 1.0)
        >>> t(TensorDict(reward=torch.tensor([-3.0, 0.5, 2.0])))["reward"].tolist()
        [-1.0, 0.5, 1.0]
    """

    def __init__(
        self,
        clamp_min: float | None = None,
        clamp_max: float | None = None,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=REWARD if in_keys is None else in_keys, out_keys=out_keys)
        if clamp_min is None and clamp_max is None:
            raise ValueError("RewardClipping: give clamp_min, clamp_max or both.")
        if clamp_min is not None and clamp_max is not None and clamp_min > clamp_max:
            raise ValueError(
                f"RewardClipping: expected clamp_min <= clamp_max, got {clamp_min} > {clamp_max}."
            )
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    fusable = OUTPUT_MAP_FUSABLE  # type: ignore[assignment]  # maps outputs only (_common)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.clamp(self.clamp_min, self.clamp_max)

    def _map_spec(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        # clamp is monotone: the bounds of the output are the clamped bounds of the input.
        return clipped_spec(spec, self.clamp_min, self.clamp_max)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map_spec, "RewardClipping"
        )

    def extra_repr(self) -> str:
        return f"clamp_min={self.clamp_min}, clamp_max={self.clamp_max}"


__all__ = ["RewardClipping", "RewardScaling"]
