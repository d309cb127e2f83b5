"""ActionDiscretizer and FlattenAction: the policy's action space, reshaped or discretised."""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

import torch

from rl_core import (
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    TensorSpec,
    Transform,
)
from rl_core.keys import ACTION, NestedKey
from rl_envs.transforms._common import bounds, map_action_leaves


class ActionDiscretizer(Transform):
    """A continuous (Bounded) action shown as ``num_intervals`` choices per action dim.

    Each action dim's ``[low, high]`` is cut into ``n`` equal intervals of width ``w``; the
    policy picks one interval per dim and the env gets a point of it: ``low + (i + 0.5) * w``
    (``sampling=MEDIAN``, the default), ``low + i * w`` (``LOW``), ``low + (i + 1) * w``
    (``HIGH``) or ``low + (i + u) * w`` with ``u ~ U[0, 1)`` (``RANDOM``), as TorchRL. With
    ``categorical=True`` the policy writes the index ``i`` per dim (``Categorical``, or
    ``MultiCategorical`` when the dims have different counts); with ``categorical=False`` a
    one-hot block per dim, concatenated along the last dim (``OneHot`` for a scalar action,
    ``MultiOneHot`` for a vector).

    Args:
        num_intervals: the choices per dim (>= 2), or one count per action dim (a sequence or
            1-d tensor as long as the action's last dim).
        action_key: the action. Defaults to ``"action"``.
        out_action_key: the key the policy writes; default ``action_key``.
        sampling: an :class:`ActionDiscretizer.SamplingStrategy` (or its int). Defaults to
            ``MEDIAN``.
        categorical: indices (True, the default) or one-hot blocks (False).

    Raises:
        ValueError: a count < 2, an unknown ``sampling``; (on the specs) per-dim counts that
            do not match the action's last dim.
        TypeError: (on the specs) the action is not Bounded with finite float bounds.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ActionDiscretizer(4)
        >>> t.low, t.high = torch.tensor([-2.0]), torch.tensor([2.0])
        >>> t.inv(TensorDict(action=torch.tensor([0])))["action"].tolist()
        [-1.5]
    """

    class SamplingStrategy(IntEnum):
        """Where in its interval a chosen action lands (TorchRL's values)."""

        MEDIAN = 0
        LOW = 1
        HIGH = 2
        RANDOM = 3

    def __init__(
        self,
        num_intervals: int | Sequence[int] | torch.Tensor,
        action_key: NestedKey = ACTION,
        out_action_key: NestedKey | None = None,
        sampling: SamplingStrategy | int | None = None,
        categorical: bool = True,
    ) -> None:
        counts = torch.as_tensor(num_intervals)
        if counts.is_floating_point() or counts.ndim > 1 or counts.numel() == 0:
            raise ValueError(
                f"ActionDiscretizer: expected num_intervals as an int >= 2 or a 1-d sequence of "
                f"them, got {num_intervals!r}."
            )
        if bool((counts < 2).any()):
            raise ValueError(
                f"ActionDiscretizer: expected num_intervals >= 2, got {num_intervals!r}."
            )
        try:
            strategy = self.SamplingStrategy(
                self.SamplingStrategy.MEDIAN if sampling is None else sampling
            )
        except ValueError as err:
            raise ValueError(
                f"ActionDiscretizer: sampling must be one of "
                f"{[m.name for m in self.SamplingStrategy]}, got {sampling!r}."
            ) from err
        super().__init__(
            in_keys_inv=[action_key],
            out_keys_inv=[action_key if out_action_key is None else out_action_key],
        )
        self.num_intervals = int(counts) if counts.ndim == 0 else counts.clone()
        self.sampling = strategy
        self.categorical = bool(categorical)
        self.register_buffer("low", None)
        self.register_buffer("high", None)

    def _counts(self, last: int | None) -> torch.Tensor:
        """The count of each action dim: ``[last]`` for a vector action, ``[]`` for a scalar."""
        counts = torch.as_tensor(self.num_intervals)
        if last is None:
            if counts.numel() != 1:
                raise ValueError(
                    f"ActionDiscretizer: a scalar action takes one count, got num_intervals="
                    f"{self.num_intervals!r}."
                )
            return counts.reshape(())
        if counts.ndim == 0:
            return counts.expand(last).clone()
        if counts.numel() != last:
            raise ValueError(
                f"ActionDiscretizer: expected {last} counts (the action's last dim), got "
                f"num_intervals={self.num_intervals!r}."
            )
        return counts

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        if self.low is None:
            raise RuntimeError(
                "ActionDiscretizer: the action bounds are unknown; put it in an env."
            )
        low, high = self.low.to(value.device), self.high.to(value.device)
        scalar = low.ndim == 0 or getattr(self, "_scalar", False)
        counts = self._counts(None if scalar else low.shape[-1]).to(value.device)
        if not self.categorical:  # one-hot blocks -> indices
            if scalar:
                value = value.to(torch.int64).argmax(-1)
            else:
                blocks = value.split(counts.tolist(), dim=-1)
                value = torch.stack([b.to(torch.int64).argmax(-1) for b in blocks], -1)
        width = (high - low) / counts.to(low.dtype)
        offset = {
            self.SamplingStrategy.MEDIAN: 0.5,
            self.SamplingStrategy.LOW: 0.0,
            self.SamplingStrategy.HIGH: 1.0,
        }.get(self.sampling)
        index = value.to(low.dtype)
        # RANDOM: a uniform point of the interval
        index = index + (torch.rand_like(index) if offset is None else offset)
        return low + index * width

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        found = bounds(spec)
        if found is None or not spec.dtype.is_floating_point:
            raise TypeError(
                f"ActionDiscretizer: the action {key!r} has a {type(spec).__name__} spec of "
                f"dtype {spec.dtype}; expected Bounded with finite float bounds."
            )
        parent = self.parent
        batch_dims = 0 if parent is None else len(parent.batch_size)
        event = spec.shape[batch_dims:]
        self._scalar = len(event) == 0
        index = (0,) * batch_dims  # one sub-env's bounds
        self.low, self.high = found[0][index].clone(), found[1][index].clone()
        counts = self._counts(None if self._scalar else event[-1])
        shape, device = spec.shape, spec.device
        if self._scalar:
            n = int(counts)
            if self.categorical:
                return Categorical(n, shape=shape, device=device)
            return OneHot(n, shape=(*shape, n), device=device)
        if not self.categorical:
            total = int(counts.sum())
            return MultiOneHot(counts.tolist(), shape=(*shape[:-1], total), device=device)
        if bool((counts == counts[0]).all()):
            return Categorical(int(counts[0]), shape=shape, device=device)
        return MultiCategorical(counts.tolist(), shape=shape, device=device)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map, "ActionDiscretizer"
        )

    def extra_repr(self) -> str:
        return (
            f"num_intervals={self.num_intervals}, sampling={self.sampling.name}, "
            f"categorical={self.categorical}, {super().extra_repr()}"
        )


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
