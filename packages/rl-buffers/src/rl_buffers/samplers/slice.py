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
_NO_SPAN = (False, False)


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
        span: let a slice run over the start (left) or the end (right) of its trajectory,
            cut there, so it holds fewer items: an int ``i`` keeps at least
            ``slice_len - i`` items (``i < slice_len``), True at least one, False (the
            default) none is cut. A pair ``(left, right)`` sets each side. A slice's
            virtual start is drawn uniformly over every position allowed, so the items near
            the allowed sides of a trajectory come up as often as the middle ones. With a
            right span and ``strict_length``, a trajectory of at least ``slice_len - right``
            items can be drawn.

    Raises:
        ValueError: both or neither of ``num_slices``/``slice_len``, or both keys, are given;
            ``span`` is not a bool, a non-negative int or a pair of them; (on sampling) an
            int span is not below ``slice_len``.

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
        span: bool | int | tuple[bool | int, bool | int] = False,
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
        self.span = _span_pair(name, span)
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

    def _span_sizes(self, slice_len: int) -> tuple[int, int]:
        """How many positions a slice may run over its trajectory's start and end."""
        if self.span == _NO_SPAN:
            return 0, 0
        return tuple(
            _span_size(type(self).__name__, side, value, slice_len)
            for side, value in zip(("left", "right"), self.span, strict=True)
        )

    def _eligible(self, trajs: Trajectories, slice_len: int) -> Tensor:
        if not self.strict_length:
            return torch.arange(trajs.start.numel())
        right = self._span_sizes(slice_len)[1]
        needed = slice_len - right
        eligible = (trajs.length >= needed).nonzero().squeeze(-1)
        if eligible.numel() == 0:
            wanted = f"slice_len={slice_len}" if not right else f"{needed} (slice_len - span)"
            raise RuntimeError(
                f"{type(self).__name__}.sample: no stored trajectory has {wanted} items (the "
                f"longest has {int(trajs.length.max())}). Use a shorter slice_len or "
                f"strict_length=False."
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
        """Index and info of slices in trajectories ``chosen`` (random starts if not given;
        a slice stops at its trajectory's end)."""
        traj_start = trajs.start[chosen]
        length = trajs.length[chosen]
        left, right = self._span_sizes(slice_len)
        uniform = None if start is not None else torch.rand(chosen.shape, generator=self._rng)
        if start is None and (left or right):
            # a virtual start in [-left, length - slice_len + right], the slice cut to its
            # trajectory: a left overhang takes the first items, a right one the last
            low = -left
            room = (length - slice_len + right).clamp(min=0) - low + 1
            virtual = low + (uniform * room).long().clamp(max=room - 1)
            first = virtual.clamp(min=0)
            taken = (virtual + slice_len).clamp(max=length) - first
            start = traj_start + first
        else:
            if start is None:
                room = (length - slice_len).clamp(min=0) + 1
                start = traj_start + (uniform * room).long().clamp(max=room - 1)
            taken = None
        if taken is None and (self.strict_length and not right):
            full = True
        else:
            if taken is None:
                taken = (traj_start + length - start).clamp(max=slice_len)
            full = bool((taken == slice_len).all())
        if full:
            logical = slice_positions(start, slice_len)
            truncated = torch.zeros(chosen.numel(), slice_len, dtype=torch.bool)
            truncated[:, -1] = True
        else:
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


def _span_pair(where: str, span: Any) -> tuple[bool | int, bool | int]:
    """``span=`` as a ``(left, right)`` pair, each a bool or a non-negative int.

    Raises:
        ValueError: ``span`` is anything else.
    """
    pair = tuple(span) if isinstance(span, tuple | list) else (span, span)
    if len(pair) != 2 or not all(
        isinstance(side, bool) or (isinstance(side, int) and side >= 0) for side in pair
    ):
        raise ValueError(
            f"{where}: expected span to be a bool, a non-negative int or a (left, right) pair "
            f"of them, got {span!r}."
        )
    return pair


def _span_size(where: str, side: str, value: bool | int, slice_len: int) -> int:
    """Positions a slice may overhang on one side: ``slice_len - 1`` for True."""
    if value is True:
        return slice_len - 1
    if value is False:
        return 0
    if value >= slice_len:
        raise ValueError(
            f"{where}.sample: the {side} span {value} must be below slice_len={slice_len} (a "
            f"slice keeps at least slice_len - span items); use a smaller span or True."
        )
    return value
