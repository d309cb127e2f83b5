"""PrioritizedSliceSampler: trajectory slices drawn by item priority."""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import Tensor

from rl_buffers.samplers.prioritized import PrioritizedSampler
from rl_buffers.samplers.sampler import check_not_empty
from rl_buffers.samplers.slice import SliceSampler
from rl_buffers.storages.storage import Storage

__all__ = ["PrioritizedSliceSampler"]

_MAX_REDRAWS = 64


class PrioritizedSliceSampler(SliceSampler):
    """A :class:`SliceSampler` whose slices are drawn through item priorities.

    Each slice is found by drawing one item with probability proportional to its priority
    (as :class:`PrioritizedSampler`, on the same sum-tree ops) and taking the slice that
    starts there, moved back so it ends inside the item's trajectory. With
    ``strict_length=True`` items of trajectories shorter than ``slice_len`` are drawn again.
    So a slice starting at ``s`` is drawn with probability proportional to the summed
    priority of the items that map to ``s``. Every item of the batch gets an importance
    weight (``"priority_weight"``); ``update_priority`` takes per-item priorities.

    Args:
        max_capacity: the most items the storage holds.
        alpha: priority exponent, >= 0.
        beta: importance-sampling exponent, >= 0.

    Keyword Args:
        eps, dtype, reduction, max_priority_within_buffer: as in :class:`PrioritizedSampler`.
        num_slices, slice_len, end_key, traj_key, strict_length, cache_values, truncated_key: as
            in :class:`SliceSampler`.
        span: as in :class:`SliceSampler`, the right side only: a slice may run past its
            trajectory's end (its start is the drawn item, moved back at most
            ``slice_len - right`` items before the end). A left span is turned off with a
            warning, as TorchRL: a slice starts at its drawn item or before it, never before
            its trajectory.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, PrioritizedSliceSampler
        >>> storage = LazyTensorStorage(20)
        >>> storage.set(torch.arange(10), TensorDict({"episode": torch.arange(10) // 5}, [10]))
        >>> sampler = PrioritizedSliceSampler(20, 1.0, 1.0, slice_len=2, traj_key="episode")
        >>> sampler.extend(torch.arange(10))
        >>> index, info = sampler.sample(storage, 6)
        >>> index.shape, info["priority_weight"].shape
        (torch.Size([6]), torch.Size([6]))
    """

    def __init__(
        self,
        max_capacity: int,
        alpha: float,
        beta: float,
        *,
        eps: float = 1e-8,
        dtype: torch.dtype = torch.float,
        reduction: str = "max",
        num_slices: int | None = None,
        slice_len: int | None = None,
        end_key: Any = None,
        traj_key: Any = None,
        strict_length: bool = True,
        cache_values: bool = False,
        truncated_key: Any = ("next", "truncated"),
        span: bool | int | tuple[bool | int, bool | int] = False,
        max_priority_within_buffer: bool = False,
    ) -> None:
        super().__init__(
            num_slices,
            slice_len,
            end_key=end_key,
            traj_key=traj_key,
            strict_length=strict_length,
            cache_values=cache_values,
            truncated_key=truncated_key,
            span=span,
        )
        if self.span[0]:
            warnings.warn(
                f"{type(self).__name__}: span={span!r} asks for a left span, which a "
                f"prioritized slice sampler does not take (a slice starts at or before its "
                f"drawn item, inside its trajectory); it is turned off: span="
                f"{(False, self.span[1])!r}.",
                UserWarning,
                stacklevel=2,
            )
            self.span = (False, self.span[1])
        self.priorities = PrioritizedSampler(
            max_capacity,
            alpha,
            beta,
            eps=eps,
            dtype=dtype,
            reduction=reduction,
            max_priority_within_buffer=max_priority_within_buffer,
        )

    def extend(self, index: Tensor) -> None:
        super().extend(index)
        self.priorities.extend(index)

    def add(self, index: int) -> None:
        super().add(index)
        self.priorities.add(index)

    def update_priority(self, index: Tensor, priority: Tensor | float) -> None:
        self.priorities.update_priority(index, priority)

    def _empty(self) -> None:
        super()._empty()
        self.priorities._empty()

    def sample(self, storage: Storage, batch_size: int) -> tuple[Tensor, dict[str, Any]]:
        n = check_not_empty(f"{type(self).__name__}.sample", storage)
        num_slices, slice_len = self._shape(batch_size)
        trajs = self.trajectories(storage)
        self._eligible(trajs, slice_len)  # raises if no trajectory fits
        right = self._span_sizes(slice_len)[1]
        chosen = torch.empty(num_slices, dtype=torch.long)
        start = torch.empty(num_slices, dtype=torch.long)
        todo = torch.arange(num_slices)
        tree = self.priorities._tree
        for _ in range(_MAX_REDRAWS):
            query = torch.rand(todo.numel(), dtype=tree.dtype, generator=self._rng) * tree[1]
            drawn = trajs.logical(torch.ops.rl_core.sum_tree_find_prefixsum(tree, query))
            traj = torch.searchsorted(trajs.start, drawn, right=True) - 1
            length = trajs.length[traj]
            last_start = trajs.start[traj] + (length - slice_len + right).clamp(min=0)
            chosen[todo] = traj
            start[todo] = torch.minimum(drawn, last_start)
            if not self.strict_length:
                break
            todo = todo[length < slice_len - right]
            if todo.numel() == 0:
                break
        else:
            raise RuntimeError(
                f"{type(self).__name__}.sample: after {_MAX_REDRAWS} draws, items of "
                f"trajectories shorter than slice_len={slice_len} still came up; their "
                f"priorities dominate. Lower them or use strict_length=False."
            )
        index, info = self._slices(trajs, chosen, slice_len, start=start)
        info["priority_weight"] = self.priorities.weights(index, n)
        return index, info

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "priorities": self.priorities.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self.priorities.load_state_dict(state_dict["priorities"])
