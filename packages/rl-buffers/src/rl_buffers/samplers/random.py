"""RandomSampler: uniform sampling with replacement."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rl_buffers.samplers.sampler import Sampler, check_not_empty
from rl_buffers.storages.storage import Storage

__all__ = ["RandomSampler"]


class RandomSampler(Sampler):
    """Draws items uniformly with replacement (``torch.randint``; torch's global generator
    unless the buffer has its own, see ``ReplayBuffer(generator=)``).

    Examples:
        >>> import torch
        >>> from rl_buffers import LazyTensorStorage, RandomSampler
        >>> storage = LazyTensorStorage(10)
        >>> storage.set(torch.arange(5), torch.zeros(5, 2))
        >>> index, info = RandomSampler().sample(storage, 8)
        >>> index.shape, bool(index.max() < 5)
        (torch.Size([8]), True)
    """

    def sample(self, storage: Storage, batch_size: int) -> tuple[Tensor, dict[str, Any]]:
        n = check_not_empty("RandomSampler.sample", storage)
        return torch.randint(n, (batch_size,), generator=self._rng), {}
