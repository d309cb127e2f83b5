"""SliceSampler: contiguous slices of stored trajectories."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rl_buffers.samplers._trajectories import Trajectories, find_trajectories, slice_positions
from rl_buffers.samplers.sampler import Sampler, check_not_empty
from rl_buffers.storages.storage import Storage

__all__ = ["SliceSampler"]

_DEFAULT_END_KEY = ("next", "done")
_DEFAULT_TRAJ_KEY = "episode"


class SliceSampler(Sampler):
    """Draws ``num_slices`` slices of ``slice_len`` consecutive items, each inside one trajectory.

    A batch of ``batch_size`` items holds ``num_slices`` slices of ``slice_len`` items one
    after the other (give one of the two; the other is ``batch_size // given``). Each slice
    picks a trajectory uniformly among those long enough, then a start uniformly among the
    positions where it fits. Slices never cross a trajectory boundary, and follow
    trajectories that wrap around the end of a full storage. The info dict marks the last
    item of each slice under ``truncated_key``; a TensorDict buffer writes it into the sample.

    Trajectories are read from the storage: ``traj_key`` (an id per item) or ``end_key``
    (True on each trajectory's last item); with both given, ``traj_key`` is read, as in
    TorchRL. With neither given, ``"episode"`` is used if the items have it, else
    ``("next", "done")``.

    Args:
        num_slices: slices per batch.
        slice_len: items per slice.

    Keyword Args:
        end_key: entry flagging the last item of each trajectory.
        traj_key: entry holding a trajectory id per item.
        strict_length: only draw full slices (trajectories shorter than ``slice_len`` are
            skipped). False also draws shorter trajectories whole, so a batch may hold fewer
            items. Defaults to True.
        cache_values: keep the trajectory split between writes (recomputed after each
            ``extend``). Defaults to False.
        truncated_key: the info entry marking slice ends. Defaults to
            ``("next", "truncated")``.

    Raises:
        ValueError: both or neither of ``num_slices``/``slice_len``, or both keys, are given.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, SliceSampler
        >>> storage = LazyTensorStorage(20)
        >>> episode = torch.tensor([0] * 5 + [1] * 5)
        >>> storage.set(torch.arange(10), TensorDict({"episode": episode}, [10]))
        >>> index, info = SliceSampler(slice_len=4, traj_key="episode").sample(storage, 8)
        >>> int(episode[index].view(2, 4).diff(dim=1).abs().sum()), info[("next", "truncated")].shape
        (0, torch.Size([8, 1]))
    """

    def __init__(
        self,
        num_slices: int | None = None,
        slice_len: int | None = None,
        *,
        end_key: Any = None,
        traj_key: Any = None,
        strict_length: bool = True,
        cache_values: bool = False,
        truncated_key: Any = ("next", "truncated"),
    ) -> None:
        name = type(self).__name__
        if (num_slices is None) == (slice_len is None):
            raise ValueError(
                f"{name}: expected exactly one of num_slices and slice_len, got "
                f"num_slices={num_slices}, slice_len={slice_len}."
            )
        for arg, value in (("num_slices", num_slices), ("slice_len", slice_len)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{name}: expected {arg} to be a positive int, got {value!r}.")
        self.num_slices = num_slices
        self.slice_len = slice_len
        self.end_key = end_key
        self.traj_key = traj_key
        self.strict_length = strict_length
        self.cache_values = cache_values
        self.truncated_key = truncated_key
        self._cache: Trajectories | None = None

    # ---------------------------------------------------------------- writes
    def extend(self, index: Tensor) -> None:
        self._cache = None

    def add(self, index: int) -> None:
        self._cache = None

    def _empty(self) -> None:
        self._cache = None

    # ---------------------------------------------------------------- trajectories
    def _shape(self, batch_size: int) -> tuple[int, int]:
        given, name = (
            (self.num_slices, "num_slices")
            if self.num_slices is not None
            else (self.slice_len, "slice_len")
        )
        if batch_size % given:
            raise ValueError(
                f"{type(self).__name__}.sample: batch_size={batch_size} is not a multiple of "
                f"{name}={given}."
            )
        other = batch_size // given
        return (given, other) if self.num_slices is not None else (other, given)

    def trajectories(self, storage: Storage) -> Trajectories:
        """The stored trajectories in write order (cached if ``cache_values``)."""
        if self._cache is not None:
            return self._cache
        where = f"{type(self).__name__}.sample"
        column_of = getattr(storage, "column", None)
        if column_of is None or getattr(storage, "ndim", 1) != 1:
            raise TypeError(
                f"{where}: expected a TensorStorage of TensorDicts with ndim=1, got "
                f"{type(storage).__name__} (ndim={getattr(storage, 'ndim', 1)})."
            )
        if self.traj_key is not None:
            key, is_end = self.traj_key, False
        elif self.end_key is not None:
            key, is_end = self.end_key, True
        else:
            try:
                column_of(_DEFAULT_TRAJ_KEY)
                key, is_end = _DEFAULT_TRAJ_KEY, False
            except KeyError:
                key, is_end = _DEFAULT_END_KEY, True
        column = column_of(key)
        n = column.shape[0]
        # Once full, the oldest item sits at the writer's next row.
        oldest = storage.next_row % n if n == storage.max_size else 0
        trajs = find_trajectories(column, is_end_flag=is_end, oldest=oldest, where=where)
        if self.cache_values:
            self._cache = trajs
        return trajs

    def _eligible(self, trajs: Trajectories, slice_len: int) -> Tensor:
        if not self.strict_length:
            return torch.arange(trajs.start.numel())
        eligible = (trajs.length >= slice_len).nonzero().squeeze(-1)
        if eligible.numel() == 0:
            raise RuntimeError(
                f"{type(self).__name__}.sample: no stored trajectory has slice_len={slice_len} "
                f"items (the longest has {int(trajs.length.max())}). Use a shorter slice_len "
                f"or strict_length=False."
            )
        return eligible

    # ---------------------------------------------------------------- sampling
    def sample(self, storage: Storage, batch_size: int) -> tuple[Tensor, dict[str, Any]]:
        check_not_empty(f"{type(self).__name__}.sample", storage)
        num_slices, slice_len = self._shape(batch_size)
        trajs = self.trajectories(storage)
        eligible = self._eligible(trajs, slice_len)
        chosen = eligible[torch.randint(eligible.numel(), (num_slices,), generator=self._rng)]
        return self._slices(trajs, chosen, slice_len)

    def _slices(
        self, trajs: Trajectories, chosen: Tensor, slice_len: int, start: Tensor | None = None
    ) -> tuple[Tensor, dict[str, Any]]:
        """Index and info of slices in trajectories ``chosen`` (random starts if not given)."""
        traj_start = trajs.start[chosen]
        length = trajs.length[chosen]
        if start is None:
            room = (length - slice_len).clamp(min=0) + 1
            uniform = torch.rand(chosen.shape, generator=self._rng)
            start = traj_start + (uniform * room).long().clamp(max=room - 1)
        if self.strict_length or bool((length >= slice_len).all()):
            logical = slice_positions(start, slice_len)
            truncated = torch.zeros(chosen.numel(), slice_len, dtype=torch.bool)
            truncated[:, -1] = True
        else:
            taken = length.clamp(max=slice_len)
            keep = torch.arange(slice_len) < taken.unsqueeze(-1)
            logical = slice_positions(start, slice_len)[keep.reshape(-1)]
            last = torch.zeros(chosen.numel(), slice_len, dtype=torch.bool)
            last[torch.arange(chosen.numel()), taken - 1] = True
            truncated = last[keep]
        index = trajs.physical(logical)
        return index, {self.truncated_key: truncated.reshape(-1, 1)}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._cache = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_slices={self.num_slices}, slice_len={self.slice_len}, "
            f"strict_length={self.strict_length})"
        )
