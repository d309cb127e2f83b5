"""SamplerWithoutReplacement: epochs that visit every item once."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rl_buffers.samplers.sampler import Sampler, check_not_empty
from rl_buffers.storages.storage import Storage

__all__ = ["SamplerWithoutReplacement"]


class SamplerWithoutReplacement(Sampler):
    """Draws each item once per epoch; a new epoch starts when the last one is used up.

    An epoch covers the items stored when it starts (items written during an epoch are
    drawn from the next one). ``ran_out`` is True right after the last batch of an epoch,
    which ends iteration over the buffer.

    Args:
        drop_last: drop the last batch of an epoch when it is smaller than ``batch_size``.
            Defaults to False (the last batch may be smaller).
        shuffle: draw in random order; False draws in storage order. Defaults to True.

    Examples:
        >>> import torch
        >>> from rl_buffers import LazyTensorStorage, SamplerWithoutReplacement
        >>> storage = LazyTensorStorage(10)
        >>> storage.set(torch.arange(5), torch.zeros(5, 2))
        >>> sampler = SamplerWithoutReplacement()
        >>> first, _ = sampler.sample(storage, 3)
        >>> second, _ = sampler.sample(storage, 3)
        >>> sorted(first.tolist() + second.tolist()), sampler.ran_out
        ([0, 1, 2, 3, 4], True)
    """

    def __init__(self, drop_last: bool = False, shuffle: bool = True) -> None:
        self.drop_last = drop_last
        self.shuffle = shuffle
        self._order: Tensor | None = None
        self._position = 0
        self._ran_out = False

    def _new_epoch(self, n: int) -> None:
        self._order = torch.randperm(n, generator=self._rng) if self.shuffle else torch.arange(n)
        self._position = 0
        self._ran_out = False

    def sample(self, storage: Storage, batch_size: int) -> tuple[Tensor, dict[str, Any]]:
        n = check_not_empty("SamplerWithoutReplacement.sample", storage)
        if self.drop_last and n < batch_size:
            raise RuntimeError(
                f"SamplerWithoutReplacement.sample: drop_last=True and the buffer holds {n} "
                f"items, fewer than batch_size={batch_size}; no full batch exists."
            )
        order = self._order
        left = 0 if order is None else order.numel() - self._position
        if left == 0 or (self.drop_last and left < batch_size) or self._ran_out:
            self._new_epoch(n)
            order = self._order
            left = n
        index = order[self._position : self._position + batch_size]
        self._position += index.numel()
        left -= index.numel()
        self._ran_out = left == 0 or (self.drop_last and left < batch_size)
        return index, {}

    @property
    def ran_out(self) -> bool:
        return self._ran_out

    @property
    def supports_epochs(self) -> bool:
        return True

    def state_dict(self) -> dict[str, Any]:
        return {"order": self._order, "position": self._position, "ran_out": self._ran_out}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._order = state_dict["order"]
        self._position = int(state_dict["position"])
        self._ran_out = bool(state_dict["ran_out"])

    def _empty(self) -> None:
        self._order, self._position, self._ran_out = None, 0, False

    def __repr__(self) -> str:
        return f"SamplerWithoutReplacement(drop_last={self.drop_last}, shuffle={self.shuffle})"
