"""ActionDiscretizer and FlattenAction: the policy's action space, reshaped or discretised."""

from __future__ import annotations

import torch

from rl_core import Categorical, Composite, TensorSpec, Transform
from rl_core.keys import ACTION, NestedKey
from rl_envs.transforms._common import bounds, map_action_leaves


class ActionDiscretizer(Transform):
    """A continuous (Bounded) action shown as ``num_intervals`` choices per action dim.

    The policy writes an integer index per dim (a Categorical spec of the action's shape);
    the env gets the middle of the chosen interval of ``[low, high]``.

    Args:
        num_intervals: the choices per dim (>= 2).
        action_key: the action. Defaults to ``"action"``.
        out_action_key: the key the policy writes; default ``action_key``.

    Raises:
        ValueError: ``num_intervals`` < 2.
        TypeError: (on the specs) the action is not Bounded with finite float bounds.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ActionDiscretizer(4)
        >>> t.low, t.high = torch.tensor([-2.0]), torch.tensor([2.0])
        >>> t.inv(TensorDict(action=torch.tensor([0])))["action"].tolist()
        [-1.5]
    """

    def __init__(
        self,
        num_intervals: int,
        action_key: NestedKey = ACTION,
        out_action_key: NestedKey | None = None,
    ) -> None:
        if not isinstance(num_intervals, int) or num_intervals < 2:
            raise ValueError(
                f"ActionDiscretizer: expected num_intervals >= 2, got {num_intervals!r}."
            )
        super().__init__(
            in_keys_inv=[action_key],
            out_keys_inv=[action_key if out_action_key is None else out_action_key],
        )
        self.num_intervals = num_intervals
        self.register_buffer("low", None)
        self.register_buffer("high", None)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        if self.low is None:
            raise RuntimeError(
                "ActionDiscretizer: the action bounds are unknown; put it in an env."
            )
        low, high = self.low.to(value.device), self.high.to(value.device)
        width = (high - low) / self.num_intervals
        return low + (value.to(low.dtype) + 0.5) * width

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        found = bounds(spec)
        if found is None or not spec.dtype.is_floating_point:
            raise TypeError(
                f"ActionDiscretizer: the action {key!r} has a {type(spec).__name__} spec of "
                f"dtype {spec.dtype}; expected Bounded with finite float bounds."
            )
        self.low, self.high = found[0].clone(), found[1].clone()
        return Categorical(self.num_intervals, shape=spec.shape, device=spec.device)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map, "ActionDiscretizer"
        )

    def extra_repr(self) -> str:
        return f"num_intervals={self.num_intervals}, {super().extra_repr()}"


class FlattenAction(Transform):
    """A multi-dim action shown flat: the policy writes ``[..., prod(shape)]``, the env gets
    ``[..., *shape]``.

    Args:
        action_key: the action. Defaults to ``"action"``.
        ndim: the number of trailing action dims to flatten (>= 2). Defaults to 2.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = FlattenAction()
        >>> t.shape = torch.Size([2, 3])
        >>> t.inv(TensorDict(action=torch.zeros(5, 6), batch_size=[5]))["action"].shape
        torch.Size([5, 2, 3])
    """

    def __init__(self, action_key: NestedKey = ACTION, *, ndim: int = 2) -> None:
        if ndim < 2:
            raise ValueError(f"FlattenAction: expected ndim >= 2, got {ndim}.")
        super().__init__(in_keys_inv=[action_key])
        self.ndim = ndim
        self.shape: torch.Size | None = None

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        if self.shape is None:
            raise RuntimeError("FlattenAction: the action shape is unknown; put it in an env.")
        return value.reshape(*value.shape[:-1], *self.shape)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if len(spec.shape) < self.ndim:
            raise ValueError(
                f"FlattenAction: the action {key!r} of shape {tuple(spec.shape)} has fewer than "
                f"{self.ndim} dims."
            )
        self.shape = spec.shape[-self.ndim :]
        lead = spec.shape[: -self.ndim]
        return spec.reshape(*lead, self.shape.numel())

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map, "FlattenAction"
        )


__all__ = ["ActionDiscretizer", "FlattenAction"]
