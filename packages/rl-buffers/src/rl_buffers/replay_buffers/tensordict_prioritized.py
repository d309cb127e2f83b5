"""TensorDictPrioritizedReplayBuffer: prioritized replay of TensorDicts."""

from __future__ import annotations

from typing import Any

import torch

from rl_buffers.replay_buffers.tensordict_buffer import TensorDictReplayBuffer
from rl_buffers.samplers.prioritized import PrioritizedSampler, _cuda_device
from rl_buffers.storages.list_storage import ListStorage
from rl_buffers.storages.storage import Storage

__all__ = ["TensorDictPrioritizedReplayBuffer"]


class TensorDictPrioritizedReplayBuffer(TensorDictReplayBuffer):
    """A :class:`TensorDictReplayBuffer` with a :class:`~rl_buffers.PrioritizedSampler`.

    Batches carry ``"index"`` and ``"priority_weight"``; write the new priorities into a
    batch under ``priority_key`` and call :meth:`update_tensordict_priority`.

    Args:
        alpha: priority exponent, >= 0.
        beta: importance-sampling exponent, >= 0.

    Keyword Args:
        priority_key: the entry holding priorities. Defaults to ``"td_error"``.
        eps: added to priorities. Defaults to 1e-8.
        dtype: dtype of the priority tree. Defaults to ``torch.float``.
        storage: defaults to ``ListStorage(1000)``; the sampler covers its ``max_size``.
        **kwargs: as :class:`ReplayBuffer`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, TensorDictPrioritizedReplayBuffer
        >>> buffer = TensorDictPrioritizedReplayBuffer(
        ...     alpha=0.7, beta=0.5, storage=LazyTensorStorage(100), batch_size=4
        ... )
        >>> _ = buffer.extend(TensorDict({"obs": torch.randn(10, 3)}, [10]))
        >>> batch = buffer.sample()
        >>> batch["td_error"] = torch.rand(4)
        >>> buffer.update_tensordict_priority(batch)
        >>> batch["priority_weight"].shape
        torch.Size([4])
    """

    def __init__(
        self,
        *,
        alpha: float,
        beta: float,
        priority_key: Any = "td_error",
        eps: float = 1e-8,
        dtype: torch.dtype = torch.float,
        storage: Storage | None = None,
        **kwargs: Any,
    ) -> None:
        if "sampler" in kwargs:
            raise TypeError(
                f"{type(self).__name__}: the sampler is built from alpha and beta; use "
                f"TensorDictReplayBuffer(sampler=...) for another sampler."
            )
        storage = storage if storage is not None else ListStorage(1000)
        sampler = PrioritizedSampler(
            storage.max_size, alpha, beta, eps=eps, dtype=dtype, device=_cuda_device(storage)
        )
        super().__init__(priority_key=priority_key, storage=storage, sampler=sampler, **kwargs)
