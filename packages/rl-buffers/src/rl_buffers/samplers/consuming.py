"""ConsumingSampler: each item is drawn at most ``max_sample_count`` times."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rl_buffers.samplers.sampler import Sampler, check_not_empty
from rl_buffers.storages.storage import Storage

__all__ = ["ConsumingSampler"]


class ConsumingSampler(Sampler):
    """Draws items uniformly, without replacement inside a batch, and retires each item once
    it has been returned ``max_sample_count`` times, until a write fills its slot again.

    As in TorchRL 0.14: a batch holds ``min(batch_size, items left)`` distinct items and
    sampling when none is left raises; through a :class:`ReplayBuffer`, ``len(buffer)``
    counts the items not consumed yet (the storage's ``len`` stays the filled slots), and
    writes go into consumed slots first, oldest-consumed first, before the writer's cursor
    moves on (the buffer's writer needs ``write_at``). The consumed slots are part of
    :meth:`state_dict`, so ``dumps``/``loads`` keep them. Draws use the buffer's
    generator. 1-D storages (tensor or list) only; no prefetching.

    Args:
        max_sample_count: returns after which an item is consumed. Defaults to 1.

    Raises:
        ValueError: ``max_sample_count`` is not a positive int.
        RuntimeError: (at sampling) every stored item is consumed.

    Examples:
        >>> import torch
        >>> from rl_buffers import ConsumingSampler, ListStorage, ReplayBuffer
        >>> rb = ReplayBuffer(storage=ListStorage(10), sampler=ConsumingSampler(), batch_size=3)
        >>> rb.extend([torch.tensor(i) for i in range(4)])
        tensor([0, 1, 2, 3])
        >>> len(rb.sample()), len(rb)
        (3, 1)
        >>> rb.extend([torch.tensor(9)]).item() in range(4)  # a consumed slot, not slot 4
        True
    """

    def __init__(self, max_sample_count: int = 1) -> None:
        if (
            isinstance(max_sample_count, bool)
            or not isinstance(max_sample_count, int)
            or max_sample_count < 1
        ):
            raise ValueError(
                f"ConsumingSampler: expected max_sample_count to be a positive int, got "
                f"{max_sample_count!r}."
            )
        self.max_sample_count = max_sample_count
        self._counts = torch.zeros(0, dtype=torch.long)
        self._len = 0
        self._free = torch.zeros(0, dtype=torch.long)  # consumed slots, oldest first

    def _grow(self, size: int) -> None:
        if size > self._counts.numel():
            grown = torch.zeros(max(size, 2 * self._counts.numel()), dtype=torch.long)
            grown[: self._counts.numel()] = self._counts
            self._counts = grown

    def _sync(self, storage: Storage) -> None:
        self._len = len(storage)
        self._grow(self._len)

    def extend(self, index: Tensor) -> None:
        index = torch.as_tensor(index, dtype=torch.long).reshape(-1)
        if index.numel():
            self._grow(int(index.max()) + 1)
            self._counts[index] = 0  # a new item in the slot: not drawn yet
            self._len = max(self._len, int(index.max()) + 1)

    def add(self, index: int) -> None:
        self.extend(torch.tensor([index]))

    @property
    def num_available(self) -> int:
        """Stored items not consumed yet (as of the last write or sample)."""
        return int((self._counts[: self._len] < self.max_sample_count).sum())

    def num_sampleable(self, storage: Storage) -> int:
        """Items of ``storage`` not consumed yet (what ``len(buffer)`` reports)."""
        self._sync(storage)
        return self.num_available

    def pop_consumed(self, storage: Storage, count: int) -> Tensor:
        """Takes up to ``count`` consumed slots of ``storage``, oldest-consumed first, for
        the buffer to write into (a slot written since it was consumed is skipped)."""
        self._sync(storage)
        free = self._free
        valid = free[(free < self._len)]
        valid = valid[self._counts[valid] >= self.max_sample_count]
        taken, self._free = valid[:count], valid[count:]
        return taken

    def can_sample(self, storage: Storage, batch_size: int) -> bool:
        """Whether a full batch of ``batch_size`` items is left."""
        self._sync(storage)
        return self.num_available >= batch_size

    def sample(self, storage: Storage, batch_size: int) -> tuple[Tensor, dict[str, Any]]:
        n = check_not_empty("ConsumingSampler.sample", storage)
        if storage.ndim != 1:
            raise TypeError(
                f"ConsumingSampler.sample: expected a 1-D storage, got ndim={storage.ndim}."
            )
        self._sync(storage)
        available = (self._counts[:n] < self.max_sample_count).nonzero().squeeze(-1)
        if not available.numel():
            raise RuntimeError(
                f"ConsumingSampler.sample: every one of the {n} stored items was drawn "
                f"max_sample_count={self.max_sample_count} times; write new items first."
            )
        order = torch.randperm(available.numel(), generator=self._rng)[:batch_size]
        index = available[order]
        self._counts[index] += 1
        consumed = index[self._counts[index] >= self.max_sample_count]
        if consumed.numel():
            self._free = torch.cat([self._free, consumed])
        return index, {}

    def state_dict(self) -> dict[str, Any]:
        return {"counts": self._counts.clone(), "len": self._len, "free": self._free.clone()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._counts = state_dict["counts"].clone()
        self._len = int(state_dict["len"])
        free = state_dict.get("free")
        if free is None:  # a state saved before the consumed slots were kept: in slot order
            free = (self._counts[: self._len] >= self.max_sample_count).nonzero().squeeze(-1)
        self._free = torch.as_tensor(free, dtype=torch.long).clone()

    def _empty(self) -> None:
        self._counts = torch.zeros(0, dtype=torch.long)
        self._len = 0
        self._free = torch.zeros(0, dtype=torch.long)

    def __repr__(self) -> str:
        return f"ConsumingSampler(max_sample_count={self.max_sample_count})"
