"""PrioritizedReplayBuffer: a replay buffer with proportional prioritized sampling."""

from __future__ import annotations

from typing import Any

import torch

from rl_buffers.replay_buffers.replay_buffer import ReplayBuffer
from rl_buffers.samplers.prioritized import PrioritizedSampler, _cuda_device
from rl_buffers.storages.list_storage import ListStorage
from rl_buffers.storages.storage import Storage

__all__ = ["PrioritizedReplayBuffer"]


class PrioritizedReplayBuffer(ReplayBuffer):
    """A :class:`ReplayBuffer` with a :class:`~rl_buffers.PrioritizedSampler`.

    Args:
        alpha: priority exponent, >= 0.
        beta: importance-sampling exponent, >= 0.

    Keyword Args:
        eps: added to priorities. Defaults to 1e-8.
        dtype: dtype of the priority tree. Defaults to ``torch.float``.
        storage: defaults to ``ListStorage(1000)``; the sampler covers its ``max_size``.
        **kwargs: as :class:`ReplayBuffer` (``writer``, ``collate_fn``, ``batch_size``,
            ``prefetch``, ``transform``, ``pin_memory``).

    Examples:
        >>> import torch
        >>> from rl_buffers import LazyTensorStorage, PrioritizedReplayBuffer
        >>> buffer = PrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(10))
        >>> index = buffer.extend(torch.arange(4.0))
        >>> buffer.update_priority(index, torch.tensor([0.0, 0.0, 0.0, 5.0]))
        >>> data, info = buffer.sample(3, return_info=True)
        >>> data.tolist(), info["priority_weight"].shape
        ([3.0, 3.0, 3.0], torch.Size([3]))
    """

    def __init__(
        self,
        *,
        alpha: float,
        beta: float,
        eps: float = 1e-8,
        dtype: torch.dtype = torch.float,
        storage: Storage | None = None,
        **kwargs: Any,
    ) -> None:
        if "sampler" in kwargs:
            raise TypeError(
                f"{type(self).__name__}: the sampler is built from alpha and beta; use "
                f"ReplayBuffer(sampler=...) for another sampler."
            )
        storage = storage if storage is not None else ListStorage(1000)
        sampler = PrioritizedSampler(
            storage.max_size, alpha, beta, eps=eps, dtype=dtype, device=_cuda_device(storage)
        )
        super().__init__(storage=storage, sampler=sampler, **kwargs)
