"""Reward maps: RewardScaling, RewardClipping, BinarizeReward and LineariseRewards."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from rl_core import Binary, Bounded, Composite, TensorSpec, Transform, Unbounded
from rl_core.keys import REWARD, NestedKey
from rl_envs.transforms._affine import affine, affine_stats
from rl_envs.transforms._common import (
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


class BinarizeReward(Transform):
    """Maps rewards to 1 where they are positive and 0 elsewhere (``int8``, a Binary spec).

    Args:
        in_keys: the rewards, each with a trailing dim of size 1. Defaults to ``["reward"]``.
        out_keys: where to write them; default ``in_keys``.

    Raises:
        ValueError: (on the specs or the data) a reward without a trailing dim of size 1.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = BinarizeReward()
        >>> t(TensorDict(reward=torch.tensor([[-1.0], [0.0], [2.5]])))["reward"].squeeze(-1).tolist()
        [0, 0, 1]
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys=REWARD if in_keys is None else in_keys, out_keys=out_keys)

    @staticmethod
    def _check_shape(shape: Sequence[int], key: NestedKey | None) -> None:
        if not len(shape) or shape[-1] != 1:
            where = "" if key is None else f" under {key!r}"
            raise ValueError(
                f"BinarizeReward: expected a reward with a trailing dim of size 1{where}, got "
                f"shape {tuple(shape)}."
            )

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        self._check_shape(value.shape, None)
        return (value > 0).to(torch.int8)

    def _map_spec(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        self._check_shape(spec.shape, key)
        return Binary(n=1, shape=spec.shape, device=spec.device, dtype=torch.int8)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map_spec, "BinarizeReward"
        )


class LineariseRewards(Transform):
    """Turns a multi-objective reward ``[..., n]`` into one ``[..., 1]``: a weighted sum.

    ``out = (weights * reward).sum(-1, keepdim=True)``. With several ``in_keys`` (one reward
    group per agent, say) the same weights apply to each; use one transform per group for
    different weights. The output spec is Bounded where the input's bounds are finite (the
    bounds of the sum, negative weights included), else Unbounded.

    Args:
        in_keys: the multi-objective rewards.
        out_keys: where to write the sums; default ``in_keys``.
        weights: one weight per objective. Defaults to all ones.

    Raises:
        ValueError: weights that are not one-dimensional, or a reward whose last dim does
            not match them.
        TypeError: (on the specs) a reward of an integer or boolean dtype.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = LineariseRewards(in_keys=["reward"], weights=[1.0, -0.5])
        >>> t(TensorDict(reward=torch.tensor([[2.0, 4.0]]), batch_size=[1]))["reward"].tolist()
        [[0.0]]
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey],
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        weights: Sequence[float] | torch.Tensor | None = None,
    ) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        if weights is not None:
            weights = torch.as_tensor(weights, dtype=torch.float32)
            if weights.ndim != 1 or weights.numel() == 0:
                raise ValueError(
                    f"LineariseRewards: expected weights as a non-empty 1-d sequence (one per "
                    f"objective), got shape {tuple(weights.shape)}."
                )
            self.register_buffer("weights", weights)
        else:
            self.weights = None

    def _weights_for(self, n: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        weights = self.weights
        if weights is None:
            return torch.ones(n, device=device, dtype=dtype)
        if weights.numel() != n:
            raise ValueError(
                f"LineariseRewards: expected rewards with {weights.numel()} objectives (one per "
                f"weight) in their last dim, got {n}."
            )
        return weights.to(device=device, dtype=dtype)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        if value.ndim == 0:
            raise ValueError(
                "LineariseRewards: expected rewards [..., n_objectives], got a scalar."
            )
        weights = self._weights_for(value.shape[-1], value.device, value.dtype)
        return (value * weights).sum(-1, keepdim=True)

    def _map_spec(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if not spec.dtype.is_floating_point:
            raise TypeError(
                f"LineariseRewards: the reward {key!r} has dtype {spec.dtype}; expected a "
                f"floating (continuous) reward."
            )
        if not len(spec.shape):
            raise ValueError(f"LineariseRewards: the reward {key!r} has no objective dim.")
        shape = (*spec.shape[:-1], 1)
        weights = self._weights_for(spec.shape[-1], spec.device, spec.dtype)
        found = bounds(spec)
        if found is None:
            return Unbounded(shape=shape, device=spec.device, dtype=spec.dtype)
        low, high = found
        positive, negative = weights.clamp(min=0), weights.clamp(max=0)
        new_low = (positive * low + negative * high).sum(-1, keepdim=True)
        new_high = (positive * high + negative * low).sum(-1, keepdim=True)
        return Bounded(new_low, new_high, shape=shape, device=spec.device, dtype=spec.dtype)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map_spec, "LineariseRewards"
        )


__all__ = ["BinarizeReward", "LineariseRewards", "RewardClipping", "RewardScaling"]
