"""SliceSamplerWithoutReplacement: slices of trajectories, each trajectory once per epoch."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rl_buffers.samplers._trajectories import Trajectories
from rl_buffers.samplers.sampler import check_not_empty
from rl_buffers.samplers.slice import SliceSampler
from rl_buffers.storages.storage import Storage

__all__ = ["SliceSamplerWithoutReplacement"]


class SliceSamplerWithoutReplacement(SliceSampler):
    """A :class:`SliceSampler` that draws one slice from each trajectory once per epoch.

    An epoch goes over the trajectories found when it starts, in random order (or storage
    order with ``shuffle=False``), ``num_slices`` per batch. A write to the buffer ends the
    epoch at the next ``sample`` (trajectory positions may have moved). ``ran_out`` is True
    after the last batch of an epoch.

    Args:
        num_slices: slices per batch.
        slice_len: items per slice.

    Keyword Args:
        drop_last: drop the last batch of an epoch when it has fewer than ``num_slices``
            slices. Defaults to False.
        shuffle: visit trajectories in random order. Defaults to True.
        end_key, traj_key, strict_length, truncated_key, span: as in :class:`SliceSampler`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, SliceSamplerWithoutReplacement
        >>> storage = LazyTensorStorage(20)
        >>> episode = torch.arange(4).repeat_interleave(3)
        >>> storage.set(torch.arange(12), TensorDict({"episode": episode}, [12]))
        >>> sampler = SliceSamplerWithoutReplacement(num_slices=2, traj_key="episode")
        >>> a, _ = sampler.sample(storage, 4)
        >>> b, _ = sampler.sample(storage, 4)
        >>> sorted(set(episode[torch.cat([a, b])].tolist())), sampler.ran_out
        ([0, 1, 2, 3], True)
    """

    def __init__(
        self,
        num_slices: int | None = None,
        slice_len: int | None = None,
        *,
        drop_last: bool = False,
        shuffle: bool = True,
        end_key: Any = None,
        traj_key: Any = None,
        strict_length: bool = True,
        truncated_key: Any = ("next", "truncated"),
        span: bool | int | tuple[bool | int, bool | int] = False,
    ) -> None:
        super().__init__(
            num_slices,
            slice_len,
            end_key=end_key,
            traj_key=traj_key,
            strict_length=strict_length,
            cache_values=False,
            truncated_key=truncated_key,
            span=span,
        )
        self.drop_last = drop_last
        self.shuffle = shuffle
        self._epoch: Trajectories | None = None
        self._order: Tensor | None = None
        self._position = 0
        self._ran_out = False

    def extend(self, index: Tensor) -> None:
        super().extend(index)
        self._epoch = None

    def add(self, index: int) -> None:
        super().add(index)
        self._epoch = None

    def _empty(self) -> None:
        super()._empty()
        self._epoch, self._order, self._position, self._ran_out = None, None, 0, False

    def sample(self, storage: Storage, batch_size: int) -> tuple[Tensor, dict[str, Any]]:
        check_not_empty(f"{type(self).__name__}.sample", storage)
        num_slices, slice_len = self._shape(batch_size)
        left = 0 if self._order is None else self._order.numel() - self._position
        if self._epoch is None or self._ran_out or left == 0:
            self._epoch = self.trajectories(storage)
            eligible = self._eligible(self._epoch, slice_len)
            if self.drop_last and eligible.numel() < num_slices:
                raise RuntimeError(
                    f"{type(self).__name__}.sample: drop_last=True and only {eligible.numel()} "
                    f"trajectories fit slice_len={slice_len}, fewer than num_slices={num_slices}."
                )
            perm = (
                torch.randperm(eligible.numel(), generator=self._rng)
                if self.shuffle
                else torch.arange(eligible.numel())
            )
            self._order = eligible[perm]
            self._position = 0
            left = self._order.numel()
        chosen = self._order[self._position : self._position + num_slices]
        self._position += chosen.numel()
        left -= chosen.numel()
        self._ran_out = left == 0 or (self.drop_last and left < num_slices)
        return self._slices(self._epoch, chosen, slice_len)

    @property
    def ran_out(self) -> bool:
        return self._ran_out

    @property
    def supports_epochs(self) -> bool:
        return True

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "order": self._order, "position": self._position}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._epoch, self._order, self._position = None, None, 0
