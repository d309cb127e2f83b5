"""ClipTransform and SignTransform: entries clipped to a range, or replaced by their sign."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rl_core import Bounded, Composite, TensorSpec, Transform
from rl_core.keys import NestedKey
from rl_envs.transforms._common import (
    clipped_spec,
    map_action_leaves,
    map_output_leaves,
)


class ClipTransform(Transform):
    """Clips entries (forward) and the actions the policy writes (inverse) to ``[low, high]``.

    Args:
        in_keys: observations or rewards to clip.
        out_keys: where to write them; default ``in_keys``.
        in_keys_inv: actions of the env to clip before the env reads them.
        out_keys_inv: the keys the policy writes; default ``in_keys_inv``.
        low: the lower bound, or ``None``.
        high: the upper bound, or ``None``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ClipTransform(["observation"], low=-1.0, high=1.0)
        >>> t(TensorDict(observation=torch.tensor([-2.0, 3.0])))["observation"].tolist()
        [-1.0, 1.0]
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        *,
        low: float | None = None,
        high: float | None = None,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        if low is None and high is None:
            raise ValueError("ClipTransform: give low, high or both.")
        if low is not None and high is not None and low > high:
            raise ValueError(f"ClipTransform: expected low <= high, got {low} > {high}.")
        self.low = low
        self.high = high

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.clamp(self.low, self.high)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.clamp(self.low, self.high)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        return clipped_spec(spec, self.low, self.high)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map, "ClipTransform"
        )

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        # The policy may write anything: it sees the env's action spec (values outside it are
        # clipped into it), with the bounds clipped.
        return map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map, "ClipTransform"
        )

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, low={self.low}, high={self.high}"


class SignTransform(Transform):
    """Replaces entries by their sign (-1, 0 or 1), e.g. Atari rewards.

    Args:
        in_keys: observations or rewards.
        out_keys: where to write them; default ``in_keys``.
        in_keys_inv: actions given to the env as their sign.
        out_keys_inv: the keys the policy writes; default ``in_keys_inv``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = SignTransform(["reward"])
        >>> t(TensorDict(reward=torch.tensor([-3.0, 0.0, 2.0])))["reward"].tolist()
        [-1.0, 0.0, 1.0]
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.sign()

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return value.sign()

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if spec.dtype is torch.bool:
            raise TypeError(f"SignTransform: the entry {key!r} is boolean; expected numbers.")
        return Bounded(-1, 1, shape=spec.shape, device=spec.device, dtype=spec.dtype)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map, "SignTransform"
        )

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map, "SignTransform"
        )


__all__ = ["ClipTransform", "SignTransform"]
